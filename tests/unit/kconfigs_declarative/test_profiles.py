"""kconfigs.profiles: file location, selection and precedence (flags > env > profile)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kconfigs.errors import UsageError
from kconfigs.profiles import config_path, merge_profile, parse_store_spec, select_profile

CONFIG = {
    "default_profile": "dev",
    "profiles": {
        "prod": {"zookeeper": "zk1:2181/kafka", "zk_auth": "u:p"},
        "kraft": {"bootstrap_server": "b:9092", "command_config": "~/admin.properties"},
        "dev": {"store": "/tmp/dev.db"},
    },
}


def test_config_path_honours_xdg_config_home_and_an_explicit_file():
    assert config_path({"XDG_CONFIG_HOME": "/x"}) == Path("/x/kconfigs/config.toml")
    assert config_path({"KCONFIGS_CONFIG": "/etc/k.toml", "XDG_CONFIG_HOME": "/x"}) == Path("/etc/k.toml")
    assert config_path({}) == Path.home() / ".config" / "kconfigs" / "config.toml"


def test_select_profile_maps_keys_and_expands_paths():
    assert select_profile(CONFIG, "prod", "c.toml") == {"zookeeper": "zk1:2181/kafka", "zk_auth": "u:p"}
    assert select_profile(CONFIG, "kraft", "c.toml")["command_config"] == str(Path.home() / "admin.properties")
    assert select_profile(CONFIG, None, "c.toml") == {"store_path": "/tmp/dev.db"}  # default_profile
    assert select_profile({}, None, "c.toml") == {}


def test_unknown_profile_and_unknown_key_are_usage_errors():
    with pytest.raises(UsageError, match=r"^No profile 'nope' in c.toml \(profiles: dev, kraft, prod\)$"):
        select_profile(CONFIG, "nope", "c.toml")
    with pytest.raises(UsageError, match=r"^c.toml: profile 'x': unknown key 'host'"):
        select_profile({"profiles": {"x": {"host": "h"}}}, "x", "c.toml")


def test_flags_or_env_win_over_the_profile_per_option():
    given = {"zookeeper": None, "zk_auth": "flag:pw", "store_path": None}
    assert merge_profile(given, {"zookeeper": "zk1", "zk_auth": "u:p"}) == {
        "zookeeper": "zk1",
        "zk_auth": "flag:pw",
        "store_path": None,
    }


def test_an_explicit_store_replaces_the_profiles_store_instead_of_mixing():
    given = {"bootstrap_server": "other:9092", "zookeeper": None}
    assert merge_profile(given, {"zookeeper": "zk1", "zk_auth": "u:p"}) == {
        "bootstrap_server": "other:9092",
        "zookeeper": None,
        "zk_auth": "u:p",
    }


@pytest.mark.parametrize(
    "spec, expected",
    [
        ("zk://h1:2181,h2:2181/kafka", {"zookeeper": "h1:2181,h2:2181/kafka"}),
        ("kafka://b:9092", {"bootstrap_server": "b:9092", "command_config": "admin.properties"}),
        ("kafka-controller://c:9093", {"bootstrap_controller": "c:9093", "command_config": "admin.properties"}),
        ("sqlite:///var/lib/q.db", {"store_path": "/var/lib/q.db"}),
        ("prod", {"zookeeper": "zk1:2181/kafka", "zk_auth": "u:p"}),
    ],
)
def test_store_specs(spec, expected):
    assert parse_store_spec(spec, "admin.properties", CONFIG, "c.toml") == expected


def test_bad_store_specs():
    with pytest.raises(UsageError, match="^Unknown store 'http://x'"):
        parse_store_spec("http://x", None, CONFIG, "c.toml")
    with pytest.raises(UsageError, match="^Store 'zk://' names no address$"):
        parse_store_spec("zk://", None, CONFIG, "c.toml")
