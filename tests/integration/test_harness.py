"""The harness fixtures start real servers that real clients can use."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, NewTopic

from harness import (
    ALL_KAFKA_VERSIONS,
    KAFKA_3_VERSION,
    KAFKA_4_VERSION,
    KAFKA_ZK_TOOL_VERSION,
    MissingTestDependency,
    config_command_class,
    kafka_jars,
    port_is_open,
    run_kafka_class,
)
from harness.fixtures import STARTUP_TIMES, delete_tree


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _produce_and_consume(bootstrap: str, group: bool = True, **client_config) -> list[bytes]:
    """Send three records to a new topic and read them back (group subscription or assign)."""
    topic = _unique("harness")
    sent = [f"record-{i}".encode() for i in range(3)]
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, **client_config)
    try:  # one partition, so that assign() sees every record (Tansu auto-creates several)
        admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])
    finally:
        admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", **client_config)
    try:
        for value in sent:
            producer.send(topic, value).get(timeout=30)
    finally:
        producer.close()
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        auto_offset_reset="earliest",
        consumer_timeout_ms=30_000,
        group_id=_unique("g") if group else None,
        **client_config,
    )
    try:
        if group:
            consumer.subscribe([topic])
        else:
            consumer.assign([TopicPartition(topic, 0)])
        received = []
        for message in consumer:
            received.append(message.value)
            if len(received) == len(sent):
                break
        return received
    finally:
        consumer.close()


EXPECTED_RECORDS = [b"record-0", b"record-1", b"record-2"]


def test_zk_client_creates_and_reads_inside_its_own_chroot(zk_server, zk_connect, zk_client):
    zk_client.create("/quota-node", b"payload", makepath=True)

    assert zk_client.get("/quota-node")[0] == b"payload"
    chroot = zk_connect.split("/", 1)[1]
    with zk_server.client() as unchrooted:
        assert unchrooted.get(f"/{chroot}/quota-node")[0] == b"payload"


def test_each_test_gets_a_fresh_chroot_with_only_an_empty_brokers_node(zk_client):
    assert zk_client.get_children("/") == ["brokers"]
    assert zk_client.get_children("/brokers") == []


def test_delete_tree_removes_a_tree_of_many_levels_and_only_it(zk_server):
    admin = zk_server.admin_client()
    root, beside = f"/tree-{uuid.uuid4().hex[:8]}", f"/beside-{uuid.uuid4().hex[:8]}"
    paths = [f"{root}/u{u}/clients/c{c}" for u in range(30) for c in range(5)] + [f"{root}/changes", beside]
    for path in paths:
        admin.ensure_path(path)
    delete_tree(admin, root)
    assert not admin.exists(root) and admin.exists(beside)
    delete_tree(admin, root)  # already gone (a retry after a lost connection): nothing to do
    admin.delete(beside)


def test_zk_server_restarts_on_the_same_port_with_its_data(zk_server, zk_client):
    zk_client.create("/survives-restart", b"1")
    hosts_before = zk_server.hosts

    zk_server.stop()
    try:
        assert not port_is_open(zk_server.port)
    finally:
        zk_server.start()

    assert zk_server.hosts == hosts_before
    assert zk_client.retry(zk_client.get, "/survives-restart")[0] == b"1"


@pytest.mark.parametrize("version", ALL_KAFKA_VERSIONS)
def test_every_kafka_version_has_server_and_config_command_jars(version):
    assert any(jar.name == f"kafka_2.13-{version}.jar" for jar in kafka_jars(version))
    assert config_command_class(version) in ("kafka.admin.ConfigCommand", "org.apache.kafka.tools.ConfigCommand")


def test_missing_kafka_version_fails_with_setup_hint():
    with pytest.raises(MissingTestDependency, match=r"run \.ci/setup-test-env"):
        kafka_jars("0.0.1")


def test_config_command_2_8_writes_user_quota_to_zookeeper(zk_connect, zk_client):
    started = time.monotonic()
    result = run_kafka_class(
        KAFKA_ZK_TOOL_VERSION,
        "kafka.admin.ConfigCommand",
        [
            "--zookeeper",
            zk_connect,
            "--alter",
            "--entity-type",
            "users",
            "--entity-name",
            "u1",
            "--add-config",
            "producer_byte_rate=1024",
        ],
    )
    STARTUP_TIMES.append(("ConfigCommand 2.8.2 --alter (tool run)", time.monotonic() - started))

    assert result.returncode == 0, result.stderr
    data, _ = zk_client.get("/config/users/u1")
    assert json.loads(data) == {"version": 1, "config": {"producer_byte_rate": "1024"}}
    # Kafka's change notification tells brokers which entity to reload.
    (change,) = zk_client.get_children("/config/changes")
    notification = json.loads(zk_client.get(f"/config/changes/{change}")[0])
    assert notification == {"version": 2, "entity_path": "users/u1"}


def test_config_command_2_8_describes_what_it_wrote(zk_connect):
    run_kafka_class(
        KAFKA_ZK_TOOL_VERSION,
        "kafka.admin.ConfigCommand",
        [
            "--zookeeper",
            zk_connect,
            "--alter",
            "--entity-type",
            "users",
            "--entity-name",
            "u2",
            "--add-config",
            "consumer_byte_rate=2048",
        ],
    )

    result = run_kafka_class(
        KAFKA_ZK_TOOL_VERSION,
        "kafka.admin.ConfigCommand",
        ["--zookeeper", zk_connect, "--describe", "--entity-type", "users", "--entity-name", "u2"],
    )

    assert result.returncode == 0, result.stderr
    # 2.8 prints a two-line "--zookeeper is deprecated" warning on stdout first.
    assert result.stdout.splitlines()[-1] == "Configs for user-principal 'u2' are consumer_byte_rate=2048"


def test_zookeeper_mode_broker_roundtrip(kafka_zk_broker, zk_server):
    assert _produce_and_consume(kafka_zk_broker.bootstrap) == EXPECTED_RECORDS
    assert kafka_zk_broker.version == KAFKA_3_VERSION
    with zk_server.client() as client:
        assert client.exists("/kafka39/brokers/ids/0") is not None


def test_kraft_4_broker_roundtrip(kraft_broker):
    assert kraft_broker.version == KAFKA_4_VERSION
    assert _produce_and_consume(kraft_broker.bootstrap) == EXPECTED_RECORDS


def test_kraft_3_broker_roundtrip(kraft_broker_3):
    assert kraft_broker_3.version == KAFKA_3_VERSION
    assert _produce_and_consume(kraft_broker_3.bootstrap) == EXPECTED_RECORDS


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_kraft_sasl_scram_admin_logs_in_and_roundtrips(kraft_broker_factory, mechanism):
    broker = kraft_broker_factory(sasl_scram=True)

    records = _produce_and_consume(broker.sasl_bootstrap, **broker.sasl_client_config(mechanism))

    assert records == EXPECTED_RECORDS


WRONG_PASSWORD_ADMIN = """
import json, sys
from kafka import KafkaAdminClient
from kafka.errors import KafkaError
try:
    KafkaAdminClient(bootstrap_servers=sys.argv[1], bootstrap_timeout_ms=10_000, **json.loads(sys.argv[2])).close()
except KafkaError as err:
    print("refused:", type(err).__name__)
"""


def test_kraft_sasl_scram_rejects_a_wrong_password(kraft_broker_factory):
    broker = kraft_broker_factory(sasl_scram=True)
    config = {**broker.sasl_client_config("SCRAM-SHA-256"), "sasl_plain_password": "wrong"}

    # In a process of its own: kafka-python 3.0 leaves its IO thread, selector and sockets behind
    # when the constructor raises, which the session's descriptor check would count as ours.
    done = subprocess.run(
        [sys.executable, "-c", WRONG_PASSWORD_ADMIN, broker.sasl_bootstrap, json.dumps(config)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("refused: "), done.stdout


def test_kraft_factory_applies_extra_props_and_survives_restart(kraft_broker_factory):
    broker = kraft_broker_factory(version=KAFKA_4_VERSION, extra_props={"message.max.bytes": 2_000_000})
    assert broker is kraft_broker_factory(version=KAFKA_4_VERSION, extra_props={"message.max.bytes": "2000000"})

    broker.stop()
    assert not port_is_open(broker.port)
    broker.start()

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        described = admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, "1")], config_filter="all")
    finally:
        admin.close()
    (broker_configs,) = next(iter(described.values())).values()
    assert broker_configs["message.max.bytes"]["value"] == "2000000"


def test_tansu_broker_roundtrip(tansu_broker):
    # Tansu's consumer-group join takes ~20 s, so this test reads by assignment.
    assert _produce_and_consume(tansu_broker.bootstrap, group=False) == EXPECTED_RECORDS


def test_zk_tls_server_enforces_digest_acls_over_mutual_tls(zk_tls_server):
    from kazoo.exceptions import NoAuthError
    from kazoo.security import make_digest_acl

    path = f"/{_unique('secret')}"
    acl = make_digest_acl(zk_tls_server.digest_user, zk_tls_server.digest_password, all=True)
    with zk_tls_server.client(auth_data=[zk_tls_server.digest_auth]) as owner, zk_tls_server.client() as stranger:
        owner.create(path, b"s", acl=[acl])

        assert owner.get(path)[0] == b"s"
        with pytest.raises(NoAuthError):
            stranger.get(path)


def test_zk_tls_server_refuses_plaintext_clients_on_its_tls_port(zk_tls_server):
    from kazoo.client import KazooClient
    from kazoo.handlers.threading import KazooTimeoutError

    client = KazooClient(hosts=zk_tls_server.hosts, timeout=2)
    try:
        with pytest.raises(KazooTimeoutError):
            client.start(timeout=3)
    finally:
        client.stop()
        client.close()


def test_config_command_2_8_writes_over_tls_with_sasl_digest_login(zk_tls_server):
    user = _unique("tls-user")
    result = run_kafka_class(
        KAFKA_ZK_TOOL_VERSION,
        "kafka.admin.ConfigCommand",
        [
            "--zookeeper",
            zk_tls_server.hosts,
            "--zk-tls-config-file",
            str(zk_tls_server.kafka_tls_config_path),
            "--alter",
            "--entity-type",
            "users",
            "--entity-name",
            user,
            "--add-config",
            "producer_byte_rate=5",
        ],
        extra_jvm_flags=[f"-Djava.security.auth.login.config={zk_tls_server.jaas_client_path}"],
    )

    assert result.returncode == 0, result.stderr
    with zk_tls_server.client() as client:
        written = json.loads(client.get(f"/config/users/{user}")[0])
        # A SASL-authenticated Kafka tool writes secure ACLs: only its SASL and x509 identities.
        acl_ids = {(acl.id.scheme, acl.id.id) for acl in client.get_acls(f"/config/users/{user}")[0]}
    assert written == {"version": 1, "config": {"producer_byte_rate": "5"}}
    assert acl_ids == {("sasl", zk_tls_server.digest_user), ("x509", "CN=kconfigs-client")}


@pytest.mark.parametrize("version", ALL_KAFKA_VERSIONS)
def test_tool_batch_answers_as_separate_processes_do(version, zk_connect):
    """ToolBatch (one JVM, many command lines) gives each command the exit status and output a
    process of its own gives: success, usage error (printUsageAndDie), stack-trace error (the
    tool catches our exit and reports again: that second report must be dropped), --version."""
    from harness.java import ToolBatch

    commands = [
        ["--help"],
        ["--describe", "--entity-type", "nosuch", "--zookeeper", zk_connect],
        ["--bootstrap-server", "notaport", "--describe", "--entity-type", "users"],
        ["--version"],
    ]
    if version == KAFKA_ZK_TOOL_VERSION:
        commands.append(["--zookeeper", zk_connect, "--describe", "--entity-type", "users", "--entity-name", "b1"])
    batch = ToolBatch(version, config_command_class(version))
    try:
        for args in commands:
            alone = run_kafka_class(version, config_command_class(version), args)
            batched = batch.run(args)
            assert batched.returncode == alone.returncode, args
            assert batched.stdout == alone.stdout, args
            # Stack traces differ in the launcher's frames below ConfigCommand.main only.
            assert _without_frames(batched.stderr) == _without_frames(alone.stderr), args
    finally:
        batch.close()


def _without_frames(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if not line.startswith(("\tat ", "\t... "))]
