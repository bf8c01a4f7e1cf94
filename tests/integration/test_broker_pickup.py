"""A real Kafka 3.9 broker in ZooKeeper mode picks up quotas written by kconfigs through the
/config/changes notification: DescribeClientQuotas shows them and a producer is throttled."""

from __future__ import annotations

import math
import time
import uuid

import pytest
from compat_support import run_kconfigs

QUOTA_BYTES_PER_SEC = 64 * 1024
MESSAGE_BYTES = 32 * 1024
# Kafka's rate divides by at least (quota.window.num - 1) x 1 s = 10 s, so a fresh client gets
# about 10 s worth of quota for free; 14 x quota therefore takes ~13 s (rate ~1.08 x quota), where
# unthrottled it takes well under a second.
MESSAGES = 28


def _wait_for(predicate, timeout_s=60.0, interval_s=0.5):
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(interval_s)


@pytest.fixture
def names():
    suffix = uuid.uuid4().hex[:8]
    return f"pickup-user-{suffix}", f"pickup-client-{suffix}"


@pytest.mark.timeout(300)
def test_broker_describe_client_quotas_shows_what_kconfigs_wrote(kafka_zk_broker, names):
    user, client = names
    zk = ["--zookeeper", kafka_zk_broker.zk_connect]
    assert (
        run_kconfigs(
            zk
            + [
                "--alter",
                "--user",
                user,
                "--client",
                client,
                "--add-config",
                "producer_byte_rate=1024,request_percentage=25",
            ]
        ).rc
        == 0
    )
    assert run_kconfigs(zk + ["--alter", "--ip", "10.1.2.3", "--add-config", "connection_creation_rate=7"]).rc == 0
    describe = ["--bootstrap-server", kafka_zk_broker.bootstrap, "--describe"]

    def tuple_line():
        out = run_kconfigs(describe + ["--user", user, "--client", client])
        return out.stdout if out.rc == 0 and out.stdout else None

    lines = _wait_for(tuple_line)
    assert lines and len(lines) == 1
    head, _, pairs = lines[0].partition(" are ")
    assert head == f"Quota configs for user-principal '{user}', client-id '{client}'"
    assert sorted(pairs.split(", ")) == ["producer_byte_rate=1024.0", "request_percentage=25.0"]
    ip = run_kconfigs(describe + ["--ip", "10.1.2.3"])
    assert ip.stdout == ["Quota configs for ip '10.1.2.3' are connection_creation_rate=7.0"]
    assert run_kconfigs(zk + ["--alter", "--ip", "10.1.2.3", "--delete-config", "connection_creation_rate"]).rc == 0
    assert _wait_for(lambda: run_kconfigs(describe + ["--ip", "10.1.2.3"]).stdout == [])


def _produce(bootstrap, client_id, topic):
    """Send MESSAGES records one at a time (acks=1); returns (seconds, max produce throttle ms)."""
    from kafka import KafkaProducer

    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        client_id=client_id,
        acks=1,
        linger_ms=0,
        max_in_flight_requests_per_connection=1,
        request_timeout_ms=60000,
    )
    try:
        producer.send(topic, b"warm-up").get(timeout=60)  # topic auto-creation, metadata
        payload = b"x" * MESSAGE_BYTES
        started = time.monotonic()
        for _ in range(MESSAGES):
            producer.send(topic, payload).get(timeout=60)
        elapsed_s = time.monotonic() - started
        # kafka-python records the throttle_time_ms of responses as "*throttle-time-max" per group.
        maxima = [
            value
            for group in producer.metrics().values()
            for name, value in group.items()
            if name.endswith("throttle-time-max") and isinstance(value, (int, float)) and math.isfinite(value)
        ]
        return elapsed_s, max(maxima, default=0.0)
    finally:
        producer.close(timeout=10)


@pytest.mark.timeout(300)
def test_a_producer_is_throttled_to_the_client_quota_kconfigs_wrote(kafka_zk_broker, names):
    _, client = names
    topic = f"pickup-{uuid.uuid4().hex[:8]}"
    zk = ["--zookeeper", kafka_zk_broker.zk_connect]
    assert (
        run_kconfigs(
            zk + ["--alter", "--client", client, "--add-config", f"producer_byte_rate={QUOTA_BYTES_PER_SEC}"]
        ).rc
        == 0
    )
    describe = ["--bootstrap-server", kafka_zk_broker.bootstrap, "--describe", "--client", client]
    assert _wait_for(lambda: run_kconfigs(describe).stdout)  # the broker has applied the notification
    elapsed_s, throttle_max_ms = _produce(kafka_zk_broker.bootstrap, client, topic)
    rate = MESSAGES * MESSAGE_BYTES / elapsed_s
    # Broad bounds: the exact formula is enforcement/'s business, tested against Kafka elsewhere.
    assert rate < 2 * QUOTA_BYTES_PER_SEC and elapsed_s > 6, (rate, elapsed_s)
    assert throttle_max_ms > 0
    unthrottled_s, _ = _produce(kafka_zk_broker.bootstrap, f"{client}-free", topic)
    assert unthrottled_s < elapsed_s / 3
