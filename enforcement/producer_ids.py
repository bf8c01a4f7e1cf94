"""Producer-id rate quota (KIP-936, ``producer_ids_rate``; not merged into Apache Kafka).

Follows the KIP's TimedBloomFilter design: per user, the first new producer id opens filter 1;
after one filter window a second filter opens and takes the new ids while lookups check both;
the older filter is dropped 1.5 windows after it opened; a user with no live filter is removed.
Only ids not found in the live filters are counted, as 1 each, on a per-user ``Rate`` with the
quota (throttle = ``(O-T)/T*W``, uncapped, like ``ClientQuotaManager``). An id found only in the
older filter is re-added to the newer one (as the KIP prototype's "not recent" re-add), so a
producer that stays active is not counted again when the old filter drops.

Filters are ``rbloom.Bloom`` (Rust) sized from the expected ids per filter and the false-positive
rate, so memory per user is fixed (at most two filters) however many ids arrive; past the
expected count the false-positive rate rises instead of the memory. The filter is built for
``0.8 * fpr`` so that at its expected count the measured rate stays within the configured bound.
"""

from __future__ import annotations

from typing import Iterable, Iterator

import rbloom

from kconfigs_enforcement.quota_manager import BROKER_METRICS_SAMPLES, BROKER_METRICS_WINDOW_MS, MetricSample
from kconfigs_enforcement.rates import RateSensor
from kconfigs_enforcement.resolution import PRODUCER_IDS_KEY, QuotaSnapshot
from kconfigs_enforcement.sensors import AvgSensor, SensorRegistry

GROUP = "ProducerIds"
FPR_SAFETY = 0.8  # size for 80 % of the configured rate: the bound holds at the expected count


def new_filter(expected_ids: int, fpr: float) -> rbloom.Bloom:
    """A Bloom filter for ``expected_ids`` producer ids at a false-positive rate <= ``fpr``.

    rbloom's default hash is Python's ``hash`` for ints (not randomised per process), mixed by
    rbloom; measured false-positive rates match the design rate for random and sequential ids.
    """
    return rbloom.Bloom(max(int(expected_ids), 1), fpr * FPR_SAFETY)


class _UserIds:
    """One user's rotating pair of filters and its rate sensor."""

    __slots__ = ("newer", "older", "newer_opened_ms", "sensor")

    def __init__(self, sensor: RateSensor):
        self.newer = None
        self.older = None
        self.newer_opened_ms = 0
        self.sensor = sensor

    def rotate(self, now_ms: int, window_ms: int, make) -> None:
        """Bring the pair up to ``now_ms``: open a filter every window, drop at 1.5 windows."""
        if self.newer is None or now_ms - self.newer_opened_ms >= window_ms + window_ms // 2:
            self.newer, self.older, self.newer_opened_ms = make(), None, now_ms  # everything expired
            return
        if now_ms - self.newer_opened_ms >= window_ms:
            self.older, self.newer = self.newer, make()
            self.newer_opened_ms += window_ms
            if now_ms - self.newer_opened_ms >= window_ms:  # skipped a whole window: restart
                self.newer, self.older, self.newer_opened_ms = make(), None, now_ms
                return
        if self.older is not None and now_ms - (self.newer_opened_ms - window_ms) >= window_ms + window_ms // 2:
            self.older = None

    def count_new(self, producer_ids: Iterable[int]) -> int:
        newer, older, new_ids = self.newer, self.older, 0
        for pid in producer_ids:
            if pid in newer:
                continue
            newer.add(pid)
            if older is None or pid not in older:
                new_ids += 1
        return new_ids

    def live(self, now_ms: int, window_ms: int) -> bool:
        """False once even the newer filter is 1.5 windows old: the KIP removes the user."""
        return self.newer is not None and now_ms - self.newer_opened_ms < window_ms + window_ms // 2


class ProducerIdQuotaManager:
    """Counts unseen producer ids per user against ``producer_ids_rate`` (user levels only)."""

    def __init__(
        self,
        snapshot: QuotaSnapshot,
        samples: int,
        window_ms: int,
        legacy_pre_3_8: bool,
        expiry_ms: int,
        filter_window_ms: int,
        expected_ids: int,
        fpr: float,
    ):
        self._snapshot = snapshot
        self._samples, self._window_ms, self._legacy = samples, window_ms, legacy_pre_3_8
        self._filter_window_ms = filter_window_ms
        self._expected_ids, self._fpr = expected_ids, fpr
        self._users: dict[str, _UserIds] = {}
        self.throttle_sensors = SensorRegistry(expiry_ms)
        self._expiry_ms = expiry_ms

    def _make_filter(self) -> rbloom.Bloom:
        return new_filter(self._expected_ids, self._fpr)

    def record(self, user: str, producer_ids: Iterable[int], now_ms: int) -> int:
        """Count the ids of one produce request; returns the throttle ms (0 = none)."""
        state = self._users.get(user)
        if state is None:
            resolved = self._snapshot.resolve(user, "", PRODUCER_IDS_KEY)
            if resolved.value is None:
                return 0  # no quota for this user: nothing tracked, no memory used
            sensor = RateSensor(
                self._samples,
                self._window_ms,
                self._legacy,
                bound=resolved.value,
                now_ms=now_ms,
                name=f"ProducerIds-{resolved.metric_tags['user']}",
                tags=resolved.metric_tags,
                user=user,
            )
            state = self._users[user] = _UserIds(sensor)
        state.rotate(now_ms, self._filter_window_ms, self._make_filter)
        new_ids = state.count_new(producer_ids)
        if new_ids == 0:
            return 0
        throttle_ms = state.sensor.record_and_throttle(new_ids, now_ms)
        if throttle_ms > 0:
            self._throttle_sensor(state.sensor, now_ms).record(float(throttle_ms), now_ms)
        return throttle_ms

    def _throttle_sensor(self, sensor: RateSensor, now_ms: int) -> AvgSensor:
        name = f"ProducerIdsThrottleTime-{sensor.tags['user']}"
        avg = self.throttle_sensors.get(name)
        if avg is None:
            avg = AvgSensor(now_ms, name, sensor.tags, BROKER_METRICS_SAMPLES, BROKER_METRICS_WINDOW_MS)
            self.throttle_sensors.add(name, avg)
        return avg

    def tracked_users(self) -> int:
        return len(self._users)

    def swap_snapshot(self, snapshot: QuotaSnapshot) -> None:
        """Re-bound live users; a user whose quota is gone stops being tracked."""
        self._snapshot = snapshot
        for user in list(self._users):
            value = snapshot.resolve(user, "", PRODUCER_IDS_KEY).value
            if value is None:
                del self._users[user]
            else:
                self._users[user].sensor.bound = value

    def expire(self, now_ms: int) -> int:
        """Drop users with no live filter (their rate history is long gone by then too)."""
        removed = 0
        for user, state in list(self._users.items()):
            if not state.live(now_ms, self._filter_window_ms):
                del self._users[user]
                removed += 1
        return removed + self.throttle_sensors.expire(now_ms)

    def metrics(self, now_ms: int) -> Iterator[MetricSample]:
        for state in list(self._users.values()):
            yield MetricSample("rate", GROUP, dict(state.sensor.tags), state.sensor.measure(now_ms))
        for avg in list(self.throttle_sensors.values()):
            yield MetricSample("throttle-time", GROUP, dict(avg.tags), avg.avg.measure(now_ms))
