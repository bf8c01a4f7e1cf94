"""kafka-configs ``--bootstrap-server`` mode for client quotas, as pure functions.

Inputs are plain values as ``args.py`` parses them: ``types`` (``["users", "clients"]``),
``names`` (``""`` = default), ``add`` (ordered dict) and ``delete`` (list). Outputs are strings,
model values, or kconfigs errors carrying kafka-configs' exact message (spec sections 2.4, 4.2;
checked against Kafka 3.9.2 and 4.3.1 ``kafka.admin.ConfigCommand`` (Scala) and 4.4.0
``org.apache.kafka.tools.ConfigCommand`` (Java), which word them alike).

The keys in the "Unexpected config names" messages are named in the order, and printed the
way, of the tool's own collections (``refused_keys``: Scala ``Set(a, b)`` / ``ArrayBuffer(a)``,
Java ``a,b``); ``texts`` says which tool, and is asked only when a message needs it.
"""

from __future__ import annotations

import re
from typing import Callable, Mapping, Sequence

from kconfigs.errors import UsageError, ValidationError
from kconfigs.javafmt import double_to_string, parse_java_double
from kconfigs.jvm_order import java_hash_map_order, java_string_hash
from kconfigs.keys import CLIENT_KEYS, QUOTA_KEYS, SCRAM_KEYS, Scope
from kconfigs.model import DEFAULT, EntityFilter, EntityType, FilterComponent, Match, QuotaEntity, QuotaRecord
from kconfigs.refused_keys import ToolKeys, tool_keys

CLIENT_OR_USER_QUOTA_KEYS = CLIENT_KEYS
IP_QUOTA_KEYS = tuple(key.name for key in QUOTA_KEYS.values() if key.scope is Scope.IP)
_TYPE_OF = {"users": EntityType.USER, "clients": EntityType.CLIENT_ID, "ips": EntityType.IP}
_DISPLAY = {EntityType.USER: "user-principal", EntityType.CLIENT_ID: "client-id", EntityType.IP: "ip"}


def _java_tool(texts) -> bool:
    """Whether the line's kafka-configs is the Java rewrite (3.x texts when none is given)."""
    return texts is not None and texts().java_tool


def check_key_characters(add: Mapping[str, str], texts, from_file: bool = False) -> None:
    """kafka-configs 3.7+ ``validatePropsKey``: every added key must match the line's pattern;
    the first bad key in ``java.util.Properties`` order is named. ``texts`` is asked only when a
    key fails the 3.x pattern (4.x also allows ``$``).

    :raises UsageError: ``Invalid character found for config key: a b``.
    """
    from kconfigs.kafka_texts import KEY_PATTERN_3

    bad = [key for key in add if not re.fullmatch(KEY_PATTERN_3, key)]
    if bad:
        pattern = texts().config_key_pattern
        bad = [key for key in bad if not re.fullmatch(pattern, key)]
    if bad:
        first = next(k for k in tool_keys(_java_tool(texts), list(add), (), from_file).properties_order if k in bad)
        raise UsageError(f"Invalid character found for config key: {first}")


def check_alter_keys(
    types: Sequence[str],
    names: Sequence[str],
    add: Mapping[str, str],
    delete: Sequence[str],
    texts=None,
    from_file: bool = False,
) -> str:
    """kafka-configs' key checks for an alter; returns ``"quota"`` or ``"scram"`` (which API).

    :raises UsageError: with kafka-configs' IllegalArgumentException text.
    """
    refusal = _refusal(types, add, delete, lambda: tool_keys(_java_tool(texts), list(add), delete, from_file))
    if refusal is not None:
        raise refusal
    if types[0] == "ips":
        return "quota"
    has_quota = any(map(is_quota, [*add, *delete]))
    if types[0] == "users" and len(types) == 1 and any(map(is_scram, [*add, *delete])):
        _check_user_scram(names, has_quota)
    return "quota" if has_quota else "scram"


def _refusal(
    types: Sequence[str], add: Mapping[str, str], delete: Sequence[str], tool: Callable[[], ToolKeys]
) -> UsageError | None:
    """The message for keys the entity type does not take, listed as the tool lists them (the
    tool's collections are asked for only then); None when every key is taken."""
    every = [*add, *delete]
    if types[0] == "ips":
        if all(key in IP_QUOTA_KEYS for key in every):
            return None
        return UsageError(
            "Only connection quota configs can be added for 'ips' using --bootstrap-server. "
            f"Unexpected config names: {tool().ip_unknown_text(lambda k: k not in IP_QUOTA_KEYS)}"
        )
    if types[0] == "clients" or len(types) == 2:  # quota keys only
        if all(map(is_quota, every)):
            return None
        keys = tool()
        unknown_add = keys.added_where(_unknown)
        if unknown_add or any(map(is_scram, add)):
            return UsageError(
                "Only quota configs can be added for 'clients' using --bootstrap-server. "
                f"Unexpected config names: {keys.added_text(unknown_add, keys.added_where(is_scram))}"
            )
        return UsageError(
            "Only quota configs can be deleted for 'clients' using --bootstrap-server. "
            f"Unexpected config names: {keys.deleted_text(keys.deleted_where(_unknown), keys.deleted_where(is_scram))}"
        )
    if not any(map(_unknown, every)):
        return None
    keys = tool()
    unknown_add = keys.added_where(_unknown)
    if unknown_add:
        return UsageError(
            "Only quota and SCRAM credential configs can be added for 'users' using "
            f"--bootstrap-server. Unexpected config names: {keys.added_text(unknown_add)}"
        )
    return UsageError(
        "Only quota and SCRAM credential configs can be deleted for 'users' using "
        f"--bootstrap-server. Unexpected config names: {keys.deleted_text(keys.deleted_where(_unknown))}"
    )


def _unknown(key: str) -> bool:
    """Neither a quota key nor a SCRAM mechanism."""
    return not (is_scram(key) or is_quota(key))


def is_quota(key: str) -> bool:
    """``QuotaConfig.isClientOrUserQuotaConfig``."""
    return key in CLIENT_OR_USER_QUOTA_KEYS


def is_scram(key: str) -> bool:
    return key in SCRAM_KEYS


def _check_user_scram(names: Sequence[str], has_quota: bool) -> None:
    if any(name == "" for name in names):
        raise UsageError(
            "The use of --entity-default or --user-defaults is not allowed with User SCRAM "
            "Credentials using --bootstrap-server."
        )
    if has_quota:
        raise UsageError(
            "Cannot alter both quota and SCRAM credential configs simultaneously for 'users' using --bootstrap-server."
        )


def scram_order(add: Mapping[str, str], texts=None, from_file: bool = False) -> list[str]:
    """The SCRAM mechanisms among the added keys, in the order kafka-configs parses their values."""
    return tool_keys(_java_tool(texts), list(add), (), from_file).added_where(is_scram)


def check_entity_names(types: Sequence[str], names: Sequence[str]) -> None:
    """An alter names one entity per type; kafka-configs checks it before it reads the configs.

    :raises UsageError: ``An entity name must be specified for every entity type``.
    """
    if len(types) != len(names):
        raise UsageError("An entity name must be specified for every entity type")


def alter_entity(types: Sequence[str], names: Sequence[str]) -> QuotaEntity:
    """The entity an alter targets (types and names paired by index; ``""`` = default).

    :raises UsageError: ``An entity name must be specified for every entity type``.
    """
    check_entity_names(types, names)
    parts = {_TYPE_OF[t]: (DEFAULT if n == "" else n) for t, n in zip(types, names)}
    return QuotaEntity(
        user=parts.get(EntityType.USER), client_id=parts.get(EntityType.CLIENT_ID), ip=parts.get(EntityType.IP)
    )


def describe_filter(types: Sequence[str], names: Sequence[str]) -> EntityFilter:
    """``ClientQuotaFilter.containsOnly`` of the zipAll of types and names (strict).

    :raises UsageError: ``More entity names specified than entity types``.
    """
    if len(names) > len(types):
        raise UsageError("More entity names specified than entity types")
    components = []
    for index, type_name in enumerate(types):
        entity_type = _TYPE_OF[type_name]
        name = names[index] if index < len(names) else None
        if name is None:
            components.append(FilterComponent(entity_type, Match.ANY))
        elif name == "":
            components.append(FilterComponent(entity_type, Match.DEFAULT))
        else:
            components.append(FilterComponent(entity_type, Match.EXACT, name))
    return EntityFilter(components=tuple(components), strict=True)


def quota_update(
    add: Mapping[str, str],
    delete: Sequence[str],
    entity: QuotaEntity | None = None,
    texts=None,
    from_file: bool = False,
) -> Callable[[Mapping[str, str]], dict[str, str]]:
    """The store ``update`` for an alter: deletes must exist, added values must parse as doubles
    (of several that do not, the first in the tool's order is named), and (given the
    ``entity``) no key may be named twice.

    :raises ValidationError: ``Invalid config(s): k1,k2`` (nothing changed),
        ``Cannot parse quota configuration value for k: v`` or ``Ignoring duplicate entity ...``.
    """

    def update(current: Mapping[str, str]) -> dict[str, str]:
        missing = [key for key in delete if key not in current]
        if missing:
            raise ValidationError(f"Invalid config(s): {','.join(missing)}")
        bad = [key for key, value in add.items() if not _is_java_double(value)]
        if bad:
            first = next(k for k in tool_keys(_java_tool(texts), list(add), (), from_file).value_order if k in bad)
            raise ValidationError(f"Cannot parse quota configuration value for {first}: {add[first]}")
        if entity is not None:
            check_no_repeated_key(entity, add, delete)
        new = {k: v for k, v in current.items() if k not in delete}
        new.update(add)
        return new

    return update


def check_no_repeated_key(entity: QuotaEntity, add: Mapping[str, str], delete: Sequence[str]) -> None:
    """kafka-configs sends one op per added key and one per deleted key; a KRaft controller
    refuses an alteration naming a key twice (``--add-config k=1 --delete-config k``,
    ``--delete-config k,k``) and changes nothing. kconfigs sends only the net change, so it
    refuses here, with the controller's text.

    :raises ValidationError: ``Ignoring duplicate entity ClientQuotaEntity(entries={...})``.
    """
    keys = [*add, *delete]
    if len(set(keys)) == len(keys):
        return
    # ClientQuotaEntity.toString prints its HashMap; for these keys the bucket order is
    # client-id, user (String.hashCode & 3: 0 and 1, also with 16 buckets: 12 and 13); ip is alone.
    names = {"client-id": entity.client_id, "user": entity.user, "ip": entity.ip}
    entries = ", ".join(
        f"{key}={'null' if name is DEFAULT else name}" for key, name in names.items() if name is not None
    )
    raise ValidationError(f"Ignoring duplicate entity ClientQuotaEntity(entries={{{entries}}})")


def alter_done_line(types: Sequence[str], names: Sequence[str]) -> str:
    """``Completed updating config for user u.`` (first type, first name, as kafka-configs)."""
    if names[0]:
        return f"Completed updating config for {types[0][:-1]} {names[0]}."
    return f"Completed updating default config for {types[0]} in the cluster."


def entity_description(entity: QuotaEntity) -> str:
    """``user-principal 'u', client-id 'c'`` / ``the default user-principal`` / ``ip '1.2.3.4'``."""
    parts = []
    for entity_type, name in entity.components().items():
        label = _DISPLAY[entity_type]
        parts.append(f"the default {label}" if name is DEFAULT else f"{label} '{name}'")
    return ", ".join(parts)


def describe_line(record: QuotaRecord) -> str | None:
    """``Quota configs for <entity> are k=1024.0, ...``; None when the entity has no quotas. The
    keys come in the order of the admin client's ``new HashMap<>(n)`` of the entity's values."""
    if not record.configs:
        return None
    keys = java_hash_map_order(list(record.configs), java_string_hash, len(record.configs))
    pairs = ", ".join(f"{key}={_as_java_double(record.configs[key])}" for key in keys)
    return f"Quota configs for {entity_description(record.entity)} are {pairs}"


def describe_lines(records: Sequence[QuotaRecord]) -> list[str]:
    """One line per entity, in kafka-configs' order: it prints the admin client's answer, a
    ``new HashMap<>(n)`` keyed by ``ClientQuotaEntity``, filled in the order of the response's
    entries (``DescribeClientQuotasResponse.complete``; ``records`` are in that order)."""
    ordered = java_hash_map_order(list(records), _client_quota_entity_hash, len(records))
    return [line for line in map(describe_line, ordered) if line is not None]


def _client_quota_entity_hash(record: QuotaRecord) -> int:
    """``ClientQuotaEntity.hashCode``: ``Objects.hash(entries)``, 31 plus the hashCode of its
    HashMap of entity type to name (the sum of ``key.hashCode() ^ value.hashCode()``, a
    default's null name hashing to 0)."""
    entries = sum(
        java_string_hash(entity_type.value) ^ (0 if name is DEFAULT else java_string_hash(name))
        for entity_type, name in record.entity.components().items()
    )
    return 31 + entries


def _is_java_double(raw: str) -> bool:
    try:
        parse_java_double(raw)
    except ValueError:
        return False
    return True


def _as_java_double(raw: str) -> str:
    try:
        return double_to_string(parse_java_double(raw))
    except ValueError:
        return raw  # not a number (only possible from a hand-edited store): show it as stored
