"""Option groups shared by kconfigs' own subcommands (style: shared decorators)."""

from __future__ import annotations

from typing import Callable

import click

from kconfigs.errors import UsageError
from kconfigs.model import DEFAULT, EntityFilter, EntityType, FilterComponent, Match, QuotaEntity


def lazy_completer(name: str) -> Callable:
    """A shell_complete callback from kconfigs.commands.completion, imported only on TAB."""

    def complete(ctx, param, incomplete: str):
        from kconfigs.commands import completion

        return getattr(completion, name)(ctx, param, incomplete)

    return complete


_complete_profile = lazy_completer("complete_profile")


def store_options(func: Callable) -> Callable:
    """--zookeeper / --bootstrap-server / --store ...; the KCONFIGS_* variables and profiles are
    read by :func:`kconfigs.profiles.resolve_store_options`, the same for every command."""
    options = [
        click.option(
            "--zookeeper",
            metavar="HOST:PORT[/CHROOT]",
            help="ZooKeeper of a ZooKeeper-mode Kafka cluster [env KCONFIGS_ZOOKEEPER].",
        ),
        click.option(
            "--bootstrap-server",
            metavar="HOST:PORT",
            help="Kafka brokers (KRaft or ZooKeeper-backed) reached through the admin API "
            "[env KCONFIGS_BOOTSTRAP_SERVER].",
        ),
        click.option(
            "--bootstrap-controller",
            metavar="HOST:PORT",
            help="KRaft controllers reached through the admin API [env KCONFIGS_BOOTSTRAP_CONTROLLER].",
        ),
        click.option(
            "--command-config",
            type=click.Path(dir_okay=False),
            help="Admin client properties (security.protocol, sasl.*, ssl.*) [env KCONFIGS_COMMAND_CONFIG].",
        ),
        click.option(
            "--store",
            "store_path",
            type=click.Path(dir_okay=False),
            help="Embedded store file (default: $KCONFIGS_HOME/quotas.db or the XDG data dir) [env KCONFIGS_STORE].",
        ),
        click.option("--zk-auth", metavar="USER:PASSWORD", help="ZooKeeper digest credentials [env KCONFIGS_ZK_AUTH]."),
        click.option(
            "--zk-tls-config-file",
            type=click.Path(dir_okay=False),
            help="Properties file with Kafka's zookeeper.ssl.* keys [env KCONFIGS_ZK_TLS_CONFIG_FILE].",
        ),
        click.option(
            "--profile",
            metavar="NAME",
            shell_complete=_complete_profile,
            help="Named profile from $XDG_CONFIG_HOME/kconfigs/config.toml (flags and env win) [env KCONFIGS_PROFILE].",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def pop_store_flags(kwargs: dict) -> tuple[dict[str, str | None], str | None]:
    """Take the store options out of a command's kwargs: (flags by StoreOptions field, --profile)."""
    from kconfigs.profiles import store_option_fields

    return {k: kwargs.pop(k) for k in store_option_fields()}, kwargs.pop("profile")


def open_from_kwargs(kwargs: dict, *, access):
    """Pop the store options out of a command's kwargs and open the store they resolve to
    (``access``: a :class:`kconfigs.stores.factory.Access`)."""
    from kconfigs.stores.factory import open_resolved_store

    flags, profile = pop_store_flags(kwargs)
    return open_resolved_store(flags, profile, access=access)


def entity_options(func: Callable) -> Callable:
    """--user/--user-default, --client-id/--client-default, --ip/--ip-default, and kafka-configs'
    spellings of them (--client, --*-defaults, --entity-type/--entity-name/--entity-default)."""
    options = [
        click.option("--user", help="User principal name.", shell_complete=lazy_completer("complete_user")),
        click.option("--user-default", "--user-defaults", "user_default", is_flag=True, help="The default user."),
        click.option(
            "--client-id", "--client", "client_id", help="Client id.", shell_complete=lazy_completer("complete_client")
        ),
        click.option(
            "--client-default", "--client-defaults", "client_default", is_flag=True, help="The default client-id."
        ),
        click.option(
            "--ip", help="Client IP address (literal IPv4/IPv6).", shell_complete=lazy_completer("complete_ip")
        ),
        click.option("--ip-default", "--ip-defaults", "ip_default", is_flag=True, help="The default IP."),
        click.option(
            "--entity-type",
            "entity_types",
            multiple=True,
            type=click.Choice(sorted(_TYPES)),
            help="kafka-configs form: users, clients or ips (repeatable; paired with the names in order).",
        ),
        click.option(
            "--entity-name",
            "entity_names",
            multiple=True,
            metavar="NAME",
            help="kafka-configs form: the name for an --entity-type (repeatable).",
        ),
        click.option(
            "--entity-default",
            "entity_defaults",
            count=True,
            help="kafka-configs form: the default entity for an --entity-type (repeatable).",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


_TYPES = {"users": EntityType.USER, "clients": EntityType.CLIENT_ID, "ips": EntityType.IP}


def _component_value(name: str | None, is_default: bool, flag: str):
    if name is not None and is_default:
        raise UsageError(f"Give either --{flag} or --{flag}-default, not both")
    if name == "":
        raise UsageError(f"--{flag} is empty: name the entity, or use --{flag}-default for the default")
    return DEFAULT if is_default else name


def entity_components(kwargs: dict) -> dict[EntityType, object]:
    """Pop the entity options: {type: name, DEFAULT, or None for "any of that type" (only from a
    bare --entity-type)} for the types given. :raises UsageError:"""
    generic = _generic_components(kwargs.pop("entity_types"), kwargs.pop("entity_names"), kwargs.pop("entity_defaults"))
    values = {
        EntityType.USER: _component_value(kwargs.pop("user"), kwargs.pop("user_default"), "user"),
        EntityType.CLIENT_ID: _component_value(kwargs.pop("client_id"), kwargs.pop("client_default"), "client"),
        EntityType.IP: _component_value(kwargs.pop("ip"), kwargs.pop("ip_default"), "ip"),
    }
    specific = {t: v for t, v in values.items() if v is not None}
    if generic is not None and specific:
        raise UsageError("--entity-{type,name,default} should not be used in conjunction with specific entity flags")
    return specific if generic is None else generic


def _generic_components(types: tuple[str, ...], names: tuple[str, ...], defaults: int) -> dict | None:
    """kafka-configs' pairing (ZooKeeper mode: a single name binds to the user). An empty
    --entity-name is refused, where kafka-configs reads it as the default: here an unset shell
    variable must not reach (or, with delete, wipe) the default entity's quotas. :raises UsageError:"""
    from kconfigs.targets import zk_pairs

    if "" in names:
        raise UsageError("--entity-name is empty: name the entity, or use --entity-default for the default")
    if not types:
        if names or defaults:
            raise UsageError("--entity-name and --entity-default need an --entity-type")
        return None
    duplicates = sorted({t for t in types if types.count(t) > 1})
    if duplicates:
        raise UsageError(f"Duplicate entity type(s) specified: {','.join(duplicates)}")
    if len(types) > 1 and set(types) != {"users", "clients"}:
        raise UsageError("Only 'users' and 'clients' entity types may be specified together")
    ordered = _names_in_command_line_order(names, defaults)
    if len(ordered) > len(types):
        raise UsageError("More entity names specified than entity types")
    return {_TYPES[t]: n for t, n in zk_pairs(list(types), ordered, alter=False)}


def _names_in_command_line_order(names: tuple[str, ...], defaults: int) -> list[str]:
    """--entity-name values and "" per --entity-default, in the order typed. Click keeps the
    order within one option only, so a mix is read back from the raw command line."""
    if not defaults or not names:
        return list(names) + [""] * defaults
    ctx = click.get_current_context(silent=True)
    argv = (ctx.find_root().obj or {}).get("argv") if ctx is not None else None
    ordered: list[str] = []
    tokens = iter(argv or ())
    for token in tokens:
        if token == "--entity-default":
            ordered.append("")
        elif token == "--entity-name":
            ordered.append(next(tokens, ""))
        elif token.startswith("--entity-name="):
            ordered.append(token.partition("=")[2])
    if sorted(ordered) != sorted(list(names) + [""] * defaults):
        raise UsageError("Cannot tell the order of --entity-name and --entity-default: give them as separate words")
    return ordered


def entity_from(components: dict[EntityType, object]) -> QuotaEntity:
    """:raises UsageError: when no entity is named, a type has no name, or ips are mixed with
    users/clients."""
    from kconfigs.errors import ValidationError

    if not components:
        raise UsageError("Name an entity: --user/--user-default, --client-id/--client-default or --ip/--ip-default")
    if any(v is None for v in components.values()):
        raise UsageError("--entity-name or --entity-default must be specified with each --entity-type for --alter")
    try:
        return QuotaEntity(
            user=components.get(EntityType.USER),
            client_id=components.get(EntityType.CLIENT_ID),
            ip=components.get(EntityType.IP),
        )
    except ValidationError as err:
        raise UsageError(str(err)) from None


def filter_from(components: dict[EntityType, object]) -> EntityFilter:
    """Named components must match exactly; a bare --entity-type matches any of that type; with
    none, everything matches."""
    if not components:
        return EntityFilter(components=(), strict=False)
    parts = tuple(
        FilterComponent(t, Match.ANY)
        if v is None
        else FilterComponent(t, Match.DEFAULT)
        if v is DEFAULT
        else FilterComponent(t, Match.EXACT, v)
        for t, v in components.items()
    )
    return EntityFilter(parts, strict=True)


def check_known_keys(entity: QuotaEntity, keys) -> None:
    """Subcommands' own message for a key the entity cannot hold: the closest valid key and the
    whole list (kafka-configs' ``Unknown Dynamic Configuration`` Scala text is for compat mode).

    :raises ValidationError:
    """
    import difflib

    from kconfigs.errors import ValidationError
    from kconfigs.keys import SCRAM_KEYS, keys_for, scram_allowed
    from kconfigs.render import zk_entity_text

    valid = list(keys_for(entity)) + (list(SCRAM_KEYS) if scram_allowed(entity) else [])
    for key in keys:
        if key not in valid:
            close = difflib.get_close_matches(key, valid, n=1, cutoff=0.6)
            hint = f" Did you mean {close[0]}?" if close else ""
            raise ValidationError(
                f"Unknown quota key {key!r} for {zk_entity_text(entity)}.{hint} Valid keys: {', '.join(valid)}"
            )


def check_ip(entity: QuotaEntity) -> None:
    check_ip_name(entity.ip)


def refuse_empty(_ctx, param, value):
    """Click callback: an empty value (an unset shell variable) is one line, not a file named ''
    or an entity that matches nothing. An option's environment variable set to "" is refused
    too, where click would take it as unset. :raises UsageError:"""
    import os

    from kconfigs.errors import empty_value, nonblank

    envvar = getattr(param, "envvar", None)
    if value is None and isinstance(envvar, str):
        nonblank(os.environ.get(envvar), envvar)
    if value == "":
        name = max(param.opts, key=len) if isinstance(param, click.Option) else param.human_readable_name
        raise empty_value(name, required=param.required)
    return value


def refuse_output_over_inputs(outputs: dict[str, str | None], inputs) -> None:
    """An output that would replace an input file is refused before anything runs
    (``outputs``: {flag: path}; ``inputs``: the files as read, every file a directory or glob
    named included). The same file under another name (a symlink, a hard link, ``./``) is the
    same input; so is a symlink at the output path pointing to one. :raises UsageError:"""
    import os

    read = [path for path in inputs if path and os.path.exists(path)]
    for flag, path in outputs.items():
        if path and os.path.exists(path) and any(os.path.samefile(path, r) for r in read):
            raise UsageError(f"{flag} {path} is one of the inputs: writing it would replace what was read")


def check_ip_name(ip: object) -> None:
    """An ip entity named by the user must be an IP literal: a mistyped one (``10.0.0.256``) is
    refused, in a read too, rather than read as an ip with no quotas. :raises UsageError:"""
    if not isinstance(ip, str):
        return
    from kconfigs.ip_names import is_valid_ip_entity  # ipaddress: only when an ip is named

    if not is_valid_ip_entity(ip):
        raise UsageError(f"{ip} is not a valid IP address literal")


output_option = click.option(
    "-o",
    "--output",
    type=click.Choice(["text", "json", "table"]),
    default=None,
    help="text (kafka-configs lines), json, or a table (the default on a terminal).",
)
