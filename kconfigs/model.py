"""Frozen value types shared by the CLI, the stores, the gateway and the analysis.

A quota entity is Kafka's ``ClientQuotaEntity``: a user, a client-id, a (user, client-id) pair, or
an ip. Each present component is either a name or the default (``DEFAULT``). Paths are the
ZooKeeper ``entity_path`` form (``users/<san>/clients/<san>``), which the embedded store reuses.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Final, Mapping

from kconfigs.errors import ValidationError
from kconfigs.sanitize import DEFAULT_NAME, desanitize, sanitize


class _Default:
    """The default entity of a type (Kafka: a null name; ZooKeeper: ``<default>``)."""

    _instance: "_Default | None" = None

    def __new__(cls) -> "_Default":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "DEFAULT"

    def __reduce__(self):  # stays a singleton through pickle (Spark ships closures)
        return (_Default, ())


DEFAULT: Final = _Default()
Name = "str | _Default"


class EntityType(str, Enum):
    """Kafka's ClientQuotaEntity component types; values are the wire/JSON names."""

    USER = "user"
    CLIENT_ID = "client-id"
    IP = "ip"


@dataclass(frozen=True)
class QuotaEntity:
    """A quota entity. ``None`` = component absent; ``DEFAULT`` = the default; else a raw name.

    :raises ValidationError: for an empty entity or an ip combined with user/client-id.
    """

    user: "str | _Default | None" = None
    client_id: "str | _Default | None" = None
    ip: "str | _Default | None" = None

    def __post_init__(self) -> None:
        if self.user is None and self.client_id is None and self.ip is None:
            raise ValidationError("A quota entity needs a user, a client-id or an ip")
        if "" in (self.user, self.client_id, self.ip):
            raise ValidationError("An entity name must not be empty (the default entity is named by a default flag)")
        if self.ip is not None and (self.user is not None or self.client_id is not None):
            raise ValidationError(
                "Invalid quota entity combination, IP entity should not be used with user/client ID entity."
            )

    def components(self) -> dict[EntityType, "str | _Default"]:
        """Present components in Kafka's fixed order user, client-id, ip."""
        pairs = ((EntityType.USER, self.user), (EntityType.CLIENT_ID, self.client_id), (EntityType.IP, self.ip))
        return {t: v for t, v in pairs if v is not None}

    def to_json(self) -> dict[str, "str | None"]:
        """``{"user": "alice", "client-id": None}``: None is the default, as in Kafka's API."""
        return {t.value: (None if v is DEFAULT else v) for t, v in self.components().items()}

    @classmethod
    def from_json(cls, obj: Mapping[str, "str | None"]) -> "QuotaEntity":
        """Inverse of :meth:`to_json`. :raises ValidationError: on unknown component types."""
        unknown = set(obj) - {t.value for t in EntityType}
        if unknown:
            raise ValidationError(f"Unknown quota entity type(s): {', '.join(sorted(unknown))}")
        value = {k: (DEFAULT if v is None else v) for k, v in obj.items()}
        return cls(user=value.get("user"), client_id=value.get("client-id"), ip=value.get("ip"))

    @property
    def path(self) -> str:
        """The ZooKeeper entity path under ``/config``, e.g. ``users/CN%3Du/clients/<default>``."""
        if self.ip is not None:
            return "ips/" + (DEFAULT_NAME if self.ip is DEFAULT else self.ip)  # ips are not sanitized
        if self.user is not None and self.client_id is not None:
            return f"users/{_san(self.user)}/clients/{_san(self.client_id)}"
        if self.user is not None:
            return f"users/{_san(self.user)}"
        return f"clients/{_san(self.client_id)}"

    @classmethod
    def from_path(cls, path: str) -> "QuotaEntity":
        """Parse an entity path (as in a change notification). :raises ValidationError:"""
        parts = path.strip("/").split("/")
        if len(parts) == 2 and parts[0] == "ips":
            return cls(ip=DEFAULT if parts[1] == DEFAULT_NAME else parts[1])
        if len(parts) == 2 and parts[0] in ("users", "clients"):
            name = _desan(parts[1])
            return cls(user=name) if parts[0] == "users" else cls(client_id=name)
        if len(parts) == 4 and parts[0] == "users" and parts[2] == "clients":
            return cls(user=_desan(parts[1]), client_id=_desan(parts[3]))
        raise ValidationError(f"Invalid quota entity path: {path}")


def _san(name: "str | _Default") -> str:
    return DEFAULT_NAME if name is DEFAULT else sanitize(name)


def _desan(component: str) -> "str | _Default":
    return DEFAULT if component == DEFAULT_NAME else desanitize(component)


@dataclass(frozen=True)
class QuotaRecord:
    """One entity and its stored configs (raw strings, exactly as the store holds them)."""

    entity: QuotaEntity
    configs: Mapping[str, str] = field(default_factory=dict)


class Match(Enum):
    """How a filter component matches (Kafka ClientQuotaFilterComponent)."""

    EXACT = "exact"  # ofEntity(type, name)
    DEFAULT = "default"  # ofDefaultEntity(type)
    ANY = "any"  # ofEntityType(type): named or default


@dataclass(frozen=True)
class FilterComponent:
    entity_type: EntityType
    match: Match
    name: str | None = None  # only for Match.EXACT


@dataclass(frozen=True)
class EntityFilter:
    """DescribeClientQuotas-style filter. ``strict``: components not named must be absent."""

    components: tuple[FilterComponent, ...]
    strict: bool = True

    def matches(self, entity: QuotaEntity) -> bool:
        present = entity.components()
        for comp in self.components:
            value = present.get(comp.entity_type)
            if value is None:
                return False
            if comp.match is Match.DEFAULT and value is not DEFAULT:
                return False
            if comp.match is Match.EXACT and value != comp.name:
                return False
        if self.strict:
            return set(present) == {c.entity_type for c in self.components}
        return True


MATCH_ALL: Final = EntityFilter(components=(), strict=False)
