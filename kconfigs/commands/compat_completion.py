"""TAB completion of kafka-configs command lines (``kconfigs --describe --entity-type <TAB>``):
option names from ``kconfigs.args.OPTIONS``, then values by option (entity types, quota keys,
profiles, files, entity names from a store that answers at once). Never raises."""

from __future__ import annotations

from click.shell_completion import CompletionItem

from kconfigs import args as A

#: options whose value is a file
_FILE_OPTIONS = frozenset({"add-config-file", "command-config", "store", "zk-tls-config-file"})
#: kafka-configs option -> the StoreOptions field (or "profile") it sets
_STORE_FIELDS = {
    "zookeeper": "zookeeper",
    "bootstrap-server": "bootstrap_server",
    "bootstrap-controller": "bootstrap_controller",
    "command-config": "command_config",
    "store": "store_path",
    "zk-auth": "zk_auth",
    "zk-tls-config-file": "zk_tls_config_file",
    "profile": "profile",
}
#: entity option -> the QuotaEntity field its names come from
_NAME_FIELDS = {"user": "user", "client": "client_id", "ip": "ip"}
_TYPE_FIELDS = {"users": "user", "clients": "client_id", "ips": "ip"}


def is_compat_line(args: list[str], incomplete: str) -> bool:
    """A kafka-configs command line: its first word is one of its options (``--help`` and
    ``--version`` are kconfigs' own when alone), or the first word being typed starts one."""
    first = args[0] if args else incomplete
    if not first.startswith("-") or first in ("-h", "--help", "--version"):
        return bool(args) and first in ("-h", "--help", "--version") and any(map(A.is_option_token, args[1:]))
    return A.is_option_token(first) or (not args and first.startswith("--"))


def completions(args: list[str], incomplete: str) -> list[CompletionItem]:
    try:
        option = _option_waiting_for_a_value(args)
        if option is not None:
            return _values(option, args, incomplete)
        if incomplete.startswith("-") and "=" in incomplete and A.is_option_token(incomplete):
            flag, _, value = incomplete.partition("=")  # --entity-type=us
            values = _values(flag.lstrip("-"), args, value)
            return [CompletionItem(f"{flag}={item.value}", type=item.type) for item in values]
        if incomplete.startswith("-") or not incomplete:
            return [CompletionItem(f"--{o.name}") for o in A.OPTIONS if f"--{o.name}".startswith(incomplete or "--")]
        return []
    except Exception:  # a completer must never break the shell
        return []


def _option_waiting_for_a_value(args: list[str]) -> str | None:
    """The option the word being typed is the value of, if any (joptsimple: the next word)."""
    if not args or not A.is_option_token(args[-1]) or "=" in args[-1]:
        return None
    name = args[-1].lstrip("-")
    spec = next((o for o in A.OPTIONS if o.name == name), None)
    return name if spec is not None and spec.takes_arg else None


def _values(option: str, args: list[str], incomplete: str) -> list[CompletionItem]:
    if option in _FILE_OPTIONS:
        return [CompletionItem(incomplete, type="file")]
    if option == "entity-type":
        return [CompletionItem(t) for t in ("users", "clients", "ips") if t.startswith(incomplete)]
    if option in ("add-config", "delete-config"):
        return _keys(args, incomplete, "=" if option == "add-config" else "")
    if option == "profile":
        from kconfigs.commands.completion import complete_profile

        return [CompletionItem(n) for n in complete_profile(None, None, incomplete)]
    field = _NAME_FIELDS.get(option) or (_TYPE_FIELDS.get(_last_entity_type(args)) if option == "entity-name" else None)
    return [CompletionItem(n) for n in _names(args, field, incomplete)] if field else []


def _keys(args: list[str], incomplete: str, suffix: str) -> list[CompletionItem]:
    """Quota keys for the entity given so far, after the last comma of a list being typed."""
    from kconfigs.keys import QUOTA_KEYS, SCRAM_KEYS

    done, comma, last = incomplete.rpartition(",")
    prefix = done + comma
    keys = list(QUOTA_KEYS) + (list(SCRAM_KEYS) if "--user" in args or "users" in args else [])
    return [CompletionItem(prefix + k + suffix) for k in keys if k.startswith(last)]


def _last_entity_type(args: list[str]) -> str | None:
    types = [value for option, value in zip(args, args[1:]) if option.lstrip("-") == "entity-type"]
    return types[-1] if types else None


def _names(args: list[str], field: str, incomplete: str) -> list[str]:
    """Names of that entity field in the store the command line names, if it answers at once."""
    from kconfigs.commands.completion import _open_if_reachable
    from kconfigs.model import MATCH_ALL

    params = {f: value for option, value in zip(args, args[1:]) if (f := _STORE_FIELDS.get(option.lstrip("-")))}
    store = _open_if_reachable(params)
    if store is None:
        return []
    try:
        names = {getattr(r.entity, field) for r in store.describe(MATCH_ALL)}
    finally:
        store.close()
    return sorted(n for n in names if isinstance(n, str) and n.startswith(incomplete))
