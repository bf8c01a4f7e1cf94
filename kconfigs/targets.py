"""From kafka-configs' entity type/name lists to what to read or write. Pure.

ZooKeeper mode follows ConfigCommand.parseEntity: with two types and ``clients`` first the types
are swapped, but the names only when there are two — so a single name always binds to the user.
Bootstrap mode pairs types and names positionally.
"""

from __future__ import annotations

from dataclasses import dataclass

from kconfigs.errors import UsageError
from kconfigs.model import DEFAULT, EntityFilter, EntityType, FilterComponent, Match, QuotaEntity
from kconfigs.sanitize import DEFAULT_NAME

_TYPE = {"users": EntityType.USER, "clients": EntityType.CLIENT_ID, "ips": EntityType.IP}


@dataclass(frozen=True)
class DescribeTarget:
    entity_filter: EntityFilter
    exact: QuotaEntity | None  # fully specified: printed even when it has no configs
    skip_empty_users: bool  # kafka-configs skips empty user nodes only when listing all users


def _name_value(entity_type: str, name: str):
    if name == "" or (entity_type == "ips" and name == DEFAULT_NAME):
        return DEFAULT  # ips are not sanitized, so a typed "<default>" IS the default node
    return name


def zk_pairs(types: list[str], names: list[str], alter: bool) -> list[tuple[str, object | None]]:
    """(type, name or DEFAULT or None) pairs in root-then-child order. :raises UsageError:"""
    if types[0] not in ("users", "clients"):
        return [(types[0], _name_value(types[0], names[0]) if names else None)]
    if alter and len(names) != len(types):
        raise UsageError("--entity-name or --entity-default must be specified with each --entity-type for --alter")
    reverse = len(types) == 2 and types[0] == "clients"
    ordered_types = list(reversed(types)) if reverse else types
    ordered_names = list(reversed(names)) if reverse and len(names) == 2 else names
    return [
        (t, _name_value(t, ordered_names[i]) if i < len(ordered_names) else None) for i, t in enumerate(ordered_types)
    ]


def entity_of(pairs: list[tuple[str, object | None]]) -> QuotaEntity:
    values = {_TYPE[t]: n for t, n in pairs}
    return QuotaEntity(
        user=values.get(EntityType.USER), client_id=values.get(EntityType.CLIENT_ID), ip=values.get(EntityType.IP)
    )


def describe_target(pairs: list[tuple[str, object | None]]) -> DescribeTarget:
    components = tuple(_component(_TYPE[t], n) for t, n in pairs)
    fully_specified = all(n is not None for _, n in pairs)
    only_users = len(pairs) == 1 and pairs[0] == ("users", None)
    return DescribeTarget(
        EntityFilter(components, strict=True),
        entity_of(pairs) if fully_specified else None,
        skip_empty_users=only_users,
    )


def _component(entity_type: EntityType, name) -> FilterComponent:
    if name is None:
        return FilterComponent(entity_type, Match.ANY)
    if name is DEFAULT:
        return FilterComponent(entity_type, Match.DEFAULT)
    return FilterComponent(entity_type, Match.EXACT, name)


def bootstrap_pairs(types: list[str], names: list[str]) -> list[tuple[str, object | None]]:
    """Positional pairing (zipAll); more names than types is an error. :raises UsageError:"""
    if len(names) > len(types):
        raise UsageError("More entity names specified than entity types")
    return [(t, _name_value(t, names[i]) if i < len(names) else None) for i, t in enumerate(types)]
