"""A partition leader moves while Kafka's Java clients use it through the gateway, on a 3-broker
KRaft cluster: the old leader answers NOT_LEADER_OR_FOLLOWER with the new leader's address in the
response's NodeEndpoints (KIP-951 for Produce and Fetch; ShareFetch and ShareAcknowledge, KIP-932,
carry the same field), which the gateway must rewrite to its own listener, so that the clients
follow the leader without ever connecting to a broker.

Two programs under tests/integration/java/: LeaderChangeClients (a producer and a consumer) and
ShareLeaderChange (a KafkaShareConsumer acknowledging every record, fed by a setup producer that
writes straight to the cluster before and after the move)."""

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
SHARE_PROGRAM = Path(__file__).resolve().parent / "java" / "ShareLeaderChange.java"
SHARE_FETCH = 78
RECORDS_BEFORE_MOVE = RECORDS_AFTER_MOVE = 100


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


def _move_leader_from_node_2_to_node_3(admin, topic: str) -> None:
    """Partition 0 of ``topic`` (replicas [2, 3]) gets node 3 as preferred replica, then leader."""
    from kafka import TopicPartition

    admin.alter_partition_reassignments({TopicPartition(topic, 0): [3, 2]})
    admin.elect_leaders(0, {topic: [0]})  # preferred leader: node 3 now
    _wait_for_leader(admin, topic, 3)


def _finish(client: subprocess.Popen, say: str, timeout_s: float) -> dict:
    """Tell a client program ``say`` on stdin, wait for it to exit, and return its JSON summary."""
    out, err = client.communicate(say, timeout=timeout_s)
    assert client.returncode == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1])


def _stop(client: subprocess.Popen | None, gateway: GatewayThread, admin) -> None:
    if client is not None and client.poll() is None:
        client.kill()
    gateway.stop()
    admin.close()


def test_producer_follows_a_moved_leader_to_the_gateways_address(cluster):
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
        _move_leader_from_node_2_to_node_3(admin, topic)
        time.sleep(2)  # keep producing to the new leader
        summary = _finish(producer, "stop\n", timeout_s=120)
        gateway_ports = gateway.gateway_ports()
        mapping = dict(gateway.gateway.registry.mapping)
    finally:
        _stop(producer, gateway, admin)
    rewritten = gateway.gateway.rewrites  # (api key, version, upstream addresses) of every address rewrite
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


def _produce_directly(bootstrap: str, topic: str, first: int, count: int) -> None:
    """Records "r<first>" .. "r<first + count - 1>" to partition 0, straight to the cluster: this
    is the test's setup producer, not a client under test (only the share consumer goes through
    the gateway). A fresh producer each time, so it finds the current leader in its metadata."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    try:
        sent = [producer.send(topic, b"r%d" % i, partition=0) for i in range(first, first + count)]
        producer.flush(60)
        for future in sent:
            future.get(0)  # raises if a record was not written
    finally:
        producer.close()


def _start_share_consumer(bootstrap: str, topic: str, group: str) -> subprocess.Popen:
    """ShareLeaderChange.java through ``bootstrap``; returns once it has every record produced
    before the move, so that the move happens while it is share-fetching from the old leader."""
    args = [bootstrap, topic, group, str(RECORDS_BEFORE_MOVE), "90"]
    consumer = subprocess.Popen(
        java_program_command(SHARE_PROGRAM, KAFKA_4_VERSION, args),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    line = consumer.stdout.readline().strip()
    if line != "consumed-before-move":
        consumer.kill()
        raise AssertionError(f"share consumer said {line!r}: {consumer.stderr.read()[-3000:]}")
    return consumer


def test_share_consumer_follows_a_moved_leader_through_the_gateway(cluster):
    topic = f"slc-{uuid.uuid4().hex[:6]}"
    total = RECORDS_BEFORE_MOVE + RECORDS_AFTER_MOVE
    admin = _admin(cluster.bootstrap)  # the test's own setup connection, not the client under test
    gateway = GatewayThread(cluster.bootstrap)
    consumer = None
    try:
        admin.create_topics({topic: {"assignments": {0: [2, 3]}}})
        _wait_for_leader(admin, topic, 2)
        _produce_directly(cluster.bootstrap, topic, 0, RECORDS_BEFORE_MOVE)
        consumer = _start_share_consumer(gateway.bootstrap, topic, f"{topic}-group")
        _move_leader_from_node_2_to_node_3(admin, topic)
        # records only the new leader has: the consumer must reach node 3 to get them
        _produce_directly(cluster.bootstrap, topic, RECORDS_BEFORE_MOVE, RECORDS_AFTER_MOVE)
        summary = _finish(consumer, f"{total}\n", timeout_s=150)
        gateway_ports = gateway.gateway_ports()
        mapping = dict(gateway.gateway.registry.mapping)
    finally:
        _stop(consumer, gateway, admin)
    rewritten = gateway.gateway.rewrites  # (api key, version, upstream addresses) of every address rewrite
    print(summary, [entry for entry in rewritten if entry[0] != 3])

    node3 = ("127.0.0.1", cluster.node(3).port)
    # every record produced, before and after the move, delivered and its acknowledgement accepted
    assert summary["total"] == total
    assert summary["distinct"] == total and summary["acknowledged"] == total, summary
    # the old leader named the new one in the ShareFetch response's NodeEndpoints (KafkaApis fills
    # them on NOT_LEADER_OR_FOLLOWER), and the gateway rewrote them
    assert any(api_key == SHARE_FETCH and node3 in addresses for api_key, _version, addresses in rewritten)
    # what the consumer knows: the new leader at the gateway's listener for node 3, no broker port
    leader_id, leader_host, leader_port = summary["leader"]
    assert leader_id == 3 and (leader_host, leader_port) == mapping[node3]
    assert {port for _id, _host, port in summary["nodes"]} <= gateway_ports
    # every connection it held during the run went to the gateway, the new leader's listener included
    broker_ports = {node.port for node in cluster.nodes}
    ports = set(summary["ports"])
    assert mapping[node3][1] in ports
    assert ports <= gateway_ports and not broker_ports & ports, (ports, gateway_ports, broker_ports)
