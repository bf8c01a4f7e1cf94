"""Quota sensors: a shared ``Rate`` plus its bound, cap, name, tags and last-record time.

A Kafka ``Sensor`` named ``<QuotaType>-<userTag>:<clientTag>`` holds the quota ``Rate`` metric;
every client that resolves to the same tags records into the same sensor. A sensor expires when
``now - lastRecordTime > 3600 s`` (strictly greater, ``Sensor.hasExpired``), and its history
is lost with it.

``record_and_throttle`` is the hot path: ``Sensor.record(v, t, checkQuotas=true)`` followed by
``QuotaUtils.(bounded)throttleTime``, fused into one call with the ``SampledRate`` internals
inlined (same arithmetic as ``record`` + ``measure`` + ``window_ms``; the property tests compare
it with a literal port of Kafka). ``enforcement/native`` has the same sensor in Rust, used when
built (``kconfigs_enforcement.rates``).
"""

from __future__ import annotations

from kconfigs_enforcement.stats import UNLIMITED, PureSampledRate, SampledAvg, java_round, ordered_sum, trunc_div

NO_CAP_MS = 2**63 - 1


def pure_record_and_throttle_each(sensors, values, times_ms, unrecord_throttled=None) -> list[int]:
    """Many ``record_and_throttle`` decisions in order (the fallback of
    ``kconfigs_enforcement.rates.record_and_throttle_each``): a ``None`` sensor gives 0; where
    ``unrecord_throttled[i]``, a throttled value is recorded back out.

    :raises ValueError: when the lists differ in length
    """
    lengths = {len(sensors), len(values), len(times_ms)}
    if unrecord_throttled is not None:
        lengths.add(len(unrecord_throttled))
    if len(lengths) > 1:
        raise ValueError("sensors, values, times_ms and unrecord_throttled differ in length")
    throttles = []
    for i, sensor in enumerate(sensors):
        if sensor is None:
            throttles.append(0)
            continue
        throttle_ms = sensor.record_and_throttle(values[i], times_ms[i])
        if throttle_ms > 0 and unrecord_throttled is not None and unrecord_throttled[i]:
            sensor.record_no_check(-values[i], times_ms[i])
        throttles.append(throttle_ms)
    return throttles


class PureRateSensor(PureSampledRate):
    """A quota sensor around a ``PureSampledRate`` (the fallback of ``kconfigs_enforcement.rates.RateSensor``).

    :param bound: the quota (per second); ``UNLIMITED`` = Long.MAX_VALUE like Kafka
    :param cap_ms: ``boundedThrottleTime`` cap (one sample window) or ``NO_CAP_MS``
    """

    __slots__ = ("bound", "cap_ms", "last_record_ms", "name", "tags", "user", "client_id", "_padded_below_ms")

    def __init__(
        self,
        samples: int,
        window_ms: int,
        legacy_pre_3_8: bool,
        *,
        bound: float = UNLIMITED,
        cap_ms: int = NO_CAP_MS,
        now_ms: int = 0,
        name: str = "",
        tags: dict | None = None,
        user: str = "",
        client_id: str = "",
    ):
        super().__init__(samples, window_ms, legacy_pre_3_8)
        self._padded_below_ms = (self._samples - 1) * self._window_ms  # windowSize pads below this
        self.bound = bound
        self.cap_ms = cap_ms
        self.last_record_ms = now_ms  # Sensor() sets lastRecordTime to the creation time
        self.name = name
        self.tags = tags or {}
        self.user = user  # raw names behind the tags, to re-resolve the bound on a quota change
        self.client_id = client_id

    def expired(self, now_ms: int, expiry_ms: int) -> bool:
        return now_ms - self.last_record_ms > expiry_ms

    def record_no_check(self, value, now_ms: int) -> None:
        """``Sensor.record(v, t, checkQuotas=false)``: unrecord / recordNoThrottle."""
        self.last_record_ms = now_ms
        self.record(value, now_ms)

    def record_and_throttle(self, value, now_ms: int) -> int:
        """Record ``value`` at ``now_ms``, then return the throttle in ms (0 = within quota)."""
        self.last_record_ms = now_ms
        # --- SampledRate.record, inlined ---
        starts = self._starts
        if not starts:
            self._append_slot(now_ms)
        cur = self._cur
        window_ms = self._window_ms
        if now_ms - starts[cur] >= window_ms:
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
        # --- Rate.measure / Rate.windowSize, inlined ---
        if now_ms - self._min_last >= self._expire_age_ms:
            self._purge(now_ms)
        total = self._total if self._exact_total else ordered_sum(self._values)
        elapsed_ms = now_ms - self._min_start
        if elapsed_ms < self._padded_below_ms:
            # fewer than N-1 whole windows: (N-1)*W + elapsed % W (Java's int division for < 0)
            if elapsed_ms >= 0:
                elapsed_ms = self._padded_below_ms + elapsed_ms % window_ms
            else:
                elapsed_ms += (self._samples - 1 - trunc_div(elapsed_ms, window_ms)) * window_ms
        if elapsed_ms < 1:  # >= 1 ms (PR #12184): N = 1 has no padding
            elapsed_ms = 1
        rate = total / (elapsed_ms / 1000.0)
        bound = self.bound
        if rate <= bound:
            return 0
        throttle_ms = java_round((rate - bound) / bound * elapsed_ms)
        cap_ms = self.cap_ms
        return throttle_ms if throttle_ms < cap_ms else cap_ms


class AvgSensor:
    """A ``throttle-time`` style sensor: ``Avg`` over the broker metrics config (2 x 30 s)."""

    __slots__ = ("avg", "last_record_ms", "name", "tags")

    def __init__(self, now_ms: int, name: str, tags: dict, samples: int = 2, window_ms: int = 30_000):
        self.avg = SampledAvg(samples, window_ms)
        self.last_record_ms = now_ms
        self.name = name
        self.tags = tags

    def record(self, value: float, now_ms: int) -> None:
        self.last_record_ms = now_ms
        self.avg.record(value, now_ms)

    def expired(self, now_ms: int, expiry_ms: int) -> bool:
        return now_ms - self.last_record_ms > expiry_ms


class SensorRegistry:
    """Sensors by name with Kafka's inactivity expiry (``Metrics.ExpireSensorTask``)."""

    def __init__(self, expiry_ms: int):
        self.expiry_ms = expiry_ms
        self._sensors: dict[str, object] = {}

    def get(self, name: str):
        return self._sensors.get(name)

    def add(self, name: str, sensor) -> None:
        self._sensors[name] = sensor

    def values(self):
        return self._sensors.values()

    def __len__(self) -> int:
        return len(self._sensors)

    def expire(self, now_ms: int) -> int:
        """Remove every sensor idle for more than ``expiry_ms``; returns how many were removed."""
        dead = [name for name, s in self._sensors.items() if s.expired(now_ms, self.expiry_ms)]
        for name in dead:
            del self._sensors[name]
        return len(dead)
