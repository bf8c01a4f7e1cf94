"""The gateway's own quota admin (DescribeClientQuotas / AlterClientQuotas answered from its
store, ``quota_admin = "gateway"``) against a real Kafka 4.x KRaft broker, for keys a quota request
may not touch. A user's SCRAM credentials share the user's entry in the gateway's store (as on
ZooKeeper) but are not quotas: a describe lists quota keys only, a set of a credential (or of any
key the entity cannot hold as a quota) gets Kafka's own error, and a remove of one changes
nothing, as on the broker; so the quota permission never reaches a credential."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.versions import KAFKA_4_VERSION
from kconfigs.model import MATCH_ALL, QuotaEntity
from kconfigs.stores.admin_api import QuotaOp, open_admin_store
from kconfigs.stores.sqlite import SqliteStore
from tests.integration.gateway_support import ServedGateway

pytestmark = pytest.mark.integration

CREDENTIAL = "salt=c2FsdA==,stored_key=a2V5,server_key=c2VydmVy,iterations=4096"
ALICE, BOB = QuotaEntity(user="alice"), QuotaEntity(user="bob")
#: quota keys of a user and keys that are not (Kafka never shipped producer_ids_rate: the gateway
#: takes it on purpose, so it is left out of a comparison with the broker)
KEYS = ["producer_byte_rate", "consumer_byte_rate", "SCRAM-SHA-256", "SCRAM-SHA-512", "connection_creation_rate", "foo"]


@pytest.fixture(scope="module")
def admins(kraft_broker_factory, tmp_path_factory):
    """(broker's admin store, gateway's admin store, gateway): alice holds producer_byte_rate=5 on
    both; in the gateway's store alice also holds a credential and bob only one."""
    broker = kraft_broker_factory(KAFKA_4_VERSION)
    gateway = ServedGateway(broker.bootstrap, tmp_path_factory.mktemp("gateway"), 'quota_admin = "gateway"\n')
    store = SqliteStore(gateway.store_path)
    store.alter(ALICE, lambda _c: {"SCRAM-SHA-256": CREDENTIAL, "producer_byte_rate": "5"})
    store.alter(BOB, lambda _c: {"SCRAM-SHA-512": CREDENTIAL})
    store.close()
    on_broker, on_gateway = open_admin_store(broker.bootstrap, None), open_admin_store(gateway.bootstrap, None)
    on_broker.alter(ALICE, lambda _c: {"producer_byte_rate": "5"})
    yield on_broker, on_gateway, gateway
    on_broker.alter(ALICE, lambda _c: {})
    on_broker.close()
    on_gateway.close()
    gateway.stop()


def _described(admin) -> dict:
    return {r.entity: dict(r.configs) for r in admin.describe(MATCH_ALL) if r.entity in (ALICE, BOB)}


def _credentials(gateway) -> dict:
    return {e: {k: v for k, v in c.items() if k.startswith("SCRAM")} for e, c in gateway.snapshot().items()}


def test_a_describe_lists_quota_keys_only(admins):
    on_broker, on_gateway, _gateway = admins
    assert _described(on_gateway) == _described(on_broker) == {ALICE: {"producer_byte_rate": "5"}}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.dictionaries(
        st.sampled_from(KEYS), st.one_of(st.none(), st.integers(1, 10**6).map(float)), min_size=1, max_size=4
    )
)
def test_alters_get_the_brokers_answers_and_never_touch_a_credential(admins, changes):
    on_broker, on_gateway, gateway = admins
    ops = [QuotaOp(key, value) for key, value in changes.items()]
    answers = [str(admin._alter_entries([(ALICE, ops)], False)[ALICE]) for admin in (on_broker, on_gateway)]
    assert answers[1] == answers[0], ops
    assert _described(on_gateway) == _described(on_broker), ops
    assert _credentials(gateway) == {ALICE: {"SCRAM-SHA-256": CREDENTIAL}, BOB: {"SCRAM-SHA-512": CREDENTIAL}}
