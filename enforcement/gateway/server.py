"""Listeners (bootstrap + one port per broker), the shared gateway context, SIGTERM draining.

Port per broker: every upstream broker address seen in a Metadata / FindCoordinator /
DescribeCluster response gets its own gateway listener, bound on first sight and advertised in
its place. Listeners are keyed by the broker's *address*, not its node id, so controllers listed
by DescribeCluster (KIP-919) can never collide with brokers of the same id.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from typing import Any

from kconfigs.clock import MONOTONIC
from kconfigs_enforcement import rates
from kconfigs_enforcement.gateway.auth_probe import AnonymousProbe
from kconfigs_enforcement.gateway.channel import Channel
from kconfigs_enforcement.gateway.config import Address, GatewayConfig
from kconfigs_enforcement.gateway.connection import Peer, ProxyConnection
from kconfigs_enforcement.gateway.context import BrokerRegistry, GatewayContext
from kconfigs_enforcement.gateway.metrics import GatewayStats
from kconfigs_enforcement.gateway.quotas import QuotaGate

log = logging.getLogger("kconfigs.gateway")


class Gateway:
    """The running gateway: ``await start()``, then ``await stop()`` (drains in-flight requests).

    ``data_plane = "native"`` gives a :class:`~kconfigs_enforcement.gateway.native_plane.NativeGateway`."""

    def __new__(cls, config: GatewayConfig, quotas: QuotaGate | None = None, admin: Any = None):
        if cls is Gateway and config.data_plane == "native":
            from kconfigs_enforcement.gateway.native_plane import NativeGateway

            return NativeGateway(config, quotas, admin)
        return super().__new__(cls)

    def __init__(self, config: GatewayConfig, quotas: QuotaGate | None = None, admin: Any = None):
        self.config = config
        self.quotas = quotas or QuotaGate(
            config.quota_window_num, config.quota_window_size_seconds, enforce_producer_ids=config.enforce_producer_ids
        )
        self.stats = GatewayStats(self.quotas.metric_samples)
        self.registry = BrokerRegistry(self)
        self.ctx = GatewayContext(
            config,
            self.registry,
            self.quotas,
            self.stats,
            admin,
            auth_probe=AnonymousProbe(config.upstream_connect_timeout_ms / 1000),
        )
        self._ssl = _server_ssl_context(config)
        self._bootstrap: asyncio.AbstractServer | None = None
        self._expiry_task: asyncio.Task | None = None
        self._usage_task: asyncio.Task | None = None
        self.usage_log = None
        self._open_per_ip: dict[str, int] = {}  # admitted (not yet closed) connections per client IP
        self._open_total = 0
        self._last_limit_log_s = 0.0
        self._client_tasks: set[asyncio.Task] = set()  # the loop keeps only weak references to tasks

    @property
    def bootstrap_address(self) -> Address:
        host, port = self._bootstrap.sockets[0].getsockname()[:2]
        return self.config.advertised_host, port

    async def start(self) -> None:
        host, port = self.config.listen
        self._bootstrap = await self.start_listener(host, port, list(self.config.upstreams), "bootstrap")
        self._expiry_task = asyncio.create_task(self._expire_sensors_periodically())
        if self.config.usage_log_path:
            self._start_usage_log(self.config.usage_log_path)
        log.info(
            "gateway listening on %s:%d for upstream %s",
            host,
            self.bootstrap_address[1],
            ",".join(f"{h}:{p}" for h, p in self.config.upstreams),
        )
        log.info("data path: %s; rate core: %s", _data_path_description(self.config), rates.DESCRIPTION)

    def _start_usage_log(self, path: str) -> None:
        from kconfigs_enforcement.gateway.usage_log import UsageLog

        out = open(path, "a", encoding="utf-8")
        self.usage_log = UsageLog(out, self.config.usage_log_window_ms, self.quotas.quota_for)
        self.quotas.usage_sinks.append(self.usage_log.record)
        self._usage_task = asyncio.create_task(self.usage_log.run_periodic_flush())

    async def start_listener(self, host: str, port: int, upstreams: list[Address], name: str) -> asyncio.AbstractServer:
        def on_connection(client: Channel) -> None:
            ip = client.get_extra_info("peername")[0]
            if self._over_connection_limit(ip, name):
                client.close()  # a flood costs a socket for an instant, never a task or an upstream connection
                return
            # counted now, not in the task: connections accepted in one loop turn must see each other
            self._open_per_ip[ip] = self._open_per_ip.get(ip, 0) + 1
            self._open_total += 1
            task = asyncio.get_running_loop().create_task(self._serve_client(client, upstreams, name))
            self._client_tasks.add(task)
            task.add_done_callback(self._client_tasks.discard)

        def new_channel() -> Channel:
            channel = Channel(self.config.receive_buffer_bytes)
            channel.on_connection = on_connection
            return channel

        return await asyncio.get_running_loop().create_server(
            new_channel, host, port, ssl=self._ssl, reuse_address=True
        )

    async def _serve_client(self, client: Channel, upstreams: list[Address], listener: str) -> None:
        ip, port = client.get_extra_info("peername")[:2]
        try:
            await self._serve_admitted_client(client, upstreams, listener, ip, port)
        finally:
            self._open_total -= 1
            remaining = self._open_per_ip.pop(ip) - 1
            if remaining:
                self._open_per_ip[ip] = remaining

    def _over_connection_limit(self, ip: str, listener: str) -> bool:
        """max_connections / max_connections_per_ip (Kafka's max.connections[.per.ip])."""
        config = self.config
        if self._open_total >= config.max_connections:
            reason = "max_connections"
        elif config.max_connections_per_ip and self._open_per_ip.get(ip, 0) >= config.max_connections_per_ip:
            reason = "max_connections_per_ip"
        else:
            return False
        self.stats.connection_over_limit(listener, reason)
        now_s = MONOTONIC.now_ms() / 1000
        if now_s - self._last_limit_log_s >= 10:  # a flood must not flood the log too
            self._last_limit_log_s = now_s
            log.warning(
                "refusing connections from %s on %s: %s reached (counted in "
                "kconfigs_gateway_connections_over_limit_total)",
                ip,
                listener,
                reason,
            )
        return True

    async def _serve_admitted_client(
        self, client: Channel, upstreams: list[Address], listener: str, ip: str, port: int
    ) -> None:
        accept, delay_ms = self.quotas.connection_attempt(ip)
        if accept and delay_ms > 0:
            await asyncio.sleep(delay_ms / 1000)  # broker-wide rate: the acceptor waits, then hands on
        if not accept:
            # KIP-612: hold the socket for the throttle time without reading, then close it.
            self.stats.connection_refused(listener)
            await asyncio.sleep(delay_ms / 1000)
            client.close()
            return
        peer = Peer(ip, port, listener, _tls_principal(client))
        connection = ProxyConnection(self.ctx, peer, client, upstreams)
        self.ctx.connections.add(connection)
        self.stats.connection_opened(listener)
        try:
            await connection.run()
        finally:
            self.ctx.connections.discard(connection)
            self.stats.connection_closed(listener)
            self.quotas.connection_closed(ip)

    async def _expire_sensors_periodically(self, interval_s: float = 30.0) -> None:
        while True:  # Kafka's expiry task runs every 30 s
            await asyncio.sleep(interval_s)
            self.quotas.expire()

    async def stop(self) -> None:
        """Stop accepting, let in-flight requests finish (bounded by drain_timeout_ms), close."""
        if self._bootstrap is not None:
            self._bootstrap.close()
        self.registry.close()
        if self._expiry_task is not None:
            self._expiry_task.cancel()
        drains = [c.drain_and_close(self.config.drain_timeout_ms) for c in list(self.ctx.connections)]
        await asyncio.gather(*drains, return_exceptions=True)
        if self._client_tasks:  # let the closed connections finish their bookkeeping
            await asyncio.wait(set(self._client_tasks), timeout=1)
        if self.usage_log is not None:
            self._usage_task.cancel()
            self.usage_log.flush()
            self.usage_log.close()
        log.info("gateway stopped after draining %d connections", len(drains))


def _server_ssl_context(config: GatewayConfig) -> ssl.SSLContext | None:
    if not config.tls_cert_file:
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(config.tls_cert_file, config.tls_key_file)
    if config.tls_client_ca_file:
        context.load_verify_locations(config.tls_client_ca_file)
        context.verify_mode = ssl.CERT_REQUIRED
    return context


def _tls_principal(client: Channel) -> str | None:
    """mTLS principal = the client certificate's subject DN in RFC 4514 order (like Kafka's
    X500Principal.getName(): ``CN=app,OU=eng,O=acme``)."""
    ssl_object = client.get_extra_info("ssl_object")
    if ssl_object is None:
        return None
    der = ssl_object.getpeercert(binary_form=True)
    if not der:
        return None
    from cryptography import x509

    return x509.load_der_x509_certificate(der).subject.rfc4514_string()


def _data_path_description(config) -> str:
    from kconfigs_enforcement.gateway import splice

    if not config.zero_copy:
        return "user-space copy (zero_copy = false)"
    if not splice.AVAILABLE:
        return "user-space copy (splice(2) is not available on this platform)"
    return "splice(2) for large Produce/Fetch bodies on plain-TCP connections"
