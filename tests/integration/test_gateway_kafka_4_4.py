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
from harness.brokers import KraftBroker
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


class DynamicQuorumBroker(KraftBroker):
    """A KIP-853 dynamic quorum (``kafka-storage format --standalone``): its voters have
    directory ids, which DescribeQuorum carries from v1 and which v2 pairs with their listeners."""

    def mode_props(self) -> dict[str, str]:
        props = super().mode_props()
        del props["controller.quorum.voters"]
        return {**props, "controller.quorum.bootstrap.servers": self.controller_bootstrap}

    def _format_args(self) -> list[str]:
        return [*super()._format_args(), "--standalone"]


@pytest.fixture(scope="module")
def dynamic_quorum(tmp_path_factory):
    broker = DynamicQuorumBroker(KAFKA_4_JAVA_TOOL_VERSION, tmp_path_factory.mktemp("dynamic") / "kafka")
    broker.start()
    gateway = GatewayThread(broker.bootstrap)
    yield broker, gateway
    gateway.stop()
    broker.stop()


def test_the_quorum_is_described_at_v2_through_the_gateway_without_controller_addresses(dynamic_quorum):
    """DescribeQuorum was capped at v1 because v2 (KIP-853) lists the controllers' listeners,
    which no gateway listener leads to: now v2 is offered and those listeners are removed, so
    kafka-metadata-quorum through the gateway reports what it reports straight from the broker
    (leader, voters, their directory ids and states) less the controllers' addresses."""
    broker, gateway = dynamic_quorum

    def described(bootstrap: str, what: str) -> str:
        result = run_kafka_class(
            KAFKA_4_JAVA_TOOL_VERSION,
            "org.apache.kafka.tools.MetadataQuorumCommand",
            ["--bootstrap-server", bootstrap, "describe", what],
        )
        assert result.returncode == 0, result.stderr[-2000:]
        return result.stdout

    def status(bootstrap: str) -> dict[str, str]:
        lines = described(bootstrap, "--status").splitlines()
        return {key: value.strip() for key, value in (line.split(":", 1) for line in lines if ":" in line)}

    def replicas(bootstrap: str) -> list[tuple[str, ...]]:
        rows = [line.split("\t") for line in described(bootstrap, "--replication").splitlines()[1:]]
        return [(row[0].strip(), row[1].strip(), row[6].strip()) for row in rows]  # node, directory, status

    direct, through = status(broker.bootstrap), status(gateway.bootstrap)
    direct_voters, voters = json.loads(direct["CurrentVoters"]), json.loads(through["CurrentVoters"])
    assert direct_voters[0]["endpoints"] == [f"CONTROLLER://{broker.controller_bootstrap}"], direct
    assert direct_voters[0]["directoryId"] not in ("", "AAAAAAAAAAAAAAAAAAAAAA"), direct
    # the same voters and directory ids; the tool leaves out an empty endpoint list
    assert voters == [{k: v for k, v in voter.items() if k != "endpoints"} for voter in direct_voters], through
    assert (through["LeaderId"], through["ClusterId"]) == (direct["LeaderId"], direct["ClusterId"])
    assert replicas(gateway.bootstrap) == replicas(broker.bootstrap)
    assert any(key == 55 and version == 2 and addresses == [] for key, version, addresses in gateway.gateway.rewrites)
