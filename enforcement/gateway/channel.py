"""One socket of a proxied connection: a reusable receive buffer and flow-controlled writes.

Why not asyncio streams: a StreamReader copies every byte three times in Python (``recv`` into a
new bytes, ``feed_data`` into its bytearray, ``readexactly`` into another new bytes) and
``writelines`` joins prefix and body into a fourth; a 1 MiB frame also means fresh 1 MiB
allocations that the kernel must page-fault in and zero. Profiled, that was most of the
gateway's CPU per MB. A :class:`Channel` is an asyncio ``BufferedProtocol``: the kernel copies
straight into a per-socket buffer (``recv_into``), the proxy reads frame headers from a
memoryview of it, and forwards bytes with ``transport.write(memoryview)``, which sends at once
(the plain socket transport copies only what the kernel did not take). Frames that need no
decoding are never copied in Python, and large ones stream through without being buffered whole.

The buffer is an anonymous mmap: pages are only made resident when bytes land in them, so an idle
connection costs a page or two, not the whole capacity. On Linux the part of a large frame that has
not reached the buffer yet does not enter it at all: ``forward`` splices it socket to socket
(:mod:`kconfigs_enforcement.gateway.splice`).
"""

from __future__ import annotations

import asyncio
import mmap

from kconfigs_enforcement.gateway import splice

#: receive buffer per socket; larger frames grow it (bounded by the frame size limit) when they
#: must be held whole, and stream through it otherwise
RECEIVE_BUFFER_BYTES = 256 * 1024


class Channel(asyncio.BufferedProtocol):
    """Receive side: ``await read_ahead(n)`` / ``consume(n)`` / ``await forward(n, sink)``.
    Send side: ``write(data)`` and ``await drain()`` (waits while above the high-water mark)."""

    def __init__(self, capacity: int = RECEIVE_BUFFER_BYTES):
        self._capacity = capacity
        self._buf = self._view = None  # allocated on first use (accepted-then-refused sockets never need one)
        # _view[_start:_cursor]: frames parsed and held to be forwarded together (see hold);
        # _view[_cursor:_end]: received, not yet read
        self._start = self._cursor = self._end = 0
        #: where held bytes go (the other socket of the connection)
        self.held_sink: "Channel | None" = None
        self._pinned = False  # a view handed out by read_ahead is in use: never move bytes under it
        self._waiter: asyncio.Future | None = None
        self._eof = False
        self._read_paused = False
        self._write_paused = False
        self._drain_waiter: asyncio.Future | None = None
        self._lost: BaseException | None = None
        self.transport: asyncio.Transport | None = None
        #: TLS transports may keep a reference to written data: hand them a copy (see write)
        self._copy_writes = False
        self.on_connection: "callable | None" = None
        #: forward mode (see forward): where bytes go, how many are still due, a send failure
        self._relay_sink: "Channel | None" = None
        self._relay_left = 0
        self._relay_error: BaseException | None = None
        #: stream large remainders socket-to-socket in the kernel (plain TCP on Linux; see splice)
        self.zero_copy = splice.AVAILABLE
        #: bytes that went through splice rather than the receive buffer (observability, tests)
        self.spliced_bytes = 0

    # ---- protocol callbacks --------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:
        self.transport = transport
        self._copy_writes = transport.get_extra_info("ssl_object") is not None
        if self._copy_writes:
            self.zero_copy = False  # the socket carries ciphertext
        if self.on_connection is not None:
            self.on_connection(self)

    def get_buffer(self, sizehint: int) -> memoryview:
        if self._view is None:
            self._allocate(self._capacity, keep=False)
        elif self._end == len(self._view):
            self._make_room()
        return self._view[self._end :]

    def buffer_updated(self, nbytes: int) -> None:
        self._end += nbytes
        if self._relay_sink is not None:
            self._relay()
            if self._relay_left and self._relay_error is None and not self._relay_sink.write_paused:
                return  # still streaming: no need to wake the task
        elif self._end == len(self._view) and self._start == 0:
            self._pause_reading()  # full: the consumer must take bytes (or grow the buffer) first
        self._wake(self._waiter)

    def eof_received(self) -> bool:
        self._eof = True
        self._wake(self._waiter)
        return True  # keep the transport: the connection closes both sides itself

    def connection_lost(self, exc: Exception | None) -> None:
        self._eof = True
        self._lost = exc or ConnectionResetError("connection lost")
        self._wake(self._waiter)
        self._wake(self._drain_waiter)

    def pause_writing(self) -> None:
        self._write_paused = True

    def resume_writing(self) -> None:
        self._write_paused = False
        self._wake(self._drain_waiter)

    # ---- receive -------------------------------------------------------------------------

    @property
    def available(self) -> int:
        """Bytes received and not yet read."""
        return self._end - self._cursor

    @property
    def write_paused(self) -> bool:
        """The transport's write buffer is above its high-water mark (stop feeding it)."""
        return self._write_paused

    async def read_ahead(self, nbytes: int, deadline: float | None = None) -> memoryview | None:
        """The next ``nbytes`` unconsumed bytes, without consuming them (valid until the next
        call that reads: read_ahead, consume, forward). ``None`` on a clean EOF with nothing buffered.

        :raises asyncio.IncompleteReadError: on EOF after a partial read.
        :raises TimeoutError: when ``deadline`` (loop time) passes first.
        """
        self._pinned = False  # views handed out before are no longer in use (see above)
        while self._end - self._cursor < nbytes:
            self.flush_held()  # about to wait (or fail): what was held must go now
            if self._eof:
                if self._cursor == self._end:
                    return None
                raise asyncio.IncompleteReadError(bytes(self._view[self._cursor : self._end]), nbytes)
            self._ensure_space(nbytes)
            await self._wait(deadline)
        self._pinned = True
        return self._view[self._cursor : self._cursor + nbytes]

    def hold(self, nbytes: int) -> None:
        """The next ``nbytes`` (read, unchanged) go to ``held_sink`` with the frames after them:
        frames that arrived together leave in one send, without being copied. Held bytes are
        flushed before this channel waits for data; callers flush before any other wait."""
        self._pinned = False
        self._cursor += nbytes

    def flush_held(self) -> None:
        if self._start < self._cursor:
            self.held_sink.write(self._view[self._start : self._cursor])
            self._start = self._cursor
            self._reset_if_empty()

    def consume(self, nbytes: int) -> None:
        """Drop the next ``nbytes`` (the caller has sent them on, or a replacement)."""
        self.flush_held()
        self._pinned = False
        self._start = self._cursor = self._cursor + nbytes
        self._reset_if_empty()

    def _reset_if_empty(self) -> None:
        if self._start == self._end:
            self._start = self._cursor = self._end = 0
            if len(self._view) > self._capacity:  # a big frame grew it: give the memory back
                self._allocate(self._capacity, keep=False)
        self._resume_reading()

    async def forward(self, nbytes: int, sink: "Channel", deadline: float | None = None) -> None:
        """Send the next ``nbytes`` to ``sink`` (consumed), with backpressure. What is buffered goes
        at once; the rest is relayed by buffer_updated as it arrives, so a large frame streams
        through without a task switch per received chunk."""
        self._relay_sink, self._relay_left, self._relay_error = sink, nbytes, None
        try:
            self._relay()
            if self._can_splice_to(sink):
                await self._splice_rest(sink, deadline)
            while self._relay_left:
                if self._relay_error is not None:
                    raise self._relay_error
                if sink.write_paused:
                    await sink.drain()
                    self._relay()
                elif self._eof:
                    raise asyncio.IncompleteReadError(b"", self._relay_left)
                else:
                    await self._wait(deadline)
        finally:
            self._relay_sink = None
        if sink.write_paused:
            await sink.drain()

    def _can_splice_to(self, sink: "Channel") -> bool:
        """Splice only what has not reached the receive buffer yet, between plain sockets."""
        return (
            self.zero_copy
            and sink.zero_copy
            and self._relay_left >= splice.MIN_SPLICE_BYTES
            and self._cursor == self._end
            and self._relay_error is None
            and not self._eof
        )

    async def _splice_rest(self, sink: "Channel", deadline: float | None) -> None:
        """Forward the rest of the frame with splice: this transport stops reading meanwhile, and
        what the sink's transport still holds is sent first, so bytes leave in order."""
        self._pause_reading()
        try:
            await sink.wait_sent()
            await splice.splice_exactly(self._fileno(), sink._fileno(), self._relay_left, deadline)
        finally:
            self._resume_reading()
        self.spliced_bytes += self._relay_left
        self._relay_left = 0

    def _fileno(self) -> int:
        return self.transport.get_extra_info("socket").fileno()

    def _relay(self) -> None:
        """Forward-mode step: pass buffered bytes on unless the sink is above its high-water mark
        (then stop reading this socket until it drains)."""
        sink = self._relay_sink
        chunk = min(self._relay_left, self._end - self._cursor)
        if chunk and not sink.write_paused:
            try:
                sink.write(self._view[self._cursor : self._cursor + chunk])
            except ConnectionError as err:
                self._relay_error = err
                return
            self._relay_left -= chunk
            self.consume(chunk)
        if sink.write_paused:
            self._pause_reading()

    async def _wait(self, deadline: float | None) -> None:
        """Until bytes arrive, EOF, or ``deadline``. A timer is armed only when we really wait."""
        self._resume_reading()
        loop = asyncio.get_running_loop()
        self._waiter = waiter = loop.create_future()
        timer = loop.call_at(deadline, self._time_out, waiter) if deadline is not None else None
        try:
            await waiter
        finally:
            self._waiter = None
            if timer is not None:
                timer.cancel()

    @staticmethod
    def _time_out(waiter: asyncio.Future) -> None:
        if not waiter.done():
            waiter.set_exception(TimeoutError())

    def _ensure_space(self, nbytes: int) -> None:
        """Room for ``nbytes`` contiguous unconsumed bytes (a frame held whole)."""
        needed = self._cursor - self._start + nbytes
        if self._view is None or needed > len(self._view):
            self._allocate(max(needed, self._capacity), keep=True)
        elif self._cursor + nbytes > len(self._view):
            self._make_room()

    def _make_room(self) -> None:
        """The buffer's tail is full: move the unconsumed bytes to its front (or to a new buffer
        when a view of them is in use)."""
        if self._pinned:
            self._allocate(len(self._view), keep=True)
            return
        size, shift = self._end - self._start, self._start
        self._view[:size] = self._view[self._start : self._end]
        self._start, self._cursor, self._end = 0, self._cursor - shift, size
        self._resume_reading()

    def _allocate(self, capacity: int, keep: bool) -> None:
        """A fresh buffer (the old one stays alive while views of it exist), unconsumed bytes copied."""
        size, read = (self._end - self._start, self._cursor - self._start) if keep else (0, 0)
        buf = mmap.mmap(-1, max(capacity, size))
        view = memoryview(buf)
        if size:
            view[:size] = self._view[self._start : self._end]
        self._buf, self._view = buf, view
        self._start, self._cursor, self._end = 0, read, size
        self._resume_reading()

    def _pause_reading(self) -> None:
        if not self._read_paused and self.transport is not None and not self.transport.is_closing():
            self._read_paused = True
            self.transport.pause_reading()

    def _resume_reading(self) -> None:
        if self._relay_sink is not None and self._relay_sink.write_paused:
            return  # backpressure: the sink must drain first
        if self._read_paused and (self._view is None or self._start > 0 or self._end < len(self._view)):
            self._read_paused = False
            if not self.transport.is_closing():
                self.transport.resume_reading()

    # ---- send ----------------------------------------------------------------------------

    def write(self, data: bytes | memoryview) -> None:
        if self._lost is not None:
            raise ConnectionResetError("connection lost")
        # The plain socket transport sends at once and copies only what the kernel did not take,
        # so a view of our receive buffer is safe to pass; TLS may queue it, so it gets a copy.
        self.transport.write(bytes(data) if self._copy_writes and isinstance(data, memoryview) else data)

    async def drain(self) -> None:
        """Wait while the transport's write buffer is above its high-water mark."""
        while self._write_paused and self._lost is None:
            self._drain_waiter = waiter = asyncio.get_running_loop().create_future()
            try:
                await waiter
            finally:
                self._drain_waiter = None
        if self._lost is not None:
            raise ConnectionResetError("connection lost")

    async def wait_sent(self) -> None:
        """Until the transport has handed everything written so far to the kernel (its write
        buffer is empty): a low-water mark of 0 makes asyncio's flow control report exactly that."""
        transport = self.transport
        if transport.get_write_buffer_size() == 0 or transport.is_closing():
            return await self.drain()
        low, high = transport.get_write_buffer_limits()
        transport.set_write_buffer_limits(high=0, low=0)
        try:
            await self.drain()
        finally:
            if not transport.is_closing():
                transport.set_write_buffer_limits(high=high, low=low)

    def close(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()

    def is_closing(self) -> bool:
        return self.transport is None or self.transport.is_closing()

    def get_extra_info(self, name: str, default=None):
        return self.transport.get_extra_info(name, default)

    @staticmethod
    def _wake(waiter: asyncio.Future | None) -> None:
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
