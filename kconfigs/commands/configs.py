"""kconfigs describe / alter / delete: the quota commands for humans and scripts."""

from __future__ import annotations

import sys

import click

from kconfigs.commands.confirm import ask_before_destroying, yes_option
from kconfigs.commands.options import (
    check_ip,
    check_ip_name,
    check_known_keys,
    entity_components,
    entity_from,
    entity_options,
    filter_from,
    lazy_completer,
    open_from_kwargs,
    output_option,
    store_options,
)
from kconfigs.keys import quota_configs
from kconfigs.model import EntityType
from kconfigs.stores.factory import Access


def _shown_as(output: str | None) -> str:
    """The ``-o`` view, by default a table on a terminal and kafka-configs' text otherwise."""
    return output or ("table" if sys.stdout.isatty() else "text")


def _emit(records, output: str | None, show_secrets: bool) -> None:
    from kconfigs import render

    output = _shown_as(output)
    if output == "json":
        click.echo(render.records_json(records))
    elif output == "table":
        from rich.console import Console

        render.records_table(list(records), Console())
    else:
        for record in records:
            click.echo(render.zk_describe_line(record if show_secrets else render.without_secrets(record)))


@click.command()
@entity_options
@store_options
@output_option
@click.option(
    "--show-secrets",
    is_flag=True,
    help="Print users' SCRAM salts and keys in the text view (else shown as <hidden>).",
)
def describe(output: str | None, show_secrets: bool, **kwargs) -> None:
    """Show quotas: of one entity if one is named, else of every entity."""
    components = entity_components(kwargs)
    check_ip_name(components.get(EntityType.IP))
    store = open_from_kwargs(kwargs, access=Access.READ)
    try:
        records = sorted((r for r in store.describe(filter_from(components)) if r.configs), key=lambda r: r.entity.path)
    finally:
        store.close()
    output = _shown_as(output)
    if output != "text":
        # the quota views leave out a user whose entry holds only SCRAM credentials; the text
        # view lists it with them, as kafka-configs does
        records = [r for r in records if quota_configs(r.configs)]
    _emit(records, output, show_secrets)


@click.command()
@entity_options
@click.option(
    "--set",
    "settings",
    multiple=True,
    metavar="KEY=VALUE",
    help="Set a quota (repeatable).",
    shell_complete=lazy_completer("complete_keys"),
)
@click.option("--add-config", metavar="K=V,K2=V2", help="kafka-configs syntax for several keys.")
@click.option(
    "--delete",
    "deletes",
    multiple=True,
    metavar="KEY",
    help="Remove a quota key (repeatable).",
    shell_complete=lazy_completer("complete_keys"),
)
@click.option(
    "--delete-config",
    "delete_configs",
    multiple=True,
    metavar="K1,K2",
    help="kafka-configs syntax for removing several keys.",
)
@click.option("--dry-run", is_flag=True, help="Validate against the store without writing.")
@store_options
@output_option
def alter(settings, add_config, deletes, delete_configs, dry_run, output, **kwargs) -> None:
    """Set or remove quota keys of one entity, atomically."""
    from kconfigs.config_grammar import add_config_pairs, parse_delete_config
    from kconfigs.errors import UsageError
    from kconfigs.render import alter_done, zk_alter_line
    from kconfigs.service import ConfigChange
    from kconfigs.service import alter as alter_entity

    entity = entity_from(entity_components(kwargs))
    check_ip(entity)
    add: dict[str, str] = {}
    texts = ((add_config,) if add_config else ()) + settings
    for key, value in (pair for text in texts for pair in add_config_pairs(text)):
        if add.get(key, value) != value:  # which one was meant? (kafka-configs keeps the last)
            raise UsageError(f"{key} is given twice ({add[key]}, then {value}): give it once")
        add[key] = value
    deletes = list(deletes) + parse_delete_config(list(delete_configs))
    if not add and not deletes:
        raise UsageError("Nothing to change: give --set KEY=VALUE, --add-config, --delete KEY or --delete-config")
    check_known_keys(entity, add)
    store = open_from_kwargs(kwargs, access=Access.PREVIEW if dry_run else Access.WRITE)
    try:
        record = alter_entity(store, entity, ConfigChange(add=add, delete=list(deletes)), dry_run=dry_run)
    finally:
        store.close()
    if output == "json":
        _emit([record], "json")
    else:
        click.echo(alter_done(zk_alter_line(entity), dry_run))


@click.command()
@entity_options
@click.option(
    "--key",
    "keys",
    multiple=True,
    help="Remove only these keys (default: every quota key; a user's SCRAM credentials stay).",
    shell_complete=lazy_completer("complete_keys"),
)
@yes_option
@store_options
def delete(keys, assume_yes, **kwargs) -> None:
    """Remove an entity's quotas (all of them, or --key ones). Asks first on a terminal; scripts
    add --yes."""
    from kconfigs.render import zk_alter_line, zk_entity_text
    from kconfigs.service import deletion_update, keys_to_delete

    entity = entity_from(entity_components(kwargs))
    check_known_keys(entity, keys)
    store = open_from_kwargs(kwargs, access=Access.UPDATE)
    try:
        current = next((r.configs for r in store.describe(filter_from(entity.components()))), {})
        removing = keys_to_delete(entity, current, keys)
        named = zk_entity_text(entity)
        ask_before_destroying(
            [f"- {named}", *(f"    - {key}" for key in removing)],
            question=f"delete: remove {_keys(len(removing))} of {named}?",
            refusal=f"delete would remove {_keys(len(removing))} of {named} ({', '.join(removing)}): "
            f"nothing changed; re-run with --yes to confirm",
            assume_yes=assume_yes,
        )
        store.alter(entity, deletion_update(entity, removing))
    finally:
        store.close()
    click.echo(zk_alter_line(entity))


def _keys(count: int) -> str:
    return "1 key" if count == 1 else f"{count} keys"
