"""Large frames through the gateway's streaming data path, byte for byte, with librdkafka.

Produce requests and Fetch responses above 16 KiB are forwarded from the gateway's receive buffer
as they arrive (only their header is waited for); a single 900 KiB record spans many receives.
Everything produced through the gateway must come back through it unchanged, with a
small receive buffer too (so streamed frames wrap around and the buffer is compacted). Against
Kafka 4.x, librdkafka fetches with v16+ (KIP-951), so large Fetch responses take the path that
walks them for NodeEndpoints as they stream."""

from __future__ import annotations

import hashlib
import random
import uuid

import pytest

from kconfigs_enforcement.gateway import channel, responses
from tests.integration.gateway_support import GatewayThread

pytestmark = pytest.mark.integration


def _payloads() -> list[bytes]:
    rng = random.Random(11)
    sizes = [rng.choice((100, 4096, 20_000)) for _ in range(1500)] + [900 * 1024, 3, 700 * 1024]
    return [rng.randbytes(size) for size in sizes]


def _produce(bootstrap: str, topic: str, payloads: list[bytes]) -> None:
    import confluent_kafka as ck

    producer = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "message.max.bytes": 2_000_000})
    for payload in payloads:
        producer.produce(topic, payload)
        producer.poll(0)
    assert producer.flush(60) == 0


def _consume(bootstrap: str, topic: str, count: int) -> list[bytes]:
    import confluent_kafka as ck

    consumer = ck.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": uuid.uuid4().hex,
            "enable.auto.commit": False,
            "fetch.max.bytes": 52428800,
        }
    )
    partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
    consumer.assign(
        [ck.TopicPartition(topic, p, ck.OFFSET_BEGINNING) for p in partitions]
    )  # no group join: quick close
    got: list[bytes] = []
    try:
        for _ in range(120):
            for message in consumer.consume(1000, 1.0):
                assert not message.error(), message.error()
                got.append(message.value())
            if len(got) >= count:
                break
    finally:
        consumer.close()
    return got


@pytest.fixture(params=["tansu", "kraft"])
def upstream(request):
    if request.param == "tansu":
        return request.param, request.getfixturevalue("tansu_upstream")
    return request.param, request.getfixturevalue("kraft_broker").bootstrap


@pytest.mark.parametrize(
    "buffer_bytes", [channel.RECEIVE_BUFFER_BYTES, 24 * 1024], ids=["default-buffer", "small-buffer"]
)
def test_large_produce_and_fetch_frames_stream_through_unchanged(upstream, monkeypatch, buffer_bytes):
    walked = []  # the real relay runs; this only records that it did

    async def relay_and_record(version, *args):
        walked.append(version)
        await real_relay(version, *args)

    real_relay = responses.relay_fetch_with_endpoints
    monkeypatch.setattr(responses, "relay_fetch_with_endpoints", relay_and_record)
    payloads = _payloads()
    gateway = GatewayThread(upstream[1], receive_buffer_bytes=buffer_bytes)
    try:
        topic = f"stream-{uuid.uuid4().hex[:8]}"
        _produce(gateway.bootstrap, topic, payloads)
        got = _consume(gateway.bootstrap, topic, len(payloads))
    finally:
        gateway.stop()
    if gateway.config.data_plane == "native":  # the native data plane counts its NodeEndpoints checks
        walked = [version for (key, version) in gateway.gateway.node_endpoint_checks() if key == 1]
    assert len(got) == len(payloads)
    # byte-exact; the order only holds per partition, so compare as multisets
    assert sorted(hashlib.sha256(p).digest() for p in got) == sorted(hashlib.sha256(p).digest() for p in payloads)
    if upstream[0] == "kraft":
        assert walked and min(walked) >= 16  # streamed Fetch v16+ responses were walked
