"""Channel: the gateway's receive buffer and flow-controlled writes, over real loopback sockets.

Each test wires a source socket (an asyncio stream the test writes to) into a Channel, and a sink
Channel whose peer (an asyncio stream the test reads) sees what the Channel sends on. Small buffer
capacities force buffer wrap-around, compaction and growth on every few frames.
"""

import asyncio
import random
import socket
import struct

import pytest

from kconfigs_enforcement.gateway import splice
from kconfigs_enforcement.gateway.channel import Channel


async def _accepted_pair(capacity: int):
    """(server, server-side Channel, client reader, client writer) on 127.0.0.1."""
    loop = asyncio.get_running_loop()
    accepted = loop.create_future()

    def new_channel() -> Channel:
        channel = Channel(capacity)
        channel.on_connection = accepted.set_result
        return channel

    server = await loop.create_server(new_channel, "127.0.0.1", 0)
    reader, writer = await asyncio.open_connection("127.0.0.1", server.sockets[0].getsockname()[1])
    return server, await accepted, reader, writer


def _run(coro):
    return asyncio.run(asyncio.wait_for(coro, 30))


def _frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


async def _relay_frames(source: Channel, sink: Channel, count: int) -> None:
    """What the proxy does: read each frame's prefix, then the frame, and hold it for sending."""
    source.held_sink = sink
    for _ in range(count):
        (size,) = struct.unpack(">i", await source.read_ahead(4))
        frame = await source.read_ahead(4 + size)
        assert len(frame) == 4 + size
        source.hold(len(frame))
    source.flush_held()


@pytest.mark.parametrize("capacity", [64, 1000, 256 * 1024])
def test_frames_written_in_odd_pieces_arrive_intact_and_in_order(capacity):
    rng = random.Random(capacity)
    frames = [_frame(rng.randbytes(rng.randint(6, 3000))) for _ in range(300)]
    stream = b"".join(frames)

    async def scenario():
        servers = []
        server, source, _r, source_writer = await _accepted_pair(capacity)
        sink_server, sink, sink_reader, _w = await _accepted_pair(capacity)
        servers += [server, sink_server]
        relay = asyncio.create_task(_relay_frames(source, sink, len(frames)))
        pos = 0
        while pos < len(stream):  # dribble: frame boundaries never line up with the writes
            step = rng.randint(1, 5000)
            source_writer.write(stream[pos : pos + step])
            await source_writer.drain()
            pos += step
            await asyncio.sleep(0)
        await relay
        received = await sink_reader.readexactly(len(stream))
        for s in servers:
            s.close()
        return received

    assert _run(scenario()) == stream


@pytest.mark.parametrize("zero_copy", [True, False], ids=["splice", "copy"])
def test_forward_streams_a_frame_far_larger_than_the_buffer_without_growing_it(zero_copy):
    payload = random.Random(7).randbytes(3 * 1024 * 1024 + 17)

    async def scenario():
        server, source, _r, source_writer = await _accepted_pair(64 * 1024)
        sink_server, sink, sink_reader, _w = await _accepted_pair(64 * 1024)
        source.zero_copy = sink.zero_copy = zero_copy
        source_writer.write(_frame(payload) + _frame(b"after"))
        head = await source.read_ahead(4 + 1000)
        sink.write(head)
        source.consume(len(head))
        await source.forward(len(payload) - 1000, sink)
        received = await sink_reader.readexactly(4 + len(payload))
        after = bytes(await source.read_ahead(9))  # the source reads normally again
        largest = len(source._view)
        server.close()
        sink_server.close()
        return received, largest, after, source.spliced_bytes

    received, largest, after, spliced = _run(scenario())
    assert received == _frame(payload) and after == _frame(b"after")
    assert largest == 64 * 1024  # streamed through the same buffer (or none at all)
    if zero_copy:  # what had not reached the buffer yet went socket to socket
        assert 1024 * 1024 < spliced <= len(payload) - 1000
    else:
        assert spliced == 0


def _recv_exactly(sock: socket.socket, nbytes: int) -> bytes:
    got = bytearray()
    while len(got) < nbytes:
        chunk = sock.recv(min(1 << 20, nbytes - len(got)))
        if not chunk:
            break
        got += chunk
    return bytes(got)


@pytest.mark.skipif(not splice.AVAILABLE, reason="splice(2) is Linux-only")
def test_splice_sends_what_the_sink_transport_still_holds_first():
    queued = random.Random(5).randbytes(8 * 1024 * 1024)  # more than the kernel takes at once
    payload = random.Random(6).randbytes(512 * 1024)

    async def scenario():
        loop = asyncio.get_running_loop()
        server, source, _r, source_writer = await _accepted_pair(64 * 1024)
        accepted = loop.create_future()

        def new_sink() -> Channel:
            channel = Channel()
            channel.on_connection = accepted.set_result
            return channel

        sink_server = await loop.create_server(new_sink, "127.0.0.1", 0)
        peer = socket.create_connection(sink_server.sockets[0].getsockname())  # blocking, read by hand
        sink = await accepted
        sink.write(queued)
        held_back = sink.transport.get_write_buffer_size()
        # free kernel space while the loop cannot run: the transport has not sent the rest of its
        # queue yet, so a splice that went ahead now would overtake it
        first = _recv_exactly(peer, 1024 * 1024)
        source_writer.write(payload)
        forward = asyncio.create_task(source.forward(len(payload), sink))
        await asyncio.sleep(0)
        rest = await loop.run_in_executor(None, _recv_exactly, peer, len(queued) + len(payload) - len(first))
        await forward
        peer.close()
        server.close()
        sink_server.close()
        return held_back, first + rest, source.spliced_bytes

    held_back, received, spliced = _run(scenario())
    assert held_back > 0
    assert received == queued + payload
    assert spliced > 0


@pytest.mark.skipif(not splice.AVAILABLE, reason="splice(2) is Linux-only")
def test_splice_failures_surface_like_the_copy_path():
    async def scenario():
        server, source, _r, source_writer = await _accepted_pair(1024)
        sink_server, sink, sink_reader, sink_writer = await _accepted_pair(1024)
        source_writer.write(b"x" * 1000)
        source_writer.close()  # 1000 of the 1 MiB promised, then EOF
        with pytest.raises(asyncio.IncompleteReadError):
            await source.forward(1024 * 1024, sink)
        early_eof = sink.spliced_bytes == 0 and source.spliced_bytes <= 1000

        server2, source2, _r2, writer2 = await _accepted_pair(1024)
        writer2.write(b"y" * 100)  # a frame that never completes
        loop = asyncio.get_running_loop()
        with pytest.raises(TimeoutError):
            await source2.forward(1024 * 1024, sink, loop.time() + 0.2)

        server3, source3, _r3, writer3 = await _accepted_pair(1024)
        sink_writer.transport.abort()  # the sink's peer resets
        await asyncio.sleep(0.05)
        writer3.write(b"z" * 4 * 1024 * 1024)
        with pytest.raises(ConnectionError):
            await source3.forward(4 * 1024 * 1024, sink)
        for s in (server, server2, server3, sink_server):
            s.close()
        return early_eof

    assert _run(scenario())


def test_a_whole_frame_larger_than_the_buffer_grows_it_then_gives_the_memory_back():
    payload = bytes(range(256)) * 1000

    async def scenario():
        server, source, _r, source_writer = await _accepted_pair(4096)
        source_writer.write(_frame(payload) + _frame(b"next-frame"))
        frame = await source.read_ahead(4 + len(payload))
        grown, intact = len(source._view), bytes(frame[4:]) == payload
        source.consume(len(frame))
        small = await source.read_ahead(4 + 10)
        after = bytes(small[4:])
        source.consume(len(small))
        server.close()
        return grown, intact, after, len(source._view)

    grown, intact, after, final = _run(scenario())
    assert grown >= len(payload) + 4 and intact and after == b"next-frame"
    assert final == 4096


def test_forward_waits_while_the_sink_is_above_its_high_water_mark():
    payload = random.Random(3).randbytes(8 * 1024 * 1024)

    async def scenario():
        server, source, _r, source_writer = await _accepted_pair(64 * 1024)
        sink_server, sink, sink_reader, _w = await _accepted_pair(64 * 1024)
        sink.transport.set_write_buffer_limits(high=1024, low=256)
        source_writer.write(payload)
        forward = asyncio.create_task(source.forward(len(payload), sink))
        await asyncio.sleep(0.3)
        stalled = not forward.done()  # the sink's peer reads nothing yet: kernel buffers fill
        received = await sink_reader.readexactly(len(payload))
        await forward
        server.close()
        sink_server.close()
        return stalled, received

    stalled, received = _run(scenario())
    assert stalled
    assert received == payload


def test_eof_between_frames_is_none_inside_a_frame_is_an_incomplete_read():
    async def scenario():
        server, source, _r, source_writer = await _accepted_pair(1024)
        source_writer.write(_frame(b"whole") + b"\x00\x00\x00\x09part")
        source_writer.close()
        first = await source.read_ahead(9)
        source.consume(len(first))
        with pytest.raises(asyncio.IncompleteReadError) as err:
            await source.read_ahead(13)
        partial = err.value.partial
        server2, source2, _r2, writer2 = await _accepted_pair(1024)
        writer2.close()
        clean = await source2.read_ahead(4)
        server.close()
        server2.close()
        return bytes(first), partial, clean

    first, partial, clean = _run(scenario())
    assert first == _frame(b"whole") and partial == b"\x00\x00\x00\x09part" and clean is None


def test_read_ahead_times_out_at_its_deadline():
    async def scenario():
        server, source, _r, source_writer = await _accepted_pair(1024)
        source_writer.write(b"\x00\x00\x00\x10abc")  # a frame that never completes
        loop = asyncio.get_running_loop()
        started = loop.time()
        with pytest.raises(TimeoutError):
            await source.read_ahead(20, loop.time() + 0.2)
        waited = loop.time() - started
        server.close()
        return waited

    assert 0.15 <= _run(scenario()) < 5
