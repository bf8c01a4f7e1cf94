"""Large frames through the gateway's data plane, byte for byte, with librdkafka and kafka-python.

A single 900 KiB record spans many socket reads on each side. Everything produced through the
gateway must come back through it unchanged. Produce requests and Fetch responses of 64 KiB and
more are forwarded as they arrive (their records spliced socket to socket on Linux) instead of
being held whole; the data plane counts them, so these tests fail if that path is not taken.
Against Kafka 4.x, clients fetch with v16+ (KIP-951), so large Fetch responses are walked for
NodeEndpoints as they stream. Where the bytes must be seen, frames are still held whole: a
producer-id quota reads every Produce request's batches."""

from __future__ import annotations

import hashlib
import random
import sys
import time
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
    _assert_streamed(gateway, produce=True)


def _assert_streamed(gateway: GatewayThread, produce: bool) -> None:
    streamed = gateway.gateway.streamed_frames()
    assert (streamed["produce_requests"] > 0) == produce, streamed
    assert streamed["fetch_responses"] > 0, streamed
    if sys.platform.startswith("linux"):  # elsewhere large frames are held whole
        assert streamed["spliced_bytes"] > 0, streamed
    # what /metrics shows is the data plane's own count (the traffic has stopped)
    value = gateway.gateway.stats.registry.get_sample_value
    assert value("kconfigs_gateway_streamed_frames_total", {"frame": "fetch_response"}) == streamed["fetch_responses"]
    assert value("kconfigs_gateway_spliced_bytes_total") == streamed["spliced_bytes"]


def _digests(payloads: list[bytes]) -> list[bytes]:
    return sorted(hashlib.sha256(p).digest() for p in payloads)


def _kafka_python_round_trip(
    bootstrap: str,
    payloads: list[bytes],
    batch_bytes: int = 1024 * 1024,
    fetch_bytes: int = 4 * 1024 * 1024,
    **producer_settings,
) -> tuple[list[bytes], float]:
    """Produce ``payloads`` in batches of up to ``batch_bytes`` with kafka-python, then consume
    them all; (what came back, seconds the consume took)."""
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    topic = f"stream-kp-{uuid.uuid4().hex[:8]}"
    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        batch_size=batch_bytes,
        linger_ms=100,
        max_request_size=8 * 1024 * 1024,
        **producer_settings,
    )
    try:
        for payload in payloads:
            producer.send(topic, payload)
        producer.flush(60)
    finally:
        producer.close()
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        client_id="stream-consumer",
        enable_auto_commit=False,
        fetch_max_bytes=fetch_bytes,
        max_partition_fetch_bytes=fetch_bytes,
    )
    got: list[bytes] = []
    started = time.monotonic()
    try:
        partitions = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic) or {0}]
        consumer.assign(partitions)
        consumer.seek_to_beginning(*partitions)
        deadline = started + 120
        while len(got) < len(payloads) and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=1000).values():
                got.extend(r.value for r in records)
    finally:
        consumer.close()
    return got, time.monotonic() - started


def _large_payloads(count: int = 40, size: int = 100 * 1024) -> list[bytes]:
    rng = random.Random(23)
    return [rng.randbytes(size) for _ in range(count)]


def test_kafka_python_megabyte_batches_stream_through_unchanged(upstream):
    payloads = _large_payloads()
    gateway = GatewayThread(upstream[1])
    try:
        got, _seconds = _kafka_python_round_trip(gateway.bootstrap, payloads)
    finally:
        gateway.stop()
    assert _digests(got) == _digests(payloads)
    _assert_streamed(gateway, produce=True)


def test_a_producer_id_quota_holds_produce_requests_whole_and_still_streams_fetches(tansu_upstream):
    """Producer ids are read from every batch of a Produce request when a producer-id quota
    applies to its principal: those requests are not streamed (their bytes are read), the
    Fetch responses still are."""
    payloads = _large_payloads(count=20)
    gateway = GatewayThread(tansu_upstream, enforce_producer_ids=True)
    try:
        gateway.call_soon(gateway.gateway.quotas.load, [({"user": None}, {"producer_ids_rate": 1000.0})])
        time.sleep(0.5)
        got, _seconds = _kafka_python_round_trip(gateway.bootstrap, payloads, enable_idempotence=True)
    finally:
        gateway.stop()
    assert _digests(got) == _digests(payloads)
    _assert_streamed(gateway, produce=False)


def test_an_over_quota_streamed_fetch_is_answered_empty_and_nothing_is_lost(kraft_broker):
    """Over consumer_byte_rate, a broker answers a Fetch with an empty throttled response and
    the consumer fetches the same offsets again. A streamed Fetch response is charged by its
    length prefix before its records are forwarded, so it gets the same treatment: its records
    are read and dropped. The consumer still gets every record, at about the quota's pace."""
    payloads = _large_payloads(count=30)  # 3 MiB
    quota = 400_000.0
    gateway = GatewayThread(kraft_broker.bootstrap, quota_window_num=2)
    try:
        gateway.call_soon(
            gateway.gateway.quotas.load, [({"client-id": "stream-consumer"}, {"consumer_byte_rate": quota})]
        )
        time.sleep(0.5)
        # one record per batch and about two per Fetch response (~200 KB, streamed), below what
        # one window allows (Q·(N-1)·W = 400 kB): test_a_fetch_asking_for_more_... covers larger
        got, seconds = _kafka_python_round_trip(
            gateway.bootstrap, payloads, batch_bytes=128 * 1024, fetch_bytes=256 * 1024
        )
    finally:
        gateway.stop()
    assert _digests(got) == _digests(payloads)
    _assert_streamed(gateway, produce=True)
    # 3.1 MB at 400 kB/s, less the one-window burst allowance of 0.4 MB: about 7 s;
    # unthrottled it takes well under a second
    assert seconds > 3.0, seconds


def test_a_fetch_asking_for_more_than_one_quota_window_is_capped_as_a_broker_caps_it(kraft_broker):
    """A consumer asks for 4 MiB per Fetch under a 400 kB/s quota with two 1 s samples: one
    response that large would be over the quota even on an empty window, so, answered empty and
    unrecorded, it would be refused on every try and the consumer would never get past it. A
    broker lowers the Fetch's max_bytes to what one window allows (Q·(N-1)·W = 400 kB,
    KafkaApis handleFetchRequest) before it reads the log; the gateway does the same."""
    payloads = _large_payloads(count=30)  # 3 MiB
    gateway = GatewayThread(kraft_broker.bootstrap, quota_window_num=2)
    try:
        gateway.call_soon(
            gateway.gateway.quotas.load, [({"client-id": "stream-consumer"}, {"consumer_byte_rate": 400_000.0})]
        )
        time.sleep(0.5)
        got, seconds = _kafka_python_round_trip(
            gateway.bootstrap, payloads, batch_bytes=128 * 1024, fetch_bytes=4 * 1024 * 1024
        )
    finally:
        gateway.stop()
    assert _digests(got) == _digests(payloads), f"{len(got)} of {len(payloads)} records in {seconds:.0f} s"
    assert seconds > 3.0, seconds  # held to the quota all the same
