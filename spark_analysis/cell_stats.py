"""The report's aggregates over collected cells, as Spark computes them. Pure.

A small JmxTool input is parsed by Spark (its casts, time formats and malformed-line rules stay
in one place: jmxtool.py) and its few thousand narrow cells are collected; the statistics and
chart buckets are then computed here instead of in two more Spark jobs with a shuffle each,
which on a cold JVM cost more than a second (benchmarks/RESULTS.md, small runs).

Each function gives the values Spark's aggregates give, bit for bit, for inputs read as one
partition per file (files of a few MiB at most):
- ``avg``: a sum that starts at 0.0 and adds 0.0 for a null (``coalesce(x, 0.0)``), in row
  order within a partition; partitions' sums are added in partition order; null when nothing
  was counted.
- ``max``/``min``: nulls skipped; of equal values the first is kept (``greatest``).
- ``percentile_approx`` with accuracy 100,000 (relative error 1e-5): below 50,000 values per
  group its Greenwald-Khanna summary keeps every value (no compression: 2 × 1e-5 × n < 1), and a
  query for q returns the value of rank ⌈q·n⌉ in Java's order of doubles (-0.0 before 0.0).
"""

from __future__ import annotations

import math
from typing import Iterable, NamedTuple

#: below this many values in a group, percentile_approx (accuracy 100,000) is exact (see above)
EXACT_PERCENTILE_VALUES = 50_000
PERCENTILES = (("p50", 0.5), ("p95", 0.95), ("p99", 0.99))


class Cell(NamedTuple):
    """One narrow cell (jmxtool.cells) and the partition (file) it was read in."""

    partition: int
    series: int
    ts_ms: int | None
    rate: float | None
    throttle_ms: float | None
    bad: bool


def _java_double_key(value: float) -> tuple:
    return (value, math.copysign(1.0, value))


def exact_percentile(values: list[float], quantile: float) -> float | None:
    """percentile_approx of fewer than :data:`EXACT_PERCENTILE_VALUES` non-null values."""
    if not values:
        return None
    ordered = sorted(values, key=_java_double_key)
    rank = math.ceil(quantile * len(ordered))
    return ordered[min(max(rank, 1), len(ordered)) - 1]


class _Avg:
    """Spark's ``avg``: per-partition sums merged in partition order."""

    def __init__(self) -> None:
        self.sums: dict[int, float] = {}
        self.count = 0

    def add(self, partition: int, value: float | None) -> None:
        self.sums[partition] = self.sums.get(partition, 0.0) + (0.0 if value is None else value)
        if value is not None:
            self.count += 1

    def result(self) -> float | None:
        total = 0.0
        for partition in sorted(self.sums):
            total = total + self.sums[partition]
        return total / self.count if self.count else None


def _greatest(current, value):
    return value if value is not None and (current is None or value > current) else current


def _least(current, value):
    return value if value is not None and (current is None or value < current) else current


class _Group:
    """The aggregates of transforms.group_stats for one (series, _bad) group."""

    def __init__(self) -> None:
        self.rows = 0
        self.rates: list[float] = []
        self.mean = _Avg()
        self.throttle_mean = _Avg()
        self.max = self.throttle_max = self.first = self.last = None
        self.busy = self.throttle_samples = self.throttled = 0

    def add(self, cell: Cell) -> None:
        self.rows += 1
        self.mean.add(cell.partition, cell.rate)
        is_throttled = cell.throttle_ms is not None and cell.throttle_ms > 0
        self.throttle_mean.add(cell.partition, cell.throttle_ms if is_throttled else None)
        if cell.rate is not None:
            self.rates.append(cell.rate)
            self.busy += cell.rate > 0
        if cell.throttle_ms is not None:
            self.throttle_samples += 1
            self.throttled += is_throttled
        self.max = _greatest(self.max, cell.rate)
        self.throttle_max = _greatest(self.throttle_max, cell.throttle_ms)
        self.first = _least(self.first, cell.ts_ms)
        self.last = _greatest(self.last, cell.ts_ms)

    def as_row(self, series: int, bad: bool) -> dict:
        row = {"series": series, "_bad": bad, "rows": self.rows, "samples": len(self.rates)}
        row["mean"] = self.mean.result()
        row.update({name: exact_percentile(self.rates, q) for name, q in PERCENTILES})
        row.update(max=self.max, busy_samples=self.busy, throttle_samples=self.throttle_samples)
        row.update(throttled_samples=self.throttled, throttle_ms_mean=self.throttle_mean.result())
        row.update(throttle_ms_max=self.throttle_max, first_ts_ms=self.first, last_ts_ms=self.last)
        return row


def group_stats(cells: Iterable[Cell]) -> list[dict]:
    """transforms.group_stats(frame, ["series"]) rows, in first-seen group order.

    :raises ValueError: a group has too many values for an exact percentile.
    """
    groups: dict[tuple[int, bool], _Group] = {}
    for cell in cells:
        groups.setdefault((cell.series, cell.bad), _Group()).add(cell)
    if any(len(g.rates) >= EXACT_PERCENTILE_VALUES for g in groups.values()):
        raise ValueError(f"a group has {EXACT_PERCENTILE_VALUES} values or more: use Spark's aggregation")
    return [group.as_row(series, bad) for (series, bad), group in groups.items()]


def chart_buckets(cells: Iterable[Cell], chart_of: dict[int, int], bucket_ms: int) -> list[dict]:
    """transforms.chart_buckets rows for the good cells of charted series, by chart then bucket."""
    buckets: dict[tuple[int, int], list] = {}
    for cell in cells:
        chart_id = chart_of.get(cell.series)
        if cell.bad or chart_id is None:
            continue
        # floor(ts_ms / bucket_ms) in doubles, as Spark divides a long by an int
        bucket = math.floor(cell.ts_ms / bucket_ms) * bucket_ms
        into = buckets.setdefault((chart_id, bucket), [_Avg(), None, 0, 0])
        into[0].add(cell.partition, cell.rate)
        into[1] = _greatest(into[1], cell.rate)
        if cell.throttle_ms is not None:
            into[2] += 1
            into[3] += cell.throttle_ms > 0
    return [
        {
            "chart_id": chart_id,
            "bucket_ms": bucket,
            "rate_mean": mean.result(),
            "rate_max": rate_max,
            "throttle_samples": throttle_samples,
            "throttled_samples": throttled,
        }
        for (chart_id, bucket), (mean, rate_max, throttle_samples, throttled) in sorted(buckets.items())
    ]
