"""The driver-side aggregates of tiny inputs: percentile_approx's exact ranks, Java's order of
doubles, avg's per-partition sums (Spark's own results are compared in
tests/integration/test_analyze_local_stats.py)."""

from __future__ import annotations

import math

from kconfigs_analysis.cell_stats import Cell, chart_buckets, exact_percentile, group_stats


def test_percentiles_are_the_values_of_rank_ceil_q_times_n():
    values = [float(v) for v in range(100, 0, -1)]
    # rank ⌈0.5·100⌉ = 50, ⌈0.95·100⌉ = 95, ⌈0.99·100⌉ = 99
    assert [exact_percentile(values, q) for q in (0.5, 0.95, 0.99)] == [50.0, 95.0, 99.0]
    # n = 7: ⌈3.5⌉ = 4, ⌈6.65⌉ = 7, ⌈6.93⌉ = 7
    assert [exact_percentile([5.0, 1.0, 7.0, 3.0, 2.0, 6.0, 4.0], q) for q in (0.5, 0.95, 0.99)] == [4.0, 7.0, 7.0]
    assert exact_percentile([], 0.5) is None


def test_minus_zero_sorts_before_zero_as_in_java():
    assert math.copysign(1.0, exact_percentile([0.0, -0.0], 0.5)) == -1.0


def test_a_mean_adds_each_partitions_sum_in_partition_order():
    # partition 0 sums 0.1 + 0.2, partition 1 sums 0.3: (0.0 + 0.30000000000000004) + 0.3
    cells = [Cell(1, 7, 1000, 0.3, None, False), Cell(0, 7, 1000, 0.1, None, False), Cell(0, 7, 2000, 0.2, None, False)]
    (row,) = group_stats(cells)
    assert row["mean"] == ((0.1 + 0.2) + 0.3) / 3
    assert row["samples"] == 3 and row["rows"] == 3 and row["max"] == 0.3 and row["first_ts_ms"] == 1000


def test_a_group_of_bad_lines_counts_rows_only():
    (row,) = group_stats([Cell(0, 9, None, None, None, True)])
    assert row == {
        "series": 9,
        "_bad": True,
        "rows": 1,
        "samples": 0,
        "mean": None,
        "p50": None,
        "p95": None,
        "p99": None,
        "max": None,
        "busy_samples": 0,
        "throttle_samples": 0,
        "throttled_samples": 0,
        "throttle_ms_mean": None,
        "throttle_ms_max": None,
        "first_ts_ms": None,
        "last_ts_ms": None,
    }


def test_chart_buckets_floor_time_and_skip_bad_and_uncharted_cells():
    cells = [
        Cell(0, 1, 59_999, 10.0, None, False),
        Cell(0, 1, 60_000, None, 5.0, False),
        Cell(0, 2, 60_000, 99.0, None, False),  # not charted
        Cell(0, 1, None, None, None, True),
    ]
    points = chart_buckets(cells, {1: 0}, 60_000)
    assert [(p["bucket_ms"], p["rate_mean"], p["throttle_samples"], p["throttled_samples"]) for p in points] == [
        (0, 10.0, 0, 0),
        (60_000, None, 1, 1),
    ]
