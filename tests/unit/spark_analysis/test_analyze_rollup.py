"""The entity roll-up of per-source statistics (pure): worst broker's rates, summed counts, the
throttle-time mean over every throttled sample, utilisation against the effective quota."""

from __future__ import annotations

import math

from kconfigs_analysis import rollup
from kconfigs_analysis.quotas import ResolvedQuota


def _source(source, user="alice", **values) -> dict:
    row = {"kind": "produce", "user": user, "client_id": None, "ip": None, "source": source}
    row.update(samples=10, mean=1.0, p50=1.0, p95=1.0, p99=1.0, max=1.0, busy_samples=10)
    row.update(throttle_samples=10, throttled_samples=0, throttle_ms_mean=None, throttle_ms_max=0.0)
    row.update(first_ts_ms=1000, last_ts_ms=2000)
    row.update(values)
    return row


def test_two_brokers_give_the_worst_rates_the_summed_counts_and_the_pooled_throttle_mean():
    rows = rollup.entity_stats(
        [
            _source("b1", mean=3.0, p99=9.0, max=12.0, throttled_samples=2, throttle_ms_mean=100.0, first_ts_ms=500),
            _source("b2", mean=5.0, p99=7.0, max=float("inf"), throttled_samples=6, throttle_ms_mean=20.0),
        ]
    )
    assert len(rows) == 1
    row = rows[0]
    assert list(row) == rollup.STATS_COLUMNS
    assert (row["mean"], row["p99"], row["max"]) == (5.0, 9.0, math.inf)
    assert (row["samples"], row["busy_samples"], row["throttled_samples"], row["sources"]) == (20, 20, 8, 2)
    # (100 × 2 + 20 × 6) / 8 = 40: not the mean of the two means (60)
    assert row["throttle_ms_mean"] == 40.0
    assert (row["first_ts_ms"], row["last_ts_ms"]) == (500, 2000)


def test_nulls_are_skipped_and_all_null_stays_null():
    (row,) = rollup.entity_stats([_source("b1", mean=None, p99=None), _source("b2", mean=None, p99=4.0)])
    assert row["mean"] is None and row["p99"] == 4.0
    assert row["throttle_ms_mean"] is None  # no throttled sample anywhere


def test_a_nan_rate_is_the_largest_as_in_spark():
    (row,) = rollup.entity_stats([_source("b1", max=float("nan")), _source("b2", max=5.0)])
    assert math.isnan(row["max"])


def test_entities_keep_their_first_seen_order_and_are_not_merged_across_users():
    rows = rollup.entity_stats([_source("b1", user="bob"), _source("b1", user="alice"), _source("b2", user="bob")])
    assert [(r["user"], r["sources"]) for r in rows] == [("bob", 2), ("alice", 1)]


def test_utilisation_is_against_the_effective_quota_and_null_without_one():
    stats = rollup.entity_stats([_source("b1", p99=1.5, max=3.0, throttle_samples=4, throttled_samples=1)])
    stats += rollup.entity_stats([_source("b1", user="bob", throttle_samples=0)])
    quota = ResolvedQuota("produce", "alice", None, None, 2.0, "3 user")
    alice, bob = rollup.with_quotas(stats, [quota])
    assert list(alice) == rollup.STATS_COLUMNS + rollup.QUOTA_COLUMNS
    assert (alice["quota"], alice["quota_level"], alice["util_p99_pct"], alice["util_max_pct"]) == (
        2.0,
        "3 user",
        75.0,
        150.0,  # uncapped: above the quota is what throttling measures
    )
    assert alice["throttled_fraction"] == 0.25
    assert (bob["quota"], bob["util_p99_pct"], bob["throttled_fraction"]) == (None, None, 0.0)


def test_a_zero_quota_gives_no_utilisation_rather_than_a_division_error():
    stats = rollup.entity_stats([_source("b1")])
    (row,) = rollup.with_quotas(stats, [ResolvedQuota("produce", "alice", None, None, 0.0, "3 user")])
    assert row["quota"] == 0.0 and row["util_p99_pct"] is None
