"""One proxied client connection: the client -> upstream half, connection setup and shutdown.

A request's length prefix is checked first, then its header is parsed from the receive buffer:
identity (client id, SASL), version caps, producer ids and acks, the in-flight entry is pushed and
the bytes go upstream unchanged, several requests per send when they arrived together; the rest
of a large Produce streams through. While the connection owes a throttle the next request is held
(not read), which is Kafka's channel muting and holds clients that ignore throttle_time_ms. The
upstream -> client half is :class:`~kconfigs_enforcement.gateway.responses.ResponseRelay`. Backpressure
both ways: a socket whose send buffer is above the high-water mark stops reading from the other.
A bad frame closes only this connection; the log names the peer and the API key.
"""

from __future__ import annotations

import asyncio
import logging
import struct
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kconfigs_enforcement.gateway import codec, framing, versions
from kconfigs_enforcement.gateway.channel import Channel
from kconfigs_enforcement.gateway.headers import (
    MalformedFrame,
    ProtocolViolation,
    RequestPrefix,
    parse_request_prefix,
    produce_acks,
)
from kconfigs_enforcement.gateway.inflight import InflightRequest, InflightTable
from kconfigs_enforcement.gateway.responses import (
    EXEMPT_APIS,
    FETCH,
    QUICK_HEAD_BYTES,
    STREAM_HEAD_BYTES,
    ResponseRelay,
    now_ms,
)
from kconfigs_enforcement.gateway.sasl import SaslState, UnsupportedSasl

if TYPE_CHECKING:
    from kconfigs_enforcement.gateway.server import GatewayContext

__all__ = ["IdleConnection", "Peer", "ProtocolViolation", "ProxyConnection", "SlowRequest"]
log = logging.getLogger("kconfigs.gateway")
_PREAUTH_APIS = EXEMPT_APIS
MAX_REMEMBERED_PRODUCER_IDS = 1024  # per connection; normally 1 (one producer per connection)
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


class SlowRequest(ProtocolViolation):
    """A request frame did not arrive completely within request_read_timeout_ms."""


class IdleConnection(Exception):
    """No request and no response for connections_max_idle_ms (closed quietly, like Kafka)."""


@dataclass(frozen=True)
class Peer:
    ip: str
    port: int
    listener: str
    tls_principal: str | None = None


class ProxyConnection(ResponseRelay):
    """Proxies one client connection to one upstream broker address."""

    def __init__(self, ctx: "GatewayContext", peer: Peer, client: Channel, upstream_addresses: list[tuple[str, int]]):
        self.ctx = ctx
        self.peer = peer
        self.client = client
        self.upstream_addresses = upstream_addresses
        self.upstream_address = upstream_addresses[0]
        self.inflight = InflightTable(ctx.config.max_inflight_requests)
        self.sasl = SaslState()
        if peer.tls_principal:
            self.sasl.principal, self.sasl.authenticated = peer.tls_principal, True
        self.established = self.sasl.authenticated
        self.muted_until_ms = 0
        #: requests forwarded whose response may carry a throttle; while any is outstanding the
        #: next request is held (Kafka reads one request per connection at a time)
        self._quota_bound_inflight = 0
        self._quota_bound_clear = asyncio.Event()
        self._quota_bound_clear.set()
        self.stopping = False
        self._reading_request = False
        self._last_response_ns = 0
        self.last_active_ms = now_ms()  # last request read or response written (idle rule)
        self._seen_producer_ids: set[int] = set()
        self._client_task: asyncio.Task | None = None
        self.upstream: Channel | None = None

    @property
    def principal(self) -> str:
        return self.sasl.principal

    async def run(self) -> None:
        """Connect upstream and run both loops until either side ends; always closes both."""
        if not await self._connect_upstream():
            self.client.close()
            return
        self._configure_channels()
        self.client.held_sink, self.upstream.held_sink = self.upstream, self.client
        self._client_task = asyncio.create_task(self._client_to_upstream())
        upstream_task = asyncio.create_task(self._upstream_to_client())
        try:
            done, _pending = await asyncio.wait({self._client_task, upstream_task}, return_when=asyncio.FIRST_COMPLETED)
            if self.stopping and upstream_task not in done:
                # SIGTERM stopped the client side on purpose: the responses still in flight must
                # reach the client (drain_and_close closes the writers once they have, or on timeout)
                await upstream_task
        finally:
            for task in (self._client_task, upstream_task):
                task.cancel()
            await asyncio.gather(self._client_task, upstream_task, return_exceptions=True)
            self._close_writers()

    async def _connect_upstream(self) -> bool:
        """Try each upstream address in turn (bootstrap lists may name several brokers)."""
        timeout_s = self.ctx.config.upstream_connect_timeout_ms / 1000
        loop = asyncio.get_running_loop()
        for address in self.upstream_addresses:
            try:
                _transport, self.upstream = await asyncio.wait_for(loop.create_connection(Channel, *address), timeout_s)
                self.upstream_address = address
                return True
            except (OSError, asyncio.TimeoutError) as err:
                log.warning(
                    "upstream %s:%d unreachable for client %s:%d: %s", *address, self.peer.ip, self.peer.port, err
                )
        return False

    def _configure_channels(self) -> None:
        """Write limits and the zero-copy setting, the same for both sockets."""
        high = self.ctx.config.write_buffer_high_bytes
        for channel in (self.client, self.upstream):
            channel.transport.set_write_buffer_limits(high=high, low=high // 4)
            channel.zero_copy = channel.zero_copy and self.ctx.config.zero_copy

    def _close_writers(self) -> None:
        for channel in (self.client, self.upstream):
            if channel is not None:
                channel.close()

    async def drain_and_close(self, timeout_ms: int) -> None:
        """SIGTERM: read no new requests, wait for in-flight responses (bounded), then close."""
        self.stopping = True
        if self._reading_request and self._client_task is not None:
            self._client_task.cancel()
        try:
            await asyncio.wait_for(self.inflight.wait_empty(), timeout_ms / 1000)
        except asyncio.TimeoutError:
            log.warning(
                "drain timeout: closing %s:%d with %d requests in flight",
                self.peer.ip,
                self.peer.port,
                len(self.inflight),
            )
        self._close_writers()

    # ---- client -> upstream -------------------------------------------------------------

    async def _client_to_upstream(self) -> None:
        try:
            while not self.stopping:
                if self.inflight.full:  # pipelining bound: stop reading the client
                    self.client.flush_held()
                    await self.inflight.wait_for_space()
                head = await self._read_request()
                if head is None:
                    return
                if not self._quota_bound_clear.is_set():
                    self.client.flush_held()  # the response that decides the throttle needs its request sent
                    await self._quota_bound_clear.wait()
                if self.muted_until_ms > now_ms():
                    self.client.flush_held()
                    await self._hold_while_muted()
                await self._handle_request(head)
        except (MalformedFrame, ProtocolViolation, UnsupportedSasl, asyncio.IncompleteReadError) as err:
            self._log_bad_frame("client", err)
        except IdleConnection as err:
            log.info("closing client %s:%d (listener %s): %s", self.peer.ip, self.peer.port, self.peer.listener, err)
        except (ConnectionError, OSError) as err:
            log.debug("client %s:%d connection ended: %s", self.peer.ip, self.peer.port, err)
        except Exception:  # a gateway bug must end this connection only, loudly
            log.exception("client %s:%d: unexpected error handling a request", self.peer.ip, self.peer.port)

    async def _read_request(self) -> memoryview | None:
        """The next request (length prefix included, not consumed): see _read_request_head."""
        self._reading_request = True
        try:
            size = await self._read_size_unless_idle()
            if size is None:
                return None
            framing.check_frame_size(size, framing.MIN_REQUEST_FRAME_BYTES, self._request_limit(size))
            timeout_ms = self.ctx.config.request_read_timeout_ms
            deadline = (
                asyncio.get_running_loop().time() + timeout_ms / 1000
            )  # slowloris: a frame must not dribble forever
            try:
                head = await self._read_request_head(size, deadline)
            except TimeoutError:
                raise SlowRequest(
                    f"request of {size} bytes not complete within request_read_timeout_ms={timeout_ms}"
                ) from None
            self.last_active_ms = now_ms()
            return head
        finally:
            self._reading_request = False

    async def _read_request_head(self, size: int, deadline: float) -> memoryview:
        """The whole request, or, for a large Produce whose body need not be decoded, its start
        (the rest is streamed upstream by _forward_request). The start is QUICK_HEAD_BYTES unless
        client_id/transactional_id are unusually long; then STREAM_HEAD_BYTES covers any header.
        Waiting for less than the whole frame is what saves wake-ups on large requests."""
        client = self.client
        if size <= QUICK_HEAD_BYTES or client.available >= 4 + size:
            return await client.read_ahead(4 + size, deadline)
        head = await client.read_ahead(4 + QUICK_HEAD_BYTES, deadline)
        if not self._streamable_request(head):
            return await client.read_ahead(4 + size, deadline)
        if not _header_fits(head[4:]):
            head = await client.read_ahead(4 + min(size, STREAM_HEAD_BYTES), deadline)
        return head

    def _streamable_request(self, head: memoryview) -> bool:
        """A Produce is forwarded as it arrives unless its producer ids must be read from it."""
        return _INT16.unpack_from(head, 4)[0] == versions.PRODUCE and not self.ctx.quotas.wants_producer_ids(
            self.principal
        )

    async def _read_size_unless_idle(self) -> int | None:
        """The next length prefix, or IdleConnection after connections_max_idle_ms without a
        request read or a response written (Kafka's idle rule; partial bytes do not count)."""
        idle_ms = self.ctx.config.connections_max_idle_ms
        loop = asyncio.get_running_loop()
        while True:
            remaining_ms = self.last_active_ms + idle_ms - now_ms()
            if remaining_ms <= 0:
                raise IdleConnection(f"idle for connections_max_idle_ms={idle_ms}")
            try:
                head = await self.client.read_ahead(4, loop.time() + remaining_ms / 1000)
            except TimeoutError:
                continue  # a response written meanwhile may have moved last_active_ms
            return None if head is None else _INT32.unpack_from(head)[0]

    def _request_limit(self, size: int) -> int:
        """Kafka limits frames before authentication to 512 KiB (sasl.server.max.receive.size)."""
        if self.established or size <= self.ctx.config.max_preauth_frame_bytes:
            return self.ctx.config.max_frame_bytes
        if self.ctx.config.require_authentication or self.sasl.mechanism is not None:
            return self.ctx.config.max_preauth_frame_bytes
        # No SASL in progress on an unauthenticated listener: the first big frame (e.g. a
        # Produce right after ApiVersions) is an ordinary request from an ANONYMOUS client.
        return self.ctx.config.max_frame_bytes

    async def _hold_while_muted(self) -> None:
        """KIP-219 muting: the next request waits until the throttle debt is paid."""
        while True:
            delay_ms = self.muted_until_ms - now_ms()
            if delay_ms <= 0:
                return
            await asyncio.sleep(delay_ms / 1000)

    async def _handle_request(self, head: memoryview) -> None:
        started_ns = time.perf_counter_ns()
        size = _INT32.unpack_from(head)[0]
        frame = head[4:]  # header + body (or its first part, when streamed)
        prefix = parse_request_prefix(frame)
        self._check_version(prefix)
        entry = InflightRequest(prefix.api_key, prefix.api_version, prefix.correlation_id, prefix.client_id, size)
        entry.context["principal"] = self.principal
        if prefix.api_key not in _PREAUTH_APIS:
            self._establish(prefix)
        local = await self._maybe_answer_locally(prefix, frame)
        if local is not None:
            self.client.consume(len(head))
            await self.inflight.wait_empty()  # keep responses in request order
            self.client.write(framing.frame_bytes(local))
            await self.client.drain()
            return
        expects_response = self._observe_request(prefix, frame, entry)
        entry.context["handling_ns"] = time.perf_counter_ns() - started_ns
        if expects_response:
            await self.inflight.push(entry)
            self._bind_to_quota(prefix, entry)
        entry.sent_ns = time.perf_counter_ns()
        await self._forward_request(head, size)

    async def _forward_request(self, head: memoryview, size: int) -> None:
        """Send the request upstream from the receive buffer (no copy): a whole one is held and
        leaves with the requests that arrived with it; the rest of a large Produce is streamed.
        Backpressure from the upstream socket."""
        rest = size + 4 - len(head)
        if not rest:
            self.client.hold(len(head))
        else:
            self.client.flush_held()
            self.upstream.write(head)
            self.client.consume(len(head))
            deadline = asyncio.get_running_loop().time() + self.ctx.config.request_read_timeout_ms / 1000
            try:
                await self.client.forward(rest, self.upstream, deadline)
            except TimeoutError:
                raise SlowRequest(f"request of {size} bytes not complete within request_read_timeout_ms") from None
        if self.upstream.write_paused:
            self.client.flush_held()
            await self.upstream.drain()

    def _check_version(self, prefix: RequestPrefix) -> None:
        """Fail closed on versions we capped away (a client that skipped ApiVersions)."""
        if prefix.api_key == versions.API_VERSIONS:
            return  # answered with UNSUPPORTED_VERSION below, as a broker does
        ceiling = versions.allowed_max_version(prefix.api_key)
        if ceiling is not None and prefix.api_version > ceiling:
            raise ProtocolViolation(
                f"api key {prefix.api_key} v{prefix.api_version} is above the gateway's maximum v{ceiling}"
            )

    def _establish(self, prefix: RequestPrefix) -> None:
        if self.established:
            return
        if self.ctx.config.require_authentication and not self.sasl.authenticated:
            raise ProtocolViolation(f"api key {prefix.api_key} before authentication on a listener that requires it")
        self.established = True

    async def _maybe_answer_locally(self, prefix: RequestPrefix, frame: memoryview) -> bytes | None:
        if prefix.api_key == versions.API_VERSIONS and prefix.api_version > codec.max_decodable_version(
            versions.API_VERSIONS
        ):
            return versions.unsupported_version_response(prefix.correlation_id)
        admin = self.ctx.admin
        if admin is not None and prefix.api_key in admin.owned_apis():
            self.client.flush_held()
            await self._refuse_if_upstream_requires_auth(prefix)
            return await admin.answer(prefix, bytes(frame), self.principal)
        return None

    async def _refuse_if_upstream_requires_auth(self, prefix: RequestPrefix) -> None:
        """No auth downgrade: an answer the gateway gives itself is only given to an unauthenticated
        connection when the upstream would serve that connection too (auth_probe)."""
        probe = self.ctx.auth_probe
        if self.sasl.authenticated or probe is None or await probe.upstream_serves_anonymous(self.upstream_address):
            return
        raise ProtocolViolation(
            f"api key {prefix.api_key} before authentication, and upstream "
            f"{self.upstream_address[0]}:{self.upstream_address[1]} requires it"
        )

    def _observe_request(self, prefix: RequestPrefix, frame: memoryview, entry: InflightRequest) -> bool:
        """Identity, producer ids, acks. Returns whether a response will come back."""
        key = prefix.api_key
        if key == versions.SASL_HANDSHAKE:
            request = codec.decode_request(key, prefix.api_version, bytes(frame))
            self.sasl.on_handshake_request(request.mechanism, prefix.api_version)
        elif key == versions.SASL_AUTHENTICATE:
            request = codec.decode_request(key, prefix.api_version, bytes(frame))
            self.sasl.on_authenticate_request(bytes(request.auth_bytes or b""))  # null bytes: a hostile client
        elif key == versions.PRODUCE:
            return self._observe_produce(prefix, frame, entry)
        return True

    def _observe_produce(self, prefix: RequestPrefix, frame: memoryview, entry: InflightRequest) -> bool:
        quotas = self.ctx.quotas
        # A streamed (partial) frame was judged not to need its producer ids when it was read;
        # only a quota reload in between could change that, and the next request is judged anew.
        if len(frame) == entry.request_bytes and quotas.wants_producer_ids(self.principal):
            # A producer keeps its id for the life of its connection: only ids this connection
            # has not carried before can be new to the user's filter, so only those are charged.
            ids = _safe_producer_ids(prefix, frame) - self._seen_producer_ids
            if len(self._seen_producer_ids) + len(ids) > MAX_REMEMBERED_PRODUCER_IDS:
                self._seen_producer_ids.clear()
            self._seen_producer_ids |= ids
            entry.context["producer_id_throttle_ms"] = quotas.on_producer_ids(
                self.principal, prefix.client_id, self.peer.ip, ids
            )
        # The bytes are charged as the request is forwarded (Kafka: when its response is ready)
        # and the mute starts now, so the next request is held without waiting for this
        # response: produce stays pipelined and a pipelining client (librdkafka) still cannot
        # get a request past a throttle. The mute is measured from the moment of charging, as
        # Kafka's is from its own. The response later carries what is left of it.
        throttle_ms = quotas.on_produce(self.principal, prefix.client_id, self.peer.ip, entry.request_bytes)
        throttle_ms = max(throttle_ms, entry.context.get("producer_id_throttle_ms", 0))
        self._mute(throttle_ms)
        if produce_acks(frame, prefix) != 0:
            entry.context["produce_throttle_ms"] = throttle_ms
            return True
        # acks=0: no response; the request quota does not apply (Kafka records it as exempt).
        quotas.record_throttle("Produce", self.principal, prefix.client_id, throttle_ms)
        return False

    def _bind_to_quota(self, prefix: RequestPrefix, entry: InflightRequest) -> None:
        """Mark a request whose *response* may throttle this connection.

        A broker mutes a connection from reading a request until its response is sent (one request
        per connection at a time), so a throttle always applies from the very next request. The
        gateway pipelines, but when a throttle can only be known from the response (fetch bytes,
        request time) it waits for that response before forwarding the next request: otherwise a
        client that pipelines (librdkafka keeps up to 1e6 requests in flight) would get requests
        through before the throttle is known and overshoot the quota. Produce bytes are charged
        when forwarded (see _observe_produce), so producer_byte_rate alone keeps produce pipelined.
        """
        key = prefix.api_key
        kinds = ("fetch",) if key == FETCH else ()
        if key not in EXEMPT_APIS:
            kinds += ("request",)
        if self.ctx.quotas.may_throttle(self.principal, prefix.client_id, kinds):
            entry.context["quota_bound"] = True
            self._quota_bound_inflight += 1
            self._quota_bound_clear.clear()

    def _release_quota_bound(self, entry: InflightRequest) -> None:
        """Called once the response (and any mute it caused) has been handled."""
        if entry.context.get("quota_bound"):
            self._quota_bound_inflight -= 1
            if self._quota_bound_inflight == 0:
                self._quota_bound_clear.set()

    def _mute(self, throttle_ms: int) -> None:
        if throttle_ms > 0:
            self.muted_until_ms = max(self.muted_until_ms, now_ms() + throttle_ms)
            self.ctx.stats.throttled(self.peer.listener)

    def _log_bad_frame(self, side: str, err: Exception) -> None:
        log.warning(
            "closing client %s:%d (listener %s, principal %s): bad frame from %s: %s",
            self.peer.ip,
            self.peer.port,
            self.peer.listener,
            self.principal,
            side,
            err,
        )
        self.ctx.stats.bad_frame(side)


def _safe_producer_ids(prefix: RequestPrefix, frame: memoryview) -> set[int]:
    from kconfigs_enforcement.gateway.producer_ids import produce_request_producer_ids

    try:
        return produce_request_producer_ids(prefix.api_version, bytes(frame))
    except Exception as err:  # kafka-python raises assorted errors on malformed records
        raise MalformedFrame(f"produce request v{prefix.api_version} cannot be decoded: {err}") from err


def _header_fits(frame: memoryview) -> bool:
    """Whether a Produce's header fields (up to acks) are all within ``frame``."""
    try:
        produce_acks(frame, parse_request_prefix(frame))
        return True
    except MalformedFrame:
        return False
