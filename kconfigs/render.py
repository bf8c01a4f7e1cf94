"""Model -> text. kafka-configs' ZooKeeper-mode lines exactly, plus JSON and a rich table."""

from __future__ import annotations

import json
import math
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


#: what the text view prints for a SCRAM credential's salt, stored key and server key
HIDDEN_SECRET = "<hidden>"


def without_secrets(record: QuotaRecord) -> QuotaRecord:
    """``record`` with each SCRAM credential's value replaced by :data:`HIDDEN_SECRET`: a
    describe piped into a CI log must not carry what an offline guess of the password needs."""
    from kconfigs.keys import SCRAM_KEYS

    configs = {key: HIDDEN_SECRET if key in SCRAM_KEYS else raw for key, raw in record.configs.items()}
    return QuotaRecord(record.entity, configs)


def zk_alter_line(entity: QuotaEntity) -> str:
    return f"Completed updating config for entity: {zk_entity_text(entity)}."


def alter_done(done_line: str, dry_run: bool) -> str:
    """An alter's closing line; after ``--dry-run`` it says nothing was written, never the bare
    "Completed updating"."""
    return "Dry run OK, nothing written: " + done_line if dry_run else done_line


def records_json(records: Iterable[QuotaRecord]) -> str:
    """Stable JSON: ``[{"entity": {"user": "u", "client-id": null}, "quotas": {...}}]``.

    :raises CorruptData: a stored NaN or infinity (a KRaft controller accepts
        ``consumer_byte_rate=NaN``): JSON has no such number, and a string would pass it off
        as something else.
    """
    items = []
    for record in records:
        _refuse_non_finite(record)
        items.append({"entity": record.entity.to_json(), "quotas": shown_quotas(record.configs)})
    return json.dumps(items, indent=2, sort_keys=False, allow_nan=False)


def _refuse_non_finite(record: QuotaRecord) -> None:
    from kconfigs.errors import CorruptData
    from kconfigs.javafmt import parse_java_double
    from kconfigs.keys import quota_configs

    for key, raw in quota_configs(record.configs).items():
        try:
            finite = math.isfinite(parse_java_double(raw))
        except ValueError:
            continue  # not a number at all: shown as the string it is
        if not finite:
            raise CorruptData(
                f"{key} of {zk_entity_text(record.entity)} is {raw.strip()}, which JSON cannot hold "
                "(-o text shows it as stored)"
            )


def shown_quotas(configs) -> dict[str, int | float | str]:
    """An entry's quotas as numbers, and a stored value that is not one (a hand-edited znode, a
    NaN or infinity where a whole number belongs) as the string it is: a describe shows what is
    stored, it does not fail on it."""
    shown: dict[str, int | float | str] = {}
    for key, raw in configs.items():
        try:
            number = numeric_quotas({key: raw}).get(key)
        except (ValueError, OverflowError):
            number = None
            shown[key] = raw
        if number is not None:
            shown[key] = number if math.isfinite(number) else raw.strip()
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
