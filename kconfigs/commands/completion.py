"""Shell completion: ``kconfigs completion bash|zsh|fish`` and the dynamic completers.

The scripts are Click's own (``click.shell_completion``): they call ``kconfigs`` back with
``_KCONFIGS_COMPLETE=<shell>_complete`` on every TAB, so what is offered is computed here:
entity types (``--entity-type``), quota keys valid for the entity typed so far, profile names,
and entity names read from the store when it answers within a fraction of a second. Completers
never raise and never create anything (an embedded store file that does not exist is not opened).
The committed files in completions/ are regenerated with ``kconfigs completion --write completions``.
"""

from __future__ import annotations

import socket
from pathlib import Path

import click

PROG_NAME = "kconfigs"
COMPLETE_VAR = "_KCONFIGS_COMPLETE"
FILE_NAMES = {"bash": "kconfigs.bash", "zsh": "_kconfigs", "fish": "kconfigs.fish"}
REACH_TIMEOUT_S = 0.3  # a TAB must not hang on an unreachable store


def completion_script(shell: str) -> str:
    """Click's completion script for ``shell``, for the whole kconfigs command tree."""
    from click.shell_completion import get_completion_class

    from kconfigs.cli import cli
    from kconfigs.commands.completion_shells import register

    register()
    return get_completion_class(shell)(cli, {}, PROG_NAME, COMPLETE_VAR).source()


@click.command()
@click.argument("shell", type=click.Choice(sorted(FILE_NAMES)), required=False)
@click.option(
    "--write",
    "write_dir",
    type=click.Path(file_okay=False),
    help="Write all three scripts into this directory (e.g. completions/) instead of printing one.",
)
def completion(shell: str | None, write_dir: str | None) -> None:
    """Print the completion script for SHELL (bash, zsh or fish).

    \b
    bash: kconfigs completion bash > ~/.local/share/bash-completion/completions/kconfigs
    zsh:  kconfigs completion zsh > "${fpath[1]}/_kconfigs"
    fish: kconfigs completion fish > ~/.config/fish/completions/kconfigs.fish
    """
    from kconfigs.errors import UsageError

    if write_dir:
        Path(write_dir).mkdir(parents=True, exist_ok=True)
        for name, file_name in FILE_NAMES.items():
            (Path(write_dir) / file_name).write_text(completion_script(name))
        return
    if not shell:
        raise UsageError("Name a shell (bash, zsh or fish), or give --write DIR")
    click.echo(completion_script(shell), nl=False)


# ---- dynamic completers (``shell_complete=`` callbacks) -----------------------------------------


def complete_profile(ctx, param, incomplete: str) -> list[str]:
    from kconfigs.profiles import config_path, load_config, profile_names

    try:
        return [n for n in profile_names(load_config(config_path())) if n.startswith(incomplete)]
    except Exception:  # a completer must never fail the shell
        return []


def _entity_so_far(params: dict):
    """A QuotaEntity from the entity options typed so far, or None."""
    from kconfigs.model import DEFAULT, QuotaEntity

    def value(name_key: str, default_key: str):
        return DEFAULT if params.get(default_key) else params.get(name_key)

    try:
        return QuotaEntity(
            user=value("user", "user_default"),
            client_id=value("client_id", "client_default"),
            ip=value("ip", "ip_default"),
        )
    except Exception:  # nothing typed yet, or ip mixed with user
        return None


def complete_keys(ctx, param, incomplete: str) -> list[str]:
    """Quota keys valid for the entity on the command line (all keys if none yet);
    ``KEY=`` for options that take KEY=VALUE."""
    from kconfigs.keys import QUOTA_KEYS, keys_for

    entity = _entity_so_far(ctx.params)
    keys = keys_for(entity) if entity is not None else tuple(QUOTA_KEYS)
    suffix = "=" if param.name in ("settings", "add_config") else ""
    return [k + suffix for k in keys if k.startswith(incomplete)]


def _names(ctx, component: str, incomplete: str) -> list[str]:
    try:
        store = _open_if_reachable(dict(ctx.params))
        if store is None:
            return []
        try:
            from kconfigs.model import MATCH_ALL

            names = {getattr(r.entity, component) for r in store.describe(MATCH_ALL)}
        finally:
            store.close()
        return sorted(n for n in names if isinstance(n, str) and n.startswith(incomplete))  # not None/DEFAULT
    except Exception:  # unreachable, denied, corrupt: offer nothing rather than break the shell
        return []


def complete_user(ctx, param, incomplete):
    return _names(ctx, "user", incomplete)


def complete_client(ctx, param, incomplete):
    return _names(ctx, "client_id", incomplete)


def complete_ip(ctx, param, incomplete):
    return _names(ctx, "ip", incomplete)


def _open_if_reachable(params: dict):
    """The store named by the options/env/profile, if it answers quickly; else None."""
    from kconfigs.profiles import resolve_store_options, store_option_fields
    from kconfigs.stores.factory import Access, open_store

    flags = {k: params.get(k) for k in store_option_fields()}
    options = resolve_store_options(flags, params.get("profile"))
    address = options.zookeeper or options.bootstrap_server or options.bootstrap_controller
    if address and not _reachable(address):
        return None
    return open_store(options, access=Access.READ)  # never creates an embedded store from a TAB


def _reachable(address: str) -> bool:
    """TCP connect to the first host:port of ``a:1,b:2/chroot`` within REACH_TIMEOUT_S."""
    first = address.split(",")[0].split("/")[0]
    host, _, port = first.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]") or "127.0.0.1", int(port)), timeout=REACH_TIMEOUT_S):
            return True
    except (OSError, ValueError):
        return False
