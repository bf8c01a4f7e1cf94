"""kconfigs.profiles: file location, selection and precedence (flags > env > profile)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kconfigs.errors import UsageError
from kconfigs.profiles import (
    StoreOptions,
    config_path,
    parse_store_spec,
    resolve_store_options,
    resolve_store_spec,
    select_profile,
)

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


@pytest.fixture
def config_env(tmp_path):
    """An environment whose config file has the profiles of CONFIG, plus one with a blank value."""
    path = tmp_path / "config.toml"
    path.write_text(
        'default_profile = "dev"\n[profiles.prod]\nzookeeper = "zk1:2181/kafka"\nzk_auth = "u:p"\n'
        '[profiles.kraft]\nbootstrap_server = "b:9092"\n[profiles.dev]\nstore = "/tmp/dev.db"\n'
        '[profiles.blank]\nzookeeper = " "\n'
    )
    return {"KCONFIGS_CONFIG": str(path)}


def test_flags_or_env_win_over_the_profile_per_option(config_env):
    options = resolve_store_options({"zk_auth": "flag:pw"}, "prod", config_env)
    assert (options.zookeeper, options.zk_auth, options.origin) == (
        "zk1:2181/kafka",
        "flag:pw",
        "profile 'prod' key zookeeper",
    )
    options = resolve_store_options({}, "prod", {**config_env, "KCONFIGS_ZK_AUTH": "env:pw"})
    assert options.zk_auth == "env:pw"


def test_an_explicit_store_replaces_the_profiles_store_instead_of_mixing(config_env):
    options = resolve_store_options({"bootstrap_server": "other:9092"}, "prod", config_env)
    assert options == StoreOptions(bootstrap_server="other:9092", zk_auth="u:p", origin="--bootstrap-server")


def test_a_flag_store_beats_an_environment_store_and_the_default_profile(config_env):
    env = {**config_env, "KCONFIGS_ZOOKEEPER": "zk9:2181"}
    assert resolve_store_options({"store_path": "/x.db"}, None, env) == StoreOptions(
        store_path="/x.db", origin="--store"
    )
    assert resolve_store_options({}, None, env) == StoreOptions(zookeeper="zk9:2181", origin="KCONFIGS_ZOOKEEPER")
    assert resolve_store_options({}, None, config_env).store_path == "/tmp/dev.db"  # default_profile
    assert resolve_store_options({}, None, {**config_env, "KCONFIGS_PROFILE": "kraft"}).bootstrap_server == "b:9092"


def test_nothing_named_is_the_embedded_default(tmp_path):
    options = resolve_store_options({"zookeeper": None}, None, {"XDG_CONFIG_HOME": str(tmp_path)})
    assert options.is_embedded_default and options.origin == "default"


def test_a_config_file_named_by_kconfigs_config_must_exist_even_when_a_flag_names_the_store(tmp_path):
    env = {"KCONFIGS_CONFIG": str(tmp_path / "none.toml")}
    for flags in ({}, {"zookeeper": "zk:2181"}):
        with pytest.raises(UsageError, match=rf"^KCONFIGS_CONFIG names {tmp_path}/none.toml, which does not exist$"):
            resolve_store_options(flags, None, env)
    with pytest.raises(UsageError, match=r"^KCONFIGS_CONFIG names .*none.toml, which does not exist$"):
        resolve_store_spec("prod", None, env)


def test_a_profile_named_without_a_config_file_says_the_file_is_missing(tmp_path):
    env = {"XDG_CONFIG_HOME": str(tmp_path)}
    message = rf"^No profile 'prod': the config file {tmp_path}/kconfigs/config.toml does not exist$"
    with pytest.raises(UsageError, match=message):
        resolve_store_options({}, "prod", env)
    with pytest.raises(UsageError, match=message):
        resolve_store_spec("prod", None, env)


def test_a_profile_that_names_no_store_is_refused_unless_a_store_is_named_elsewhere(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text('default_profile = "creds"\n[profiles.creds]\nzk_auth = "u:p"\n[profiles.empty]\n')
    env = {"KCONFIGS_CONFIG": str(path)}
    for profile in ("creds", "empty", None):
        with pytest.raises(UsageError, match=r"^Profile '(creds|empty)' in .*c.toml names no store: give it "):
            resolve_store_options({}, profile, env)
    with pytest.raises(UsageError, match=r"^Profile 'empty' in .*c.toml names no store"):
        resolve_store_spec("empty", None, env)
    lent = resolve_store_options({"zookeeper": "zk:2181"}, "creds", env)
    assert (lent.zookeeper, lent.zk_auth) == ("zk:2181", "u:p")
    assert resolve_store_options({}, None, {**env, "KCONFIGS_STORE": "/q.db"}).store_path == "/q.db"


@pytest.mark.parametrize("spec", ["127.0.0.1:2181/kafka", "zk1:2181,zk2:2181", "broker:9092", "[::1]:2181/k"])
def test_an_address_without_a_scheme_suggests_the_schemes(tmp_path, spec):
    with pytest.raises(UsageError) as raised:
        resolve_store_spec(spec, None, {"XDG_CONFIG_HOME": str(tmp_path)})
    assert str(raised.value) == (
        f"{spec!r} is not a profile; an address needs its scheme: zk://{spec} (ZooKeeper), "
        f"kafka://{spec} (brokers) or kafka-controller://{spec}"
    )


@pytest.mark.parametrize(
    "flags, profile, env, message",
    [
        ({"zookeeper": ""}, None, {}, "^--zookeeper is empty: give a value or leave it out$"),
        ({"bootstrap_server": "  "}, None, {}, "^--bootstrap-server is empty"),
        ({"bootstrap_controller": "\t"}, None, {}, "^--bootstrap-controller is empty"),
        ({"store_path": ""}, None, {}, "^--store is empty"),
        ({}, None, {"KCONFIGS_ZOOKEEPER": ""}, "^KCONFIGS_ZOOKEEPER is empty"),
        ({}, "", {}, "^--profile is empty"),
        ({}, None, {"KCONFIGS_PROFILE": " "}, "^KCONFIGS_PROFILE is empty"),
        ({}, "nosuch", {}, r"^No profile 'nosuch' in .*config.toml \(profiles: blank, dev, kraft, prod\)$"),
        (
            {"zookeeper": "z:1", "store_path": "/q.db"},
            None,
            {},
            "^Name only one store: --zookeeper and --store both name one$",
        ),
        ({}, "blank", {}, "^profile 'blank' key zookeeper is empty: give a value or leave it out$"),
    ],
)
def test_blank_values_unknown_profiles_and_two_stores_are_errors(config_env, flags, profile, env, message):
    with pytest.raises(UsageError, match=message):
        resolve_store_options(flags, profile, {**config_env, **env})


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
