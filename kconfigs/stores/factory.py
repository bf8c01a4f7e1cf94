"""open_store(): pick and open a store from connection options; store modules load lazily."""

from __future__ import annotations

import os
from dataclasses import dataclass

from kconfigs.errors import UsageError


@dataclass(frozen=True)
class StoreOptions:
    zookeeper: str | None = None
    bootstrap_server: str | None = None
    bootstrap_controller: str | None = None
    command_config: str | None = None
    store_path: str | None = None
    zk_auth: str | None = None
    zk_tls_config_file: str | None = None


def open_store(options: StoreOptions):
    """ZooKeeper if named, else a Kafka cluster's admin API, else the embedded SQLite store.

    :raises UsageError, StoreUnavailable, CorruptData:
    """
    named = [o for o in (options.zookeeper, options.bootstrap_server, options.bootstrap_controller) if o]
    if len(named) > 1:
        raise UsageError("Name only one of --zookeeper, --bootstrap-server or --bootstrap-controller")
    if options.zookeeper:
        return _open_zookeeper(options)
    if options.bootstrap_server or options.bootstrap_controller:
        from kconfigs.stores.admin_api import open_admin_store

        return open_admin_store(
            options.bootstrap_server or options.bootstrap_controller,
            options.command_config,
            controller=bool(options.bootstrap_controller),
        )
    from kconfigs.stores.sqlite import SqliteStore

    return SqliteStore(options.store_path)


def _open_zookeeper(options: StoreOptions):
    from kconfigs.stores.zk_tls import ZkTlsOptions, tls_options
    from kconfigs.stores.zookeeper import ZkSettings, ZooKeeperStore

    tls = ZkTlsOptions(use_ssl=False)
    if options.zk_tls_config_file:
        tls = tls_options(_read_properties(options.zk_tls_config_file))
    auth = options.zk_auth or os.environ.get("KCONFIGS_ZK_AUTH") or None
    if auth is not None and ":" not in auth:
        raise UsageError("--zk-auth must be 'user:password' (ZooKeeper digest scheme)")
    return ZooKeeperStore(
        ZkSettings(
            hosts=options.zookeeper,
            auth_digest=auth,
            tls=tls,
            sasl_digest=_zk_sasl(),
            connect_timeout_s=_env_seconds("KCONFIGS_ZK_CONNECT_TIMEOUT_S", 10.0),
        )
    )


def _zk_sasl() -> tuple[str, str] | None:
    """SASL DIGEST-MD5 credentials from the JAAS file in KAFKA_OPTS, as kafka-configs finds them."""
    from kconfigs.stores.zk_sasl import digest_credentials, jaas_file_from_kafka_opts

    named = jaas_file_from_kafka_opts(os.environ.get("KAFKA_OPTS", ""))
    if named is None:
        return None
    path, section = named
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as err:
        raise UsageError(f"Cannot read the JAAS file {path} named in KAFKA_OPTS: {err.strerror}") from None
    return digest_credentials(text, section, path)


def _env_seconds(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 < value < 3600:
        raise UsageError(f"{name} must be a number of seconds between 0 and 3600, got {raw!r}")
    return value


def _read_properties(path: str) -> dict[str, str]:
    from kconfigs.config_grammar import load_properties

    try:
        with open(path, encoding="latin-1") as handle:  # java.util.Properties reads ISO-8859-1
            return load_properties(handle.read())
    except OSError as err:
        raise UsageError(f"Cannot read {path}: {err.strerror}") from None
