"""SASL/SCRAM passed through the gateway to a real Kafka (KRaft, SASL_PLAINTEXT): the principal
is read from the client-first message and committed only when the broker accepts the exchange."""

from __future__ import annotations

import uuid

import pytest

from tests.integration.gateway_support import GatewayThread, read_usage

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def sasl_broker(kraft_broker_factory):
    return kraft_broker_factory(sasl_scram=True)


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_principal_is_the_authenticated_user(sasl_broker, tmp_path, mechanism):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    usage = tmp_path / "usage.jsonl"
    gateway = GatewayThread(sasl_broker.sasl_bootstrap, usage_log_path=str(usage))
    try:
        # any quota makes the gateway account (and log) usage per entity
        gateway.call_soon(gateway.gateway.quotas.load, [({"client-id": "unrelated"}, {"producer_byte_rate": 1e9})])
        config = sasl_broker.sasl_client_config(mechanism)
        topic = f"sasl-{uuid.uuid4().hex[:6]}"
        producer = KafkaProducer(bootstrap_servers=gateway.bootstrap, client_id="sasl-producer", **config)
        producer.send(topic, b"authenticated").get(30)
        producer.close()
        consumer = KafkaConsumer(
            bootstrap_servers=gateway.bootstrap, auto_offset_reset="earliest", consumer_timeout_ms=5000, **config
        )
        consumer.assign([TopicPartition(topic, 0)])
        assert [m.value for m in consumer] == [b"authenticated"]
        consumer.close()
    finally:
        gateway.stop()
    users = {l["user"] for l in read_usage(usage) if l["kind"] in ("produce", "fetch", "request")}
    assert users == {sasl_broker.admin_user}


def test_failed_scram_keeps_anonymous_and_the_broker_closes(sasl_broker, tmp_path):
    from kafka import KafkaProducer
    from kafka.errors import KafkaError

    gateway = GatewayThread(sasl_broker.sasl_bootstrap)
    try:
        config = {**sasl_broker.sasl_client_config("SCRAM-SHA-256"), "sasl_plain_password": "wrong"}
        with pytest.raises(KafkaError):
            KafkaProducer(bootstrap_servers=gateway.bootstrap, client_id="intruder", max_block_ms=5000, **config)
        # nothing was committed: every connection that reached the gateway stayed ANONYMOUS
        assert all(c.principal == "ANONYMOUS" for c in list(gateway.gateway.ctx.connections))
    finally:
        gateway.stop()
