"""Acknowledgement latency of paced produce batches, from a generator that costs next to no CPU.

At half of a 2-core machine's max load a client library's own per-message work (hundreds of
thousands of produce() calls and delivery callbacks a second, in Python) takes a core, and
latency percentiles then measure the wait for a core rather than the path. This generator sends
one pre-built Produce request (one record batch of BATCH_RECORDS 1 KiB records, what a producer
with linger.ms fills at that rate) on a fixed schedule over one connection, patching only the
correlation id, and reads the responses on a second thread: a few hundred sends a second.

The latency of a batch is the time from its scheduled send to its acknowledgement (acks=1). A
send that falls behind its schedule (the path pushing back) counts from the schedule, as a
producer's record waits in its buffer. Records wait up to one linger interval for their batch on
top of that, the same on every path, so the difference between two paths is the same either way.

Hand-built because no client library sends a fixed batch at a fixed rate without per-record work;
the request and the records are encoded with kafka-python's own protocol classes.
"""

from __future__ import annotations

import socket
import struct
import threading
import time

#: records per batch: about 1 MB per request, under the broker's default max.message.bytes
#: (1,048,588) as librdkafka's default batch.size (1,000,000) is
BATCH_RECORDS = 900
RECORD_BYTES = 1024
#: the generator's client-id (the broker's request log names it)
BATCH_CLIENT_ID = "batch-latency"
#: sends waiting for their acknowledgement at most (librdkafka's default is 1,000,000 requests:
#: a path that falls behind shows as latency, not as a stalled generator)
MAX_IN_FLIGHT = 64


def produce_frame(topic: str, acks: int = 1) -> bytearray:
    """A size-prefixed Produce v7 request to partition 0 of ``topic``, correlation id 0."""
    from kafka.protocol.producer import ProduceRequest
    from kafka.record.memory_records import MemoryRecordsBuilder

    builder = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=BATCH_RECORDS * (RECORD_BYTES + 64))
    now_ms = int(time.time() * 1000)
    for _ in range(BATCH_RECORDS):
        builder.append(now_ms, None, b"x" * RECORD_BYTES)
    builder.close()
    request_class = ProduceRequest[7]
    partition = request_class.TopicProduceData.PartitionProduceData(index=0, records=bytes(builder.buffer()))
    request = request_class(
        transactional_id=None,
        acks=acks,
        timeout_ms=30_000,
        topic_data=[request_class.TopicProduceData(name=topic, partition_data=[partition])],
    )
    request.with_header(correlation_id=0, client_id=BATCH_CLIENT_ID)
    body = bytes(request.encode(header=True))
    return bytearray(struct.pack(">i", len(body)) + body)


#: offset of the correlation id in a size-prefixed request: size, api key, api version
CORRELATION_AT = 4 + 2 + 2


def batch_latencies_ms(
    bootstrap: str, topic: str, megabytes_per_s: float, seconds: float, timeline: list | None = None
) -> tuple[list[float], float]:
    """(latency of every batch in ms, MB/s acknowledged) over ``seconds`` of batches sent at
    ``megabytes_per_s`` (MB = 2**20 bytes of record values). ``timeline``, when given, gets
    (correlation id, scheduled send, acknowledged) per batch in wall-clock seconds, in send order,
    to be set against the broker's request log (broker_request_log.py).

    :raises RuntimeError: a batch was refused (its error code), or the connection closed.
    """
    frame = produce_frame(topic)
    interval_s = BATCH_RECORDS * RECORD_BYTES / (megabytes_per_s * 1024 * 1024)
    host, port = bootstrap.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    # one reader for the whole connection: a second buffered reader could hold bytes of its
    # responses that the first had read ahead
    stream = sock.makefile("rb")
    _until_the_partition_takes_batches(sock, stream, frame, bootstrap)
    scheduled: dict[int, float] = {}
    acknowledged_at: dict[int, float] = {}
    latencies: list[float] = []
    room = threading.Semaphore(MAX_IN_FLIGHT)
    failure: list[str] = []
    total = int(seconds / interval_s)

    def read_acknowledgements() -> None:
        try:
            for _ in range(total):
                response = _read_response(stream)
                acknowledged = time.perf_counter()
                (correlation_id,) = struct.unpack_from(">i", response)
                error = produce_error_code(response)
                if error:
                    raise RuntimeError(f"batch {correlation_id} refused with error code {error}")
                latencies.append((acknowledged - scheduled[correlation_id]) * 1000)
                acknowledged_at[correlation_id] = acknowledged
                room.release()
        except Exception as error:  # reported by the sending thread
            failure.append(str(error))
            room.release()

    reader = threading.Thread(target=read_acknowledgements, daemon=True)
    reader.start()
    start = time.perf_counter()
    try:
        for correlation_id in range(total):
            due = start + correlation_id * interval_s
            if (wait := due - time.perf_counter()) > 0:
                time.sleep(wait)
            room.acquire()
            if failure:
                break
            struct.pack_into(">i", frame, CORRELATION_AT, correlation_id)
            scheduled[correlation_id] = due
            sock.sendall(frame)
        reader.join(seconds + 60)
    finally:
        sock.close()
    if failure or reader.is_alive():
        why = failure[0] if failure else f"{total - len(latencies)} of {total} batches never acknowledged"
        raise RuntimeError(f"batch latency through {bootstrap}: {why}")
    elapsed = time.perf_counter() - start
    if timeline is not None:
        to_wall = time.time() - time.perf_counter()
        timeline.extend((i, scheduled[i] + to_wall, acknowledged_at[i] + to_wall) for i in range(total))
    return latencies, len(latencies) * BATCH_RECORDS * RECORD_BYTES / (1024 * 1024) / elapsed


#: Produce errors of a partition that is still being created (a topic made a moment ago whose
#: metadata has not reached the broker yet): UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE,
#: NOT_LEADER_OR_FOLLOWER
NOT_READY_YET = (3, 5, 6)


def _until_the_partition_takes_batches(sock: socket.socket, stream, frame: bytearray, bootstrap: str) -> None:
    """One batch at a time until one is acknowledged, as a producer retries these errors.

    :raises RuntimeError: another error, the connection closed, or still not ready after 30 s."""
    deadline = time.monotonic() + 30
    while True:
        sock.sendall(frame)
        try:
            error = produce_error_code(_read_response(stream))
        except RuntimeError as closed:
            raise RuntimeError(f"batch latency through {bootstrap}: {closed}") from None
        if error == 0:
            return
        if error not in NOT_READY_YET or time.monotonic() > deadline:
            raise RuntimeError(f"batch latency through {bootstrap}: a first batch refused with error code {error}")
        time.sleep(0.2)


def _read_response(stream) -> bytes:
    """The next response of the connection, without its size prefix. :raises RuntimeError:"""
    size = stream.read(4)
    if len(size) < 4:
        raise RuntimeError("the connection closed")
    return stream.read(struct.unpack(">i", size)[0])


def produce_error_code(response: bytes) -> int:
    """The error code of the one partition of a Produce v7 response (after its correlation id)."""
    from kafka.protocol.producer import ProduceResponse

    return ProduceResponse[7].decode(response[4:]).responses[0].partition_responses[0].error_code
