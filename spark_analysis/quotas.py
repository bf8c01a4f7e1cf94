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


def _ip_quota(records: list[QuotaRecordTuple], ip: str) -> tuple[float | None, str | None]:
    """IP precedence is two levels (``ips/<ip>`` then ``ips/<default>``, KIP-612), not the 8."""
    by_ip = {e["ip"]: q for e, q in records if set(e) == {"ip"}}
    for name, level in ((ip, "ips/<ip>"), (None, "ips/<default>")):
        value = by_ip.get(name, {}).get("connection_creation_rate")
        if value is not None:
            return value, level
    return None, None


def resolve_entities(records: list[QuotaRecordTuple], entities: Iterable[tuple], kind_keys: Mapping[str, str]) -> list[ResolvedQuota]:
    """Effective quota for each (kind, user, client_id, ip) seen in the dumps.

    User/client tags absent from a metric are passed as ``""``: with Kafka's tag rules a
    client-only series means no user level applied (quota-enforcement.md §3.2).
    """
    snapshot = build_snapshot(records)
    resolved = []
    for kind, user, client_id, ip in entities:
        key = kind_keys[kind]
        if kind == "connection":
            value, level = _ip_quota(records, ip or "")
        else:
            result = snapshot.resolve(user or "", client_id or "", key)
            value, level = result.value, (str(result.level) if result.value is not None else None)
        finite = value is not None and math.isfinite(value)
        resolved.append(ResolvedQuota(kind, user, client_id, ip, value if finite else None, level if finite else None))
    return resolved
