"""Compat mode: run a kafka-configs.sh command line unchanged (client quotas only).

``--zookeeper`` and the embedded store (no server named) behave as kafka-configs 2.8.2 in
ZooKeeper mode; ``--bootstrap-server``/``--bootstrap-controller`` as the cluster's own kafka-configs
line, 3.x or 4.x (``kconfigs.kafka_texts``). Output lines and error texts are kafka-configs' own;
the ZooKeeper deprecation warning is not printed.
"""

from __future__ import annotations

import sys

from kconfigs import args as A
from kconfigs.errors import KconfigsError, UsageError
from kconfigs.kafka_texts import TEXTS, Dialect, KafkaTexts, dialect_from_api_versions, dialect_from_option


def usage_text(banner: str | None = None) -> str:
    """The options table (after an error), with ``banner`` first for ``--help``."""
    rows = [(f"--{o.name}" + (" <String>" if o.takes_arg else ""), o.help) for o in A.OPTIONS]
    width = max(len(r[0]) for r in rows) + 2
    lines = [banner] if banner else []
    lines += [f"{'Option':<{width}}Description", f"{'------':<{width}}-----------"]
    lines += [f"{flag:<{width}}{text}" for flag, text in rows]
    return "\n".join(lines)


# Asking the cluster for its line is worth a short wait only: on timeout the 3.x texts are used.
DIALECT_PROBE_TIMEOUT_MS = 5000


class CompatSession:
    """The store, opened on first use, and the Kafka line whose texts this run prints."""

    def __init__(self, opts: A.ParsedOptions) -> None:
        self._opts = opts
        self._store = None
        self._texts: KafkaTexts | None = None
        explicit = opts.value("kafka-version")
        if explicit is not None and A.connect_mode(opts) != "bootstrap":
            raise UsageError("--kafka-version applies to --bootstrap-server/--bootstrap-controller; "
                             "ZooKeeper mode always speaks kafka-configs 2.8")
        self._explicit = dialect_from_option(explicit) if explicit is not None else None

    def store(self):
        if self._store is None:
            if A.connect_mode(self._opts) == "bootstrap":
                _check_bootstrap_addresses(self._opts)
            self._store = _open(self._opts)
        return self._store

    def texts(self) -> KafkaTexts:
        if self._texts is None:
            self._texts = TEXTS[self._dialect()]
        return self._texts

    def _dialect(self) -> Dialect:
        if self._explicit is not None:
            return self._explicit
        if A.connect_mode(self._opts) != "bootstrap":
            return Dialect.KAFKA_2_8
        try:
            return dialect_from_api_versions(self.store().api_versions(DIALECT_PROBE_TIMEOUT_MS))
        except KconfigsError:
            # Cluster not reachable (or not usable): 3.x texts; the command itself, if the
            # arguments are fine, then reports why the cluster cannot be used.
            return Dialect.KAFKA_3

    def close(self) -> None:
        if self._store is not None:
            self._store.close()


def _check_bootstrap_addresses(opts: A.ParsedOptions) -> None:
    """As kafka-configs creates its admin client: an empty or unusable address list fails here
    (and never falls back to another store). :raises UsageError: Kafka's ConfigException text."""
    from kconfigs.kafka_admin.bootstrap_addresses import bootstrap_addresses
    from kconfigs.kafka_admin.client import resolves

    servers = opts.value("bootstrap-server")
    bootstrap_addresses(servers if servers is not None else opts.value("bootstrap-controller") or "", resolves)


def _ip_validator(opts: A.ParsedOptions):
    from kconfigs.ip_names import is_valid_ip_entity

    resolve = _resolves if opts.has("resolve-hostnames") else None
    return lambda name: is_valid_ip_entity(name, resolve)


def _resolves(host: str) -> bool:
    import socket
    try:
        socket.getaddrinfo(host, None)
        return True
    except (socket.gaierror, UnicodeError, ValueError):
        return False


def run_compat(argv: list[str]) -> int:
    """Run one kafka-configs command line; returns the exit code. :raises KconfigsError:"""
    opts = A.parse_argv(argv)
    session = CompatSession(opts)
    try:
        return _run(opts, session)
    finally:
        session.close()


def _run(opts: A.ParsedOptions, session: CompatSession) -> int:
    if opts.has("help"):
        print(usage_text(session.texts().banner), file=sys.stderr)
        return 1
    if opts.has("version"):
        from kconfigs import __version__
        print(f"{__version__} (kconfigs)")
        return 0
    A.check_args(opts, _ip_validator(opts), session.texts)
    types, names = A.entity_types(opts), A.entity_names(opts)
    if A.connect_mode(opts) == "bootstrap":
        from kconfigs.commands.compat_bootstrap import run_bootstrap
        lines = run_bootstrap(session.store(), opts, types, names, session.texts)
    else:
        from kconfigs.commands.compat_zk import run_zk
        lines = run_zk(session.store(), opts, types, names, _ip_validator(opts))
    for line in lines:
        print(line)
    return 0


def _open(opts: A.ParsedOptions):
    from kconfigs.stores.factory import StoreOptions, open_store

    return open_store(StoreOptions(
        zookeeper=opts.value("zookeeper"), bootstrap_server=opts.value("bootstrap-server"),
        bootstrap_controller=opts.value("bootstrap-controller"), command_config=opts.value("command-config"),
        store_path=opts.value("store"), zk_auth=opts.value("zk-auth"),
        zk_tls_config_file=opts.value("zk-tls-config-file")))


def configs_to_add(opts: A.ParsedOptions, texts: A.TextsSource | None = None) -> dict[str, str]:
    """``--add-config`` (bracket grammar) or ``--add-config-file`` (Java properties, verbatim);
    ``texts`` words a malformed ``--add-config`` as the Kafka line does (2.8 by default)."""
    from kconfigs.config_grammar import AddConfigFormatError, load_properties, parse_add_config

    text = opts.value("add-config")
    if text is not None:
        try:
            return parse_add_config(text)
        except AddConfigFormatError:
            if texts is None:
                raise
            raise UsageError(texts().bad_add_config) from None
    path = opts.value("add-config-file")
    if path is None:
        return {}
    try:
        with open(path, encoding="latin-1") as handle:
            return load_properties(handle.read())
    except OSError as err:
        raise UsageError(f"Cannot read --add-config-file {path}: {err.strerror}") from None


def configs_to_delete(opts: A.ParsedOptions) -> list[str]:
    from kconfigs.config_grammar import parse_delete_config

    return parse_delete_config(opts.values("delete-config"))
