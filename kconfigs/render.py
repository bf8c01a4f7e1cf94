"""Model -> text. kafka-configs' ZooKeeper-mode lines exactly, plus JSON and a rich table."""

from __future__ import annotations

import json
from typing import Iterable

from kconfigs.jvm_order import java_properties_order
from kconfigs.keys import numeric_quotas
from kconfigs.model import DEFAULT, QuotaEntity, QuotaRecord

_ZK_TYPE_NAMES = (("user", "user-principal"), ("client_id", "client-id"), ("ip", "ips"))


def zk_entity_text(entity: QuotaEntity) -> str:
    """``user-principal 'u', default client-id`` / ``ips '1.2.3.4'`` / ``default ips``."""
    parts = []
    for attr, type_name in _ZK_TYPE_NAMES:
        name = getattr(entity, attr)
        if name is None:
            continue
        parts.append(f"default {type_name}" if name is DEFAULT else f"{type_name} '{name}'")
    return ", ".join(parts)


def zk_describe_line(record: QuotaRecord) -> str:
    """kafka-configs 2.8 reads the znode's config into a ``java.util.Properties`` in the JSON's
    order and prints that Properties' order (JDK 9+: a ConcurrentHashMap's)."""
    pairs = ",".join(f"{key}={record.configs[key]}" for key in java_properties_order(list(record.configs)))
    return f"Configs for {zk_entity_text(record.entity)} are {pairs}"


def zk_alter_line(entity: QuotaEntity) -> str:
    return f"Completed updating config for entity: {zk_entity_text(entity)}."


def alter_done(done_line: str, dry_run: bool) -> str:
    """An alter's closing line; after ``--dry-run`` it says nothing was written, never the bare
    "Completed updating"."""
    return "Dry run OK, nothing written: " + done_line if dry_run else done_line


def records_json(records: Iterable[QuotaRecord]) -> str:
    """Stable JSON: ``[{"entity": {"user": "u", "client-id": null}, "quotas": {...}}]``."""
    items = [{"entity": r.entity.to_json(), "quotas": shown_quotas(r.configs)} for r in records]
    return json.dumps(items, indent=2, sort_keys=False)


def shown_quotas(configs) -> dict[str, int | float | str]:
    """An entry's quotas as numbers, and a stored value that is not one (a hand-edited znode) as
    the string it is: a describe shows what is stored, it does not fail on it."""
    shown: dict[str, int | float | str] = {}
    for key, raw in configs.items():
        try:
            shown.update(numeric_quotas({key: raw}))
        except ValueError:
            shown[key] = raw
    return shown


def records_table(records: list[QuotaRecord], console) -> None:
    """A rich table readable at 80 columns: one block of rows per entity (named once, in the
    text style of the describe lines), one row per key. Keys and values never wrap; a long
    principal folds onto more lines instead of being cut short with an ellipsis (a cut name
    could be mistaken for another)."""
    from rich.table import Table

    table = Table(show_header=True, header_style="bold")
    table.add_column("entity", overflow="fold", ratio=1)
    table.add_column("key", no_wrap=True)
    table.add_column("value", justify="right", no_wrap=True)
    for record in records:
        quotas = shown_quotas(record.configs)
        for index, (key, value) in enumerate(quotas.items()):
            table.add_row(
                zk_entity_text(record.entity) if index == 0 else "",
                key,
                f"{value:,}" if isinstance(value, int) else f"{value:g}" if isinstance(value, float) else value,
                end_section=index == len(quotas) - 1,
            )
    console.print(table)
