"""Quotas in force (or proposed): quota files, kconfigs stores, and their resolution per entity.

Quota file format (also what ``analyze recommend`` writes and ``kconfigs apply`` reads)::

    [[quota]]
    entity = { user = "alice", "client-id" = "app-1" }   # "<default>" = the default entity
    producer_byte_rate = 1048576

Resolution of the 8-level precedence is ``enforcement.QuotaSnapshot``'s, so the analysis
agrees with the gateway and ``kconfigs simulate``; this module only adapts inputs to it.
"""

from __future__ import annotations

import math
import os
import tomllib
from dataclasses import dataclass
from typing import Iterable, Mapping

from kconfigs.errors import UsageError, ValidationError
from kconfigs.sanitize import DEFAULT_NAME

#: (entity {"user"/"client-id"/"ip": name, None = default}, {quota key: value})
QuotaRecordTuple = tuple[dict[str, "str | None"], dict[str, float]]
_ENTITY_TYPES = ("user", "client-id", "ip")


@dataclass(frozen=True)
class ResolvedQuota:
    """The effective quota of one analysed entity for one kind (None = unlimited)."""

    kind: str
    user: str | None
    client_id: str | None
    ip: str | None
    quota: float | None
    level: str | None


def _entity_from_toml(raw: object, where: str) -> dict[str, str | None]:
    if not isinstance(raw, Mapping) or not raw or set(raw) - set(_ENTITY_TYPES):
        raise ValidationError(f"{where}: entity must be a table of user / client-id / ip")
    if "ip" in raw and len(raw) > 1:
        raise ValidationError(f"{where}: an ip entity cannot be combined with user/client-id")
    return {k: (None if v == DEFAULT_NAME else str(v)) for k, v in raw.items()}


def parse_quota_toml(text: str, origin: str = "quota file") -> list[QuotaRecordTuple]:
    """Parse a quota file's text. :raises ValidationError: naming the bad table."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ValidationError(f"{origin}: not valid TOML: {err}") from None
    records = []
    for index, table in enumerate(document.get("quota", []), start=1):
        where = f"{origin}: [[quota]] #{index}"
        entity = _entity_from_toml(table.get("entity"), where)
        quotas = {}
        for key, value in table.items():
            if key == "entity":
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise ValidationError(f"{where}: {key} must be a number > 0")
            quotas[key] = float(value)
        records.append((entity, quotas))
    return records


def load_quota_file(path: str) -> list[QuotaRecordTuple]:
    """:raises UsageError: missing file; :raises ValidationError: bad content."""
    if not os.path.isfile(path):
        raise UsageError(f"Quota file not found: {path}")
    with open(path, encoding="utf-8") as handle:
        return parse_quota_toml(handle.read(), path)


def records_from_store(store) -> list[QuotaRecordTuple]:
    """Every quota in a kconfigs Store (``describe(MATCH_ALL)``), values as floats."""
    from kconfigs.model import MATCH_ALL

    records = []
    for record in store.describe(MATCH_ALL):
        quotas = {k: float(v) for k, v in record.configs.items()}
        if quotas:
            records.append((dict(record.entity.to_json()), quotas))
    return records


def _toml_entity(entity: Mapping[str, str | None]) -> str:
    parts = []
    for key in _ENTITY_TYPES:
        if key in entity:
            name = DEFAULT_NAME if entity[key] is None else entity[key]
            escaped = name.replace("\\", "\\\\").replace('"', '\\"')
            parts.append(f'{key} = "{escaped}"')  # client-id is a valid TOML bare key
    return "{ " + ", ".join(parts) + " }"


def render_quota_toml(records: Iterable[QuotaRecordTuple], header_lines: Iterable[str] = ()) -> str:
    """Quota file text; integers stay integers (LONG/INT quota keys must be whole numbers)."""
    lines = [f"# {line}" for line in header_lines]
    for entity, quotas in records:
        lines += ["", "[[quota]]", f"entity = {_toml_entity(entity)}"]
        for key, value in sorted(quotas.items()):
            number = int(value) if float(value).is_integer() else repr(float(value))
            lines.append(f"{key} = {number}")
    return "\n".join(lines).lstrip("\n") + "\n"


def write_quota_file(path: str, records: list[QuotaRecordTuple], header_lines: Iterable[str] = ()) -> None:
    """Write atomically (temp file + rename): nothing half-written on failure."""
    text = render_quota_toml(records, header_lines)
    parse_quota_toml(text, path)  # what we write must read back
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(tmp, path)


# --- resolution --------------------------------------------------------------------------------


def build_snapshot(records: list[QuotaRecordTuple]):
    """``enforcement.QuotaSnapshot`` over ``records`` (imported lazily: heavy for --help)."""
    from enforcement import QuotaSnapshot

    return QuotaSnapshot.from_records(records)


def _resolve_one(snapshot, kind: str, user: str | None, client_id: str | None, ip: str | None, key: str):
    """Resolved quota for one analysed entity.

    A series with both user and client-id is a client identity (gateway log) or a broker
    series whose tags came from levels 1/2/4/5, and ``resolve`` gives the same limit for both.
    A series with one tag is a shared sensor: its limit is ``quotaLimit`` of those tags
    (levels 3/6 or 7/8), which ``limit_for_tags`` computes (quota-enforcement.md §3.2).
    """
    if kind == "connection":
        return snapshot.resolve_ip(ip or "")
    if key not in KEYS_BY_TAGS or (user and client_id):
        return snapshot.resolve(user or "", client_id or "", key)
    user_tag = snapshot.sanitized(user) if user else ""
    value, level = snapshot.limit_for_tags(key, user or "", client_id or "", user_tag, client_id or "")
    return _Limit(value, level)


@dataclass(frozen=True)
class _Limit:
    value: float | None
    level: int


def resolve_entities(records: list[QuotaRecordTuple], entities: Iterable[tuple], kind_keys: Mapping[str, str]) -> list[ResolvedQuota]:
    """Effective quota (and its precedence level, 1..8) for each (kind, user, client_id, ip)."""
    snapshot = build_snapshot(records)
    resolved = []
    for kind, user, client_id, ip in entities:
        result = _resolve_one(snapshot, kind, user, client_id, ip, kind_keys[kind])
        value = result.value if result.value is not None and math.isfinite(result.value) else None
        level = _LEVEL_NAMES.get((kind == "connection", result.level)) if value is not None else None
        resolved.append(ResolvedQuota(kind, user, client_id, ip, value, level))
    return resolved


KEYS_BY_TAGS = frozenset({"producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate"})
_LEVEL_NAMES = {
    (False, 1): "1 user+client", (False, 2): "2 user+<default> client", (False, 3): "3 user",
    (False, 4): "4 <default> user+client", (False, 5): "5 <default> user+<default> client",
    (False, 6): "6 <default> user", (False, 7): "7 client", (False, 8): "8 <default> client",
    (True, 1): "ip", (True, 2): "<default> ip",
}
