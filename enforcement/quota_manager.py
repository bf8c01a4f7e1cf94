"""Per quota type managers: Kafka's ``ClientQuotaManager``, ``ClientRequestQuotaManager`` and
``ControllerMutationQuotaManager`` over an immutable :class:`QuotaSnapshot`.

Bindings ``user -> client_id -> sensor`` cache the tag resolution so the hot path is one dict
lookup plus :meth:`RateSensor.record_and_throttle`. Bindings are dropped on every snapshot swap
(the tag shape may change) and on every expiry run (bounds memory when client-ids churn).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, NamedTuple

from kconfigs.keys import QUOTA_KINDS
from kconfigs_enforcement.rates import RateSensor, SampledRate
from kconfigs_enforcement.resolution import QuotaSnapshot
from kconfigs_enforcement.sensors import NO_CAP_MS, AvgSensor, SensorRegistry
from kconfigs_enforcement.stats import UNLIMITED
from kconfigs_enforcement.throttle import token_bucket_throttle_ms
from kconfigs_enforcement.token_bucket import TokenBucket

NANOS_TO_PERCENT_PER_SEC = 100.0 / 1_000_000_000  # ClientRequestQuotaManager.NanosToPercentagePerSecond
BROKER_METRICS_SAMPLES, BROKER_METRICS_WINDOW_MS = 2, 30_000  # metrics.num.samples / sample.window.ms

_FETCH, _REQUEST, _MUTATION = QUOTA_KINDS["fetch"], QUOTA_KINDS["request"], QUOTA_KINDS["controller_mutation"]


class MetricSample(NamedTuple):
    """One Kafka metric value: ``name`` (e.g. ``byte-rate``), ``group`` (``Produce``), ``tags``."""

    name: str
    group: str
    tags: dict
    value: float


@dataclass(frozen=True)
class MutationDecision:
    """Result of a controller mutation: throttle ms, and whether a strict request was rejected
    with THROTTLING_QUOTA_EXCEEDED (89)."""

    throttle_ms: int
    rejected: bool


@dataclass(frozen=True)
class SensorSettings:
    samples: int
    window_ms: int
    legacy_pre_3_8: bool
    expiry_ms: int
    cap_ms: int = NO_CAP_MS


class ClientQuotaManager:
    """One client quota type (``Produce``, ``Fetch`` or ``Request``) keyed by one quota key."""

    #: whether a throttled value is recorded back out (a throttled Fetch returns nothing)
    unrecords_throttled = False

    @staticmethod
    def recorded_value(value):
        """What the sensor records for an event's ``value`` (bytes here; request time converts)."""
        return value

    def __init__(self, quota_type: str, key: str, metric_name: str, snapshot: QuotaSnapshot, settings: SensorSettings):
        self.quota_type = quota_type
        self.key = key
        self.metric_name = metric_name
        self._settings = settings
        self._snapshot = snapshot
        self._enabled = snapshot.enabled_mask(key) != 0
        self._bindings: dict[str, dict[str, RateSensor]] = {}  # user -> client-id -> sensor
        self.sensors = SensorRegistry(settings.expiry_ms)
        self.throttle_sensors = SensorRegistry(settings.expiry_ms)
        #: sensor name -> the fraction of its quota this instance holds it to (a fleet's share);
        #: a sensor not named here holds ``new_sensor_share`` of its quota from its creation
        self._fleet_shares: dict[str, float] = {}
        self.new_sensor_share = 1.0
        #: sensor name -> its quota under this snapshot (the fleet link asks every period)
        self._quotas: dict[str, float] = {}

    @property
    def enabled(self) -> bool:
        """``quotasEnabled``: some level of this quota type has (ever) had a quota."""
        return self._enabled

    def record(self, user: str, client_id: str, value, now_ms: int) -> int:
        """``maybeRecordAndGetThrottleTimeMs``: record, return the throttle ms (0 if disabled)."""
        clients = self._bindings.get(user)  # nested dicts: no key tuple built per call
        sensor = None if clients is None else clients.get(client_id)
        if sensor is None:
            if not self._enabled:
                return 0
            sensor = self.sensor_for(user, client_id, now_ms)
        return sensor.record_and_throttle(value, now_ms)

    def recording_sensor(self, user: str, client_id: str, now_ms: int) -> RateSensor | None:
        """The sensor :meth:`record` records into (created as it would be), or None while it
        records nothing (the quota type disabled and no sensor bound): for a caller that records
        into the sensor itself, from other threads (the gateway's native data plane)."""
        clients = self._bindings.get(user)
        sensor = None if clients is None else clients.get(client_id)
        if sensor is None and self._enabled:
            sensor = self.sensor_for(user, client_id, now_ms)
        return sensor

    def unrecord(self, user: str, client_id: str, value, now_ms: int) -> None:
        """``unrecordQuotaSensor``: record ``-value`` unchecked. Like Kafka this creates the
        sensors even when the quota type is disabled (the fetch path calls it unconditionally)."""
        self.sensor_for(user, client_id, now_ms).record_no_check(-value, now_ms)

    def record_throttle(self, user: str, client_id: str, throttle_ms: int, now_ms: int) -> None:
        """``throttle()``: record the ms on this type's ``throttle-time`` (KIP-219: only the
        manager whose throttle won the max records it)."""
        sensor = self.sensor_for(user, client_id, now_ms)
        name = f"{self.quota_type}ThrottleTime-{sensor.tags['user']}:{sensor.tags['client-id']}"
        avg = self.throttle_sensors.get(name)
        if avg is None:
            avg = AvgSensor(now_ms, name, sensor.tags, BROKER_METRICS_SAMPLES, BROKER_METRICS_WINDOW_MS)
            self.throttle_sensors.add(name, avg)
        avg.record(float(throttle_ms), now_ms)

    def sensor_for(self, user: str, client_id: str, now_ms: int) -> RateSensor:
        """``getOrCreateQuotaSensors``: the shared sensor for this client's tags."""
        clients = self._bindings.get(user)
        sensor = None if clients is None else clients.get(client_id)
        if sensor is not None:
            return sensor
        user_tag, client_tag = self._snapshot.metric_tags(user, client_id, self.key)
        name = f"{self.quota_type}-{user_tag}:{client_tag}"
        sensor = self.sensors.get(name)
        if sensor is None:
            sensor = self._new_sensor(name, user, client_id, user_tag, client_tag, now_ms)
            self.sensors.add(name, sensor)
        self._bindings.setdefault(user, {})[client_id] = sensor
        return sensor

    def _new_sensor(self, name, user, client_id, user_tag, client_tag, now_ms) -> RateSensor:
        s = self._settings
        return RateSensor(
            s.samples,
            s.window_ms,
            s.legacy_pre_3_8,
            bound=self._shared(name, self._bound(user, client_id, user_tag, client_tag)),
            cap_ms=s.cap_ms,
            now_ms=now_ms,
            name=name,
            tags={"user": user_tag, "client-id": client_tag},
            user=user,
            client_id=client_id,
        )

    def _bound(self, user: str, client_id: str, user_tag: str, client_tag: str) -> float:
        value, _level = self._snapshot.limit_for_tags(self.key, user, client_id, user_tag, client_tag)
        return UNLIMITED if value is None else value

    def _shared(self, name: str, quota: float) -> float:
        if quota == UNLIMITED:
            return quota
        return quota * self._fleet_shares.get(name, self.new_sensor_share)

    def quota_of(self, sensor: RateSensor) -> float:
        """The quota configured for ``sensor``'s entity, before any fleet share (UNLIMITED: none)."""
        quota = self._quotas.get(sensor.name)
        if quota is None:
            quota = self._bound(sensor.user, sensor.client_id, sensor.tags["user"], sensor.tags["client-id"])
            self._quotas[sensor.name] = quota
        return quota

    def set_fleet_share(self, sensor: RateSensor, fraction: float) -> None:
        """Hold ``sensor`` to ``fraction`` of its quota from its next charge on: the share of an
        entity's quota a fleet of gateway instances gives this one. The bound is the sensor's own
        field, read by every charge (the native data plane's included); history is kept."""
        if self._fleet_shares.get(sensor.name) == fraction:
            return
        self._fleet_shares[sensor.name] = fraction
        sensor.bound = self._shared(sensor.name, self.quota_of(sensor))

    def swap_snapshot(self, snapshot: QuotaSnapshot) -> None:
        """``updateQuotaMetricConfigs``: re-bound live sensors in place (history kept); a removed
        quota becomes Long.MAX_VALUE. New tag shapes take effect through fresh bindings."""
        self._snapshot = snapshot
        self._enabled = snapshot.enabled_mask(self.key) != 0
        self._bindings = {}
        self._quotas = {}
        for sensor in self.sensors.values():
            sensor.bound = self._shared(sensor.name, self.quota_of(sensor))

    def expire(self, now_ms: int) -> int:
        self._bindings = {}
        removed = self.sensors.expire(now_ms) + self.throttle_sensors.expire(now_ms)
        for name in [name for name in self._fleet_shares if self.sensors.get(name) is None]:
            del self._fleet_shares[name]
        for name in [name for name in self._quotas if self.sensors.get(name) is None]:
            del self._quotas[name]
        return removed

    def limits(self) -> Iterator[MetricSample]:
        """The quota each live sensor is held to (its bound, in the unit of its usage metric),
        tagged as that metric is; a sensor with no quota (Long.MAX_VALUE) is left out."""
        for sensor in list(self.sensors.values()):
            if sensor.bound != UNLIMITED:
                yield MetricSample(self.metric_name, self.quota_type, dict(sensor.tags), sensor.bound)

    def metrics(self, now_ms: int) -> Iterator[MetricSample]:
        for sensor in list(self.sensors.values()):
            yield MetricSample(self.metric_name, self.quota_type, dict(sensor.tags), sensor.measure(now_ms))
        for avg in list(self.throttle_sensors.values()):
            yield MetricSample("throttle-time", self.quota_type, dict(avg.tags), avg.avg.measure(now_ms))


class FetchQuotaManager(ClientQuotaManager):
    """``Fetch``: a throttled fetch returns an empty response, so its bytes are unrecorded."""

    unrecords_throttled = True

    def __init__(self, snapshot: QuotaSnapshot, settings: SensorSettings):
        super().__init__(_FETCH.metric_group, _FETCH.name, "byte-rate", snapshot, settings)

    def max_value_in_window(self, user: str, client_id: str) -> float | None:
        """``getMaxValueInQuotaWindow``: the most one Fetch can return without being throttled on
        an otherwise empty window, Q·(N-1)·W (Q: this instance's share of the quota in a fleet);
        None without a quota. A broker caps a consumer's Fetch ``max_bytes`` (and ``min_bytes``)
        to it: a larger response would be throttled, and so answered empty, on every try, and the
        consumer would never get past it."""
        if not self._enabled:
            return None
        user_tag, client_tag = self._snapshot.metric_tags(user, client_id, self.key)
        quota, _level = self._snapshot.limit_for_tags(self.key, user, client_id, user_tag, client_tag)
        if quota is None:
            return None
        s = self._settings
        # in a fleet, of this instance's share: a response over it would be answered empty too
        share = self._fleet_shares.get(f"{self.quota_type}-{user_tag}:{client_tag}", self.new_sensor_share)
        return quota * share * (s.samples - 1) * (s.window_ms / 1000)

    def record_fetch(self, user: str, client_id: str, nbytes: int, now_ms: int, request_throttle_ms: int = 0) -> int:
        """Record; if this *or the request quota* throttles, unrecord the bytes (KafkaApis
        handleFetchRequest). Returns the bandwidth throttle ms."""
        clients = self._bindings.get(user)  # nested dicts: no key tuple built per call
        sensor = None if clients is None else clients.get(client_id)
        if sensor is None:
            if not self._enabled:
                if request_throttle_ms > 0:  # Kafka unrecords even with fetch quotas disabled
                    self.unrecord(user, client_id, nbytes, now_ms)
                return 0
            sensor = self.sensor_for(user, client_id, now_ms)
        throttle_ms = sensor.record_and_throttle(nbytes, now_ms)
        if throttle_ms > 0 or request_throttle_ms > 0:
            sensor.record_no_check(-nbytes, now_ms)
        return throttle_ms


class RequestQuotaManager(ClientQuotaManager):
    """``ClientRequestQuotaManager`` (KIP-124): thread time in ns recorded as percent-seconds
    (``ns * 100 / 1e9``), throttle capped at one sample window, plus the ``exempt-request-time``
    rate (never expires, no tags)."""

    @staticmethod
    def recorded_value(value):
        """Thread time in ns -> percent-seconds."""
        return value * NANOS_TO_PERCENT_PER_SEC

    def __init__(self, snapshot: QuotaSnapshot, settings: SensorSettings):
        super().__init__(_REQUEST.metric_group, _REQUEST.name, "request-time", snapshot, settings)
        self.exempt = SampledRate(BROKER_METRICS_SAMPLES, BROKER_METRICS_WINDOW_MS, settings.legacy_pre_3_8)

    def record_time(self, user: str, client_id: str, time_ns: int, now_ms: int) -> int:
        """Thread time in ns -> percent-seconds, recorded with the check (``record`` inlined)."""
        clients = self._bindings.get(user)  # nested dicts: no key tuple built per call
        sensor = None if clients is None else clients.get(client_id)
        if sensor is None:
            if not self._enabled:
                return 0
            sensor = self.sensor_for(user, client_id, now_ms)
        return sensor.record_and_throttle(self.recorded_value(time_ns), now_ms)

    def metrics(self, now_ms: int) -> Iterator[MetricSample]:
        yield from super().metrics(now_ms)
        yield MetricSample("exempt-request-time", self.quota_type, {}, self.exempt.measure(now_ms))


class MutationSensor(RateSensor):
    """A ControllerMutation sensor: the ``mutation-rate`` Rate (broker metrics config, no quota)
    and the ``tokens`` TokenBucket carrying the quota."""

    __slots__ = ("bucket",)


class ControllerMutationManager(ClientQuotaManager):
    """``ControllerMutationQuotaManager`` (KIP-599): token bucket, strict or permissive."""

    def __init__(self, snapshot: QuotaSnapshot, settings: SensorSettings, bucket_samples: int, bucket_window_ms: int):
        super().__init__(_MUTATION.metric_group, _MUTATION.name, "tokens", snapshot, settings)
        self._bucket_samples = bucket_samples
        self._bucket_window_ms = bucket_window_ms

    def _new_sensor(self, name, user, client_id, user_tag, client_tag, now_ms) -> RateSensor:
        bound = self._bound(user, client_id, user_tag, client_tag)
        sensor = MutationSensor(
            BROKER_METRICS_SAMPLES,
            BROKER_METRICS_WINDOW_MS,
            self._settings.legacy_pre_3_8,
            bound=bound,
            now_ms=now_ms,
            name=name,
            tags={"user": user_tag, "client-id": client_tag},
            user=user,
            client_id=client_id,
        )
        sensor.bucket = TokenBucket(self._bucket_samples, self._bucket_window_ms, bound)
        return sensor

    def record_mutations(self, user: str, client_id: str, count: int, now_ms: int, strict: bool) -> MutationDecision:
        """Strict (CreateTopics v6+, CreatePartitions v3+, DeleteTopics v5+): check *before*
        recording; reject only if the bucket is already negative. Permissive: record, then check."""
        if not self._enabled:
            return MutationDecision(0, False)  # UnboundedControllerMutationQuota
        sensor = self.sensor_for(user, client_id, now_ms)
        bucket = sensor.bucket
        if strict:
            tokens = bucket.measure(now_ms)
            if tokens < 0:
                return MutationDecision(token_bucket_throttle_ms(tokens, bucket.quota_per_sec), True)
        sensor.record_no_check(count, now_ms)
        bucket.record(count, now_ms)
        tokens = bucket.measure(now_ms)
        if not strict and tokens < 0:
            return MutationDecision(token_bucket_throttle_ms(tokens, bucket.quota_per_sec), False)
        return MutationDecision(0, False)

    def swap_snapshot(self, snapshot: QuotaSnapshot) -> None:
        super().swap_snapshot(snapshot)
        for sensor in self.sensors.values():
            sensor.bucket.quota_per_sec = sensor.bound

    def metrics(self, now_ms: int) -> Iterator[MetricSample]:
        for sensor in list(self.sensors.values()):
            tags = dict(sensor.tags)
            yield MetricSample("mutation-rate", self.quota_type, tags, sensor.measure(now_ms))
            yield MetricSample("tokens", self.quota_type, dict(tags), sensor.bucket.measure(now_ms))
        for avg in list(self.throttle_sensors.values()):
            yield MetricSample("throttle-time", self.quota_type, dict(avg.tags), avg.avg.measure(now_ms))
