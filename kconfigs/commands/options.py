"""Option groups shared by kconfigs' own subcommands (style: shared decorators)."""

from __future__ import annotations

from typing import Callable

import click

from kconfigs.errors import UsageError
from kconfigs.model import DEFAULT, EntityFilter, EntityType, FilterComponent, Match, QuotaEntity


def store_options(func: Callable) -> Callable:
    """--zookeeper / --bootstrap-server / --store ...; each also read from a KCONFIGS_* variable."""
    options = [
        click.option(
            "--zookeeper",
            envvar="KCONFIGS_ZOOKEEPER",
            metavar="HOST:PORT[/CHROOT]",
            help="ZooKeeper of a ZooKeeper-mode Kafka cluster.",
        ),
        click.option(
            "--bootstrap-server",
            envvar="KCONFIGS_BOOTSTRAP_SERVER",
            metavar="HOST:PORT",
            help="Kafka brokers (KRaft or ZooKeeper-backed) reached through the admin API.",
        ),
        click.option(
            "--bootstrap-controller",
            envvar="KCONFIGS_BOOTSTRAP_CONTROLLER",
            metavar="HOST:PORT",
            help="KRaft controllers reached through the admin API.",
        ),
        click.option(
            "--command-config",
            envvar="KCONFIGS_COMMAND_CONFIG",
            type=click.Path(dir_okay=False),
            help="Admin client properties (security.protocol, sasl.*, ssl.*).",
        ),
        click.option(
            "--store",
            "store_path",
            envvar="KCONFIGS_STORE",
            type=click.Path(dir_okay=False),
            help="Embedded store file (default: $KCONFIGS_HOME/quotas.db or the XDG data dir).",
        ),
        click.option(
            "--zk-auth", envvar="KCONFIGS_ZK_AUTH", metavar="USER:PASSWORD", help="ZooKeeper digest credentials."
        ),
        click.option(
            "--zk-tls-config-file",
            envvar="KCONFIGS_ZK_TLS_CONFIG_FILE",
            type=click.Path(dir_okay=False),
            help="Properties file with Kafka's zookeeper.ssl.* keys.",
        ),
        click.option(
            "--profile",
            envvar="KCONFIGS_PROFILE",
            metavar="NAME",
            shell_complete=_complete_profile,
            help="Named profile from $XDG_CONFIG_HOME/kconfigs/config.toml (flags and env win).",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def open_from_kwargs(kwargs: dict):
    """Pop the store options out of a command's kwargs and open the store."""
    from kconfigs.profiles import resolve_store_options
    from kconfigs.stores.factory import StoreOptions, open_store

    keys = (
        "zookeeper",
        "bootstrap_server",
        "bootstrap_controller",
        "command_config",
        "store_path",
        "zk_auth",
        "zk_tls_config_file",
    )
    given = {k: kwargs.pop(k) for k in keys}
    return open_store(StoreOptions(**resolve_store_options(given, kwargs.pop("profile", None))))


def lazy_completer(name: str) -> Callable:
    """A shell_complete callback from kconfigs.commands.completion, imported only on TAB."""

    def complete(ctx, param, incomplete: str):
        from kconfigs.commands import completion

        return getattr(completion, name)(ctx, param, incomplete)

    return complete


_complete_profile = lazy_completer("complete_profile")


def entity_options(func: Callable) -> Callable:
    """--user/--user-default, --client-id/--client-default, --ip/--ip-default."""
    options = [
        click.option("--user", help="User principal name.", shell_complete=lazy_completer("complete_user")),
        click.option("--user-default", is_flag=True, help="The default user."),
        click.option("--client-id", "client_id", help="Client id.", shell_complete=lazy_completer("complete_client")),
        click.option("--client-default", is_flag=True, help="The default client-id."),
        click.option(
            "--ip", help="Client IP address (literal IPv4/IPv6).", shell_complete=lazy_completer("complete_ip")
        ),
        click.option("--ip-default", is_flag=True, help="The default IP."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _component_value(name: str | None, is_default: bool, flag: str):
    if name is not None and is_default:
        raise UsageError(f"Give either --{flag} or --{flag}-default, not both")
    return DEFAULT if is_default else name


def entity_components(kwargs: dict) -> dict[EntityType, object]:
    """Pop the entity options: {type: name or DEFAULT} for those given. :raises UsageError:"""
    values = {
        EntityType.USER: _component_value(kwargs.pop("user"), kwargs.pop("user_default"), "user"),
        EntityType.CLIENT_ID: _component_value(kwargs.pop("client_id"), kwargs.pop("client_default"), "client"),
        EntityType.IP: _component_value(kwargs.pop("ip"), kwargs.pop("ip_default"), "ip"),
    }
    return {t: v for t, v in values.items() if v is not None}


def entity_from(components: dict[EntityType, object]) -> QuotaEntity:
    """:raises UsageError: when no entity is named or ips are mixed with users/clients."""
    from kconfigs.errors import ValidationError

    if not components:
        raise UsageError("Name an entity: --user/--user-default, --client-id/--client-default or --ip/--ip-default")
    try:
        return QuotaEntity(
            user=components.get(EntityType.USER),
            client_id=components.get(EntityType.CLIENT_ID),
            ip=components.get(EntityType.IP),
        )
    except ValidationError as err:
        raise UsageError(str(err)) from None


def filter_from(components: dict[EntityType, object]) -> EntityFilter:
    """Named components must match exactly; with none, everything matches."""
    if not components:
        return EntityFilter(components=(), strict=False)
    parts = tuple(
        FilterComponent(t, Match.DEFAULT) if v is DEFAULT else FilterComponent(t, Match.EXACT, v)
        for t, v in components.items()
    )
    return EntityFilter(parts, strict=True)


def check_ip(entity: QuotaEntity) -> None:
    from kconfigs.ip_names import is_valid_ip_entity

    if isinstance(entity.ip, str) and not is_valid_ip_entity(entity.ip):
        raise UsageError(f"{entity.ip} is not a valid IP address literal")


output_option = click.option(
    "-o",
    "--output",
    type=click.Choice(["text", "json", "table"]),
    default=None,
    help="text (kafka-configs lines), json, or a table (the default on a terminal).",
)
