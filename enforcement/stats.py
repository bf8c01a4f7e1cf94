"""Kafka's ``SampledStat`` / ``WindowedSum`` / ``Rate`` with O(1) record and measure.

Semantics follow apache/kafka ``clients/.../metrics/stats/{SampledStat,Rate}.java`` (trunk 1eb7644):

- a ring of ``N + 1`` samples (Kafka >= 3.8, PR #15889) or ``N`` (before 3.8), created lazily;
- a sample is opened by the record that finds the current one complete (``t - start >= W``) and
  the ring advances exactly one slot however long the gap was;
- purge (on every measure): a sample whose ``lastEventMs`` (3.8+) or start (pre-3.8) is
  ``>= N*W`` old is reset to ``start = last = now, value = 0``;
- window = ``now - oldest start``; if fewer than ``N-1`` whole windows elapsed, pad up to
  ``(N-1)*W + elapsed % W``; at least 1 ms. Rate = sum / (window / 1000.0).

Why not a literal port: Kafka scans every sample on every measure. Here the sum is a running
total (exact: integral values are kept as Python ints and summed exactly, as long as the sum stays
below 2**53 like Kafka's double), the oldest start is cached and rescanned only when the slot that
held it is reset, and purge is skipped while the cached minimum ``last`` proves nothing can be
expired. Non-integral values (request percentages) switch the stat to summing the samples in list
order on each measure, exactly like ``WindowedSum.combine``, so rounding matches Java's doubles.
``tests/unit/enforcement`` checks this against a literal transliteration of the Java classes.

This pure-Python rate is the fallback; ``kconfigs_enforcement.rates`` picks the compiled one
(``enforcement/native``, the same algorithm in Rust) when it is built.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass

LONG_MAX = 2**63 - 1
UNLIMITED = float(LONG_MAX)  # Kafka's bound for "no quota": Long.MAX_VALUE as a double
_INF = float("inf")


def java_round(x: float) -> int:
    """Java ``Math.round(double)``: round half up without the double rounding of ``x + 0.5``.

    ``java_round(2.5) == 3``, ``java_round(-2.5) == -2``, ``java_round(0.49999999999999994) == 0``
    (Python's ``round`` would give 2 for 2.5: banker's rounding). NaN gives 0, like Java.
    """
    if x != x:
        return 0
    if x >= 9.223372036854775807e18:
        return LONG_MAX
    if x <= -9.223372036854775808e18:
        return -LONG_MAX - 1
    floor_x = math.floor(x)
    # x - floor(x) is exact for doubles, so the half-way test has no rounding error.
    return floor_x + 1 if x - floor_x >= 0.5 else floor_x


def _ordered_sum_loop(values) -> float:
    total = 0.0
    for value in values:
        total += value
    return total


def _ordered_sum_builtin(values) -> float:
    return sum(values, 0.0)


# WindowedSum.combine adds the samples left to right in doubles. CPython <= 3.11's sum() of
# floats does exactly that (in C, faster); 3.12+ compensates rounding (Neumaier), so it would not
# match Java's result bit for bit and the plain loop is used there.
ordered_sum = _ordered_sum_builtin if sys.version_info < (3, 12) else _ordered_sum_loop


def trunc_div(a: int, b: int) -> int:
    """Java ``long / long`` (truncates toward zero); only differs from ``//`` for a < 0."""
    return a // b if a >= 0 else -((-a) // b)


@dataclass(frozen=True)
class Sample:
    """A read-only view of one ring slot (Kafka ``SampledStat.Sample``)."""

    value: float
    start_ms: int
    last_event_ms: int


class PureSampledRate:
    """Kafka's ``Rate(TimeUnit.SECONDS, new WindowedSum())`` under a quota ``MetricConfig``.

    :param samples: ``quota.window.num`` (N, >= 1)
    :param window_ms: ``quota.window.size.seconds * 1000`` (W, >= 1)
    :param legacy_pre_3_8: ring of N and purge by sample start, as brokers before 3.8.0
    :raises ValueError: for samples or window_ms < 1
    """

    __slots__ = (
        "_samples",
        "_window_ms",
        "_expire_age_ms",
        "_ring_size",
        "_track_last",
        "_values",
        "_starts",
        "_lasts",
        "_cur",
        "_total",
        "_exact_total",
        "_min_start",
        "_min_last",
    )

    def __init__(self, samples: int = 11, window_ms: int = 1000, legacy_pre_3_8: bool = False):
        if int(samples) < 1 or int(window_ms) < 1:
            raise ValueError("samples and window_ms must be >= 1")
        self._samples = int(samples)
        self._window_ms = int(window_ms)
        self._expire_age_ms = self._samples * self._window_ms
        # 3.8+: one extra slot keeps the sample that still overlaps the window (PR #15889).
        self._ring_size = self._samples if legacy_pre_3_8 else self._samples + 1
        # Pre-3.8 has no lastEventMs: purge looks at the start, so "last" just mirrors the start.
        self._track_last = not legacy_pre_3_8
        self._values: list = []
        self._starts: list[int] = []
        self._lasts: list[int] = []
        self._cur = 0
        self._total = 0  # running sum while every recorded value is an int (exact)
        self._exact_total = True
        self._min_start = _INF  # exact min of _starts
        self._min_last = _INF  # a lower bound of min(_lasts): purge is a no-op while now - it < N*W

    @property
    def samples(self) -> int:
        return self._samples

    @property
    def sample_window_ms(self) -> int:
        return self._window_ms

    @property
    def legacy_pre_3_8(self) -> bool:
        return not self._track_last

    # -- recording -------------------------------------------------------------------------

    def record(self, value: float, now_ms: int) -> None:
        """``SampledStat.record``: add ``value`` (may be negative: Kafka's "unrecord") at ``now_ms``."""
        starts = self._starts
        if not starts:
            self._append_slot(now_ms)
        cur = self._cur
        if now_ms - starts[cur] >= self._window_ms:
            cur = self._advance(now_ms)
        self._values[cur] += value
        if self._track_last:
            self._lasts[cur] = now_ms
            if now_ms < self._min_last:
                self._min_last = now_ms
        if type(value) is int:
            self._total += value
        else:
            self._exact_total = False

    def _append_slot(self, now_ms: int) -> None:
        self._values.append(0)
        self._starts.append(now_ms)
        self._lasts.append(now_ms)
        if now_ms < self._min_start:
            self._min_start = now_ms
        if now_ms < self._min_last:
            self._min_last = now_ms

    def _advance(self, now_ms: int) -> int:
        """Move to the next ring slot (append while the ring is not full, else reset it)."""
        cur = (self._cur + 1) % self._ring_size
        self._cur = cur
        starts = self._starts
        if cur >= len(starts):
            self._append_slot(now_ms)
            return cur
        old_start = starts[cur]
        if self._exact_total:
            self._total -= self._values[cur]
        self._values[cur] = 0
        starts[cur] = now_ms
        self._lasts[cur] = now_ms
        if old_start == self._min_start:
            self._min_start = min(starts)
        elif now_ms < self._min_start:
            self._min_start = now_ms
        if now_ms < self._min_last:
            self._min_last = now_ms
        return cur

    # -- measuring -------------------------------------------------------------------------

    def _purge(self, now_ms: int) -> None:
        """``purgeObsoleteSamples``: reset every sample with no event in the last N*W ms."""
        expire_age_ms = self._expire_age_ms
        values, starts, lasts = self._values, self._starts, self._lasts
        for i in range(len(starts)):
            if now_ms - lasts[i] >= expire_age_ms:
                values[i] = 0
                starts[i] = now_ms
                lasts[i] = now_ms
        if starts:
            self._min_start = min(starts)
            self._min_last = min(lasts)
            if self._exact_total:
                self._total = sum(values)

    def total(self, now_ms: int) -> float:
        """``WindowedSum.measure``: purge, then the sum of all samples (as a double)."""
        if now_ms - self._min_last >= self._expire_age_ms:
            self._purge(now_ms)
        if self._exact_total:
            return float(self._total)
        return ordered_sum(self._values)

    def window_ms(self, now_ms: int) -> int:
        """``Rate.windowSize``: the measured span in ms, padded to N-1 whole windows, >= 1."""
        if now_ms - self._min_last >= self._expire_age_ms:
            self._purge(now_ms)
        if not self._starts:
            self._append_slot(now_ms)  # SampledStat.oldest() creates a sample on an empty stat
        elapsed_ms = now_ms - self._min_start
        window = self._window_ms
        full_windows = trunc_div(elapsed_ms, window)
        min_full_windows = self._samples - 1
        if full_windows < min_full_windows:
            elapsed_ms += (min_full_windows - full_windows) * window
        return elapsed_ms if elapsed_ms > 1 else 1

    def measure(self, now_ms: int) -> float:
        """``Rate.measure`` in units per second, e.g. 6300 B over a 10 500 ms window = 600.0."""
        total = self.total(now_ms)
        return total / (self.window_ms(now_ms) / 1000.0)

    def samples_view(self) -> tuple[Sample, ...]:
        """The ring slots in list order (for tests and debugging)."""
        return tuple(
            Sample(v, s, (l if self._track_last else s)) for v, s, l in zip(self._values, self._starts, self._lasts)
        )


class SampledAvg:
    """Kafka ``Avg`` (a ``SampledStat``): mean of the recorded values, NaN with no events.

    Used for ``throttle-time`` with the broker metrics config (2 samples x 30 s). Not on the hot
    path (recorded only when a client is throttled), so it is a literal port.
    """

    __slots__ = ("_samples", "_window_ms", "_ring", "_cur")

    def __init__(self, samples: int = 2, window_ms: int = 30_000):
        self._samples = samples
        self._window_ms = window_ms
        self._ring: list[list] = []  # [value, count, start, last]
        self._cur = 0

    def record(self, value: float, now_ms: int) -> None:
        if not self._ring:
            self._ring.append([0.0, 0, now_ms, now_ms])
        slot = self._ring[self._cur]
        if now_ms - slot[2] >= self._window_ms:
            self._cur = (self._cur + 1) % (self._samples + 1)
            if self._cur >= len(self._ring):
                self._ring.append([0.0, 0, now_ms, now_ms])
            else:
                self._ring[self._cur][:] = [0.0, 0, now_ms, now_ms]
            slot = self._ring[self._cur]
        slot[0] += value
        slot[1] += 1
        slot[3] = now_ms

    def measure(self, now_ms: int) -> float:
        expire_age_ms = self._samples * self._window_ms
        total, count = 0.0, 0
        for slot in self._ring:
            if now_ms - slot[3] >= expire_age_ms:
                slot[:] = [0.0, 0, now_ms, now_ms]
            total += slot[0]
            count += slot[1]
        return total / count if count else math.nan
