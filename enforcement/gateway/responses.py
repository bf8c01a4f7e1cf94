"""The upstream -> client half of a proxied connection (mixed into ProxyConnection).

Each response is paired with the oldest in-flight request (Kafka answers in order), rewritten
where it carries broker addresses or API versions, charged to its entity (fetch bytes, request
time), muted on and patched with throttle_time_ms (KIP-219), then sent on. Unchanged responses
are sent straight from the receive buffer, several per send when they arrived together; a large
Fetch response is charged by its length prefix and streams through after its head.
"""

from __future__ import annotations

import asyncio
import logging
import struct
import time
from typing import TYPE_CHECKING

from kconfigs_enforcement.gateway import codec, framing, layout, versions
from kconfigs_enforcement.gateway.fetch_stream import relay_fetch_with_endpoints
from kconfigs_enforcement.gateway.headers import (
    MalformedFrame,
    ProtocolViolation,
    parse_response_correlation_id,
    response_body_offset,
)
from kconfigs_enforcement.gateway.inflight import CorrelationMismatch, InflightRequest
from kconfigs_enforcement.gateway.rewrite import REWRITTEN_APIS, AddressRewrite, node_endpoints_rewrite, prepare_rewrite
from kconfigs_enforcement.gateway.throttling import patch_throttle_time

if TYPE_CHECKING:
    from kconfigs_enforcement.gateway.channel import Channel
    from kconfigs_enforcement.gateway.server import GatewayContext

log = logging.getLogger("kconfigs.gateway")
FETCH = 1
#: APIs that may wait in broker purgatory (long polls, group rendezvous): their upstream round
#: trip is not service time, so only the gateway's own handling time counts for them.
PARKING_APIS = frozenset({FETCH, 11, 14})  # Fetch, JoinGroup, SyncGroup
#: APIs that never reach KafkaApis on a broker, so they never count against request quotas.
EXEMPT_APIS = frozenset({versions.API_VERSIONS, versions.SASL_HANDSHAKE, versions.SASL_AUTHENTICATE})
#: Produce requests and Fetch responses are streamed once this much of their start is in (it
#: covers any real header: client_id and transactional_id are at most 32 KiB each)...
STREAM_HEAD_BYTES = 128 * 1024
#: ...or this much when the header fields the gateway reads are all within it (the usual case)
QUICK_HEAD_BYTES = 16 * 1024
#: responses the gateway must decode (identity, version caps, address rewrites)
_DECODED_RESPONSES = REWRITTEN_APIS | {versions.API_VERSIONS, versions.SASL_HANDSHAKE, versions.SASL_AUTHENTICATE}
_INT32 = struct.Struct(">i")


def now_ms() -> int:
    return time.monotonic_ns() // 1_000_000


class ResponseRelay:
    """The response loop; ProxyConnection supplies the state it reads and the hooks it calls."""

    ctx: "GatewayContext"
    client: "Channel"
    upstream: "Channel"

    async def _upstream_to_client(self) -> None:
        try:
            while await self._relay_response():
                pass
        except (MalformedFrame, CorrelationMismatch, ProtocolViolation, asyncio.IncompleteReadError) as err:
            self._log_bad_frame("upstream", err)
        except (ConnectionError, OSError) as err:
            log.debug("connection of client %s:%d ended: %s", self.peer.ip, self.peer.port, err)
        except Exception:  # a gateway bug must end this connection only, loudly
            log.exception("client %s:%d: unexpected error handling a response", self.peer.ip, self.peer.port)

    async def _relay_response(self) -> bool:
        """Pair one response with its request, handle it and send it on; False when the upstream
        closed. A large Fetch response is charged by its length prefix and only its head (which
        holds throttle_time_ms) is read before the rest streams through."""
        upstream = self.upstream
        head = await upstream.read_ahead(4)
        if head is None:
            log.info(
                "upstream %s:%d closed the connection of client %s:%d",
                *self.upstream_address,
                self.peer.ip,
                self.peer.port,
            )
            return False
        size = _INT32.unpack_from(head)[0]
        framing.check_frame_size(size, framing.MIN_RESPONSE_FRAME_BYTES, self.ctx.config.max_frame_bytes)
        head = await self._read_response_head(size)
        received_ns = time.perf_counter_ns()
        frame = head[4:]
        entry = self.inflight.match(parse_response_correlation_id(frame))
        body = await self._handle_response(entry, frame, size, received_ns)
        self._release_quota_bound(entry)
        rest = size + 4 - len(head)
        if body is frame and not rest:
            upstream.hold(len(head))  # leaves with the responses that arrived with it
        elif rest and layout.has_node_endpoints(entry.api_key, entry.api_version):
            upstream.flush_held()
            await relay_fetch_with_endpoints(entry.api_version, body, size, upstream, self.client, self.ctx.registry)
        else:
            upstream.flush_held()
            self.client.write(head if body is frame else _INT32.pack(len(body) + rest) + body)
            upstream.consume(len(head))
            if rest:
                await upstream.forward(rest, self.client)
        self.inflight.pop()  # sent on whole: a local answer or a drain may follow it now
        if self.client.write_paused:
            upstream.flush_held()
            await self.client.drain()
        self.last_active_ms = now_ms()
        return True

    async def _read_response_head(self, size: int) -> memoryview:
        """The whole response, or the start of a large Fetch response still arriving (enough for
        its header and throttle_time_ms; the rest streams)."""
        upstream, oldest = self.upstream, self.inflight.oldest()
        if oldest is None or oldest.api_key != FETCH or size <= QUICK_HEAD_BYTES or upstream.available >= 4 + size:
            return await upstream.read_ahead(4 + size)
        head = await upstream.read_ahead(4 + QUICK_HEAD_BYTES)
        if _fetch_head_fits(oldest.api_version, head[4:]):
            return head
        return await upstream.read_ahead(4 + min(size, STREAM_HEAD_BYTES))

    async def _handle_response(
        self, entry: InflightRequest, frame: memoryview, size: int, received_ns: int
    ) -> memoryview | bytes:
        """The response to send (``frame`` itself when unchanged; only then may it be partial)."""
        started_ns = time.perf_counter_ns()
        service_ns = received_ns - max(entry.sent_ns, self._last_response_ns)
        self._last_response_ns = received_ns
        self.ctx.stats.upstream_latency(entry.api_key, (received_ns - entry.sent_ns) / 1e9)
        frame = await self._rewrite_response(entry, frame, whole=len(frame) == size)
        throttle_ms = self._account(entry, size, service_ns, started_ns)
        if entry.api_key == versions.PRODUCE:
            # the bandwidth mute started when the bytes were charged; tell the client what is left
            # of it (KIP-219: its own pause then overlaps the mute instead of adding to it)
            self._mute(entry.context.get("request_throttle_ms", 0))
            throttle_ms = max(self.muted_until_ms - now_ms(), 0) if throttle_ms > 0 else 0
        else:
            self._mute(throttle_ms)
        if throttle_ms > 0:
            frame = patch_throttle_time(entry.api_key, entry.api_version, frame, throttle_ms)
        return frame

    async def _rewrite_response(self, entry: InflightRequest, frame: memoryview, whole: bool) -> memoryview | bytes:
        key, version = entry.api_key, entry.api_version
        if layout.has_node_endpoints(key, version):
            # Produce v10+ / Fetch v16+: walked to their tagged fields, rewritten only when they
            # hold NodeEndpoints; a streamed Fetch is rewritten as it streams (fetch_stream)
            rewrite = node_endpoints_rewrite(key, version, frame) if whole else None
            return frame if rewrite is None else await self._apply_rewrite(rewrite)
        if key not in _DECODED_RESPONSES:
            return frame  # the hot path (older Produce and Fetch ...): nothing to decode
        view, frame = frame, bytes(frame)
        try:
            if key == versions.API_VERSIONS:
                owned = self.ctx.admin.owned_version_ranges if self.ctx.admin is not None else {}
                return versions.rewrite_api_versions_response(frame, version, owned)
            if key == versions.SASL_HANDSHAKE:
                self.sasl.on_handshake_response(codec.decode_response(key, version, frame).error_code)
            elif key == versions.SASL_AUTHENTICATE:
                if self.sasl.on_authenticate_response(codec.decode_response(key, version, frame).error_code):
                    self.established = True
                    log.info(
                        "client %s:%d authenticated as %s (%s)",
                        self.peer.ip,
                        self.peer.port,
                        self.principal,
                        self.sasl.mechanism,
                    )
            rewrite = prepare_rewrite(key, version, frame, self.ctx.config.metadata_splice_threshold_bytes)
        except (ValueError, IndexError, KeyError) as err:
            raise MalformedFrame(f"cannot decode api {key} v{version} response: {err}") from err
        if rewrite is None:
            return view
        return await self._apply_rewrite(rewrite)

    async def _apply_rewrite(self, rewrite: AddressRewrite) -> bytes:
        self.upstream.flush_held()  # binding a listener may wait: earlier responses go first
        mapping = await self.ctx.registry.map_addresses(rewrite.addresses)
        return rewrite.apply(mapping)

    def _account(self, entry: InflightRequest, response_bytes: int, service_ns: int, started_ns: int) -> int:
        """Charge the entity; return the throttle to apply: max(bandwidth, request), KIP-219."""
        key, quotas = entry.api_key, self.ctx.quotas
        user, client_id, ip = entry.context["principal"], entry.client_id, self.peer.ip
        if not quotas.active:
            return 0
        bandwidth_ms, bandwidth_type = 0, None
        if key == versions.PRODUCE:
            bandwidth_ms, bandwidth_type = entry.context.get("produce_throttle_ms", 0), "Produce"
        elif key == FETCH:
            bandwidth_ms, bandwidth_type = quotas.on_fetch(user, client_id, ip, response_bytes), "Fetch"
        request_ms = 0
        if key not in EXEMPT_APIS:
            handling_ns = entry.context.get("handling_ns", 0) + time.perf_counter_ns() - started_ns
            request_ns = handling_ns + (0 if key in PARKING_APIS else max(service_ns, 0))
            request_ms = quotas.on_request_time(user, client_id, ip, request_ns)
            entry.context["request_throttle_ms"] = request_ms
        # Only the manager with the larger throttle records it; a tie goes to Request (Kafka).
        if request_ms > 0 and request_ms >= bandwidth_ms:
            quotas.record_throttle("Request", user, client_id, request_ms)
        elif bandwidth_ms > 0:
            quotas.record_throttle(bandwidth_type, user, client_id, bandwidth_ms)
        return max(bandwidth_ms, request_ms)


def _fetch_head_fits(version: int, frame: memoryview) -> bool:
    """Whether a Fetch response's header and throttle_time_ms (its first field) are within ``frame``."""
    try:
        return response_body_offset(frame, bool(codec.response_header_flexible(FETCH, version))) + 4 <= len(frame)
    except MalformedFrame:
        return False
