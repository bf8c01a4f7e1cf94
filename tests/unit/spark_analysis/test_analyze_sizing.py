"""Recommendations (percentile × headroom, censored demand) and idle quotas (spec §D)."""

from kconfigs_analysis import sizing
from kconfigs_analysis.kinds import KIND_QUOTA_KEY


def _row(**overrides):
    row = {
        "kind": "produce",
        "user": "alice",
        "client_id": "app",
        "ip": None,
        "samples": 100,
        "p50": 1_000_000.0,
        "p95": 1_500_000.0,
        "p99": 1_600_000.0,
        "max": 1_700_000.0,
        "quota": 4_000_000.0,
        "throttled_fraction": 0.0,
        "busy_samples": 100,
    }
    return {**row, **overrides}


def test_roundup_nice_keeps_two_significant_digits_and_never_rounds_down():
    assert sizing.roundup_nice(1_234_567) == 1_300_000
    assert sizing.roundup_nice(2_000_000) == 2_000_000
    assert sizing.roundup_nice(0.0123) == 0.013
    assert sizing.roundup_nice(99.5) == 100


def test_unthrottled_entity_gets_p99_times_one_plus_headroom():
    # 1.6 MB/s × 1.25 = 2.0 MB/s
    rec = sizing.recommend_one(_row(quota=2_100_000.0), "producer_byte_rate", sizing.SizingPolicy())
    assert rec.recommended == 2_000_000 and rec.entity == {"user": "alice", "client-id": "app"}


def test_throttled_entity_is_censored_and_stepped_up_from_its_quota():
    # observed p99 sits at the quota (1.5 MB/s) because of throttling: 5 % throttled > 1 %,
    # so max(1.6 MB/s × 1.25 = 2.0, 1.5 MB/s × 1.5 = 2.25) = 2.25 -> 2.3 MB/s
    rec = sizing.recommend_one(
        _row(quota=1_500_000.0, throttled_fraction=0.05), "producer_byte_rate", sizing.SizingPolicy()
    )
    assert rec.recommended == 2_300_000 and "censored" in rec.reason


def test_floor_applies_to_tiny_byte_rates_and_over_provisioning_is_flagged():
    rec = sizing.recommend_one(_row(p99=1000.0, quota=50_000_000.0), "producer_byte_rate", sizing.SizingPolicy())
    assert rec.recommended == 1_048_576 and "over-provisioned" in rec.reason


def test_request_percentage_keeps_a_fraction_and_client_only_series_recommend_a_client_quota():
    row = _row(kind="request", user=None, p99=3.7, quota=None)
    rec = sizing.recommend_one(row, "request_percentage", sizing.SizingPolicy())
    assert rec.recommended == 4.7 and rec.entity == {"client-id": "app"}  # 3.7 × 1.25 = 4.625 -> 4.7


def test_recommendations_group_into_quota_file_records():
    rows = [_row(), _row(kind="fetch", p99=800_000.0)]
    records = sizing.as_quota_records(sizing.recommend(rows, KIND_QUOTA_KEY))
    assert records == [
        ({"client-id": "app", "user": "alice"}, {"consumer_byte_rate": 1_048_576.0, "producer_byte_rate": 2_000_000.0})
    ]


def test_named_quota_without_usage_is_idle_but_defaults_never_are():
    records = [
        ({"user": "alice", "client-id": "app"}, {"producer_byte_rate": 1.0}),
        ({"user": "ghost"}, {"producer_byte_rate": 1.0, "consumer_byte_rate": 2.0}),
        ({"user": "alice", "client-id": "app"}, {"consumer_byte_rate": 1.0}),
        ({"user": None}, {"producer_byte_rate": 1.0}),
    ]
    idle = sizing.idle_quotas(records, [_row()], KIND_QUOTA_KEY)
    assert idle == [
        {"entity": {"user": "ghost"}, "key": "producer_byte_rate", "quota": 1.0},
        {"entity": {"user": "ghost"}, "key": "consumer_byte_rate", "quota": 2.0},
        {"entity": {"user": "alice", "client-id": "app"}, "key": "consumer_byte_rate", "quota": 1.0},
    ]


def _resolved(level, quota=4_000_000.0, **overrides):
    return _row(**{"quota": quota, "quota_level": level, **overrides})


def test_entities_under_a_default_get_one_recommendation_on_that_default():
    # six clients inherit the <default> client quota: one record for the default, none per client
    rows = [
        _resolved("8 <default> client", user=None, client_id=f"app-{i}", p99=1_000_000.0 * (i + 1)) for i in range(6)
    ]
    recs = sizing.recommend(rows, KIND_QUOTA_KEY)
    assert [(r.entity, r.recommended, r.shared_by) for r in recs] == [
        ({"client-id": None}, 7_500_000, 6)
    ]  # 6 MB/s × 1.25
    assert "largest of 6 entities" in recs[0].reason
    assert sizing.as_quota_records(recs) == [({"client-id": None}, {"producer_byte_rate": 7_500_000})]


def test_each_precedence_level_keeps_its_configured_entity():
    cases = {
        "1 user+client": {"user": "alice", "client-id": "app"},
        "2 user+<default> client": {"user": "alice", "client-id": None},
        "3 user": {"user": "alice"},
        "4 <default> user+client": {"user": None, "client-id": "app"},
        "5 <default> user+<default> client": {"user": None, "client-id": None},
        "6 <default> user": {"user": None},
        "7 client": {"client-id": "app"},
        "8 <default> client": {"client-id": None},
    }
    for level, entity in cases.items():
        assert sizing.configured_entity(_resolved(level)) == entity, level
    assert sizing.configured_entity(_resolved("<default> ip", kind="connection", ip="10.0.0.1")) == {"ip": None}
    assert sizing.configured_entity(_row(quota=None, quota_level=None)) == {"user": "alice", "client-id": "app"}


def test_internal_and_short_lived_clients_get_no_recommendation():
    rows = [
        _resolved("7 client", user=None, client_id=c)
        for c in ("kconfigs", "adminclient-3", "broker-0-fetcher-0", "kconfigs-gateway-auth-probe")
    ]
    rows.append(_resolved("7 client", user=None, client_id="one-off", busy_samples=2))
    rows.append(_resolved("7 client", user=None, client_id="etl:nightly"))
    assert [r.entity for r in sizing.recommend(rows, KIND_QUOTA_KEY)] == [{"client-id": "etl:nightly"}]
    assert sizing.skip_reason(rows[0], sizing.SizingPolicy()) == "internal client"
    assert sizing.skip_reason(rows[4], sizing.SizingPolicy()).startswith("short-lived")


def test_numbers_are_written_whole_and_every_rule_is_in_the_file_header():
    rec = sizing.recommend_one(_row(p99=1000.0, quota=None), "producer_byte_rate", sizing.SizingPolicy())
    assert rec.recommended == 1_048_576 and isinstance(rec.recommended, int) and rec.reason == "floor 1048576"
    assert sizing.plain_number(5_242_880.0) == "5242880" and sizing.plain_number(2.5) == "2.5"
    header = "\n".join(sizing.policy_header(sizing.SizingPolicy()))
    for rule in (
        "p99",
        "× 1.25",
        "current × 1.5",
        "floors: produce 1048576",
        "default",
        "kconfigs",
        "fewer than 3 samples",
    ):
        assert rule in header, rule
    assert "e+" not in header


def test_a_plan_keeps_every_quota_in_force_it_does_not_size():
    """Idle quotas (a nightly job's) were left out of proposed.toml without a word, so
    ``kconfigs apply proposed.toml --prune`` deleted them."""
    in_force = [
        ({"user": "alice", "client-id": "app"}, {"producer_byte_rate": 4_000_000.0}),
        ({"user": "nightly"}, {"producer_byte_rate": 5_242_880.0, "request_percentage": 25.0}),
        ({"client-id": "adminclient-1"}, {"consumer_byte_rate": 1_048_576.0}),
    ]
    rows = [_row(), _row(client_id="adminclient-1", kind="fetch", user=None)]
    recs = sizing.recommend(rows, KIND_QUOTA_KEY)
    idle = sizing.idle_quotas(in_force, rows, KIND_QUOTA_KEY)
    plan = sizing.plan(in_force, recs, idle)
    assert [(e.entity, e.key, e.current, e.proposed, e.reason) for e in plan] == [
        ({"client-id": "adminclient-1"}, "consumer_byte_rate", 1_048_576.0, 1_048_576, "not sized by the inputs: kept"),
        ({"user": "alice", "client-id": "app"}, "producer_byte_rate", 4_000_000.0, 2_000_000, "p99 × 1.25"),
        ({"user": "nightly"}, "producer_byte_rate", 5_242_880.0, 5_242_880, "idle (no traffic in the inputs): kept"),
        ({"user": "nightly"}, "request_percentage", 25.0, 25.0, "idle (no traffic in the inputs): kept"),
    ]
    records = dict((tuple(sorted(e.items())), q) for e, q in sizing.plan_records(plan))
    assert records[(("user", "nightly"),)] == {"producer_byte_rate": 5_242_880, "request_percentage": 25.0}
