"""Compat mode: run a kafka-configs.sh command line unchanged (client quotas only).

``--zookeeper`` and the embedded store (no server named) behave as kafka-configs 2.8.2 in
ZooKeeper mode; ``--bootstrap-server``/``--bootstrap-controller`` as the cluster's own kafka-configs
line, 3.x, 4.0-4.3 or 4.4+ (``kconfigs.kafka_texts``). Output lines and error texts are kafka-configs' own;
the ZooKeeper deprecation warning is not printed.
"""

from __future__ import annotations

import dataclasses
import sys

from kconfigs import args as A
from kconfigs import compat_warnings as W
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

    def __init__(self, opts: A.ParsedOptions, options=None) -> None:
        self._opts = opts
        self._options = options
        self._store = None
        self._texts: KafkaTexts | None = None
        explicit = opts.value("kafka-version")
        if explicit is not None and A.connect_mode(opts) != "bootstrap":
            raise UsageError(
                "--kafka-version applies to --bootstrap-server/--bootstrap-controller; "
                "ZooKeeper mode always speaks kafka-configs 2.8"
            )
        self._explicit = dialect_from_option(explicit) if explicit is not None else None

    def store(self):
        if self._store is None:
            if A.connect_mode(self._opts) == "bootstrap":
                _check_bootstrap_addresses(self._opts)
            from kconfigs.stores.factory import open_store

            options = self._options or resolve_compat_store(self._opts)
            self._store = open_store(options, access=_access(self._opts))
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
            return dialect_from_api_versions(self._api_versions())
        except KconfigsError:
            # Cluster not reachable (or not usable): 3.x texts; the command itself, if the
            # arguments are fine, then reports why the cluster cannot be used.
            return Dialect.KAFKA_3

    def _api_versions(self):
        try:
            store = self.store()
        except UsageError:
            # A command line that cannot name one store (two servers, an option given twice)
            # is refused, in the words of the cluster's line: ask the first server named.
            servers = self._opts.values("bootstrap-server")
            named = servers or self._opts.values("bootstrap-controller")
            if not named:
                raise
            from kconfigs.stores.admin_api import open_admin_store

            config = self._opts.values("command-config")
            probe = open_admin_store(named[0], config[0] if config else None, controller=not servers)
            try:
                return probe.api_versions(DIALECT_PROBE_TIMEOUT_MS)
            finally:
                probe.close()
        return store.api_versions(DIALECT_PROBE_TIMEOUT_MS)

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
    resolve = _resolves if opts.has("resolve-hostnames") else None

    def is_valid(name: str) -> bool:
        from kconfigs.ip_names import is_valid_ip_entity  # ipaddress: only when an ip is named

        return is_valid_ip_entity(name, resolve)

    return is_valid


#: after Kafka's refusal of an ip name that Kafka itself would have resolved and taken
HOST_NAME_HINT = " (a host name: kconfigs takes IP literals unless --resolve-hostnames is given)"


def _host_name_hint(opts: A.ParsedOptions):
    """The hint for a refused ip name: only for one that resolves, and only without --resolve-hostnames."""
    wanted = not opts.has("resolve-hostnames")
    return lambda name: HOST_NAME_HINT if wanted and _resolves(name) else ""


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
    # A store named on the command line decides the mode, so kafka-configs' checks (and their
    # order) come first; otherwise the environment or a profile may name a server, which must
    # decide the mode before the checks run. --help and --version need no store.
    options = None
    if not (_names_store(opts) or opts.has("help") or opts.has("version")):
        options = resolve_compat_store(opts)
        opts = with_resolved_connection(opts, options)
    session = CompatSession(opts, options)
    try:
        return _run(opts, session)
    finally:
        session.close()


def _run(opts: A.ParsedOptions, session: CompatSession) -> int:
    A.check_recognized(opts, session.texts)  # joptsimple refuses before --help is looked at
    if opts.has("help"):
        print(usage_text(session.texts().banner), file=sys.stderr)
        return 1
    if opts.has("version"):
        from kconfigs import __version__

        print(f"{__version__} (kconfigs)")
        return 0
    _refuse_subcommand_after_options(opts)
    A.check_args(opts, _ip_validator(opts), session.texts, _host_name_hint(opts))
    types, names = A.entity_types(opts), A.entity_names(opts)
    warnings = W.empty_name_warnings(opts) + W.ignored_word_warnings(opts)
    if A.connect_mode(opts) == "bootstrap":
        from kconfigs.commands.compat_bootstrap import run_bootstrap

        lines = run_bootstrap(session.store(), opts, types, names, session.texts)
    else:
        from kconfigs.commands.compat_zk import run_zk

        lines = run_zk(session.store(), opts, types, names, _ip_validator(opts), warnings)
    for warning in warnings:  # after the run: a command that fails says only why
        print(warning, file=sys.stderr)
    for line in lines:
        print(line)
    return 0


def _refuse_subcommand_after_options(opts: A.ParsedOptions) -> None:
    """:raises UsageError: ``kconfigs --zookeeper X describe``, which has no kafka-configs action."""
    if opts.rest and not (opts.has("describe") or opts.has("alter")):
        from kconfigs.cli import SUBCOMMANDS  # only on this rare path: it loads Click

        hint = W.subcommand_hint(opts, SUBCOMMANDS)
        if hint is not None:
            raise UsageError(hint)


def _access(opts: A.ParsedOptions):
    """Reads never create a store; a dry run previews one that may not exist yet."""
    from kconfigs.stores.factory import Access

    return Access.READ if opts.has("describe") else Access.PREVIEW if opts.has("dry-run") else Access.WRITE


def resolve_compat_store(opts: A.ParsedOptions):
    """The store of a kafka-configs command line, resolved exactly as for the subcommands
    (flags > KCONFIGS_* > profile > embedded default). :raises UsageError:"""
    from kconfigs.profiles import FLAGS, resolve_store_options

    flags = {field: opts.value(flag.lstrip("-")) for field, flag in FLAGS.items()}
    return resolve_store_options(flags, opts.value("profile"))


def _names_store(opts: A.ParsedOptions) -> bool:
    return any(opts.has(o) for o in ("zookeeper", "bootstrap-server", "bootstrap-controller", "store"))


def with_resolved_connection(opts: A.ParsedOptions, options) -> A.ParsedOptions:
    """``opts`` plus the connect option the environment or a profile supplied, so that
    kafka-configs' mode rules (ZooKeeper vs bootstrap texts and checks) follow the store used."""
    supplied = [
        (name, getattr(options, field))
        for name, field in (
            ("zookeeper", "zookeeper"),
            ("bootstrap-server", "bootstrap_server"),
            ("bootstrap-controller", "bootstrap_controller"),
        )
        if getattr(options, field)
    ]
    return dataclasses.replace(opts, occurrences=opts.occurrences + supplied)
