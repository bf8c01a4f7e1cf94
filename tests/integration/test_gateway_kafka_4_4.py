"""Kafka 4.4 behind the gateway: ApiVersions v5 (KIP-1242), which the ``kafka-protocol`` crate does
not know, is offered and exchanged with 4.4's own Java client, and kconfigs through the gateway
answers as the cluster's own (4.4, Java) kafka-configs does."""

from __future__ import annotations

import pytest

from harness.java import config_command_class, run_kafka_class
from harness.versions import KAFKA_4_JAVA_TOOL_VERSION
from tests.integration.compat_support import kafka_error_message, run_kconfigs
from tests.integration.gateway_support import GatewayThread

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def gateway(kraft_broker_factory):
    running = GatewayThread(kraft_broker_factory(KAFKA_4_JAVA_TOOL_VERSION).bootstrap)
    yield running
    running.stop()


def test_a_kafka_4_4_client_uses_api_versions_v5_through_the_gateway(gateway):
    result = run_kafka_class(
        KAFKA_4_JAVA_TOOL_VERSION,
        "org.apache.kafka.tools.BrokerApiVersionsCommand",
        ["--bootstrap-server", gateway.bootstrap],
    )
    assert result.returncode == 0, result.stderr[-2000:]
    nodes = [line for line in result.stdout.splitlines() if "(id:" in line]
    # the node is listed at the gateway's address: the answer came through the gateway
    assert len(nodes) == 1 and nodes[0].split(" ")[0] in {f"127.0.0.1:{p}" for p in gateway.gateway_ports()}, nodes
    assert "ApiVersions(18): 0 to 5 [usable: 5]" in result.stdout, result.stdout


def test_kconfigs_through_the_gateway_answers_as_the_4_4_line(gateway):
    # the refused key is listed as 4.4's Java tool lists it (the 4.0-4.3 line prints Set(...));
    # kconfigs learns the line from the ApiVersions answer the gateway passes on
    args = [
        "--bootstrap-server",
        gateway.bootstrap,
        "--alter",
        "--add-config",
        "producer_byte_rate=1024,unknown_key=1",
        "--entity-type",
        "clients",
        "--entity-name",
        "app",
    ]
    kafka = run_kafka_class(KAFKA_4_JAVA_TOOL_VERSION, config_command_class(KAFKA_4_JAVA_TOOL_VERSION), args)
    ours = run_kconfigs(args)
    assert kafka.returncode != 0 and "unknown_key" in kafka_error_message(kafka.stderr), kafka.stderr
    assert (ours.rc, ours.error) == (1, kafka_error_message(kafka.stderr)), (ours, kafka.stderr)
