"""The gateway's charging path in process: a data plane that is never started, charged the way its
worker threads charge a request (``NativeGateway.charge``), at the gate's clock."""

from __future__ import annotations

import contextlib
from typing import Iterator

from kconfigs_enforcement.gateway.config import GatewayConfig
from kconfigs_enforcement.gateway.native_plane import NativeGateway
from kconfigs_enforcement.gateway.quotas import QuotaGate

#: nothing listens or connects: the plane is only charged
_UNUSED_UPSTREAM = (("127.0.0.1", 9),)


@contextlib.contextmanager
def charging_gateway(gate: QuotaGate, worker_threads: int = 1) -> Iterator[NativeGateway]:
    config = GatewayConfig(
        upstreams=_UNUSED_UPSTREAM, listen=("127.0.0.1", 0), advertised_host="127.0.0.1", worker_threads=worker_threads
    )
    gateway = NativeGateway(config, quotas=gate)
    try:
        yield gateway
    finally:
        gateway.close()
