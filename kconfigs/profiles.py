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
profile. If a flag or variable names a store (``--zookeeper``, ``--bootstrap-server``,
``--bootstrap-controller``, ``--store``), the profile's store is not used at all, so a profile
never mixes with an explicit store. Reading the file is I/O; :func:`merge_profile` is pure.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Mapping

from kconfigs.errors import UsageError

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


def config_path(environ: Mapping[str, str] | None = None) -> Path:
    """``$KCONFIGS_CONFIG`` if set, else ``$XDG_CONFIG_HOME/kconfigs/config.toml``."""
    env = os.environ if environ is None else environ
    if env.get("KCONFIGS_CONFIG"):
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
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise UsageError(f"{path}: not valid TOML: {err}") from None


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


def merge_profile(given: Mapping[str, str | None], profile: Mapping[str, str]) -> dict[str, str | None]:
    """Store options: ``given`` (flags, else environment) win; the profile fills the rest,
    except its store when ``given`` already names one."""
    explicit_store = any(given.get(k) for k in STORE_SELECTORS)
    merged = dict(given)
    for field, value in profile.items():
        if merged.get(field) is None and not (explicit_store and field in STORE_SELECTORS):
            merged[field] = value
    return merged


def resolve_store_options(given: Mapping[str, str | None], profile_name: str | None) -> dict[str, str | None]:
    """Flags/env values merged with the chosen profile from the config file."""
    if profile_name is None and any(given.get(k) for k in STORE_SELECTORS):
        return dict(given)  # an explicit store and no explicit profile: default_profile is not for it
    path = config_path()
    config = load_config(path)
    return merge_profile(given, select_profile(config, profile_name, str(path)))


_SCHEMES = {
    "zk": "zookeeper",
    "zookeeper": "zookeeper",
    "kafka": "bootstrap_server",
    "kafka-controller": "bootstrap_controller",
    "sqlite": "store_path",
}


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
