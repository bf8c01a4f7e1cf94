"""The gateway on the native data plane (``kconfigs_enforcement._native.DataPlane``: Rust, tokio, every core).

Rust moves the bytes: listeners, framing, headers, version caps, address and ApiVersions
rewriting, SASL observation, producer ids, KIP-219 mute and hold, throttle_time patching. Python
stays the control plane, reached through :class:`Bridge` for the rare or stateful decisions: the
quota state (one :class:`~kconfigs_enforcement.gateway.quotas.QuotaGate`; the data plane asks it
which sensor applies once per new (kind, user, client-id) and then records into that shared
native sensor itself, so an entity's connections on different threads share one rate, exactly as
on one broker), the quota admin API answers, Prometheus metrics, the usage log and logging. The
data plane asks for nothing while no quota is installed.

:class:`NativeGateway` is the running gateway
(``start``/``stop``/``bootstrap_address``/``quotas``/``stats``/``registry``/``usage_log``).
"""

from __future__ import annotations

import asyncio
import logging
import os
from dataclasses import dataclass
from typing import Any, Protocol

from kconfigs.clock import MONOTONIC
from kconfigs.errors import UsageError
from kconfigs_enforcement import rates
from kconfigs_enforcement.gateway import codec, versions
from kconfigs_enforcement.gateway.auth_probe import AnonymousProbe
from kconfigs_enforcement.gateway.config import Address, GatewayConfig
from kconfigs_enforcement.gateway.headers import parse_request_prefix
from kconfigs_enforcement.gateway.metrics import GatewayStats
from kconfigs_enforcement.gateway.native_ext import UNAVAILABLE, DataPlane, ManualClock
from kconfigs_enforcement.gateway.quotas import QuotaGate
from kconfigs_enforcement.gateway.usage_log import AppendedFile, UsageLog, open_usage_log

log = logging.getLogger("kconfigs.gateway")
_API_KEYS = range(0, 128)
_VERSIONS = range(0, 32)


def version_ceilings() -> dict[int, int]:
    """The gateway's own version ceiling per API key (-1 = removed), from :mod:`versions`."""
    ceilings = {}
    for key in _API_KEYS:
        ceiling = versions.allowed_max_version(key)
        if ceiling is not None:
            ceilings[key] = ceiling
    return ceilings


def throttle_first_versions() -> list[tuple[int, int]]:
    """(api key, version) pairs whose response body starts with throttle_time_ms."""
    return [(k, v) for k in _API_KEYS for v in _VERSIONS if codec.throttle_time_is_first_field(k, v)]


class ControlPlane(Protocol):
    """Every call the data plane (Rust) makes into Python, by name, from its worker threads. Rust
    calls none of them per request once an entity's sensors are resolved; ``resolve`` and
    ``max_fetch_bytes`` once per new (kind, user, client-id), ``connection_attempt`` /
    ``connection_closed`` per connection while quotas are installed."""

    def log(self, level: str, message: str) -> None: ...
    def event(self, name: str, label: str) -> None: ...
    def over_limit(self, ip: str, listener: str, reason: str) -> None: ...
    def connection_attempt(self, ip: str) -> tuple[bool, int]: ...
    def connection_closed(self, ip: str) -> None: ...
    def resolve(self, kind: str, user: str, client_id: str | None) -> tuple[Any, bool]: ...
    def max_fetch_bytes(self, user: str, client_id: str | None) -> float | None: ...
    def unrecord_sensor(self, user: str, client_id: str | None) -> Any: ...
    def on_producer_ids(self, user: str, client_id: str | None, ip: str, ids: list[int]) -> int: ...
    def owned_ranges(self, upstream_keys: list[int]) -> tuple[list[int], list[tuple[int, int, int]]]: ...
    def admin_answer(
        self,
        api_key: int,
        version: int,
        correlation_id: int,
        frame: bytes,
        principal: str,
        authenticated: bool,
        upstream: tuple[str, int],
    ) -> bytes | None: ...


class Bridge(ControlPlane):
    """The gateway's :class:`ControlPlane`. Called from data-plane threads."""

    def __init__(self, quotas: QuotaGate, stats: GatewayStats, admin: Any, probe: AnonymousProbe):
        self.quotas, self.stats, self.admin, self.probe = quotas, stats, admin, probe
        self._last_limit_log_ms = -10_000

    # ---- logging and metrics ----
    def log(self, level: str, message: str) -> None:
        log.log(logging.getLevelName(level.upper()), message)

    def event(self, name: str, label: str) -> None:
        if name == "opened":
            self.stats.connection_opened(label)
        elif name == "closed":
            self.stats.connection_closed(label)
        elif name == "refused":
            self.stats.connection_refused(label)
        elif name == "throttled":
            self.stats.throttled(label)
        elif name == "bad_frame":
            self.stats.bad_frame(label)

    def over_limit(self, ip: str, listener: str, reason: str) -> None:
        self.stats.connection_over_limit(listener, reason)
        now_ms = MONOTONIC.now_ms()
        if now_ms - self._last_limit_log_ms >= 10_000:  # a flood must not flood the log too
            self._last_limit_log_ms = now_ms
            log.warning(
                "refusing connections from %s on %s: %s reached (counted in "
                "kconfigs_gateway_connections_over_limit_total)",
                ip,
                listener,
                reason,
            )

    # ---- quotas ----
    def connection_attempt(self, ip: str) -> tuple[bool, int]:
        return self.quotas.connection_attempt(ip)

    def connection_closed(self, ip: str) -> None:
        self.quotas.connection_closed(ip)

    def resolve(self, kind: str, user: str, client_id: str | None) -> tuple[Any, bool]:
        """Asked once per new (kind, user, client-id); the data plane then records into the sensor."""
        return self.quotas.resolve(kind, user, client_id)

    def max_fetch_bytes(self, user: str, client_id: str | None) -> float | None:
        """Asked with ``resolve`` for a new (fetch, user, client-id)."""
        return self.quotas.max_fetch_bytes(user, client_id)

    def unrecord_sensor(self, user: str, client_id: str | None) -> Any:
        """The sensor a Fetch throttled by the request quota alone unrecords into (fetch quotas disabled)."""
        return self.quotas.unrecord_sensor(user, client_id)

    def on_producer_ids(self, user: str, client_id: str | None, ip: str, ids: list[int]) -> int:
        return self.quotas.on_producer_ids(user, client_id, ip, set(ids))

    # ---- quota admin (DescribeClientQuotas / AlterClientQuotas) ----
    def owned_ranges(self, upstream_keys: list[int]) -> tuple[list[int], list[tuple[int, int, int]]]:
        if self.admin is None:
            return [], []
        ranges = self.admin.owned_version_ranges(set(upstream_keys))
        return sorted(self.admin.owned_apis()), [(r.api_key, r.min_version, r.max_version) for r in ranges.values()]

    def admin_answer(
        self,
        api_key: int,
        version: int,
        correlation_id: int,
        frame: bytes,
        principal: str,
        authenticated: bool,
        upstream: tuple[str, int],
    ) -> bytes | None:
        """The response (header + body), or None to refuse: no auth downgrade (auth_probe)."""
        if not authenticated and not asyncio.run(self.probe.upstream_serves_anonymous(tuple(upstream))):
            return None
        return self.admin.answer_blocking(parse_request_prefix(frame), frame, principal)


@dataclass(frozen=True)
class ConnectionInfo:
    ip: str
    port: int
    listener: str
    principal: str


class _Context:
    """What callers read of a running gateway's connections."""

    def __init__(self, plane: Any):
        self._plane = plane

    @property
    def connections(self) -> list[ConnectionInfo]:
        return [ConnectionInfo(*c) for c in self._plane.connections()]


class _Registry:
    def __init__(self, plane: Any):
        self._plane = plane

    @property
    def mapping(self) -> dict[Address, Address]:
        return {tuple(upstream): tuple(advertised) for upstream, advertised in self._plane.mapping()}


def _native_clock(quotas: QuotaGate) -> Any:
    """The clock the data plane charges at: None for the monotonic one (it reads CLOCK_MONOTONIC
    itself), else the gate's ``ManualClock`` (shared memory, no Python call per charge).

    :raises UsageError: for another clock, which the data plane could not read
    """
    if quotas.clock is MONOTONIC:
        return None
    if ManualClock is not None and isinstance(quotas.clock, ManualClock):
        return quotas.clock
    raise UsageError("The gateway's quotas run on the monotonic clock or native_ext.ManualClock")


class NativeGateway:
    """The running gateway: ``await start()``, then ``await stop()`` (drains in-flight requests)."""

    def __init__(
        self,
        config: GatewayConfig,
        quotas: QuotaGate | None = None,
        admin: Any = None,
        usage_out: AppendedFile | None = None,
    ):
        """``usage_out``: the usage log, already opened (``kconfigs serve`` opens it before
        anything starts, to fail in one line); without it, ``config.usage_log_path`` is opened
        at ``start``."""
        if DataPlane is None:
            raise RuntimeError(UNAVAILABLE)
        if not rates.NATIVE:  # the data plane records into native sensors only
            raise UsageError(
                f"kconfigs serve charges quotas in the native rate core, not pure Python ({rates.DESCRIPTION})"
            )
        self.config = config
        self._usage_out = usage_out
        self.quotas = quotas or QuotaGate(
            config.quota_window_num, config.quota_window_size_seconds, enforce_producer_ids=config.enforce_producer_ids
        )
        self.stats = GatewayStats(self._metric_samples, self.streamed_frames, self.quotas.limit_samples)
        self.admin = admin
        self._bridge = Bridge(self.quotas, self.stats, admin, AnonymousProbe(config.upstream_connect_timeout_ms / 1000))
        try:
            self._plane = DataPlane(self._settings(), self._bridge, config.worker_threads, _native_clock(self.quotas))
        except ValueError as err:  # TLS files: unreadable, not PEM, or a key that is not the certificate's
            raise UsageError(f"Cannot start the data plane: {err}") from None
        self.quotas.load_listeners.append(self._quotas_loaded)
        self._plane.set_quota_active(self.quotas.active)
        if admin is not None:
            self._plane.set_admin_owned(sorted(admin.owned_apis()))
        self.registry = _Registry(self._plane)
        self.ctx = _Context(self._plane)
        self._port = None
        self._expiry_task: asyncio.Task | None = None
        self._drain_task: asyncio.Task | None = None
        self._usage_task: asyncio.Task | None = None
        self.usage_log = None

    def _drain_throttles(self) -> None:
        """Record what the data plane queued instead of calling Python per throttled request: the
        throttles for ``throttle-time`` (at their own time, in order) and the muted-connection
        counts."""
        for quota_type, user, client_id, throttle_ms, now_ms in self._plane.drain_throttles():
            self.quotas.record_throttle(quota_type, user, client_id, throttle_ms, now_ms)
        for listener, count in self._plane.drain_throttled():
            self.stats.throttled(listener, count)

    def _metric_samples(self) -> list:
        self._drain_throttles()  # a scrape sees every throttle so far
        return self.quotas.metric_samples()

    async def _drain_throttles_periodically(self, interval_s: float = 1.0) -> None:
        while True:
            await asyncio.sleep(interval_s)
            self._drain_throttles()

    def _quotas_loaded(self) -> None:
        self._plane.invalidate_quotas()  # sensors re-bound, tag shapes may differ: resolve again
        self._plane.set_quota_active(self.quotas.active)

    def _settings(self) -> dict:
        c = self.config
        return {
            "upstreams": [tuple(u) for u in c.upstreams],
            "listen_host": c.listen[0],
            "listen_port": c.listen[1],
            "advertised_host": c.advertised_host,
            "broker_port_start": c.broker_port_start,
            "max_frame_bytes": c.max_frame_bytes,
            "max_preauth_frame_bytes": c.max_preauth_frame_bytes,
            "max_inflight_requests": c.max_inflight_requests,
            "upstream_connect_timeout_ms": c.upstream_connect_timeout_ms,
            "connections_max_idle_ms": c.connections_max_idle_ms,
            "request_read_timeout_ms": c.request_read_timeout_ms,
            "max_connections": c.max_connections,
            "max_connections_per_ip": c.max_connections_per_ip,
            "require_authentication": c.require_authentication,
            "ceilings": version_ceilings(),
            "throttle_first": throttle_first_versions(),
            "tls_cert_file": c.tls_cert_file,
            "tls_key_file": c.tls_key_file,
            "tls_client_ca_file": c.tls_client_ca_file,
        }

    @property
    def rewrites(self) -> list[tuple[int, int, list[Address]]]:
        """(api key, version, upstream addresses) of the address rewrites so far (the latest 10,000)."""
        return [(key, version, [tuple(a) for a in addresses]) for key, version, addresses in self._plane.rewrites()]

    def node_endpoint_checks(self) -> dict[tuple[int, int], int]:
        """{(api key, version): Produce / Fetch responses checked for KIP-951 NodeEndpoints}."""
        return {(key, version): count for key, version, count in self._plane.node_endpoint_checks()}

    def streamed_frames(self) -> dict[str, int]:
        """Large frames forwarded as they arrived instead of held whole: Produce requests, Fetch
        and ShareFetch responses, and the bytes of theirs moved socket to socket by splice."""
        produce, fetch, share_fetch, spliced = self._plane.streamed()
        return {
            "produce_requests": produce,
            "fetch_responses": fetch,
            "share_fetch_responses": share_fetch,
            "spliced_bytes": spliced,
        }

    @property
    def bootstrap_address(self) -> Address:
        return self.config.advertised_host, self._port

    async def start(self) -> None:
        out = self._usage_out
        if out is None and self.config.usage_log_path:
            out = open_usage_log(self.config.usage_log_path)
        self._port = await asyncio.get_running_loop().run_in_executor(None, self._plane.start)
        self._expiry_task = asyncio.create_task(self._expire_sensors_periodically())
        self._drain_task = asyncio.create_task(self._drain_throttles_periodically())
        if out is not None:
            self.usage_log = UsageLog(
                out,
                self.config.usage_log_window_ms,
                self.quotas.quota_for,
                clock_ms=self.quotas.clock.wall_ms,
                lost=self.stats.usage_lines_lost,
            )
            self.usage_log.sources.append(self._plane.drain_usage)  # every charge is the data plane's
            self._plane.set_usage_window(self.config.usage_log_window_ms)
            self._usage_task = asyncio.create_task(self.usage_log.run_periodic_flush())
        host = self.config.listen[0]
        log.info(
            "gateway listening on %s:%d for upstream %s",
            host,
            self._port,
            ",".join(f"{h}:{p}" for h, p in self.config.upstreams),
        )
        log.info(
            "data path: native (Rust, %s worker threads); rate core: %s",
            self.config.worker_threads or os.cpu_count(),
            rates.DESCRIPTION,
        )

    async def _expire_sensors_periodically(self, interval_s: float = 30.0) -> None:
        while True:  # Kafka's expiry task runs every 30 s
            await asyncio.sleep(interval_s)
            self.expire_sensors()

    def expire_sensors(self) -> None:
        """Kafka's ``ExpireSensorTask``: sensors idle for an hour go (the gateway runs it every 30 s)."""
        self._drain_throttles()  # recorded before their sensors can expire
        self.quotas.expire()
        self._plane.invalidate_quotas()  # expired sensors are gone: resolve again

    def charge(
        self, kind: str, user: str, client_id: str | None, ip: str, value: int, request_throttle_ms: int = 0
    ) -> int:
        """Charge one request of ``kind`` as a worker thread does ("produce" / "fetch": bytes,
        "request": thread time in ns), without sockets: for tests and benchmarks that drive the
        charging path in process. Returns the throttle in ms."""
        return self._plane.charge(kind, user, client_id, ip, value, request_throttle_ms)

    def close(self) -> None:
        """Release a gateway that was never started (its worker threads)."""
        self._plane.stop(0)

    async def stop(self) -> None:
        """Stop accepting, let in-flight requests finish (bounded by drain_timeout_ms), close."""
        if self._expiry_task is not None:
            self._expiry_task.cancel()
            self._drain_task.cancel()
        drained = await asyncio.get_running_loop().run_in_executor(None, self._plane.stop, self.config.drain_timeout_ms)
        self._drain_throttles()
        if self.usage_log is not None:
            self._usage_task.cancel()
            self.usage_log.flush()
            self.usage_log.close()
        log.info("gateway stopped after draining %d connections", drained)
