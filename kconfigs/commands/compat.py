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
    A.check_args(opts, _ip_validator(opts))
    types, names = A.entity_types(opts), A.entity_names(opts)
    store = _open(opts)
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


def _open(opts: A.ParsedOptions):
    from kconfigs.stores.factory import StoreOptions, open_store

    return open_store(
        StoreOptions(
            zookeeper=opts.value("zookeeper"),
            bootstrap_server=opts.value("bootstrap-server"),
            bootstrap_controller=opts.value("bootstrap-controller"),
            command_config=opts.value("command-config"),
            store_path=opts.value("store"),
            zk_auth=opts.value("zk-auth"),
            zk_tls_config_file=opts.value("zk-tls-config-file"),
        )
    )


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
