"""The facade the gateway, ``kconfigs simulate`` and the Spark what-if replay call.

Every method takes ``now_ms``; nothing here reads a clock. One ``Enforcer`` is one broker: quotas
are per broker in Kafka, and sensors are shared by every connection of the same client.
Not thread-safe: callers serialise (the gateway runs it on one event loop).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from kconfigs.keys import QUOTA_KINDS
from kconfigs_enforcement.connection_quota import ConnectionQuotaManager
from kconfigs_enforcement.producer_ids import ProducerIdQuotaManager
from kconfigs_enforcement.quota_manager import (
    ClientQuotaManager,
    ControllerMutationManager,
    FetchQuotaManager,
    MetricSample,
    MutationDecision,
    RequestQuotaManager,
    SensorSettings,
)
from kconfigs_enforcement.resolution import QuotaSnapshot

PRODUCE = QUOTA_KINDS["produce"]


@dataclass(frozen=True)
class EnforcementConfig:
    """Broker settings that shape enforcement (Kafka defaults).

    ``samples``/``window_ms``: ``quota.window.num`` / ``quota.window.size.seconds * 1000``
    (produce, fetch, request and connection rates). ``controller_*``: the token bucket's.
    ``broker_connection_rate``: ``max.connection.creation.rate`` (None = Int.MAX_VALUE).
    ``producer_id_*``: KIP-936 (not in Kafka): the rate sensor uses ``samples``/``window_ms``, the
    Bloom filters rotate every ``producer_id_filter_window_ms`` and are sized for
    ``producer_id_expected`` ids at ``producer_id_fpr``.
    ``legacy_pre_3_8``: brokers before 3.8.0 (ring of N samples, purge by sample start).
    """

    samples: int = 11
    window_ms: int = 1000
    controller_samples: int = 11
    controller_window_ms: int = 1000
    sensor_expiry_ms: int = 3_600_000
    broker_connection_rate: float | None = None
    producer_id_expected: int = 10_000
    producer_id_fpr: float = 0.01
    producer_id_filter_window_ms: int = 3_600_000
    legacy_pre_3_8: bool = False

    def __post_init__(self) -> None:
        for name in (
            "samples",
            "window_ms",
            "controller_samples",
            "controller_window_ms",
            "producer_id_expected",
            "producer_id_filter_window_ms",
        ):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be >= 1")
        if not 0.0 < self.producer_id_fpr < 1.0:
            raise ValueError("producer_id_fpr must be between 0 and 1")


DEFAULT_CONFIG = EnforcementConfig()


class Enforcer:
    """Kafka's quota managers over a swappable :class:`QuotaSnapshot`."""

    def __init__(self, snapshot: QuotaSnapshot, config: EnforcementConfig = DEFAULT_CONFIG):
        self.config = c = config
        self._snapshot = snapshot
        byte_rate = SensorSettings(c.samples, c.window_ms, c.legacy_pre_3_8, c.sensor_expiry_ms)
        capped = SensorSettings(c.samples, c.window_ms, c.legacy_pre_3_8, c.sensor_expiry_ms, cap_ms=c.window_ms)
        self.produce = ClientQuotaManager(PRODUCE.metric_group, PRODUCE.name, "byte-rate", snapshot, byte_rate)
        self.fetch = FetchQuotaManager(snapshot, byte_rate)
        self.request = RequestQuotaManager(snapshot, capped)
        self.mutations = ControllerMutationManager(snapshot, byte_rate, c.controller_samples, c.controller_window_ms)
        self.connections = ConnectionQuotaManager(
            snapshot, c.samples, c.window_ms, c.legacy_pre_3_8, c.sensor_expiry_ms, c.broker_connection_rate
        )
        self.producer_ids = ProducerIdQuotaManager(
            snapshot,
            c.samples,
            c.window_ms,
            c.legacy_pre_3_8,
            c.sensor_expiry_ms,
            c.producer_id_filter_window_ms,
            c.producer_id_expected,
            c.producer_id_fpr,
        )
        # Hot path: bound methods stored on the instance skip one Python call level per decision.
        self.record_produce = self.produce.record
        self.record_fetch = self.fetch.record_fetch  # (user, client_id, nbytes, now_ms, request_throttle_ms=0)
        self.record_request_time = self.request.record_time
        self.record_producer_ids = self.producer_ids.record
        self.connection_attempt = self.connections.attempt
        self.connection_closed = self.connections.closed

    @property
    def snapshot(self) -> QuotaSnapshot:
        return self._snapshot

    def _client_managers(self) -> tuple[ClientQuotaManager, ...]:
        return (self.produce, self.fetch, self.request, self.mutations)

    def swap_snapshot(self, snapshot: QuotaSnapshot) -> None:
        """Install new quotas (atomic for a single-threaded caller): live sensors keep their
        history and get the new bounds; enabled levels are OR-ed as in Kafka <= 4.0."""
        snapshot = snapshot.with_sticky_masks(self._snapshot)
        self._snapshot = snapshot
        for manager in self._client_managers():
            manager.swap_snapshot(snapshot)
        self.connections.swap_snapshot(snapshot)
        self.producer_ids.swap_snapshot(snapshot)

    # -- recording (record_produce, record_fetch, record_request_time, record_producer_ids,
    #    connection_attempt and connection_closed are bound in __init__) -------------------------

    def record_mutations(self, user: str, client_id: str, count: int, now_ms: int, strict: bool) -> MutationDecision:
        return self.mutations.record_mutations(user, client_id, count, now_ms, strict)

    def record_throttle(self, quota_type: str, user: str, client_id: str, throttle_ms: int, now_ms: int) -> None:
        """Record the winning throttle on ``Produce``/``Fetch``/``Request``/``ControllerMutation``
        ``throttle-time`` (KIP-219: the broker records only the larger of bandwidth and request)."""
        managers = {m.quota_type: m for m in self._client_managers()}
        if quota_type not in managers:
            raise ValueError(f"Unknown quota type: {quota_type}")
        if throttle_ms > 0:
            managers[quota_type].record_throttle(user, client_id, throttle_ms, now_ms)

    def expire_sensors(self, now_ms: int) -> int:
        """Kafka's ``ExpireSensorTask`` (run it every 30 s): remove sensors idle > 1 h."""
        removed = sum(m.expire(now_ms) for m in self._client_managers())
        return removed + self.connections.expire(now_ms) + self.producer_ids.expire(now_ms)

    def limits(self) -> Iterator[MetricSample]:
        """The produce, fetch and request quota each live client sensor is held to."""
        for manager in self._client_managers():
            yield from manager.limits()

    def metrics(self, now_ms: int) -> Iterator[MetricSample]:
        """Every live metric, measured at ``now_ms`` (a measure purges, as a JMX read does)."""
        for manager in self._client_managers():
            if manager.enabled or len(manager.sensors):
                yield from manager.metrics(now_ms)
        yield from self.connections.metrics(now_ms)
        yield from self.producer_ids.metrics(now_ms)
