"""ZooKeeper-specific guarantees of the ZooKeeper store beyond the shared contract: the write and
its notification are one multi-op, Kafka-written trees read back, digest auth and Kafka's ACLs,
and one-line errors through the CLI when ZooKeeper is unreachable, refuses access or holds garbage."""

from __future__ import annotations

import json
import queue
import time

import pytest
from compat_support import run_kconfigs
from kazoo.client import KazooClient
from kazoo.security import ACL, Id, Permissions, make_digest_acl_credential

from harness.processes import free_port
from kconfigs.model import DEFAULT, QuotaEntity, QuotaRecord
from kconfigs.service import ConfigChange, merge_update
from kconfigs.stores.zookeeper import ZkSettings, ZooKeeperStore


def put(store, entity, add=None, delete=()):
    return store.alter(entity, merge_update(entity, ConfigChange(add=add or {}, delete=list(delete))))


@pytest.fixture
def store(zk_connect):
    store = ZooKeeperStore(ZkSettings(hosts=zk_connect))
    yield store
    store.close()


def _last_notification(client):
    name = sorted(client.get_children("/config/changes"))[-1]
    data, stat = client.get(f"/config/changes/{name}")
    return name, json.loads(data), stat


def test_config_write_and_notification_commit_in_the_same_transaction(store, zk_client):
    put(store, QuotaEntity(user="u", client_id="c"), {"producer_byte_rate": "1"})
    _, stat = zk_client.get("/config/users/u/clients/c")
    name, doc, note_stat = _last_notification(zk_client)
    assert doc == {"version": 2, "entity_path": "users/u/clients/c"}
    assert len(name) == len("config_change_") + 10 and name[len("config_change_") :].isdigit()
    assert note_stat.czxid == stat.czxid  # one multi-op: one zxid
    put(store, QuotaEntity(user="u", client_id="c"), {"consumer_byte_rate": "2"})
    _, stat = zk_client.get("/config/users/u/clients/c")
    assert _last_notification(zk_client)[2].czxid == stat.mzxid


def test_parents_are_created_with_null_data_like_kafka(store, zk_client):
    put(store, QuotaEntity(user="u", client_id=DEFAULT), {"producer_byte_rate": "1"})
    assert zk_client.get("/config/users/u")[0] in (b"", None)
    assert zk_client.get("/config/users/u/clients")[0] in (b"", None)


def test_reads_trees_in_the_forms_kafka_leaves_them(zk_client, zk_connect):
    # 2.8 keeps emptied nodes as {"config":{}}; user parents of tuples have null data.
    zk_client.create("/config/users/u1/clients/c1", b'{"version":1,"config":{"producer_byte_rate":"5"}}', makepath=True)
    zk_client.create("/config/users/u2", b'{"version":1,"config":{}}', makepath=True)
    zk_client.create("/config/users/u3", b'{"version":1,"config":{"consumer_byte_rate":"7"}}')
    zk_client.create("/config/clients/c0", b'{"version":1,"config":{}}', makepath=True)
    out = run_kconfigs(["--zookeeper", zk_connect, "--describe", "--entity-type", "users"])
    assert (out.rc, out.stdout) == (0, ["Configs for user-principal 'u3' are consumer_byte_rate=7"])
    out = run_kconfigs(["--zookeeper", zk_connect, "--describe", "--entity-type", "clients"])
    assert out.stdout == ["Configs for client-id 'c0' are "]
    out = run_kconfigs(
        [
            "--zookeeper",
            zk_connect,
            "--describe",
            "--entity-type",
            "users",
            "--entity-name",
            "u1",
            "--entity-type",
            "clients",
        ]
    )
    assert out.stdout == ["Configs for user-principal 'u1', client-id 'c1' are producer_byte_rate=5"]
    out = run_kconfigs(["--zookeeper", zk_connect, "--describe", "--user", "u1"])
    assert out.stdout == ["Configs for user-principal 'u1' are "]


def test_watch_follows_legacy_v1_notifications(store, zk_client):
    changes: queue.Queue = queue.Queue()
    watch = store.watch(changes.put)
    try:
        assert changes.get(timeout=10).full_snapshot
        zk_client.create("/config/clients/old", b'{"version":1,"config":{"producer_byte_rate":"3"}}', makepath=True)
        zk_client.create(
            "/config/changes/config_change_",
            b'{"version":1,"entity_type":"clients","entity_name":"old"}',
            sequence=True,
            makepath=True,
        )
        change = changes.get(timeout=10)
        assert change.records == (QuotaRecord(QuotaEntity(client_id="old"), {"producer_byte_rate": "3"}),)
    finally:
        watch.close()


def test_unreachable_zookeeper_is_one_line_and_exit_1():
    started = time.monotonic()
    out = run_kconfigs(["--zookeeper", f"127.0.0.1:{free_port()}", "--describe", "--entity-type", "users"])
    assert out.rc == 1 and out.stdout == []
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr
    assert out.error.startswith("Cannot connect to ZooKeeper at 127.0.0.1:")
    assert time.monotonic() - started < 30


def test_corrupt_znode_is_one_line_naming_it(zk_client, zk_connect):
    zk_client.create("/config/clients/bad", b"\x00garbage", makepath=True)
    out = run_kconfigs(["--zookeeper", zk_connect, "--describe", "--entity-type", "clients"])
    assert out.rc == 1 and len(out.stderr.strip().splitlines()) == 1
    assert "/config/clients/bad" in out.error and "Corrupt" in out.error
    out = run_kconfigs(
        ["--zookeeper", zk_connect, "--alter", "--client", "bad", "--add-config", "producer_byte_rate=1"]
    )
    assert out.rc == 1 and "/config/clients/bad" in out.error
    assert zk_client.get("/config/clients/bad")[0] == b"\x00garbage"


def test_digest_auth_writes_kafkas_sensitive_acls_and_others_cannot_read_users(zk_connect):
    auth_env = {"KCONFIGS_ZK_AUTH": "kc:secret"}
    assert (
        run_kconfigs(
            [
                "--zookeeper",
                zk_connect,
                "--alter",
                "--user",
                "alice",
                "--add-config",
                "SCRAM-SHA-256=[password=pw],producer_byte_rate=1",
            ],
            env=auth_env,
        ).rc
        == 0
    )
    assert (
        run_kconfigs(
            [
                "--zk-auth",
                "kc:secret",
                "--zookeeper",
                zk_connect,
                "--alter",
                "--client",
                "app",
                "--add-config",
                "producer_byte_rate=2",
            ]
        ).rc
        == 0
    )
    owner = Id("digest", make_digest_acl_credential("kc", "secret"))
    authed = KazooClient(hosts=zk_connect, timeout=10, auth_data=[("digest", "kc:secret")])
    authed.start(timeout=30)
    try:
        for path in ("/config/users", "/config/users/alice"):
            assert authed.get_acls(path)[0] == [ACL(Permissions.ALL, owner)]
        assert sorted(authed.get_acls("/config/clients/app")[0]) == sorted(
            [ACL(Permissions.ALL, owner), ACL(Permissions.READ, Id("world", "anyone"))]
        )
        anonymous = run_kconfigs(["--zookeeper", zk_connect, "--describe", "--user", "alice"])
        assert anonymous.rc == 1 and "denied access" in anonymous.error and "Traceback" not in anonymous.stderr
        readable = run_kconfigs(["--zookeeper", zk_connect, "--describe", "--client", "app"])
        assert readable.stdout == ["Configs for client-id 'app' are producer_byte_rate=2"]
        mine = run_kconfigs(["--zookeeper", zk_connect, "--describe", "--user", "alice"], env=auth_env)
        assert mine.rc == 0 and "SCRAM-SHA-256=salt=" in mine.stdout[0]
    finally:
        authed.delete("/config", recursive=True)  # the chroot teardown has no credentials
        authed.stop()
        authed.close()


def test_watching_a_fresh_secured_zookeeper_creates_the_changes_path_with_kafkas_acls(zk_connect):
    """The gateway's watch created /config/changes world-writable on a ZooKeeper where every
    other node it writes gets Kafka's creator-all + world-read."""
    store = ZooKeeperStore(ZkSettings(hosts=zk_connect, auth_digest="kc:secret"))
    changes = queue.Queue()
    try:
        watch = store.watch(changes.put)
        assert changes.get(timeout=10).full_snapshot
        owner = Id("digest", make_digest_acl_credential("kc", "secret"))
        expected = sorted([ACL(Permissions.ALL, owner), ACL(Permissions.READ, Id("world", "anyone"))])
        for path in ("/config", "/config/changes"):
            assert sorted(store.client.get_acls(path)[0]) == expected, path
        watch.close()
    finally:
        store.client.delete("/config", recursive=True)  # the chroot teardown has no credentials
        store.close()


def test_bad_zk_auth_option_is_one_line(zk_connect):
    out = run_kconfigs(["--zk-auth", "nocolon", "--zookeeper", zk_connect, "--describe", "--entity-type", "users"])
    assert (out.rc, out.error) == (1, "--zk-auth must be 'user:password' (ZooKeeper digest scheme)")
