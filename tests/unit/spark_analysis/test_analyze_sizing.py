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
