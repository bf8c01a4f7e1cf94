"""Named connection profiles: ``$XDG_CONFIG_HOME/kconfigs/config.toml`` (``~/.config/...``).

::

    default_profile = "dev"            # optional: used when no --profile / KCONFIGS_PROFILE

    [profiles.prod]                    # a ZooKeeper-mode cluster
    zookeeper = "zk1:2181,zk2:2181/kafka"
    zk_auth = "kconfigs:secret"        # ZooKeeper digest
    zk_tls_config_file = "~/.config/kconfigs/prod-zk-tls.properties"

    [profiles.kraft]                   # a KRaft cluster through the admin API
    bootstrap_server = "broker1:9093"
    command_config = "~/.config/kconfigs/kraft-admin.properties"   # security.protocol, sasl.*, ssl.*

    [profiles.dev]                     # the embedded store
    store = "~/kconfigs-dev.db"

Precedence, per option: an explicit flag, then its ``KCONFIGS_*`` environment variable, then the
profile (``--profile``, else ``KCONFIGS_PROFILE``, else ``default_profile``), then the embedded
default store. The store itself comes whole from the first of those levels that names one
(``--zookeeper``, ``--bootstrap-server``, ``--bootstrap-controller``, ``--store``), so levels never
mix: ``--store x`` with ``KCONFIGS_ZOOKEEPER`` set uses x. :func:`resolve_store_options` is the one
place every command (both grammars, ``serve``, ``analyze``, ``migrate``, completion) resolves its
store; an empty or blank value anywhere is an error, never "not given". Nothing stands in for
what was meant: a profile that the store would come from must name one (a profile of credentials
only lends them to a store a flag or variable names), a ``KCONFIGS_CONFIG`` file must exist, and
so must the config file of a profile asked for by name.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from dataclasses import fields as dataclass_fields
from pathlib import Path
from typing import Mapping

from kconfigs.errors import UsageError, nonblank

#: profile key -> StoreOptions field
PROFILE_KEYS = {
    "zookeeper": "zookeeper",
    "bootstrap_server": "bootstrap_server",
    "bootstrap_controller": "bootstrap_controller",
    "command_config": "command_config",
    "store": "store_path",
    "zk_auth": "zk_auth",
    "zk_tls_config_file": "zk_tls_config_file",
}
STORE_SELECTORS = ("zookeeper", "bootstrap_server", "bootstrap_controller", "store_path")
_PATH_FIELDS = ("command_config", "store_path", "zk_tls_config_file")
#: StoreOptions field -> the command-line flag that sets it (both grammars spell them alike)
FLAGS = {
    "zookeeper": "--zookeeper",
    "bootstrap_server": "--bootstrap-server",
    "bootstrap_controller": "--bootstrap-controller",
    "command_config": "--command-config",
    "store_path": "--store",
    "zk_auth": "--zk-auth",
    "zk_tls_config_file": "--zk-tls-config-file",
}
#: StoreOptions field -> its environment variable
ENV_VARS = {
    "zookeeper": "KCONFIGS_ZOOKEEPER",
    "bootstrap_server": "KCONFIGS_BOOTSTRAP_SERVER",
    "bootstrap_controller": "KCONFIGS_BOOTSTRAP_CONTROLLER",
    "command_config": "KCONFIGS_COMMAND_CONFIG",
    "store_path": "KCONFIGS_STORE",
    "zk_auth": "KCONFIGS_ZK_AUTH",
    "zk_tls_config_file": "KCONFIGS_ZK_TLS_CONFIG_FILE",
}
PROFILE_ENV = "KCONFIGS_PROFILE"


@dataclass(frozen=True)
class StoreOptions:
    """Where a command's quotas live. ``store_path`` None (and no server) = the embedded default
    store; ``origin`` says which level named the store ("--zookeeper", "KCONFIGS_STORE",
    "profile 'prod' key zookeeper", or "default")."""

    zookeeper: str | None = None
    bootstrap_server: str | None = None
    bootstrap_controller: str | None = None
    command_config: str | None = None
    store_path: str | None = None
    zk_auth: str | None = None
    zk_tls_config_file: str | None = None
    origin: str = "default"

    @property
    def is_embedded_default(self) -> bool:
        """No level named a store: the embedded store at its default path."""
        return not any(getattr(self, f) for f in STORE_SELECTORS)


def config_path(environ: Mapping[str, str] | None = None) -> Path:
    """``$KCONFIGS_CONFIG`` if set, else ``$XDG_CONFIG_HOME/kconfigs/config.toml``."""
    env = os.environ if environ is None else environ
    if nonblank(env.get("KCONFIGS_CONFIG"), "KCONFIGS_CONFIG"):  # set but empty: an error, not the default
        return Path(env["KCONFIGS_CONFIG"])
    base = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "kconfigs" / "config.toml"


def load_config(path: Path) -> dict:
    """The parsed config file, or {} if there is none. :raises UsageError: unreadable or bad TOML."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as err:
        raise UsageError(f"Cannot read {path}: {err.strerror}") from None
    import tomllib  # only when a config file exists: the describe/alter fast path reads none

    try:
        config = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise UsageError(f"{path}: not valid TOML: {err}") from None
    for key, value in config.items():  # a mistyped default_profile would fall back to another store
        if key not in _CONFIG_KEYS:
            raise UsageError(f"{path}: unknown key {key!r} (valid: {', '.join(_CONFIG_KEYS)})")
        if not isinstance(value, _CONFIG_KEYS[key]):
            raise UsageError(f"{path}: {key} must be {'a string' if key == 'default_profile' else 'a table'}")
    return config


#: the config file's top-level keys and their TOML types
_CONFIG_KEYS: Mapping[str, type] = {"default_profile": str, "profiles": dict}


def profile_names(config: Mapping) -> list[str]:
    profiles = config.get("profiles", {})
    return sorted(profiles) if isinstance(profiles, Mapping) else []


def select_profile(config: Mapping, name: str | None, origin: str) -> dict[str, str]:
    """The StoreOptions fields of profile ``name`` (or of ``default_profile``; {} if neither).

    :raises UsageError: unknown profile, unknown key or a non-string value.
    """
    name = name or config.get("default_profile")
    if not name:
        return {}
    profiles = config.get("profiles", {})
    if not isinstance(profiles, Mapping) or not isinstance(profiles.get(name), Mapping):
        known = ", ".join(profile_names(config)) or "none"
        raise UsageError(f"No profile {name!r} in {origin} (profiles: {known})")
    fields = {}
    for key, value in profiles[name].items():
        if key not in PROFILE_KEYS:
            raise UsageError(f"{origin}: profile {name!r}: unknown key {key!r} (valid: {', '.join(PROFILE_KEYS)})")
        if not isinstance(value, str):
            raise UsageError(f"{origin}: profile {name!r}: {key} must be a string")
        field = PROFILE_KEYS[key]
        fields[field] = os.path.expanduser(value) if field in _PATH_FIELDS else value
    return fields


def resolve_store_options(
    flags: Mapping[str, str | None], profile: str | None, environ: Mapping[str, str] | None = None
) -> StoreOptions:
    """THE store resolution: flags > ``KCONFIGS_*`` environment > profile > embedded default.

    ``flags`` maps StoreOptions fields to the command line's values (None = not given).
    ``default_profile`` is not consulted when a flag or variable already names a store and no
    profile was asked for (an explicit ``--profile`` still lends its credentials).

    :raises UsageError: an empty or blank value, two stores named at one level, an unknown
        profile, or a bad config file.
    """
    env = os.environ if environ is None else environ
    path = config_path(env)
    _check_named_config_file(path, env)
    flag_level = _given(flags, FLAGS)
    env_level = _given({f: env.get(v) for f, v in ENV_VARS.items()}, ENV_VARS)
    env_profile = nonblank(env.get(PROFILE_ENV), PROFILE_ENV)  # blank is an error even when a flag wins
    profile_name = nonblank(profile, "--profile") or env_profile
    levels = [(flag_level, FLAGS), (env_level, ENV_VARS)]
    explicit_store = any(k in level for level, _ in levels for k in STORE_SELECTORS)
    if profile_name is not None or not explicit_store:
        config = _load_profiles(path, profile_name)
        chosen = select_profile(config, profile_name, str(path))
        name = profile_name or config.get("default_profile")
        if name and not explicit_store:
            _refuse_profile_without_store(name, path, chosen)
        labels = {field: f"profile {name!r} key {key}" for key, field in PROFILE_KEYS.items()}
        levels.append((_given(chosen, labels), labels))
    return _merge_levels(levels)


def _refuse_profile_without_store(name: str, path: Path, fields: Mapping[str, str | None]) -> None:
    """A profile that names no store must not stand for the embedded default store (it is
    someone's cluster with a key missing). :raises UsageError:"""
    if not any(fields.get(f) is not None for f in STORE_SELECTORS):
        raise UsageError(
            f"Profile {name!r} in {path} names no store: give it zookeeper, bootstrap_server, "
            "bootstrap_controller or store"
        )


def _check_named_config_file(path: Path, env: Mapping[str, str]) -> None:
    """A config file named by ``KCONFIGS_CONFIG`` must exist, whatever else names the store: a
    mistyped path would otherwise read as "no profiles". :raises UsageError:"""
    if env.get("KCONFIGS_CONFIG") is not None and not path.exists():
        raise UsageError(f"KCONFIGS_CONFIG names {path}, which does not exist")


def _load_profiles(path: Path, profile_name: str | None) -> dict:
    """The config file a profile is taken from; asking for a profile by name needs the file.

    :raises UsageError: a named profile and no config file, or a bad file.
    """
    if profile_name is not None and not path.exists():
        raise UsageError(f"No profile {profile_name!r}: the config file {path} does not exist")
    return load_config(path)


def _given(values: Mapping[str, str | None], names: Mapping[str, str]) -> dict[str, str]:
    """The values that were given; a blank one (an unset shell variable) is an error, so that
    ``--zookeeper "$ZK"`` never falls through to another store."""
    return {f: v for f, v in values.items() if nonblank(v, names[f]) is not None}


def _merge_levels(levels: list[tuple[dict[str, str], Mapping[str, str]]]) -> StoreOptions:
    merged: dict[str, str] = {}
    origin = "default"
    for level, names in levels:
        selectors = [f for f in STORE_SELECTORS if f in level]
        if selectors and origin == "default":
            if len(selectors) > 1:
                raise UsageError(f"Name only one store: {names[selectors[0]]} and {names[selectors[1]]} both name one")
            merged[selectors[0]] = level[selectors[0]]
            origin = names[selectors[0]]
        for field, value in level.items():
            if field not in STORE_SELECTORS:
                merged.setdefault(field, value)
    return StoreOptions(**merged, origin=origin)


def store_option_fields() -> tuple[str, ...]:
    """The StoreOptions fields a command line can set."""
    return tuple(f.name for f in dataclass_fields(StoreOptions) if f.name != "origin")


_SCHEMES = {
    "zk": "zookeeper",
    "zookeeper": "zookeeper",
    "kafka": "bootstrap_server",
    "kafka-controller": "bootstrap_controller",
    "sqlite": "store_path",
}


def resolve_store_spec(spec: str, command_config: str | None, environ: Mapping[str, str] | None = None) -> StoreOptions:
    """The StoreOptions of a ``migrate --from/--to`` spec (see :func:`parse_store_spec`).

    :raises UsageError: a blank spec or value, an unknown profile.
    """
    env = os.environ if environ is None else environ
    if not spec.strip():
        raise UsageError("Store is empty: give zk://, kafka://, kafka-controller://, sqlite:/// or a profile name")
    path = config_path(env)
    _check_named_config_file(path, env)
    config = {}
    if "://" not in spec:
        _refuse_address_without_scheme(spec, path)
        config = _load_profiles(path, spec)
    fields = parse_store_spec(spec, command_config, config, str(path))
    _refuse_profile_without_store(spec, path, fields)
    return StoreOptions(**_given(fields, {f: f"{spec} ({f})" for f in fields}), origin=spec)


#: host:port (then anything), as a ZooKeeper connect string or bootstrap list starts
_ADDRESS_WITHOUT_SCHEME = re.compile(r"[^\s/:]+:[0-9]+(?:[,/].*)?|\[[0-9a-fA-F:.]+\]:[0-9]+(?:[,/].*)?")


def _refuse_address_without_scheme(spec: str, path: Path) -> None:
    """``migrate --from 127.0.0.1:2181/kafka`` means a ZooKeeper, not a profile of that name.

    :raises UsageError: naming the spellings that work.
    """
    if _ADDRESS_WITHOUT_SCHEME.fullmatch(spec) and spec not in profile_names(load_config(path)):
        raise UsageError(
            f"{spec!r} is not a profile; an address needs its scheme: zk://{spec} (ZooKeeper), "
            f"kafka://{spec} (brokers) or kafka-controller://{spec}"
        )


def parse_store_spec(spec: str, command_config: str | None, config: Mapping, origin: str) -> dict[str, str | None]:
    """StoreOptions fields for a ``migrate`` store: ``zk://host:port[,host:port][/chroot]``,
    ``kafka://host:port[,...]`` (``kafka-controller://`` for controllers), ``sqlite:///path``,
    or the name of a profile. ``command_config`` applies to a kafka store without its own.

    :raises UsageError: an empty address or an unknown profile.
    """
    scheme, sep, rest = spec.partition("://")
    if not sep:
        return select_profile(config, spec, origin)
    field = _SCHEMES.get(scheme.lower())
    if field is None:
        raise UsageError(
            f"Unknown store {spec!r}: use zk://, kafka://, kafka-controller://, sqlite:/// or a profile name"
        )
    if not rest.strip("/"):
        raise UsageError(f"Store {spec!r} names no address")
    options: dict[str, str | None] = {field: os.path.expanduser(rest) if field == "store_path" else rest}
    if field.startswith("bootstrap"):
        options["command_config"] = command_config
    return options
