"""The state a gateway's connections share (``GatewayContext``) and its broker-address ->
listener registry; ``server.Gateway`` builds them, connections and relays only read them."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any, Protocol

from kconfigs_enforcement.gateway.config import Address, GatewayConfig
from kconfigs_enforcement.gateway.metrics import GatewayStats
from kconfigs_enforcement.gateway.quotas import QuotaGate

log = logging.getLogger("kconfigs.gateway")


class ListenerHost(Protocol):
    """What the registry needs of ``server.Gateway``: its config and a way to bind a listener."""

    config: GatewayConfig

    async def start_listener(
        self, host: str, port: int, upstreams: list[Address], name: str
    ) -> asyncio.AbstractServer: ...


@dataclass
class GatewayContext:
    config: GatewayConfig
    registry: "BrokerRegistry"
    quotas: QuotaGate
    stats: GatewayStats
    admin: Any = None  # kconfigs_enforcement.gateway.admin.QuotaAdmin when the gateway owns quota admin
    connections: set = field(default_factory=set)
    auth_probe: Any = None  # kconfigs_enforcement.gateway.auth_probe.AnonymousProbe (no auth downgrade)


class BrokerRegistry:
    """Upstream broker address -> gateway listener address, binding listeners on demand."""

    def __init__(self, gateway: ListenerHost):
        self._gateway = gateway
        self._mapping: dict[Address, Address] = {}
        self._servers: list[asyncio.AbstractServer] = []
        self._lock = asyncio.Lock()
        self._next_port = gateway.config.broker_port_start

    @property
    def mapping(self) -> dict[Address, Address]:
        return dict(self._mapping)

    async def map_addresses(self, addresses: list[Address]) -> dict[Address, Address]:
        """The advertised gateway address for each upstream address (binding new listeners)."""
        missing = [a for a in addresses if a not in self._mapping]
        if missing:
            async with self._lock:
                for address in missing:
                    if address not in self._mapping:
                        await self._bind(address)
        return {a: self._mapping[a] for a in addresses}

    async def _bind(self, upstream: Address) -> None:
        config = self._gateway.config
        port = self._next_port
        server = await self._gateway.start_listener(
            config.listen[0], port, [upstream], f"broker-{upstream[0]}:{upstream[1]}"
        )
        bound_port = server.sockets[0].getsockname()[1]
        if self._next_port:
            self._next_port += 1
        self._servers.append(server)
        self._mapping[upstream] = (config.advertised_host, bound_port)
        log.info("listener %s:%d now fronts broker %s:%d", config.listen[0], bound_port, *upstream)

    def close(self) -> None:
        for server in self._servers:
            server.close()
