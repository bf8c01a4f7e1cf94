"""ZooKeeper SASL (DIGEST-MD5) the way Kafka's tools do it: the JAAS file named in KAFKA_OPTS.
kconfigs writes with Kafka's ACLs for the SASL identity, and real kafka-configs 2.8.2 logged in
with the same JAAS file reads it back."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid

import pytest
from kazoo.client import KazooClient
from kazoo.security import Permissions

from harness.java import run_kafka_class


def kconfigs(*args: str, kafka_opts: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "KAFKA_OPTS"}
    if kafka_opts is not None:
        env["KAFKA_OPTS"] = kafka_opts
    return subprocess.run(
        [sys.executable, "-m", "kconfigs", *args],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
        env=env,
    )


@pytest.fixture
def sasl_chroot(zk_tls_server):
    """A chroot on the SASL-enabled plaintext port; removed afterwards as the SASL user."""
    chroot = f"/sasl-{uuid.uuid4().hex[:8]}"
    admin = KazooClient(
        hosts=zk_tls_server.plain_hosts,
        timeout=10,
        sasl_options={
            "mechanism": "DIGEST-MD5",
            "username": zk_tls_server.digest_user,
            "password": zk_tls_server.digest_password,
        },
    )
    admin.start(timeout=30)
    admin.ensure_path(chroot)
    yield zk_tls_server.plain_hosts + chroot, admin, chroot
    admin.delete(chroot, recursive=True)
    admin.stop()
    admin.close()


def test_sasl_login_from_kafka_opts_writes_kafka_acls_and_kafka_reads_it(zk_tls_server, sasl_chroot):
    connect, admin, chroot = sasl_chroot
    opts = f"-Xmx256m -Djava.security.auth.login.config={zk_tls_server.jaas_client_path}"
    done = kconfigs(
        "--zookeeper",
        connect,
        "--alter",
        "--user",
        "sasl-user",
        "--add-config",
        "producer_byte_rate=2048",
        kafka_opts=opts,
    )
    assert done.returncode == 0, done.stderr
    acls, _ = admin.get_acls(f"{chroot}/config/users/sasl-user")
    assert [(a.id.scheme, a.id.id, a.perms) for a in acls] == [("sasl", zk_tls_server.digest_user, Permissions.ALL)]

    theirs = run_kafka_class(
        "2.8.2",
        "kafka.admin.ConfigCommand",
        ["--zookeeper", connect, "--describe", "--user", "sasl-user"],
        extra_jvm_flags=[f"-Djava.security.auth.login.config={zk_tls_server.jaas_client_path}"],
    )
    assert "Configs for user-principal 'sasl-user' are producer_byte_rate=2048" in theirs.stdout, theirs.stderr

    anonymous = kconfigs("--zookeeper", connect, "--describe", "--user", "sasl-user")
    assert anonymous.returncode == 1 and "denied access" in anonymous.stderr
    assert zk_tls_server.digest_password not in anonymous.stderr + done.stderr


def test_unsupported_login_module_is_one_line_without_secrets(tmp_path, sasl_chroot):
    connect, _, _ = sasl_chroot
    jaas = tmp_path / "krb.conf"
    jaas.write_text(
        "Client {\n  com.sun.security.auth.module.Krb5LoginModule required\n"
        '  useKeyTab=true keyTab="/etc/k.keytab" principal="kafka/host@REALM";\n};\n'
    )
    result = kconfigs(
        "--zookeeper", connect, "--describe", "--user", "x", kafka_opts=f"-Djava.security.auth.login.config={jaas}"
    )
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and "Krb5LoginModule is not supported" in result.stderr
