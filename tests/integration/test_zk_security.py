"""ZooKeeper security: digest auth and Kafka's ACLs (users subtree creator-only)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from kazoo.security import Permissions

DIGEST = "admin:s3cret"


@pytest.fixture
def admin_zk(zk_client):
    """The test's chrooted client, authenticated as the creator; removes the protected nodes
    afterwards (the harness's unauthenticated chroot cleanup could not)."""
    zk_client.add_auth("digest", DIGEST)
    yield zk_client
    zk_client.delete("/config", recursive=True)


def kconfigs(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "kconfigs", *args], capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60
    )


def test_users_subtree_gets_creator_only_acl_and_clients_world_read(zk_connect, admin_zk):
    auth = ["--zookeeper", zk_connect, "--zk-auth", DIGEST]
    assert (
        kconfigs(
            *auth, "--alter", "--user", "alice", "--client", "etl", "--add-config", "producer_byte_rate=1024"
        ).returncode
        == 0
    )
    assert kconfigs(*auth, "--alter", "--client", "etl", "--add-config", "consumer_byte_rate=2048").returncode == 0

    for path in ("/config/users", "/config/users/alice", "/config/users/alice/clients/etl"):
        acls, _ = admin_zk.get_acls(path)
        assert [(a.id.scheme, a.id.id.split(":")[0], a.perms) for a in acls] == [
            ("digest", "admin", Permissions.ALL)
        ], path
    acls, _ = admin_zk.get_acls("/config/clients/etl")
    assert {(a.id.scheme, a.perms) for a in acls} == {("digest", Permissions.ALL), ("world", Permissions.READ)}


def test_reading_a_protected_user_without_credentials_is_one_clear_line(zk_connect, admin_zk):
    auth = ["--zookeeper", zk_connect, "--zk-auth", DIGEST]
    assert kconfigs(*auth, "--alter", "--user", "bob", "--add-config", "producer_byte_rate=1").returncode == 0

    denied = kconfigs("--zookeeper", zk_connect, "--describe", "--user", "bob")
    assert denied.returncode == 1
    assert denied.stderr.count("\n") == 1 and "denied access" in denied.stderr and "Traceback" not in denied.stderr
    assert "s3cret" not in denied.stderr

    allowed = kconfigs(*auth, "--describe", "--user", "bob")
    assert allowed.stdout == "Configs for user-principal 'bob' are producer_byte_rate=1\n"


def test_unreachable_zookeeper_is_one_clear_line():
    result = kconfigs("--zookeeper", "127.0.0.1:1", "--describe", "--user", "x")
    assert result.returncode == 1
    assert result.stderr.startswith("Cannot connect to ZooKeeper at 127.0.0.1:1")
    assert result.stderr.count("\n") == 1
