"""open_store(): pick and open a store from connection options; store modules load lazily."""

from __future__ import annotations

import os
import sys
from enum import Enum
from pathlib import Path
from typing import Callable

from kconfigs.errors import UsageError
from kconfigs.profiles import StoreOptions, resolve_store_options

__all__ = ["Access", "StoreOptions", "open_store", "open_resolved_store", "resolve_store_options"]


class Access(Enum):
    """What a command will do with its store, which decides what opening it may do."""

    READ = "read"  # describe, export, resolve...: creates nothing; a named store must exist
    PREVIEW = "preview"  # a dry run: creates nothing; the default store not there yet reads as empty
    UPDATE = "update"  # writes to a store that exists, creates none (delete)
    WRITE = "write"  # may create the default embedded store file or the ZooKeeper path
    SERVE = "serve"  # the gateway: watches a store that exists, writes only what its admin API is sent


def _print_warning(message: str) -> None:
    print(message, file=sys.stderr)


def open_resolved_store(flags: dict[str, str | None], profile: str | None, *, access: Access):
    """Resolve the store (:func:`kconfigs.profiles.resolve_store_options`) and open it.

    :raises UsageError, StoreUnavailable, CorruptData:
    """
    return open_store(resolve_store_options(flags, profile), access=access)


def open_store(options: StoreOptions, *, access: Access = Access.WRITE, warn: Callable[[str], None] = _print_warning):
    """ZooKeeper if named, else a Kafka cluster's admin API, else the embedded SQLite store.

    ``access`` READ: nothing may be created; a named embedded store that does not exist is an
    error, and the default embedded store not written yet reads as empty. WRITE creates the
    default embedded store, never a named one (``kconfigs init`` does). PREVIEW (dry runs):
    nothing is created, the default store not there yet reads as empty, and a named one that
    does not exist is the error WRITE gives. UPDATE and SERVE: an embedded
    store that exists is opened for writing, one that does not is opened as READ opens it. A
    ZooKeeper chroot that does not exist is an error whatever the access; one that does not look
    like Kafka's (no ``/brokers``) gets a ``warn``ing on every open, which says what a write or
    SERVE does next.

    :raises UsageError, StoreUnavailable, CorruptData:
    """
    named = [o for o in (options.zookeeper, options.bootstrap_server, options.bootstrap_controller) if o]
    if len(named) > 1:
        raise UsageError("Name only one of --zookeeper, --bootstrap-server or --bootstrap-controller")
    if options.zookeeper:
        return _open_zookeeper(options, access, warn)
    if options.bootstrap_server or options.bootstrap_controller:
        from kconfigs.stores.admin_api import open_admin_store

        return open_admin_store(
            options.bootstrap_server or options.bootstrap_controller,
            options.command_config,
            controller=bool(options.bootstrap_controller),
        )
    from kconfigs.stores.sqlite import SqliteStore, default_store_path

    _refuse_writing_a_missing_named_store(options, access)
    writes = access is Access.WRITE or (
        access in (Access.UPDATE, Access.SERVE) and Path(options.store_path or default_store_path()).exists()
    )
    return SqliteStore(
        options.store_path,
        read_only=not writes,
        missing_ok=options.store_path is None or access is Access.PREVIEW,
    )


def _refuse_writing_a_missing_named_store(options: StoreOptions, access: Access) -> None:
    """A store file named by ``--store``, ``KCONFIGS_STORE``, a profile or ``sqlite:///`` is
    created only by ``kconfigs init``: a mistyped path must not become a new, empty store that
    takes the writes meant for the real one. Only the default store appears on its first write.

    :raises UsageError:
    """
    import shlex

    if options.store_path is None or access not in (Access.WRITE, Access.PREVIEW):
        return
    if not Path(options.store_path).exists():
        raise UsageError(
            f"Embedded store {options.store_path} does not exist (is the path right? "
            f"'kconfigs init --store {shlex.quote(options.store_path)}' creates it)"
        )


#: what a command does next at a ZooKeeper path no Kafka uses, said after the warning
_GOING_ON = {
    Access.WRITE: " (writing there anyway)",
    Access.SERVE: " (serving its quotas anyway)",
}


def _open_zookeeper(options: StoreOptions, access: Access, warn: Callable[[str], None]):
    from kconfigs.stores.zk_tls import ZkTlsOptions, tls_options
    from kconfigs.stores.zookeeper import ZkSettings, ZooKeeperStore, check_chroot, chroot_of

    chroot = chroot_of(options.zookeeper)  # a malformed chroot fails before any connection
    tls = ZkTlsOptions(use_ssl=False)
    if options.zk_tls_config_file:
        tls = tls_options(_read_properties(options.zk_tls_config_file))
    auth = options.zk_auth
    if auth is not None and ":" not in auth:
        raise UsageError("--zk-auth must be 'user:password' (ZooKeeper digest scheme)")
    store = ZooKeeperStore(
        ZkSettings(
            hosts=options.zookeeper,
            auth_digest=auth,
            tls=tls,
            sasl_digest=_zk_sasl(),
            connect_timeout_s=_env_seconds("KCONFIGS_ZK_CONNECT_TIMEOUT_S", 10.0),
        )
    )
    try:
        problem = check_chroot(store, chroot)
    except BaseException:
        store.close()
        raise
    if problem is not None:
        warn(problem + _GOING_ON.get(access, ""))
    return store


def _zk_sasl() -> tuple[str, str] | None:
    """SASL DIGEST-MD5 credentials from the JAAS file in KAFKA_OPTS, as kafka-configs finds them."""
    kafka_opts = os.environ.get("KAFKA_OPTS", "")
    if not kafka_opts:  # the common case loads no SASL code
        return None
    from kconfigs.stores.zk_sasl import digest_credentials, jaas_file_from_kafka_opts

    named = jaas_file_from_kafka_opts(kafka_opts)
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
    from kconfigs.java_properties import read_properties

    try:
        return read_properties(path)
    except OSError as err:
        raise UsageError(f"Cannot read {path}: {err.strerror}") from None
