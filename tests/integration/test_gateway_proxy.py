"""Produce and consume through the gateway with kafka-python and librdkafka, against tansu and
Apache Kafka (KRaft); prove that after bootstrap no client connection goes to the broker."""

from __future__ import annotations

import uuid

import pytest

from tests.integration.gateway_support import (
    CONFLUENT_CLIENT,
    KAFKA_PYTHON_CLIENT,
    GatewayThread,
    run_client_script,
)

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def kraft_upstream(request):
    return request.getfixturevalue("kraft_broker").bootstrap


@pytest.fixture(params=["tansu", "kraft"])
def upstream(request):
    return request.getfixturevalue(f"{request.param}_upstream")


@pytest.fixture
def gateway(upstream):
    running = GatewayThread(upstream)
    yield running
    running.stop()


@pytest.mark.parametrize("client", [KAFKA_PYTHON_CLIENT, CONFLUENT_CLIENT], ids=["kafka-python", "librdkafka"])
def test_produce_consume_through_gateway_never_touches_the_broker(gateway, upstream, client):
    topic = f"gw-{uuid.uuid4().hex[:8]}"
    result = run_client_script(client, gateway.bootstrap, topic, "50")
    assert sorted(result["consumed"]) == sorted(set(result["consumed"])) and len(result["consumed"]) == 50
    broker_port = int(upstream.rsplit(":", 1)[1])
    gateway_ports = gateway.gateway_ports()
    assert result["ports"], "client reported no connections"
    assert broker_port not in result["ports"]
    assert set(result["ports"]) <= gateway_ports
    assert {port for _host, port in result["brokers"]} <= gateway_ports
