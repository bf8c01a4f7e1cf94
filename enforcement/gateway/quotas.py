"""The gateway's door to the ``enforcement`` library: which sensor and quota apply to an entity.

``gateway/`` moves bytes and ``enforcement`` decides. The data plane charges produce, fetch and
request time itself, into the sensors this gate resolves for it (``resolve``), at the gate's
clock; this adapter swaps quota snapshots on reload and decides what the data plane asks of it
(connection attempts, producer ids). With no quotas configured nothing is charged (Kafka records
nothing for a quota type until one exists).
"""

from __future__ import annotations

import functools
import logging
import threading
from typing import Any, Callable, Iterable, Mapping

from kconfigs.clock import MONOTONIC, Clock
from kconfigs.keys import QUOTA_KINDS

log = logging.getLogger("kconfigs.gateway")
PRODUCER_IDS_RATE = QUOTA_KINDS["producer_id"].name
#: (entity dict {"user"/"client-id"/"ip": name or None = default}, {quota key: float})
QuotaRecords = Iterable[tuple[Mapping[str, str | None], Mapping[str, float]]]
#: the quota key behind each kind the data plane charges
KIND_KEYS = {kind: QUOTA_KINDS[kind].name for kind in ("produce", "fetch", "request", "producer_id")}
_CLIENT_QUOTA_KEYS = tuple(KIND_KEYS[kind] for kind in ("produce", "fetch", "request"))


def _locked(method):
    """One caller at a time: the native data plane charges from several worker threads, and the
    quota state (sensors, the entity map, snapshot swaps) must see one charge after another, so
    an entity's connections on different threads share one exact rate."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        with self._lock:
            return method(self, *args, **kwargs)

    return wrapper


class QuotaGate:
    """Per-gateway-instance quota state (like Kafka's per-broker quota managers)."""

    def __init__(
        self,
        window_num: int = 11,
        window_size_seconds: int = 1,
        clock: Clock = MONOTONIC,
        enforce_producer_ids: bool = True,
    ):
        """``clock``: the time quotas are charged at; the data plane reads it too, so it is the
        monotonic clock or the extension's ``ManualClock`` (``native_ext.ManualClock``)."""
        self._lock = threading.RLock()
        self.clock = clock
        self._clock_ms = clock.now_ms
        self._window = (window_num, window_size_seconds)
        self._enforcer: Any = None
        self._producer_id_users: frozenset[str | None] | None = frozenset()
        self._any_client_quota = False
        self._enforce_producer_ids = enforce_producer_ids
        #: called after each snapshot install (the native data plane learns whether to charge)
        self.load_listeners: list[Callable[[], None]] = []

    @property
    def active(self) -> bool:
        return self._enforcer is not None

    @property
    def lock(self) -> threading.RLock:
        """Held while the gate's sensors change: a fleet share set under it never interleaves
        with a snapshot install."""
        return self._lock

    def byte_rate_managers(self) -> list:
        """The produce and fetch quota managers, whose sensors a fleet shares (none before the
        first snapshot)."""
        enforcer = self._enforcer
        return [] if enforcer is None else [enforcer.produce, enforcer.fetch]

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
        return any(snapshot.resolve(user, client_id, KIND_KEYS[kind]).value is not None for kind in kinds)

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

    @_locked
    def unrecord_sensor(self, user: str, client_id: str | None) -> Any:
        """The fetch sensor Kafka's ``unrecordQuotaSensor`` creates even with fetch quotas disabled
        (a Fetch throttled by the request quota alone); the data plane unrecords into it."""
        return self._enforcer.fetch.sensor_for(user, client_id or "", self._clock_ms())

    @_locked
    def on_producer_ids(self, user: str, client_id: str | None, ip: str, ids: set[int]) -> int:
        """KIP-936: the throttle for ``user``'s new producer ids (the data plane counts them)."""
        if not ids or self._enforcer is None:
            return 0
        return int(self._enforcer.record_producer_ids(user, ids, self._clock_ms()) or 0)

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
        key = KIND_KEYS.get(kind)
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
        return bool(decision.accept), int(decision.delay_ms or 0)

    @_locked
    def connection_closed(self, ip: str) -> None:
        if self._enforcer is not None:
            self._enforcer.connection_closed(ip, self._clock_ms())

    @_locked
    def expire(self) -> None:
        """Kafka's sensor expiry; the snapshot's cached resolutions go too when sensors went (the
        data plane resolves each (kind, user, client-id) once, then asks again after this run)."""
        if self._enforcer is not None and self._enforcer.expire_sensors(self._clock_ms()):
            self._enforcer.snapshot.forget_resolutions()

    @_locked
    def limit_samples(self) -> list[Any]:
        """Each live client sensor's quota (``MetricSample``: usage metric name, quota type, tags, limit)."""
        return [] if self._enforcer is None else list(self._enforcer.limits())

    @_locked
    def metric_samples(self) -> list[Any]:
        return [] if self._enforcer is None else list(self._enforcer.metrics(self._clock_ms()))
