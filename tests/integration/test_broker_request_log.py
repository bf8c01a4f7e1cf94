"""The peers benchmark splits each paced batch's latency with a real broker's request log
(benchmarks/broker_request_log.py): the logger writes to its own file only while switched on
through Kafka's broker-loggers config, every batch is found in it, and the split adds up."""

from __future__ import annotations

import pytest

from benchmarks import batch_latency
from benchmarks import broker_request_log as request_log
from harness.brokers import KRAFT_NODE_ID, KraftBroker
from harness.versions import KAFKA_4_VERSION

pytestmark = pytest.mark.integration


def _create_topic(bootstrap: str, topic: str) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, 1, 1)])
    finally:
        admin.close()


def _logged_batches(log_path) -> int:
    if not log_path.exists():
        return 0
    return sum(
        len(entries) for entries in request_log.produce_timings(log_path, batch_latency.BATCH_CLIENT_ID).values()
    )


def test_a_real_brokers_request_log_splits_every_batch_and_only_while_switched_on(tmp_path):
    flag, log_path = request_log.logging_config(tmp_path)
    broker = KraftBroker(KAFKA_4_VERSION, tmp_path / "kafka", extra_jvm_flags=(flag,))
    broker.start()
    try:
        _create_topic(broker.bootstrap, "batches")
        batch_latency.batch_latencies_ms(broker.bootstrap, "batches", 20.0, 0.5)
        assert _logged_batches(log_path) == 0  # the logger is at WARN until switched on

        request_log.set_request_logging(broker.bootstrap, KRAFT_NODE_ID, True)
        timeline: list = []
        latencies, _ = batch_latency.batch_latencies_ms(broker.bootstrap, "batches", 20.0, 1.5, timeline)
        request_log.set_request_logging(broker.bootstrap, KRAFT_NODE_ID, False)
        logged = _logged_batches(log_path)
        assert logged >= len(timeline)
        batch_latency.batch_latencies_ms(broker.bootstrap, "batches", 20.0, 0.5)
        assert _logged_batches(log_path) == logged  # and off again
    finally:
        broker.stop()

    outside = request_log.outside_the_broker_ms(
        timeline, request_log.produce_timings(log_path, batch_latency.BATCH_CLIENT_ID)
    )
    assert len(outside) == len(latencies) == len(timeline) > 20
    assert [cid for cid, _due, _ack in timeline] == list(range(len(timeline)))
    for (_cid, due, acknowledged), latency, rest in zip(timeline, latencies, outside):
        assert (acknowledged - due) * 1000 == pytest.approx(latency, abs=0.05)  # the same clock as the latencies
        assert 0 <= rest <= latency
    in_broker = [latency - rest for latency, rest in zip(latencies, outside)]
    assert all(part > 0 for part in in_broker)  # every batch was appended by the broker, which takes time
