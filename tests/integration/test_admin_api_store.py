"""AdminApiStore against real Apache Kafka brokers in KRaft mode (3.9.x and 4.x jars).

Each test uses its own entity names, so tests can share one broker per version.
"""

from __future__ import annotations

import threading
import time

import pytest

from kconfigs.bootstrap_mode import describe_filter, quota_update
from kconfigs.errors import PartialFailure, StoreUnavailable, UsageError, ValidationError
from kconfigs.model import DEFAULT, MATCH_ALL, QuotaEntity, QuotaRecord
from kconfigs.stores.admin_api import exact_filter, open_admin_store
from tests.harness.versions import KAFKA_3_VERSION, KAFKA_4_VERSION

pytestmark = pytest.mark.integration
VERSIONS = [KAFKA_3_VERSION, KAFKA_4_VERSION]


def scram_config(tmp_path, mechanism="SCRAM-SHA-256", password="admin-secret"):
    path = tmp_path / "admin.properties"
    path.write_text(
        "# written like a kafka-configs --command-config file\n"
        "security.protocol=SASL_PLAINTEXT\n"
        f"sasl.mechanism={mechanism}\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
        f'    username="admin" \\\n    password="{password}";\n'
    )
    return str(path)


@pytest.fixture(params=VERSIONS)
def broker(request, kraft_broker_factory):
    return kraft_broker_factory(request.param, sasl_scram=True)


@pytest.fixture
def store(broker):
    opened = open_admin_store(broker.bootstrap, None, timeout_ms=20000)
    yield opened
    opened.close()


def records_for(store, entity):
    return [r for r in store.describe(exact_filter(entity)) if r.entity == entity]


def eventually_records(store, entity, expected, timeout_s=15.0):
    """Brokers answer DescribeClientQuotas from their metadata image, which applies a committed
    AlterClientQuotas a moment after the controller acknowledged it: poll until it shows."""
    deadline = time.monotonic() + timeout_s
    while True:
        got = records_for(store, entity)
        if got == expected or time.monotonic() > deadline:
            return got
        time.sleep(0.1)


def test_alter_then_describe_every_entity_shape(store):
    entities = [
        QuotaEntity(user="it-u1"),
        QuotaEntity(user="it-u1", client_id="it-c1"),
        QuotaEntity(user="it-u1", client_id=DEFAULT),
        QuotaEntity(client_id="it-c1"),
        QuotaEntity(ip="10.1.2.3"),
    ]
    for entity in entities:
        key = "connection_creation_rate" if entity.ip else "producer_byte_rate"
        record = store.alter(entity, quota_update({key: "1024"}, []))
        assert record == QuotaRecord(entity, {key: "1024"})
    for entity in entities:
        key = "connection_creation_rate" if entity.ip else "producer_byte_rate"
        assert eventually_records(store, entity, [QuotaRecord(entity, {key: "1024"})]) == [
            QuotaRecord(entity, {key: "1024"})
        ]
    # Strict filters: users + named user + any client -> only that user's tuples.
    time.sleep(0.5)  # metadata propagation, see eventually_records
    tuples = store.describe(describe_filter(["users", "clients"], ["it-u1"]))
    assert {r.entity for r in tuples} == {
        QuotaEntity(user="it-u1", client_id="it-c1"),
        QuotaEntity(user="it-u1", client_id=DEFAULT),
    }


def test_values_are_stored_as_kafka_formats_them_and_deletes_remove_keys(store):
    entity = QuotaEntity(user="it-fmt")
    store.alter(
        entity,
        quota_update(
            {"producer_byte_rate": "10485760", "request_percentage": "200", "controller_mutation_rate": "1e7"}, []
        ),
    )
    stored = {"producer_byte_rate": "10485760", "request_percentage": "200.0", "controller_mutation_rate": "1.0E7"}
    assert eventually_records(store, entity, [QuotaRecord(entity, stored)]) == [QuotaRecord(entity, stored)]
    store.alter(entity, quota_update({}, ["request_percentage", "controller_mutation_rate"]))
    left = [QuotaRecord(entity, {"producer_byte_rate": "10485760"})]
    assert eventually_records(store, entity, left) == left
    store.alter(entity, quota_update({}, ["producer_byte_rate"]))
    assert eventually_records(store, entity, []) == []


def test_deleting_an_unset_key_fails_and_changes_nothing(store):
    entity = QuotaEntity(client_id="it-missing")
    store.alter(entity, quota_update({"consumer_byte_rate": "2048"}, []))
    kept = [QuotaRecord(entity, {"consumer_byte_rate": "2048"})]
    assert eventually_records(store, entity, kept) == kept
    with pytest.raises(ValidationError, match=r"^Invalid config\(s\): nope1,nope2$"):
        store.alter(entity, quota_update({"producer_byte_rate": "1"}, ["nope1", "consumer_byte_rate", "nope2"]))
    assert records_for(store, entity) == kept


def test_validate_only_checks_but_writes_nothing(store):
    entity = QuotaEntity(user="it-dry")
    record = store.alter(entity, quota_update({"producer_byte_rate": "5000"}, []), validate_only=True)
    assert record.configs == {"producer_byte_rate": "5000"}
    time.sleep(1)  # give a (wrong) write time to reach the broker
    assert records_for(store, entity) == []
    with pytest.raises(ValidationError, match="^Quota producer_byte_rate must be greater than 0$"):
        store.alter(entity, quota_update({"producer_byte_rate": "0"}, []), validate_only=True)


@pytest.mark.parametrize(
    "key,value,message",
    [
        ("producer_byte_rate", "-1", "Quota producer_byte_rate must be greater than 0"),
        ("consumer_byte_rate", "1.5", "consumer_byte_rate cannot be a fractional value."),
        (
            "connection_creation_rate",
            "3000000000",
            "Proposed value for connection_creation_rate is too large for an INT.",
        ),
    ],
)
def test_kraft_controller_rejections_become_one_line_errors(store, key, value, message):
    entity = QuotaEntity(ip="10.9.9.9") if key == "connection_creation_rate" else QuotaEntity(user="it-bad")
    with pytest.raises(ValidationError) as err:
        store.alter(entity, quota_update({key: value}, []))
    assert str(err.value) == message
    assert eventually_records(store, entity, []) == []


def test_alter_many_reports_partial_failure_by_entity(store):
    good, bad = QuotaEntity(user="it-many-ok"), QuotaEntity(user="it-many-bad")
    with pytest.raises(PartialFailure) as err:
        store.alter_many(
            [
                (good, quota_update({"producer_byte_rate": "100"}, [])),
                (bad, quota_update({"producer_byte_rate": "-5"}, [])),
            ]
        )
    assert [record.entity for record in err.value.applied] == [good]
    assert [(entity, str(error)) for entity, error in err.value.failed] == [
        (bad, "Quota producer_byte_rate must be greater than 0")
    ]
    ok = [QuotaRecord(good, {"producer_byte_rate": "100"})]
    assert eventually_records(store, good, ok) == ok
    assert eventually_records(store, bad, []) == []


def test_sasl_scram_via_command_config(broker, tmp_path):
    for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        sasl_store = open_admin_store(broker.sasl_bootstrap, scram_config(tmp_path, mechanism), timeout_ms=20000)
        try:
            entity = QuotaEntity(user=f"it-sasl-{mechanism}")
            sasl_store.alter(entity, quota_update({"consumer_byte_rate": "777"}, []))
            assert eventually_records(sasl_store, entity, [QuotaRecord(entity, {"consumer_byte_rate": "777"})]) == [
                QuotaRecord(entity, {"consumer_byte_rate": "777"})
            ]
        finally:
            sasl_store.close()


def test_wrong_password_is_one_line_without_the_password(broker, tmp_path):
    bad = open_admin_store(broker.sasl_bootstrap, scram_config(tmp_path, password="wrong-pw-xyz"), timeout_ms=8000)
    try:
        with pytest.raises(StoreUnavailable) as err:
            bad.describe(MATCH_ALL)
    finally:
        bad.close()
    message = str(err.value)
    assert message.startswith(f"Authentication to {broker.sasl_bootstrap} failed")
    assert "wrong-pw-xyz" not in message and "\n" not in message


def test_unreachable_bootstrap_is_store_unavailable():
    dead = open_admin_store("127.0.0.1:1", None, timeout_ms=1500)
    try:
        with pytest.raises(StoreUnavailable, match="127.0.0.1:1"):
            dead.describe(MATCH_ALL)
    finally:
        dead.close()


def test_bootstrap_controller_alter_works_but_describe_is_refused(broker):
    # Kafka's own ConfigCommand fails both with UnsupportedEndpointTypeException, because
    # controllers do not serve DescribeClientQuotas (listeners: broker only).
    controller_store = open_admin_store(broker.controller_bootstrap, None, controller=True, timeout_ms=10000)
    try:
        with pytest.raises(UsageError, match="^DescribeClientQuotas is not supported when communicating directly"):
            controller_store.describe(MATCH_ALL)
        with pytest.raises(UsageError, match="--bootstrap-controller"):
            controller_store.alter(QuotaEntity(user="it-ctl"), quota_update({"producer_byte_rate": "1"}, []))
    finally:
        controller_store.close()


def test_watch_delivers_a_full_snapshot_then_diffs(broker):
    from kconfigs.kafka_admin.client import AdminClient
    from kconfigs.kafka_admin.security import ClientSecurity
    from kconfigs.stores.admin_api import AdminApiStore

    fast = AdminApiStore(
        AdminClient(broker.bootstrap, ClientSecurity(), controller=False, request_timeout_ms=10000),
        timeout_ms=10000,
        watch_interval_ms=200,
    )
    changes, states = [], []
    arrived = threading.Event()

    def on_change(change):
        changes.append(change)
        arrived.set()

    watch = fast.watch(on_change, states.append)
    try:
        assert arrived.wait(20)
        assert changes[0].full_snapshot and states == ["connected"]
        arrived.clear()
        entity = QuotaEntity(client_id="it-watch")
        fast.alter(entity, quota_update({"producer_byte_rate": "42"}, []))
        assert arrived.wait(20)
        assert changes[-1].full_snapshot is False
        assert QuotaRecord(entity, {"producer_byte_rate": "42"}) in changes[-1].records
        arrived.clear()
        fast.alter(entity, quota_update({}, ["producer_byte_rate"]))
        assert arrived.wait(20)
        assert QuotaRecord(entity, {}) in changes[-1].records
    finally:
        watch.close()
        fast.close()
