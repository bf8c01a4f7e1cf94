"""kconfigs.plan: desired vs actual, prune semantics, and the compare-and-set update."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kconfigs.errors import VersionConflict
from kconfigs.model import DEFAULT, QuotaEntity, QuotaRecord
from kconfigs.plan import Action, KeyChange, build_plan, cas_update
from kconfigs.quotafile import DesiredQuota, store_value

ALICE = QuotaEntity(user="alice")
BOB = QuotaEntity(user="bob")
APP = QuotaEntity(client_id="app")
DEFAULT_USER = QuotaEntity(user=DEFAULT)


def _plan(desired: dict, actual: dict, prune: bool):
    return build_plan(
        [DesiredQuota(e, q) for e, q in desired.items()], [QuotaRecord(e, c) for e, c in actual.items()], prune=prune
    )


def test_in_sync_when_values_are_numerically_equal():
    plan = _plan(
        {ALICE: {"producer_byte_rate": 1048576, "request_percentage": 200.0}},
        {ALICE: {"producer_byte_rate": "1048576", "request_percentage": "200"}},
        prune=True,
    )
    assert plan.in_sync and plan.entities == ()


def test_adds_changes_and_removals_per_entity_and_key():
    plan = _plan(
        {ALICE: {"producer_byte_rate": 2}, APP: {"consumer_byte_rate": 7}},
        {ALICE: {"producer_byte_rate": "1", "consumer_byte_rate": "5"}, BOB: {"producer_byte_rate": "3"}},
        prune=True,
    )
    assert [(p.entity, p.action, p.changes) for p in plan.entities] == [
        (ALICE, Action.CHANGE, (KeyChange("producer_byte_rate", 1, 2), KeyChange("consumer_byte_rate", 5, None))),
        (APP, Action.ADD, (KeyChange("consumer_byte_rate", None, 7),)),
        (BOB, Action.REMOVE, (KeyChange("producer_byte_rate", 3, None),)),  # removals last
    ]
    assert plan.entity_counts() == {"add": 1, "change": 1, "remove": 1}
    assert plan.key_counts() == {"add": 1, "change": 1, "remove": 2}


def test_without_prune_keys_and_entities_absent_from_the_file_are_kept_and_counted():
    plan = _plan(
        {ALICE: {"producer_byte_rate": 2}},
        {ALICE: {"producer_byte_rate": "2", "consumer_byte_rate": "5"}, BOB: {"producer_byte_rate": "3"}},
        prune=False,
    )
    assert plan.in_sync and plan.left_alone == 2


def test_scram_credentials_are_never_planned():
    plan = _plan({}, {ALICE: {"SCRAM-SHA-256": "salt=x,stored_key=y,server_key=z,iterations=4096"}}, prune=True)
    assert plan.in_sync


def test_defaults_sort_before_names_within_a_shape():
    plan = _plan({ALICE: {"producer_byte_rate": 1}, DEFAULT_USER: {"producer_byte_rate": 1}}, {}, prune=False)
    assert [p.entity for p in plan.entities] == [DEFAULT_USER, ALICE]


def _alice_plan(actual: dict, desired: dict, prune: bool = True):
    (item,) = _plan({ALICE: desired}, {ALICE: actual}, prune=prune).entities
    return item


def test_cas_update_applies_the_change_and_keeps_untouched_keys():
    item = _alice_plan(
        {"producer_byte_rate": "1", "consumer_byte_rate": "5"},
        {"producer_byte_rate": 2, "consumer_byte_rate": 5, "request_percentage": 50.0},
    )
    current = {"producer_byte_rate": "1", "consumer_byte_rate": "5", "SCRAM-SHA-512": "cred"}
    assert cas_update(item)(current) == {
        "producer_byte_rate": "2",
        "consumer_byte_rate": "5",
        "request_percentage": "50.0",
        "SCRAM-SHA-512": "cred",
    }


def test_cas_update_is_a_no_op_when_the_entity_already_holds_the_new_values():
    item = _alice_plan({"producer_byte_rate": "1"}, {"producer_byte_rate": 2})
    current = {"producer_byte_rate": "2.0"}
    assert cas_update(item)(current) is current


def test_cas_update_refuses_to_clobber_a_concurrent_change():
    item = _alice_plan({"producer_byte_rate": "1"}, {"producer_byte_rate": 2})
    with pytest.raises(VersionConflict) as info:
        cas_update(item)({"producer_byte_rate": "7"})
    assert str(info.value) == (
        "user-principal 'alice' changed while applying: producer_byte_rate was 1 in the plan, "
        "is now 7; not overwritten, re-run to re-plan"
    )


def test_cas_update_ignores_concurrent_changes_to_keys_it_does_not_touch():
    item = _alice_plan({"producer_byte_rate": "1"}, {"producer_byte_rate": 2}, prune=False)
    assert cas_update(item)({"producer_byte_rate": "1", "consumer_byte_rate": "9"}) == {
        "producer_byte_rate": "2",
        "consumer_byte_rate": "9",
    }


def test_cas_update_of_a_pruned_entity_empties_its_quotas():
    (item,) = _plan({}, {BOB: {"producer_byte_rate": "3"}}, prune=True).entities
    assert cas_update(item)({"producer_byte_rate": "3"}) == {}


_USERS = [QuotaEntity(user=u) for u in ("a", "b", "c")] + [QuotaEntity(user=DEFAULT), QuotaEntity(client_id="x")]
_quota_sets = st.dictionaries(
    st.sampled_from(["producer_byte_rate", "consumer_byte_rate"]), st.integers(1, 5), min_size=1
)
_states = st.dictionaries(st.sampled_from(_USERS), _quota_sets)


@settings(max_examples=300, deadline=None)
@given(_states, _states, st.booleans())
def test_applying_every_cas_update_to_the_store_yields_the_file(desired, actual, prune):
    """Simulate the store: run each entity's update on its current configs (as alter does)."""
    raw_actual = {e: {k: store_value(k, v) for k, v in q.items()} for e, q in actual.items()}
    plan = build_plan(
        [DesiredQuota(e, q) for e, q in desired.items()],
        [QuotaRecord(e, c) for e, c in raw_actual.items()],
        prune=prune,
    )
    store = dict(raw_actual)
    for item in plan.entities:
        store[item.entity] = dict(cas_update(item)(store.get(item.entity, {})))
    after = {e: {k: int(v) for k, v in c.items()} for e, c in store.items() if c}
    expected = (
        dict(desired) if prune else {e: {**actual.get(e, {}), **desired.get(e, {})} for e in set(actual) | set(desired)}
    )
    assert after == expected
    again = build_plan(
        [DesiredQuota(e, q) for e, q in desired.items()], [QuotaRecord(e, c) for e, c in store.items()], prune=prune
    )
    assert again.in_sync  # a re-run finds nothing to do
