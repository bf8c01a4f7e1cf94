"""Compat mode: run a kafka-configs.sh command line unchanged (client quotas only).

``--zookeeper`` and the embedded store (no server named) behave as kafka-configs 2.8.2 in
ZooKeeper mode; ``--bootstrap-server``/``--bootstrap-controller`` as kafka-configs 3.x in bootstrap
mode. Output lines and error texts are kafka-configs' own; the ZooKeeper deprecation warning is
not printed.
"""

from __future__ import annotations

import sys

from kconfigs import args as A
from kconfigs.errors import UsageError

_TOOL_HELP = "This tool helps to manipulate and describe entity config for a topic, client, user, broker or ip"


def usage_text() -> str:
    rows = [(f"--{o.name}" + (" <String>" if o.takes_arg else ""), o.help) for o in A.OPTIONS]
    width = max(len(r[0]) for r in rows) + 2
    lines = [_TOOL_HELP, f"{'Option':<{width}}Description", f"{'------':<{width}}-----------"]
    lines += [f"{flag:<{width}}{text}" for flag, text in rows]
    return "\n".join(lines)


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
    if opts.has("help"):
        print(usage_text(), file=sys.stderr)
        return 1
    if opts.has("version"):
        from kconfigs import __version__
        print(f"{__version__} (kconfigs)")
        return 0
    # A store named on the command line decides the mode, so kafka-configs' checks (and their
    # order) come first; otherwise the environment or a profile may name a server, which must
    # decide the mode before the checks run.
    options = None if _names_store(opts) else resolve_compat_store(opts)
    if options is not None:
        opts = with_resolved_connection(opts, options)
    A.check_args(opts, _ip_validator(opts))
    options = options or resolve_compat_store(opts)
    types, names = A.entity_types(opts), A.entity_names(opts)
    from kconfigs.stores.factory import Access, open_store
    access = Access.READ if opts.has("describe") else Access.PREVIEW if opts.has("dry-run") else Access.WRITE
    store = open_store(options, access=access)
    try:
        if A.connect_mode(opts) == "bootstrap":
            from kconfigs.commands.compat_bootstrap import run_bootstrap
            lines = run_bootstrap(store, opts, types, names)
        else:
            from kconfigs.commands.compat_zk import run_zk
            lines = run_zk(store, opts, types, names, _ip_validator(opts))
    finally:
        store.close()
    for line in lines:
        print(line)
    return 0


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
    supplied = [(name, getattr(options, field)) for name, field in
                (("zookeeper", "zookeeper"), ("bootstrap-server", "bootstrap_server"),
                 ("bootstrap-controller", "bootstrap_controller")) if getattr(options, field)]
    return A.ParsedOptions(opts.occurrences + supplied, opts.rest)


def configs_to_add(opts: A.ParsedOptions) -> dict[str, str]:
    """``--add-config`` (bracket grammar) or ``--add-config-file`` (Java properties, verbatim)."""
    from kconfigs.config_grammar import load_properties, parse_add_config

    text = opts.value("add-config")
    if text is not None:
        return parse_add_config(text)
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
