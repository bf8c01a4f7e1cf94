"""Assemble and run the gateway: store + live reload, quota admin, listeners, Prometheus
endpoint, structured logs, and SIGTERM/SIGINT draining. ``kconfigs serve`` calls :func:`run`."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import sys
import time
from typing import TYPE_CHECKING, Iterator

from kconfigs.errors import UsageError
from kconfigs_enforcement.gateway.config import GatewayConfig, parse_address
from kconfigs_enforcement.gateway.health import admin_security_protocol, os_error_reason

if TYPE_CHECKING:
    from kconfigs.profiles import StoreOptions

log = logging.getLogger("kconfigs.gateway")


class JsonLogFormatter(logging.Formatter):
    """One JSON object per line: ts, level, logger, msg (+ exc when present)."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry)


def configure_logging(log_format: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        JsonLogFormatter()
        if log_format == "json"
        else logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s")
    )
    root = logging.getLogger("kconfigs")
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)


def resolve_gateway_store(
    config: GatewayConfig, flags: dict[str, str | None], profile: str | None
) -> tuple[GatewayConfig, "StoreOptions"]:
    """The store every other command would use for these options (the same resolution: flags,
    here over the settings of the --config file, then KCONFIGS_* variables, then a profile), and
    the validated settings, whose upstream defaults to the cluster named as the quota source.

    :raises UsageError, ValidationError:"""
    from kconfigs.profiles import resolve_store_options

    merged = {field: value if value is not None else getattr(config, field) for field, value in flags.items()}
    store = resolve_store_options(merged, profile if profile is not None else config.profile)
    protocol = admin_security_protocol(store.command_config) if store.bootstrap_server else "PLAINTEXT"
    return config.with_upstreams_of(store, protocol).validate(), store


def open_gateway_store(options: "StoreOptions"):
    """Open the resolved store for serving. An embedded store must exist, named or the default
    one: a mistyped path, or a forgotten --zookeeper, would otherwise start a gateway that
    enforces no quotas (the quota admin API may still write to it). :raises StoreUnavailable,
    UsageError:"""
    from kconfigs.stores.factory import Access, open_store

    if options.is_embedded_default:
        _require_default_store()
    return open_store(options, access=Access.SERVE)


def source_is_upstream(config: GatewayConfig, store: "StoreOptions") -> bool:
    """Whether the quota source is the cluster the gateway forwards to (the same bootstrap
    addresses): then a quota alter passed through to the upstream changes what is enforced."""
    if not store.bootstrap_server:
        return False
    named = {parse_address(address, "bootstrap server") for address in store.bootstrap_server.split(",") if address}
    return named == set(config.upstreams)


def quota_admin_mode(config: GatewayConfig, store: "StoreOptions") -> str:
    """``auto`` passes DescribeClientQuotas/AlterClientQuotas to an upstream that is the quota
    source; in front of any other upstream the gateway answers them from its store, so that a
    kafka-configs alter through the gateway changes what it enforces (or is refused saying where
    the quotas are), never a broker's quotas the gateway does not read."""
    if config.quota_admin == "auto" and not source_is_upstream(config, store):
        return "gateway"
    return config.quota_admin


def _require_default_store() -> None:
    from kconfigs.stores.sqlite import default_store_path

    path = default_store_path()
    if not path.exists():
        raise UsageError(
            f"No quota store named and the default embedded store {path} does not exist: "
            "name one with --zookeeper or --store (kconfigs apply or kconfigs alter creates an embedded store)"
        )


async def serve(config: GatewayConfig, store, store_options: "StoreOptions", usage_out=None) -> bool:
    """Run until SIGTERM/SIGINT, then drain in-flight requests and stop. Returns whether the
    store's watch has stopped (else a read of it still runs, on a daemon thread)."""
    from kconfigs_enforcement.gateway.admin import QuotaAdmin
    from kconfigs_enforcement.gateway.health import Readiness, store_description
    from kconfigs_enforcement.gateway.native_plane import NativeGateway
    from kconfigs_enforcement.gateway.reload import QuotaReloader

    described = store_description(store_options, admin_security_protocol(store_options.command_config))
    mode = quota_admin_mode(config, store_options)
    admin = None if mode == "passthrough" else QuotaAdmin(store, mode, config.quota_admin_principals, described)
    _log_store(config, store_options, described, mode)
    gateway = NativeGateway(config, admin=admin, usage_out=usage_out)
    loop = asyncio.get_running_loop()
    reloader = QuotaReloader(store, loop, gateway.quotas.load)
    await loop.run_in_executor(None, reloader.start)
    readiness = Readiness(config.upstreams, reloader.first_snapshot.is_set, described)
    first_load = loop.create_task(_say_if_no_quotas_yet(reloader.first_snapshot, described, FIRST_LOAD_WAIT_S))
    fleet = start_fleet_link(config, gateway)
    try:
        await _serve_until_signal(config, gateway, loop, readiness, fleet)
    finally:
        if fleet is not None:
            await loop.run_in_executor(None, fleet.stop)
        first_load.cancel()
        stopped = reloader.close(WATCH_CLOSE_WAIT_S)
        if not stopped:
            log.warning("a read of %s still runs at stop: not waiting for it", described)
    return stopped


#: how long a stopping gateway waits for its store's watch (a read of an unreachable cluster runs
#: until its request timeout); the process exits without it
WATCH_CLOSE_WAIT_S = 2.0

#: how long the first quota snapshot may take before the log says none is enforced yet
FIRST_LOAD_WAIT_S = 10.0

#: what each quota-admin mode does with DescribeClientQuotas/AlterClientQuotas, for the start-up log
_ADMIN_MODES = {
    "auto": "passed to the upstream, the quota source (answered here if it lacks them)",
    "gateway": "answered from the quota store",
    "passthrough": "passed to the upstream",
}


def _log_store(config: GatewayConfig, store_options: "StoreOptions", described: str, mode: str) -> None:
    """Which store is served, from where it was named, and where a quota alter through the gateway goes."""
    origin = "" if store_options.origin == "default" else f" (from {store_options.origin})"
    log.info("quota store: %s%s; quota admin API: %s", described, origin, _ADMIN_MODES[mode])
    if mode == "passthrough" and not source_is_upstream(config, store_options):
        log.warning(
            "quota_admin = passthrough: quota alters through the gateway change the upstream's quotas, "
            "not the %s the gateway enforces",
            described,
        )


async def _say_if_no_quotas_yet(loaded: asyncio.Event, described: str, wait_s: float) -> None:
    try:
        await asyncio.wait_for(loaded.wait(), wait_s)
    except asyncio.TimeoutError:
        log.warning(
            "no quotas loaded from %s after %g s: clients pass unthrottled and /readyz answers 503 until they are",
            described,
            wait_s,
        )


def start_fleet_link(config: GatewayConfig, gateway):
    """With a fleet name: the link that shares this instance's produce and fetch quotas with the
    fleet's other instances, through a topic on the upstream cluster (None without one)."""
    if not config.fleet_name:
        return None
    from kconfigs_enforcement.gateway.fleet_link import FleetLink
    from kconfigs_enforcement.gateway.metrics import FleetCollector

    gate = gateway.quotas

    bootstrap = ",".join(f"{host}:{port}" for host, port in config.upstreams)
    link = FleetLink(
        config.fleet_name, bootstrap, gate.byte_rate_managers, gate.lock, config.fleet_topic, config.fleet_period_ms
    )
    gateway.stats.registry.register(FleetCollector(link))
    link.start()
    log.info(
        "fleet %s: instance %s shares its quotas through topic %s every %d ms",
        link.fleet,
        link.instance_id,
        link.topic,
        config.fleet_period_ms,
    )
    return link


async def _serve_until_signal(config: GatewayConfig, gateway, loop, readiness, fleet=None) -> None:
    from kconfigs_enforcement.gateway.metrics import start_http_endpoint

    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):  # before the listeners: a stop while starting drains too
        loop.add_signal_handler(signum, stop.set)
    with _bind_errors(config.listen):
        await gateway.start()
    if fleet is not None and gateway.usage_log is not None:
        gateway.usage_log.fleet_rate_lookup = fleet.fleet_rate_for
    try:
        with _bind_errors(config.metrics_listen):
            metrics_server = (
                start_http_endpoint(
                    gateway.stats,
                    *config.metrics_listen,
                    not_ready=readiness.not_ready,
                    detail=fleet.readiness_detail if fleet is not None else lambda: "",
                )
                if config.metrics_listen
                else None
            )
    except UsageError:
        await gateway.stop()
        raise
    if config.metrics_listen:
        host, port = config.metrics_listen
        log.info("metrics on http://%s:%d/metrics, liveness /healthz, readiness /readyz", host, port)
    upstream_check = loop.create_task(check_upstreams(config.upstreams, config.upstream_connect_timeout_ms / 1000))
    await stop.wait()
    log.info("signal received: draining in-flight requests (up to %d ms)", config.drain_timeout_ms)
    upstream_check.cancel()
    await gateway.stop()
    if metrics_server is not None:
        metrics_server.shutdown()


UPSTREAM_RECHECK_S = 5.0


@contextlib.contextmanager
def _bind_errors(address) -> Iterator[None]:
    """A listener that cannot be bound (port in use, no such address) is one line, not a trace."""
    try:
        yield
    except OSError as err:
        host, port = address
        raise UsageError(f"Cannot listen on {host}:{port}: {os_error_reason(err)}") from None


def _check_bindable(address) -> None:
    """Fail before loading quotas when a listen address is taken: one line, no start-up logs.
    (The real bind later is still checked: the port can be taken in between.)"""
    import socket

    host, port = address
    with _bind_errors(address):
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, port))


async def check_upstreams(upstreams, timeout_s: float, recheck_s: float = UPSTREAM_RECHECK_S) -> None:
    """Dial the upstreams once at start: if none answers, say so (every client connection would
    fail), then re-dial every ``recheck_s`` until one does and say that too. The gateway serves
    throughout: each client connection dials the upstreams itself."""
    names = ",".join(f"{h}:{p}" for h, p in upstreams)
    warned = False
    while True:
        reason = await _first_reachable(upstreams, timeout_s)
        if reason is None:
            if warned:
                log.info("upstream %s reachable now", names)
            return
        if not warned:
            log.warning(
                "upstream %s not reachable (%s): clients cannot be served until it is; re-checking every %g s",
                names,
                reason,
                recheck_s,
            )
            warned = True
        await asyncio.sleep(recheck_s)


async def _first_reachable(upstreams, timeout_s: float) -> str | None:
    """None when one upstream accepts a TCP connection, else the last failure's reason."""
    reason = "no upstream"
    for host, port in upstreams:
        try:
            _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout_s)
        except (OSError, asyncio.TimeoutError) as err:
            reason = os_error_reason(err)
            continue
        writer.close()
        return None
    return reason


def check_data_plane() -> None:
    """The data plane is the native extension's: without it, one line (the rest of kconfigs works).
    ``KCONFIGS_GATEWAY_DATA_PLANE`` once chose the asyncio path; asking for anything but the
    native plane is refused rather than silently served by another one. :raises UsageError:"""
    from kconfigs_enforcement.gateway.native_ext import UNAVAILABLE

    if UNAVAILABLE:
        raise UsageError(UNAVAILABLE)
    wanted = os.environ.get("KCONFIGS_GATEWAY_DATA_PLANE", "native")
    if wanted != "native":
        raise UsageError(
            f"KCONFIGS_GATEWAY_DATA_PLANE={wanted}: the asyncio data path was removed and the native data plane "
            "is the only one; unset the variable"
        )


def run(config: GatewayConfig, store_options: "StoreOptions") -> None:
    """Blocking entry point. :raises KconfigsError: for store/config problems (before serving)."""
    check_data_plane()
    configure_logging(config.log_format)
    for address in (config.listen, config.metrics_listen):
        if address:
            _check_bindable(address)
    config = config.with_worker_threads_from(os.environ)  # a bad variable: one line before anything starts
    usage_out = None
    if config.usage_log_path:  # before the quotas are loaded too: one line, no start-up logs
        from kconfigs_enforcement.gateway.usage_log import open_usage_log

        usage_out = open_usage_log(config.usage_log_path)
    try:
        store = open_gateway_store(store_options)
        watch_stopped = False
        try:
            watch_stopped = asyncio.run(serve(config, store, store_options, usage_out))
        finally:
            if watch_stopped:  # else closing it under the running read would fail that read
                store.close()
    finally:
        if usage_out is not None:
            usage_out.close()
