"""The gateway's door to the ``enforcement`` library: charge an entity, get a throttle.

``gateway/`` moves bytes and ``enforcement`` decides. This adapter supplies ``now_ms`` from a
monotonic clock, swaps quota snapshots on reload, and feeds the usage log. With no quotas
configured it charges nothing (Kafka records nothing for a quota type until one exists).
"""

from __future__ import annotations

import functools
import logging
import threading
from typing import Any, Callable, Iterable, Mapping

from kconfigs.clock import MONOTONIC
from kconfigs.keys import QUOTA_KINDS

log = logging.getLogger("kconfigs.gateway")
PRODUCER_IDS_RATE = QUOTA_KINDS["producer_id"].name
#: (entity dict {"user"/"client-id"/"ip": name or None = default}, {quota key: float})
QuotaRecords = Iterable[tuple[Mapping[str, str | None], Mapping[str, float]]]
_KIND_KEYS = {kind: QUOTA_KINDS[kind].name for kind in ("produce", "fetch", "request", "producer_id")}
_CLIENT_QUOTA_KEYS = tuple(_KIND_KEYS[kind] for kind in ("produce", "fetch", "request"))
UsageSink = Callable[[str, str | None, str, str, float, int], None]


def _locked(method):
    """One caller at a time: the native data plane charges from several worker threads, and the
    quota state (sensors, the entity map, snapshot swaps) must see one charge after another, so
    an entity's connections on different threads share one exact rate."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        with self._lock:
            return method(self, *args, **kwargs)

    return wrapper


monotonic_ms = MONOTONIC.now_ms


class QuotaGate:
    """Per-gateway-instance quota state (like Kafka's per-broker quota managers)."""

    def __init__(
        self,
        window_num: int = 11,
        window_size_seconds: int = 1,
        clock_ms: Callable[[], int] = monotonic_ms,
        enforce_producer_ids: bool = True,
    ):
        self._lock = threading.RLock()
        self._clock_ms = clock_ms
        self._window = (window_num, window_size_seconds)
        self._enforcer: Any = None
        self._producer_id_users: frozenset[str | None] | None = frozenset()
        self._any_client_quota = False
        self._enforce_producer_ids = enforce_producer_ids
        self.usage_sinks: list[UsageSink] = []
        #: called after each snapshot install (the native data plane learns whether to charge)
        self.load_listeners: list[Callable[[], None]] = []

    @property
    def on_monotonic_clock(self) -> bool:
        """Whether ``now_ms`` is CLOCK_MONOTONIC's (``time.monotonic_ns``) in ms."""
        return self._clock_ms == monotonic_ms

    @property
    def active(self) -> bool:
        return self._enforcer is not None

    @_locked
    def load(self, records: QuotaRecords) -> None:
        """Install a full quota snapshot; the next request is judged by it (live reload)."""
        import kconfigs_enforcement

        records = list(records)
        snapshot = kconfigs_enforcement.QuotaSnapshot.from_records(records)
        if self._enforcer is None:
            config = kconfigs_enforcement.EnforcementConfig(samples=self._window[0], window_ms=self._window[1] * 1000)
            self._enforcer = kconfigs_enforcement.Enforcer(snapshot, config)
        else:
            self._enforcer.swap_snapshot(snapshot)
        users = {entity.get("user") for entity, quotas in records if PRODUCER_IDS_RATE in quotas}
        self._producer_id_users = frozenset(users)
        #: no produce/fetch/request quota anywhere: nothing can throttle (checked per request)
        self._any_client_quota = any(key in quotas for _entity, quotas in records for key in _CLIENT_QUOTA_KEYS)
        log.info("quota snapshot installed: %d entities", len(records))
        for listener in self.load_listeners:
            listener()

    @_locked
    def wants_producer_ids(self, user: str) -> bool:
        """Only decode Produce requests when a producer-id quota could apply to ``user``."""
        users = self._producer_id_users
        return bool(
            self._enforce_producer_ids and self._enforcer is not None and users and (user in users or None in users)
        )

    @_locked
    def max_fetch_bytes(self, user: str, client_id: str | None) -> float | None:
        """What a consumer's Fetch may ask for at most (``FetchQuotaManager.max_value_in_window``)."""
        if self._enforcer is None:
            return None
        return self._enforcer.fetch.max_value_in_window(user, client_id or "")

    @_locked
    def may_throttle(self, user: str, client_id: str | None, kinds: tuple[str, ...]) -> bool:
        """Whether a finite quota of one of ``kinds`` ("produce", "fetch", "request") applies."""
        if self._enforcer is None or not self._any_client_quota:
            return False
        snapshot, client_id = self._enforcer.snapshot, client_id or ""
        return any(snapshot.resolve(user, client_id, _KIND_KEYS[kind]).value is not None for kind in kinds)

    @_locked
    def resolve(self, kind: str, user: str, client_id: str | None) -> tuple[Any, bool]:
        """(the sensor a charge of ``kind`` records into, or None when Kafka records nothing; whether
        a finite quota applies). The native data plane asks once per new (kind, user, client-id)
        and records into the returned sensor itself until a reload or expiry run (the same
        choice as the manager's ``record``: an existing binding, else a new sensor if enabled).
        ``producer_id`` has no sensor here: the answer is :meth:`wants_producer_ids`."""
        if kind == "producer_id":
            return None, self.wants_producer_ids(user)
        if self._enforcer is None:
            return None, False
        managers = {"produce": self._enforcer.produce, "fetch": self._enforcer.fetch, "request": self._enforcer.request}
        client_id = client_id or ""
        sensor = managers[kind].recording_sensor(user, client_id, self._clock_ms())
        return sensor, self.may_throttle(user, client_id, (kind,))

    def on_produce(self, user: str, client_id: str | None, ip: str, nbytes: int) -> int:
        return self._charge(
            "produce", user, client_id, ip, nbytes, lambda e, now: e.record_produce(user, client_id or "", nbytes, now)
        )

    def on_fetch(self, user: str, client_id: str | None, ip: str, nbytes: int) -> int:
        # Not Enforcer.record_fetch: Kafka unrecords a throttled fetch because it sends an empty
        # response instead; the gateway forwards the broker's response as it is (no fabricated
        # records), so the bytes were delivered and must stay counted.
        return self._charge(
            "fetch", user, client_id, ip, nbytes, lambda e, now: e.fetch.record(user, client_id or "", nbytes, now)
        )

    @_locked
    def on_fetch_replaced(
        self, user: str, client_id: str | None, ip: str, nbytes: int, request_throttle_ms: int
    ) -> int:
        """A Fetch as a broker charges it (KafkaApis handleFetchRequest): when this or the request
        quota throttles, the data plane answers with an empty throttled response instead, so the
        bytes are unrecorded (the consumer fetches the same offsets again: nothing is lost)."""
        if self._enforcer is None:
            return 0
        throttle_ms = int(
            self._enforcer.record_fetch(user, client_id or "", nbytes, self._clock_ms(), request_throttle_ms) or 0
        )
        delivered = 0 if throttle_ms > 0 or request_throttle_ms > 0 else nbytes
        for sink in self.usage_sinks:
            sink("fetch", user, client_id or "", ip, delivered, throttle_ms)
        return throttle_ms

    def on_request_time(self, user: str, client_id: str | None, ip: str, time_ns: int) -> int:
        return self._charge(
            "request",
            user,
            client_id,
            ip,
            time_ns,
            lambda e, now: e.record_request_time(user, client_id or "", time_ns, now),
        )

    def on_producer_ids(self, user: str, client_id: str | None, ip: str, ids: set[int]) -> int:
        if not ids:
            return 0
        return self._charge(
            "producer_id", user, client_id, ip, len(ids), lambda e, now: e.record_producer_ids(user, ids, now)
        )

    @_locked
    def _charge(
        self, kind: str, user: str, client_id: str | None, ip: str, value: float, record: Callable[[Any, int], int]
    ) -> int:
        if self._enforcer is None:
            return 0
        throttle_ms = int(record(self._enforcer, self._clock_ms()) or 0)
        for sink in self.usage_sinks:
            sink(kind, user, client_id or "", ip, value, throttle_ms)
        return throttle_ms

    @_locked
    def record_throttle(
        self, quota_type: str, user: str, client_id: str | None, throttle_ms: int, now_ms: int | None = None
    ) -> None:
        """Record the winning throttle on ``<quota_type>`` ``throttle-time`` (KIP-219), at ``now_ms``
        (default: now; the native data plane queues its throttles and passes their own time)."""
        if self._enforcer is not None and throttle_ms > 0:
            now_ms = self._clock_ms() if now_ms is None else now_ms
            self._enforcer.record_throttle(quota_type, user, client_id or "", throttle_ms, now_ms)

    def quota_for(self, kind: str, user: str | None, client_id: str | None, ip: str | None) -> float | None:
        """The effective quota behind a usage-log ``kind`` (None = unlimited or no quotas).

        Not locked: it reads one immutable snapshot, and the usage log calls it under its own lock
        (which a charge takes inside this object's lock)."""
        if self._enforcer is None:
            return None
        snapshot = self._enforcer.snapshot
        if kind == "connection":
            return snapshot.resolve_ip(ip or "").value
        key = _KIND_KEYS.get(kind)
        if key is None:
            return None
        try:
            return snapshot.resolve(user or "", client_id or "", key).value
        except KeyError:  # a key the snapshot resolves per user only (producer ids)
            return None

    @_locked
    def connection_attempt(self, ip: str) -> tuple[bool, int]:
        """KIP-612: (accept, delay_ms). A refused connection is closed after ``delay_ms``."""
        if self._enforcer is None:
            return True, 0
        decision = self._enforcer.connection_attempt(ip, self._clock_ms())
        for sink in self.usage_sinks:
            sink(
                "connection",
                None,
                None,
                ip,
                1 if decision.accept else 0,
                decision.delay_ms if not decision.accept else 0,
            )
        return bool(decision.accept), int(decision.delay_ms or 0)

    @_locked
    def connection_closed(self, ip: str) -> None:
        if self._enforcer is not None:
            self._enforcer.connection_closed(ip, self._clock_ms())

    @_locked
    def expire(self) -> None:
        if self._enforcer is not None:
            self._enforcer.expire_sensors(self._clock_ms())

    @_locked
    def limit_samples(self) -> list[Any]:
        """Each live client sensor's quota (``MetricSample``: usage metric name, quota type, tags, limit)."""
        return [] if self._enforcer is None else list(self._enforcer.limits())

    @_locked
    def metric_samples(self) -> list[Any]:
        return [] if self._enforcer is None else list(self._enforcer.metrics(self._clock_ms()))
