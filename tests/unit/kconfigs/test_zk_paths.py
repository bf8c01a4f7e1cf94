"""ZooKeeper path checks shared by every store (entity paths) and the chroot of a connect
string, with ZooKeeper's PathUtils messages (the texts kafka-configs 2.8.2 prints; the chroot ones
are also checked against the real tool in test_store_safety_zookeeper.py)."""

from __future__ import annotations

import pytest

from kconfigs.errors import UsageError, ValidationError
from kconfigs.stores.zookeeper import chroot_of
from kconfigs.znode_codec import config_znode, zk_path_problem


@pytest.mark.parametrize(
    "path, problem",
    [
        ("/", None),
        ("/kafka", None),
        ("/a/b.c/..d/...", None),
        ("", "Path length must be > 0"),
        ("kafka", "Path must start with / character"),
        ("/kafka/", "Path must not end with / character"),
        ("/a//b", 'Invalid path string "/a//b" caused by empty node name specified @3'),
        ("/a/./b", 'Invalid path string "/a/./b" caused by relative paths not allowed @3'),
        ("/a/..", 'Invalid path string "/a/.." caused by relative paths not allowed @4'),
        ("/a\0b", 'Invalid path string "/a\0b" caused by null character not allowed @2'),
    ],
)
def test_zookeeper_path_rules(path, problem):
    assert zk_path_problem(path) == problem


def test_every_store_builds_entity_paths_through_the_same_check():
    assert config_znode("users/alice") == "/config/users/alice"
    with pytest.raises(
        ValidationError, match=r'^Invalid path string "/config/users/\." caused by relative paths not allowed @14$'
    ):
        config_znode("users/.")


@pytest.mark.parametrize(
    "hosts, chroot", [("h:2181", None), ("h:2181/", None), ("h1:1,h2:2/kafka", "/kafka"), ("h:2181/a/b", "/a/b")]
)
def test_chroot_of_a_connect_string(hosts, chroot):
    assert chroot_of(hosts) == chroot


def test_a_trailing_slash_in_the_chroot_is_kafka_configs_error():
    with pytest.raises(UsageError, match="^Path must not end with / character$"):
        chroot_of("h:2181/kafka/")
