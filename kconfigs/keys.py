"""Quota config keys: which entity may hold which key, and how a value is checked.

Mirrors Kafka's ``QuotaConfigs`` / ``DynamicConfig`` (2.8) plus the draft KIP-936 key
``producer_ids_rate`` (users only). Values are checked stricter than Kafka 2.8's ZooKeeper path,
as a KRaft controller checks them: whole numbers for LONG/INT keys, no negatives, NaN or infinity.
Pure: no I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum
from typing import Mapping

from kconfigs.errors import ValidationError
from kconfigs.javafmt import java_trim, parse_java_double, parse_java_integer
from kconfigs.jvm_order import scala_hash_set_order
from kconfigs.model import DEFAULT, QuotaEntity


class ValueType(Enum):
    LONG = "LONG"
    INT = "INT"
    DOUBLE = "DOUBLE"


class Scope(Enum):
    """Which entities a key is valid for."""

    USER_CLIENT = "user/client"  # users, clients, (user, client) — Kafka's DynamicConfig.Client
    IP = "ip"  # DynamicConfig.Ip
    USER_ONLY = "user"  # a user or the default user, never with a client-id (KIP-936)


@dataclass(frozen=True)
class QuotaKey:
    """One quota key and the kind of use it limits: the one table the stores, the gateway, its
    usage log, the enforcer and the Spark analysis all read."""

    name: str  # the quota key, as stored and as kafka-configs names it
    value_type: ValueType
    scope: Scope
    kind: str  # what it limits, as the usage log, traces and reports name it
    unit: str  # unit of the measured rate in reports
    metric_group: str  # Kafka's quota type ("Produce" ...): metric group and sensor names
    zero_allowed: bool = False  # connection_creation_rate=0 blocks an IP (Kafka: atLeast(0))


_TABLE = (
    QuotaKey("producer_byte_rate", ValueType.LONG, Scope.USER_CLIENT, "produce", "B/s", "Produce"),
    QuotaKey("consumer_byte_rate", ValueType.LONG, Scope.USER_CLIENT, "fetch", "B/s", "Fetch"),
    QuotaKey("request_percentage", ValueType.DOUBLE, Scope.USER_CLIENT, "request", "% thread", "Request"),
    QuotaKey(
        "controller_mutation_rate",
        ValueType.DOUBLE,
        Scope.USER_CLIENT,
        "controller_mutation",
        "mutations/s",
        "ControllerMutation",
    ),
    # per-IP connection rates are socket-server metrics in Kafka, not a client quota type (KIP-612)
    QuotaKey(
        "connection_creation_rate",
        ValueType.INT,
        Scope.IP,
        "connection",
        "conn/s",
        "socket-server-metrics",
        zero_allowed=True,
    ),
    QuotaKey("producer_ids_rate", ValueType.DOUBLE, Scope.USER_ONLY, "producer_id", "ids/s", "ProducerIds"),
)
QUOTA_KEYS: dict[str, QuotaKey] = {k.name: k for k in _TABLE}
#: the same table by kind ("produce" -> producer_byte_rate ...)
QUOTA_KINDS: dict[str, QuotaKey] = {k.kind: k for k in _TABLE}
#: keys whose values are whole numbers (LONG / INT)
WHOLE_NUMBER_KEYS = frozenset(k.name for k in _TABLE if k.value_type is not ValueType.DOUBLE)
#: keys of users, client-ids and (user, client-id) pairs, in Kafka's order
CLIENT_KEYS = tuple(k.name for k in _TABLE if k.scope is Scope.USER_CLIENT)

#: the SCRAM mechanisms, in the order of Kafka's ScramMechanism enum (the order kafka-configs
#: converts, and so checks, their values)
SCRAM_KEYS = ("SCRAM-SHA-256", "SCRAM-SHA-512")

_LIMITS = {ValueType.LONG: 2**63 - 1, ValueType.INT: 2**31 - 1}


def keys_for(entity: QuotaEntity) -> tuple[str, ...]:
    """Quota keys valid for ``entity``, in table order."""
    return tuple(k.name for k in QUOTA_KEYS.values() if _in_scope(k.scope, entity))


def _in_scope(scope: Scope, entity: QuotaEntity) -> bool:
    if scope is Scope.IP:
        return entity.ip is not None
    if scope is Scope.USER_ONLY:
        return entity.user is not None and entity.client_id is None
    return entity.ip is None


def scram_allowed(entity: QuotaEntity) -> bool:
    """SCRAM credentials live only on a named user's own znode (DynamicConfig.User)."""
    return entity.user not in (None, DEFAULT) and entity.client_id is None


def check_keys(entity: QuotaEntity, keys: Mapping[str, object] | list[str]) -> None:
    """:raises ValidationError: ``requirement failed: Unknown Dynamic Configuration: ...``"""
    valid = set(keys_for(entity)) | (set(SCRAM_KEYS) if scram_allowed(entity) else set())
    unknown = [k for k in keys if k not in valid]
    if unknown:
        listed = ", ".join(scala_hash_set_order(unknown))
        raise ValidationError(f"requirement failed: Unknown Dynamic Configuration: HashSet({listed}).")


def parse_value(key: str, raw: str) -> int | float:
    """Parse a stored or typed quota value to a number, checking it as KRaft would.

    As Kafka's ConfigDef, the value is parsed trimmed and named as given (a properties file's
    value keeps its trailing blanks).
    :raises ValidationError: naming the key and the value.
    """
    spec = QUOTA_KEYS[key]
    text = java_trim(raw)
    if spec.value_type is ValueType.DOUBLE:
        value: int | float = _parse_double(key, text, raw)
    else:
        value = _parse_integer(key, text, raw, spec.value_type)
    _check_range(spec, text, value)
    return value


def _parse_double(key: str, text: str, raw: str) -> float:
    """Java ``Double.parseDouble`` (as Kafka's ConfigDef), then kconfigs' own refusal of NaN and
    the infinities, which Java parses and a ZooKeeper-mode kafka-configs would store."""
    try:
        value = parse_java_double(text)
    except ValueError:
        raise ValidationError(f"Invalid value {raw} for configuration {key}: Not a number of type DOUBLE") from None
    if not math.isfinite(value):
        raise ValidationError(f"Invalid value {text} for configuration {key}: must be a finite number")
    return value


def _parse_integer(key: str, text: str, raw: str, value_type: ValueType) -> int:
    try:
        return parse_java_integer(text, _LIMITS[value_type])
    except ValueError:
        raise ValidationError(
            f"Invalid value {raw} for configuration {key}: Not a number of type {value_type.value}"
        ) from None


def _check_range(spec: QuotaKey, text: str, value: int | float) -> None:
    if value < 0:
        raise ValidationError(f"Invalid value {text} for configuration {spec.name}: Value must be at least 0")
    if value == 0 and not spec.zero_allowed:
        raise ValidationError(
            f"Invalid value {text} for configuration {spec.name}: Value must be greater than 0"
            " (a zero quota would throttle every request forever)"
        )


def validate_configs(entity: QuotaEntity, configs: Mapping[str, str]) -> None:
    """Check a whole merged config set for ``entity`` (what ZooKeeper mode validates).

    :raises ValidationError:
    """
    check_keys(entity, list(configs))
    for key, raw in configs.items():
        if key in QUOTA_KEYS:
            parse_value(key, raw)


def quota_configs(configs: Mapping[str, str]) -> dict[str, str]:
    """The quota keys of an entry, values as stored. A user's SCRAM credentials share the user's
    entry (its znode, its embedded-store row) but are not quotas."""
    return {key: raw for key, raw in configs.items() if key in QUOTA_KEYS}


def numeric_quotas(configs: Mapping[str, str]) -> dict[str, int | float]:
    """Quota keys of ``configs`` as numbers (ints for LONG/INT keys), read as Java's
    ``Double.parseDouble`` reads them (so ``1048576.0`` for a LONG key too); SCRAM keys are left
    out. A DOUBLE key may come back NaN or infinite, as a cluster can hold it.

    :raises ValueError: a value Java cannot parse, or a non-finite one for a LONG/INT key.
    """
    out: dict[str, int | float] = {}
    for key, raw in configs.items():
        spec = QUOTA_KEYS.get(key)
        if spec is None:
            continue
        number = parse_java_double(raw)
        out[key] = number if spec.value_type is ValueType.DOUBLE else int(number)
    return out
