"""--zk-tls-config-file: kconfigs talks mutual TLS to ZooKeeper with Kafka's zookeeper.ssl.* keys,
and real kafka-configs 2.8.2 (over the same TLS port, JKS stores) reads what kconfigs wrote."""

from __future__ import annotations

import subprocess
import sys
import uuid

import pytest

from harness.java import run_kafka_class


def kconfigs(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "kconfigs", *args], capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60
    )


@pytest.fixture
def pem_tls_config(zk_tls_server, tmp_path):
    tls = zk_tls_server.tls
    path = tmp_path / "zk-tls.properties"
    path.write_text(
        "zookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty\n"
        "zookeeper.ssl.client.enable=true\n"
        f"zookeeper.ssl.keystore.location={tls.client_keystore_pem}\n"
        "zookeeper.ssl.keystore.type=PEM\n"
        f"zookeeper.ssl.truststore.location={tls.ca_pem}\n"
        "zookeeper.ssl.truststore.type=PEM\n"
        "zookeeper.ssl.endpoint.identification.algorithm=\n"
    )
    return path


@pytest.fixture
def tls_chroot(zk_tls_server):
    chroot = f"/tls-{uuid.uuid4().hex[:8]}"
    with zk_tls_server.client() as admin:
        admin.ensure_path(chroot)
        yield zk_tls_server.hosts + chroot, admin, chroot
        admin.delete(chroot, recursive=True)


def test_alter_over_mutual_tls_is_read_back_by_kafka_configs(zk_tls_server, pem_tls_config, tls_chroot):
    connect, admin, chroot = tls_chroot
    done = kconfigs(
        "--zookeeper",
        connect,
        "--zk-tls-config-file",
        str(pem_tls_config),
        "--alter",
        "--user",
        "tls-user",
        "--add-config",
        "producer_byte_rate=4096",
    )
    assert done.returncode == 0, done.stderr
    data, _ = admin.get(f"{chroot}/config/users/tls-user")
    assert data == b'{"version":1,"config":{"producer_byte_rate":"4096"}}'

    theirs = run_kafka_class(
        "2.8.2",
        "kafka.admin.ConfigCommand",
        [
            "--zookeeper",
            connect,
            "--zk-tls-config-file",
            str(zk_tls_server.kafka_tls_config_path),
            "--describe",
            "--user",
            "tls-user",
        ],
    )
    assert "Configs for user-principal 'tls-user' are producer_byte_rate=4096" in theirs.stdout, theirs.stderr


def test_jks_stores_get_one_line_telling_how_to_convert(zk_tls_server, tls_chroot):
    connect, _, _ = tls_chroot
    result = kconfigs(
        "--zookeeper",
        connect,
        "--zk-tls-config-file",
        str(zk_tls_server.kafka_tls_config_path),
        "--describe",
        "--user",
        "x",
    )
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and "only PEM stores are supported" in result.stderr
    assert zk_tls_server.tls.password not in result.stderr


def test_plaintext_client_on_the_tls_port_fails_cleanly(tls_chroot):
    connect, _, _ = tls_chroot
    result = subprocess.run(
        [sys.executable, "-m", "kconfigs", "--zookeeper", connect, "--describe", "--user", "x"],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
        env={**__import__("os").environ, "KCONFIGS_ZK_CONNECT_TIMEOUT_S": "3"},
    )
    assert result.returncode == 1
    assert result.stderr.startswith("Cannot connect to ZooKeeper") and "Traceback" not in result.stderr
