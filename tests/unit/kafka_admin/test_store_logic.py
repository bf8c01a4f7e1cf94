"""Pure parts of the admin-API store: op planning, snapshot diffs, versions, retries, errors."""

import pytest

from kconfigs.errors import StoreUnavailable, ValidationError
from kconfigs.kafka_admin.error_codes import error_for_code
from kconfigs.kafka_admin.messages import QuotaOp
from kconfigs.kafka_admin.retry import retry_until_deadline
from kconfigs.kafka_admin.versions import negotiate_version
from kconfigs.model import DEFAULT, EntityType, FilterComponent, Match, QuotaEntity, QuotaRecord
from kconfigs.stores.admin_api import canonical_configs, exact_filter, plan_ops, snapshot_diff


def test_plan_ops_sends_only_changes_and_removals():
    current = {"producer_byte_rate": "1024", "request_percentage": "50.0", "consumer_byte_rate": "1"}
    new = {"producer_byte_rate": "1024.0", "request_percentage": "60", "controller_mutation_rate": "1e3"}
    assert plan_ops(current, new) == [
        QuotaOp("request_percentage", 60.0),
        QuotaOp("controller_mutation_rate", 1000.0),
        QuotaOp("consumer_byte_rate", None),
    ]
    with pytest.raises(ValidationError, match="^Cannot parse quota configuration value for k: x$"):
        plan_ops({}, {"k": "x"})


def test_canonical_configs_match_zk_backed_storage():
    assert canonical_configs({"producer_byte_rate": "1024.0", "request_percentage": "200", "x": "1e7"}) == {
        "producer_byte_rate": "1024",
        "request_percentage": "200.0",
        "x": "1.0E7",
    }


def test_exact_filter_uses_default_match_for_default_components():
    assert exact_filter(QuotaEntity(user="u", client_id=DEFAULT)).components == (
        FilterComponent(EntityType.USER, Match.EXACT, "u"),
        FilterComponent(EntityType.CLIENT_ID, Match.DEFAULT),
    )


def test_snapshot_diff_reports_changed_new_and_vanished():
    a, b, c = QuotaEntity(user="a"), QuotaEntity(user="b"), QuotaEntity(ip=DEFAULT)
    prev = {a: {"k": "1"}, b: {"k": "1"}}
    cur = {a: {"k": "2"}, b: {"k": "1"}, c: {"connection_creation_rate": "5"}}
    assert snapshot_diff(prev, cur) == [QuotaRecord(a, {"k": "2"}), QuotaRecord(c, {"connection_creation_rate": "5"})]
    assert snapshot_diff(cur, {}) == [QuotaRecord(a, {}), QuotaRecord(b, {}), QuotaRecord(c, {})]


def test_negotiate_picks_highest_common_version():
    assert negotiate_version(48, (0, 1), {48: (0, 1)}) == 1
    assert negotiate_version(48, (0, 1), {48: (0, 0)}) == 0
    assert negotiate_version(49, (0, 1), {49: (0, 5)}) == 1
    with pytest.raises(StoreUnavailable, match="does not support DescribeClientQuotas"):
        negotiate_version(48, (0, 1), {})
    with pytest.raises(StoreUnavailable, match="No common AlterClientQuotas version"):
        negotiate_version(49, (0, 1), {49: (2, 3)})


def test_retry_until_deadline_retries_retriable_then_gives_up():
    clock = {"now": 0.0}
    sleeps = []

    def sleep_ms(ms):
        sleeps.append(ms)
        clock["now"] += ms

    def always_not_controller():
        raise error_for_code(41, None)

    with pytest.raises(StoreUnavailable, match="not the correct controller"):
        retry_until_deadline(always_not_controller, 1000, now_ms=lambda: clock["now"], sleep_ms=sleep_ms)
    assert sleeps[:4] == [100, 200, 400, 300]  # doubling backoff, capped by the remaining time

    calls = []

    def fails_once():
        calls.append(1)
        if len(calls) == 1:
            raise error_for_code(7, None)
        return "ok"

    assert retry_until_deadline(fails_once, 1000, now_ms=lambda: 0, sleep_ms=lambda ms: None) == "ok"


def test_non_retriable_error_is_raised_at_once():
    calls = []

    def invalid():
        calls.append(1)
        raise error_for_code(42, "Quota producer_byte_rate must be greater than 0")

    with pytest.raises(ValidationError, match="^Quota producer_byte_rate must be greater than 0$"):
        retry_until_deadline(invalid, 10_000, now_ms=lambda: 0, sleep_ms=lambda ms: None)
    assert calls == [1]


def test_error_mapping_keeps_broker_text_on_one_line():
    err = error_for_code(42, "Configuration producer_byte_rate\nmust be a LONG value")
    assert isinstance(err, ValidationError) and str(err) == "Configuration producer_byte_rate must be a LONG value"
    assert error_for_code(0, None) is None
    unknown = error_for_code(87, None)
    assert isinstance(unknown, StoreUnavailable) and "(87)" in str(unknown)
