"""No auth downgrade: does an upstream broker serve clients that have not authenticated?

The gateway answers the quota admin APIs (48/49) itself for some upstreams. A broker whose
listener requires SASL closes a connection that sends anything but ApiVersions / SASL requests
before authenticating; answering such a request locally on an unauthenticated connection would
make the gateway more lenient than the broker it fronts. So, before answering one, the gateway
asks the upstream once, on a connection of its own: a Metadata request for no topics. A broker
that answers serves anonymous clients; one that closes (or is unreachable) does not, and the
request is refused. The verdict is cached per upstream address for ``PROBE_TTL_S``.
"""

from __future__ import annotations

import asyncio

from kconfigs.clock import MONOTONIC
from kconfigs_enforcement.gateway import codec, framing
from kconfigs_enforcement.gateway.headers import MalformedFrame

PROBE_TTL_S = 60.0
_METADATA = 3


class AnonymousProbe:
    def __init__(self, timeout_s: float):
        self._timeout_s = timeout_s
        self._verdicts: dict[tuple[str, int], tuple[float, bool]] = {}

    async def upstream_serves_anonymous(self, address: tuple[str, int]) -> bool:
        cached = self._verdicts.get(address)
        if cached is not None and MONOTONIC.now_ms() / 1000 - cached[0] < PROBE_TTL_S:
            return cached[1]
        verdict = await self._probe(address)
        self._verdicts[address] = (MONOTONIC.now_ms() / 1000, verdict)
        return verdict

    async def _probe(self, address: tuple[str, int]) -> bool:
        request = codec.request_class(_METADATA)[1](topics=[])
        request.with_header(correlation_id=1, client_id="kconfigs-gateway-auth-probe")
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection(*address), self._timeout_s)
        except (OSError, TimeoutError):
            return False  # fail closed
        try:
            framing.write_frame(writer, codec.encode_message(request))
            await writer.drain()
            response = await asyncio.wait_for(
                framing.read_frame(reader, framing.MIN_RESPONSE_FRAME_BYTES, 1 << 24), self._timeout_s
            )
            return response is not None
        except (OSError, TimeoutError, asyncio.IncompleteReadError, MalformedFrame):
            return False
        finally:
            writer.close()
