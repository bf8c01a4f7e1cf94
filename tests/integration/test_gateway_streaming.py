"""Large frames through the gateway's data plane, byte for byte, with librdkafka.

A single 900 KiB record spans many socket reads on each side. Everything produced through the
gateway must come back through it unchanged. Against Kafka 4.x, librdkafka fetches with v16+
(KIP-951), so large Fetch responses are walked for NodeEndpoints on their way through."""

from __future__ import annotations

import hashlib
import random
import uuid

import pytest

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


def test_large_produce_and_fetch_frames_stream_through_unchanged(upstream):
    payloads = _payloads()
    gateway = GatewayThread(upstream[1])
    try:
        topic = f"stream-{uuid.uuid4().hex[:8]}"
        _produce(gateway.bootstrap, topic, payloads)
        got = _consume(gateway.bootstrap, topic, len(payloads))
    finally:
        gateway.stop()
    # the data plane counts the Fetch responses it checked for NodeEndpoints, per version
    walked = [version for (key, version) in gateway.gateway.node_endpoint_checks() if key == 1]
    assert len(got) == len(payloads)
    # byte-exact; the order only holds per partition, so compare as multisets
    assert sorted(hashlib.sha256(p).digest() for p in got) == sorted(hashlib.sha256(p).digest() for p in payloads)
    if upstream[0] == "kraft":
        assert walked and min(walked) >= 16  # streamed Fetch v16+ responses were walked
