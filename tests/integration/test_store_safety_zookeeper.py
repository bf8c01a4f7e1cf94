"""Mistyped ZooKeeper chroots and connect strings on a real ZooKeeper: a read of a chroot that
does not exist is one line naming it and creates nothing; a write to a chroot that no Kafka uses
warns in one line and goes ahead (as kafka-configs does); a malformed chroot is kafka-configs' own
error; no Python warning ever reaches stderr."""

from __future__ import annotations

import pytest
from compat_support import run_kafka_configs, run_kconfigs

from harness.cli import run_main

DESCRIBE = ("--describe", "--entity-type", "users")
ALTER = ("--alter", "--user", "u1", "--add-config", "producer_byte_rate=1")


@pytest.fixture
def env(isolated_env):
    """No quotas.toml: these tests check what exists afterwards."""
    return isolated_env


def _host(zk_connect: str) -> str:
    return zk_connect.split("/", 1)[0]


@pytest.mark.parametrize("argv", [DESCRIBE, ("describe",), ("export",), ("resolve", "--user", "u", "--client-id", "c")])
def test_reading_a_chroot_that_does_not_exist_is_one_line_naming_it(env, zk_connect, zk_client, argv):
    typo = f"{zk_connect}/kafak"
    result = run_kconfigs(
        [*argv, "--zookeeper", typo] if not argv[0].startswith("-") else ["--zookeeper", typo, *argv],
        env={"KCONFIGS_HOME": str(env / "home")},
    )
    chroot = "/" + typo.split("/", 1)[1]
    assert (result.rc, result.stdout, result.stderr) == (
        1,
        [],
        f"ZooKeeper chroot {chroot} does not exist on {_host(zk_connect)} (is the path right?)\n",
    )
    assert zk_client.exists("/kafak") is None
    assert not (env / "home").exists()


def test_writing_to_a_chroot_that_does_not_exist_is_refused_as_by_kafka_configs(env, zk_connect, zk_client):
    """kafka-configs 2.8.2 cannot write there either (it fails with "Path length must be > 0")."""
    typo = f"{zk_connect}/kafak"
    chroot = "/" + typo.split("/", 1)[1]
    for argv in (
        ["--zookeeper", typo, *ALTER],
        ["alter", "--user", "u1", "--set", "producer_byte_rate=1", "--zookeeper", typo],
        ["--zookeeper", typo, *ALTER, "--dry-run"],
    ):
        result = run_kconfigs(argv)
        assert (result.rc, result.stdout, result.stderr) == (
            1,
            [],
            f"ZooKeeper chroot {chroot} does not exist on {_host(zk_connect)} (is the path right?)\n",
        )
    assert zk_client.exists("/kafak") is None
    assert run_kafka_configs(["--zookeeper", typo, *ALTER]).rc == 1 and zk_client.exists("/kafak") is None


def test_writing_to_a_chroot_no_kafka_uses_warns_in_one_line_and_writes(env, zk_connect, zk_client):
    zk_client.ensure_path("/empty")
    chroot = f"/{zk_connect.split('/', 1)[1]}/empty"
    result = run_kconfigs(
        ["alter", "--user", "u2", "--set", "producer_byte_rate=2", "--zookeeper", f"{zk_connect}/empty"]
    )
    assert (result.rc, result.stdout) == (0, ["Completed updating config for entity: user-principal 'u2'."])
    assert result.stderr == (
        f"Warning: ZooKeeper chroot {chroot} on {_host(zk_connect)} holds no /brokers: "
        "no Kafka cluster uses it (writing there anyway)\n"
    )
    assert zk_client.exists("/empty/config/users/u2") is not None  # as kafka-configs, which writes there too
    # Now it holds /config, the first write's doing: still no Kafka there, still said, every time.
    for argv, going_on in (
        (["--describe", "--user", "u2"], ""),
        (list(ALTER), " (writing there anyway)"),
        (["--describe", "--user", "u1"], ""),
    ):
        result = run_kconfigs(["--zookeeper", f"{zk_connect}/empty", *argv])
        assert (result.rc, result.stderr) == (
            0,
            f"Warning: ZooKeeper chroot {chroot} on {_host(zk_connect)} holds no /brokers: "
            f"no Kafka cluster uses it{going_on}\n",
        )
    result = run_kconfigs(["delete", "--user", "u2", "--yes", "--zookeeper", f"{zk_connect}/empty"])
    assert (result.rc, result.stderr) == (
        0,
        f"Warning: ZooKeeper chroot {chroot} on {_host(zk_connect)} holds no /brokers: no Kafka cluster uses it\n",
    )
    zk_client.ensure_path("/empty2")
    result = run_kconfigs(["--zookeeper", f"{zk_connect}/empty2", "--describe", "--user", "u2"])  # a read
    assert (result.rc, result.stdout, result.stderr) == (
        0,
        ["Configs for user-principal 'u2' are "],
        f"Warning: ZooKeeper chroot {chroot}2 on {_host(zk_connect)} holds no /brokers: no Kafka cluster uses it\n",
    )
    result = run_kconfigs(["--zookeeper", zk_connect, *ALTER])  # a Kafka chroot (it holds /brokers): silent
    assert (result.rc, result.stderr) == (0, "")


def test_serving_from_a_chroot_no_kafka_uses_says_so_and_serves(env, zk_connect, zk_client, tmp_path):
    """The gateway said "(writing there anyway)" at start-up: it serves the chroot's quotas,
    creating only the notification path it watches, as a broker does."""
    import signal
    import subprocess
    import sys

    from tests.integration.gateway_support import free_port, wait_for_port

    zk_client.ensure_path("/served")
    port = free_port()
    argv = [sys.executable, "-m", "kconfigs", "serve", "--upstream", "127.0.0.1:1", "--metrics-listen", ""]
    argv += ["--listen", f"127.0.0.1:{port}", "--zookeeper", f"{zk_connect}/served"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for_port(port)
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    chroot = f"/{zk_connect.split('/', 1)[1]}/served"
    assert proc.returncode == 0, err
    assert err.splitlines()[0] == (
        f"Warning: ZooKeeper chroot {chroot} on {_host(zk_connect)} holds no /brokers: "
        "no Kafka cluster uses it (serving its quotas anyway)"
    )
    assert zk_client.get_children("/served") == ["config"] and zk_client.get_children("/served/config") == ["changes"]


@pytest.mark.parametrize("argv", [DESCRIBE, ALTER, ("export",)])
def test_a_forgotten_chroot_is_said_with_where_kafka_is(env, zk_connect, zk_client, argv):
    """``zk:2181`` given where the cluster uses ``zk:2181/kafka``: kafka-configs lists no quotas
    and writes where no broker reads, both in silence. Here the parent of this test's Kafka-like
    chroot stands in for the root: it holds a Kafka chroot and no /brokers."""
    zk_client.ensure_path("/cluster/kafka/brokers")
    zk_client.ensure_path("/cluster/other/data")
    given = f"{zk_connect}/cluster"
    result = run_kconfigs(
        ["--zookeeper", given, *argv] if argv[0].startswith("-") else [*argv, "--zookeeper", given],
        env={"KCONFIGS_HOME": str(env / "home")},
    )
    chroot = "/" + given.split("/", 1)[1]
    assert result.rc == 0, result.stderr
    assert result.stderr == (
        f"Warning: ZooKeeper chroot {chroot} on {_host(zk_connect)} holds no /brokers: no Kafka "
        f"cluster uses it; Kafka's znodes are under {given}/kafka"
        + (" (writing there anyway)" if argv == ALTER else "")
        + "\n"
    )


def test_a_root_that_no_kafka_uses_is_said_when_no_chroot_is_given(env, tmp_path):
    """No chroot at all, on a ZooKeeper of its own (the shared one's root is every test's)."""
    from harness.zookeeper import ZooKeeperServer

    server = ZooKeeperServer(tmp_path / "zk")
    server.start()
    try:
        admin = server.admin_client()
        admin.ensure_path("/kafka/brokers")
        result = run_kconfigs(["--zookeeper", server.hosts, *DESCRIBE], env={"KCONFIGS_HOME": str(env / "home")})
        assert (result.rc, result.stdout) == (0, [])
        assert result.stderr == (
            f"Warning: ZooKeeper root (no chroot given) on {server.hosts} holds no /brokers: "
            f"no Kafka cluster uses it; Kafka's znodes are under {server.hosts}/kafka\n"
        )
        result = run_kconfigs(["--zookeeper", server.hosts + "/kafka", *DESCRIBE])
        assert (result.rc, result.stderr) == (0, "")
    finally:
        server.shutdown()


def test_a_delete_of_an_entity_with_no_quotas_fails_and_writes_nothing(env, zk_connect, zk_client):
    """A Kafka chroot (it holds /brokers) and one no Kafka uses (warned about): one line, and not
    even /config/changes is made."""
    zk_client.ensure_path("/nokafka")
    warning = (
        f"Warning: ZooKeeper chroot /{zk_connect.split('/', 1)[1]}/nokafka on {_host(zk_connect)} holds no "
        "/brokers: no Kafka cluster uses it\n"
    )
    for chroot, node, warned in ((zk_connect, "/", ""), (f"{zk_connect}/nokafka", "/nokafka", warning)):
        before = zk_client.get_children(node)
        result = run_kconfigs(["delete", "--user", "nobody", "--zookeeper", chroot])
        assert (result.rc, result.stdout, result.stderr) == (
            1,
            [],
            warned + "user-principal 'nobody' has no quotas: nothing deleted\n",
        )
        assert zk_client.get_children(node) == before
    assert zk_client.exists("/config") is None


@pytest.mark.parametrize("chroot", ["/kafka/", "/a//b", "/a/./b", "/a/.."])
def test_a_malformed_chroot_fails_with_kafka_configs_message(env, zk_connect, zk_client, chroot):
    """Differential: kafka-configs 2.8.2 validates the chroot with ZooKeeper's PathUtils."""
    connect = _host(zk_connect) + chroot
    ours, kafka = (
        run_kconfigs(["--zookeeper", connect, *DESCRIBE]),
        run_kafka_configs(["--zookeeper", connect, *DESCRIBE]),
    )
    assert (ours.rc, ours.error) == (kafka.rc, kafka.error) == (1, ours.error)
    assert ours.stderr == ours.error + "\n"
    assert ours.error in ("Path must not end with / character",) or ours.error.startswith("Invalid path string")
    assert run_kconfigs(["--zookeeper", connect, *ALTER]).error == ours.error  # writes too, before connecting


def test_the_kafka_configs_grammar_writes_to_the_environment_zookeeper_not_the_local_file(
    env, zk_connect, zk_client, monkeypatch
):
    monkeypatch.setenv("KCONFIGS_ZOOKEEPER", zk_connect)
    assert run_main(*ALTER) == (0, "Completed updating config for entity: user-principal 'u1'.\n", "")
    assert zk_client.exists("/config/users/u1") is not None
    assert not (env / "home").exists()
    assert run_main("--describe", "--user", "u1") == (
        0,
        "Configs for user-principal 'u1' are producer_byte_rate=1\n",
        "",
    )


def test_a_dot_user_is_refused_by_the_zookeeper_store_like_the_embedded_one(env, zk_connect):
    result = run_kconfigs(["--zookeeper", zk_connect, "--alter", "--user", ".", "--add-config", "producer_byte_rate=1"])
    assert (result.rc, result.stderr) == (
        1,
        'Invalid path string "/config/users/." caused by relative paths not allowed @14\n',
    )


def test_delete_keeps_a_users_scram_credentials_on_zookeeper(env, zk_connect, zk_client):
    """The user's znode holds its SCRAM credentials beside its quotas (Kafka's ZooKeeper mode):
    ``kconfigs delete`` removes the quotas and leaves the credentials, so the user can still log in."""
    import json

    add = "SCRAM-SHA-512=[password=pw],producer_byte_rate=5,request_percentage=10"
    assert run_main("--zookeeper", zk_connect, "--alter", "--user", "scram-u", "--add-config", add)[0] == 0
    credential = json.loads(zk_client.get("/config/users/scram-u")[0])["config"]["SCRAM-SHA-512"]
    result = run_kconfigs(["delete", "--user", "scram-u", "--zookeeper", zk_connect])
    assert (result.rc, result.stderr) == (
        1,
        "delete would remove 2 keys of user-principal 'scram-u' (producer_byte_rate, request_percentage): "
        "nothing changed; re-run with --yes to confirm\n",
    )
    assert run_main("delete", "--user", "scram-u", "--yes", "--zookeeper", zk_connect)[0] == 0
    assert json.loads(zk_client.get("/config/users/scram-u")[0])["config"] == {"SCRAM-SHA-512": credential}


def test_a_path_we_may_not_list_still_gets_the_warning_without_a_hint(env, zk_connect, zk_client):
    """The hint lists the path's children; an ACL that forbids it must not fail the command."""
    from kazoo.security import OPEN_ACL_UNSAFE, make_acl

    zk_client.create("/locked", acl=[make_acl("world", "anyone", write=True, create=True, delete=True, admin=True)])
    given = f"{zk_connect}/locked"
    try:
        result = run_kconfigs(["--zookeeper", given, *DESCRIBE], env={"KCONFIGS_HOME": str(env / "home")})
    finally:
        zk_client.set_acls("/locked", OPEN_ACL_UNSAFE)  # the fixture's clean-up lists it
    chroot = "/" + given.split("/", 1)[1]
    assert (result.rc, result.stdout) == (0, [])
    assert result.stderr == (
        f"Warning: ZooKeeper chroot {chroot} on {_host(zk_connect)} holds no /brokers: no Kafka cluster uses it\n"
    )
