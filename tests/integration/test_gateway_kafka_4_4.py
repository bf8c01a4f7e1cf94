"""Kafka 4.4 behind the gateway: ApiVersions v5 (KIP-1242), which the ``kafka-protocol`` crate does
not know, is offered and exchanged with 4.4's own Java client, and kconfigs through the gateway
answers as the cluster's own (4.4, Java) kafka-configs does; the gateway patches throttle_time_ms
in every response version where Kafka 4.4's own message classes put it first, and in no other."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from enforcement.gateway.native_plane import throttle_first_versions
from harness.java import config_command_class, run_kafka_class
from harness.javac import java_program_command
from harness.versions import KAFKA_4_JAVA_TOOL_VERSION
from tests.integration.compat_support import kafka_error_message, run_kconfigs
from tests.integration.gateway_support import GatewayThread

pytestmark = pytest.mark.integration
THROTTLE_FIRST_SCHEMAS = Path(__file__).resolve().parent / "java" / "ThrottleFirstSchemas.java"


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


def test_throttle_time_is_patched_where_kafka_4_4_puts_it_first():
    """Read from Kafka 4.4.0's generated classes (ApiMessageType's response schemas), not from the
    kafka-python schemas the gateway mostly derives it from: KIP-848 heartbeats, share groups and
    Kafka Streams' group APIs are newer than kafka-python."""
    result = subprocess.run(
        java_program_command(THROTTLE_FIRST_SCHEMAS, KAFKA_4_JAVA_TOOL_VERSION, []),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    schemas = json.loads(result.stdout)
    defined = {(int(key), v) for key, entry in schemas.items() for v in entry["defined"]}
    kafka = {(int(key), v) for key, entry in schemas.items() for v in entry["throttle_first"]}
    gateway = set(throttle_first_versions()) & defined  # versions 4.4 dropped still serve older brokers
    assert gateway == kafka, {"patched, not first": gateway - kafka, "first, not patched": kafka - gateway}
    assert {(68, 1), (78, 2), (88, 1)} <= kafka  # the newer group protocols are covered
