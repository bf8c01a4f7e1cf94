"""A partition leader moves while Kafka's Java producer writes and a Java consumer reads through
the gateway, on a 3-broker KRaft cluster: the old leader answers NOT_LEADER_OR_FOLLOWER with the
new leader's address in the Produce and Fetch responses' NodeEndpoints (KIP-951), which the
gateway must rewrite to its own listener, so that the clients follow the leader without ever
connecting to a broker."""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from harness.cluster import KraftCluster
from harness.javac import java_program_command
from harness.versions import KAFKA_4_VERSION
from tests.integration.gateway_support import GatewayThread

pytestmark = pytest.mark.integration
PROGRAM = Path(__file__).resolve().parent / "java" / "LeaderChangeClients.java"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    running = KraftCluster(KAFKA_4_VERSION, tmp_path_factory.mktemp("kraft-cluster"))
    try:
        running.start()
        yield running
    finally:
        running.stop()


def _admin(bootstrap: str):
    from kafka import KafkaAdminClient

    return KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30000)


def _leader(admin, topic: str) -> int | None:
    """The leader of partition 0, None while the new topic is not in the metadata yet."""
    partitions = admin.describe_topics([topic])[0]["partitions"]
    return partitions[0]["leader_id"] if partitions else None


def _wait_for_leader(admin, topic: str, node_id: int, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while _leader(admin, topic) != node_id:
        assert time.monotonic() < deadline, f"leader of {topic}-0 is not node {node_id}"
        time.sleep(0.2)


def test_producer_follows_a_moved_leader_to_the_gateways_address(cluster):
    from kafka import TopicPartition

    topic = f"lc-{uuid.uuid4().hex[:6]}"
    admin = _admin(cluster.bootstrap)  # the test's own setup connection, not the client under test
    gateway = GatewayThread(cluster.bootstrap)
    producer = None
    try:
        admin.create_topics({topic: {"assignments": {0: [2, 3]}}})
        _wait_for_leader(admin, topic, 2)
        producer = subprocess.Popen(
            java_program_command(PROGRAM, KAFKA_4_VERSION, [gateway.bootstrap, topic]),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert producer.stdout.readline().strip() == "producing", producer.stderr.read()[-3000:]
        admin.alter_partition_reassignments({TopicPartition(topic, 0): [3, 2]})
        admin.elect_leaders(0, {topic: [0]})  # preferred leader: node 3 now
        _wait_for_leader(admin, topic, 3)
        time.sleep(2)  # keep producing to the new leader
        out, err = producer.communicate("stop\n", timeout=120)
        assert producer.returncode == 0, err[-3000:]
        gateway_ports = gateway.gateway_ports()
        mapping = dict(gateway.gateway.registry.mapping)
    finally:
        if producer is not None and producer.poll() is None:
            producer.kill()
        gateway.stop()
        admin.close()
    rewritten = gateway.gateway.rewrites  # (api key, version, upstream addresses) of every address rewrite
    summary = json.loads(out.strip().splitlines()[-1])
    print(summary, rewritten)

    node3 = ("127.0.0.1", cluster.node(3).port)
    assert summary["failed"] == 0 and summary["acked"] > 0, summary["first_error"]
    assert summary["consumed"] >= summary["acked"]
    # the old leader named the new one in NodeEndpoints, and the gateway rewrote them
    assert any(api_key == 0 and version >= 10 and node3 in addresses for api_key, version, addresses in rewritten)
    assert any(api_key == 1 and version >= 16 and node3 in addresses for api_key, version, addresses in rewritten)
    # what the client knows: the new leader at the gateway's listener for node 3, no broker port
    leader_id, leader_host, leader_port = summary["leader"]
    assert leader_id == 3 and (leader_host, leader_port) == mapping[node3]
    broker_ports = {node.port for node in cluster.nodes}
    assert {port for _id, _host, port in summary["nodes"]} <= gateway_ports
    assert summary["ports"] and set(summary["ports"]) <= gateway_ports and not broker_ports & set(summary["ports"])
