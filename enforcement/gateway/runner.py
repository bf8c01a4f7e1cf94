"""Assemble and run the gateway: store + live reload, quota admin, listeners, Prometheus
endpoint, structured logs, and SIGTERM/SIGINT draining. ``kconfigs serve`` calls :func:`run`."""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import sys
import time

from kconfigs_enforcement.gateway.config import GatewayConfig

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


def open_gateway_store(config: GatewayConfig):
    """:raises StoreUnavailable, UsageError:"""
    from kconfigs.stores.factory import StoreOptions, open_store

    return open_store(StoreOptions(zookeeper=config.zookeeper, store_path=config.store_path))


async def serve(config: GatewayConfig, store) -> None:
    """Run until SIGTERM/SIGINT, then drain in-flight requests and stop."""
    from kconfigs_enforcement.gateway.admin import QuotaAdmin
    from kconfigs_enforcement.gateway.metrics import start_http_endpoint
    from kconfigs_enforcement.gateway.reload import QuotaReloader
    from kconfigs_enforcement.gateway.server import Gateway

    admin = (
        None
        if config.quota_admin == "passthrough"
        else QuotaAdmin(store, config.quota_admin, config.quota_admin_principals)
    )
    gateway = Gateway(config, admin=admin)
    loop = asyncio.get_running_loop()
    reloader = QuotaReloader(store, loop, gateway.quotas.load)
    await loop.run_in_executor(None, reloader.start)
    await gateway.start()
    metrics_server = start_http_endpoint(gateway.stats, *config.metrics_listen) if config.metrics_listen else None
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await stop.wait()
    log.info("signal received: draining in-flight requests (up to %d ms)", config.drain_timeout_ms)
    await gateway.stop()
    reloader.close()
    if metrics_server is not None:
        metrics_server.shutdown()


def run(config: GatewayConfig) -> None:
    """Blocking entry point. :raises KconfigsError: for store/config problems (before serving)."""
    configure_logging(config.log_format)
    store = open_gateway_store(config)
    try:
        asyncio.run(serve(config, store))
    finally:
        store.close()
