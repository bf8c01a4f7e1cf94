"""Quotas in force (or proposed): quota files, kconfigs stores, and their resolution per entity.

Quota file format: the one ``kconfigs export`` writes and ``kconfigs apply`` reads, parsed and
written by ``kconfigs.quotafile`` (docs/quota-file.md)::

    [[quota]]
    entity = { user = "alice", client-id = { default = true } }   # { default = true } = the default
    producer_byte_rate = 1048576

Resolution of the 8-level precedence is ``kconfigs_enforcement.QuotaSnapshot``'s, so the analysis
agrees with the gateway and ``kconfigs simulate``; this module only adapts inputs to it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Mapping

from kconfigs.atomic_file import write_file_atomically
from kconfigs.keys import CLIENT_KEYS
from kconfigs.quota_records import QuotaRecordTuple  # (entity JSON, {key: value})


@dataclass(frozen=True)
class ResolvedQuota:
    """The effective quota of one analysed entity for one kind (None = unlimited)."""

    kind: str
    user: str | None
    client_id: str | None
    ip: str | None
    quota: float | None
    level: str | None


@dataclass(frozen=True)
class QuotaSource:
    """Where a command's quotas in force came from: ``kind`` is file, store, profile or none;
    ``name`` says which (the file, the store and the option or profile that named it)."""

    kind: str
    name: str
    records: list | None  # None: no quotas known

    @property
    def text(self) -> str:
        """One phrase for reports: ``file q.toml``, ``store --zookeeper zk:2181``, ``none``."""
        return self.kind if self.kind == "none" else f"{self.kind} {self.name}"

    def as_json(self) -> dict:
        return {"kind": self.kind, "name": self.name}


NO_QUOTA_SOURCE = QuotaSource("none", "no --quotas file and no store named: utilisation left blank", None)


def parse_quota_toml(text: str, origin: str = "quota file") -> list[QuotaRecordTuple]:
    """Parse a quota file's text (``kconfigs.quotafile``). :raises ValidationError: naming the bad table."""
    from kconfigs.quotafile import parse_quota_text, snapshot_records

    return snapshot_records(parse_quota_text(text, "toml", origin))


def load_quota_file(path: str) -> list[QuotaRecordTuple]:
    """A quota file's records, TOML, JSON or YAML by suffix (``kconfigs.quota_records``, the loader
    ``resolve``, ``simulate`` and the gateway use too). :raises UsageError: unreadable; :raises ValidationError:"""
    from kconfigs.quota_records import records_from_file

    return records_from_file(path)


def records_from_store(store) -> list[QuotaRecordTuple]:
    """Every quota in a kconfigs Store (``kconfigs.quota_records``), values as floats; SCRAM
    credentials and other non-quota configs are left out. :raises CorruptData: a value that is not a number"""
    from kconfigs.quota_records import records_from_store as read_records

    return read_records(store)


def render_quota_toml(records: Iterable[QuotaRecordTuple], header_lines: Iterable[str] = ()) -> str:
    """Quota file text (``kconfigs.quotafile``); LONG/INT keys are written as whole numbers."""
    from kconfigs.keys import QUOTA_KEYS, ValueType
    from kconfigs.model import QuotaEntity
    from kconfigs.quotafile import DesiredQuota, render_quota_text

    def number(key: str, value: float):
        spec = QUOTA_KEYS.get(key)
        whole = spec is not None and spec.value_type is not ValueType.DOUBLE
        return int(round(float(value))) if whole else float(value)

    desired = [
        DesiredQuota(QuotaEntity.from_json(entity), {k: number(k, v) for k, v in quotas.items()})
        for entity, quotas in records
    ]
    return render_quota_text(desired, "toml", header_lines)


def write_quota_file(path: str, records: list[QuotaRecordTuple], header_lines: Iterable[str] = ()) -> None:
    """Write atomically (temp file + rename): nothing half-written on failure."""
    text = render_quota_toml(records, header_lines)
    parse_quota_toml(text, path)  # what we write must read back
    write_file_atomically(path, text)


# --- resolution --------------------------------------------------------------------------------


def build_snapshot(records: list[QuotaRecordTuple]):
    """``kconfigs_enforcement.QuotaSnapshot`` over ``records`` (imported lazily: heavy for --help)."""
    from kconfigs_enforcement import QuotaSnapshot

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


def resolve_entities(
    records: list[QuotaRecordTuple], entities: Iterable[tuple], kind_keys: Mapping[str, str]
) -> list[ResolvedQuota]:
    """Effective quota (and its precedence level, 1..8) for each (kind, user, client_id, ip)."""
    snapshot = build_snapshot(records)
    resolved = []
    for kind, user, client_id, ip in entities:
        result = _resolve_one(snapshot, kind, user, client_id, ip, kind_keys[kind])
        value = result.value if result.value is not None and math.isfinite(result.value) else None
        level = _LEVEL_NAMES.get((kind == "connection", result.level)) if value is not None else None
        resolved.append(ResolvedQuota(kind, user, client_id, ip, value, level))
    return resolved


KEYS_BY_TAGS = frozenset(CLIENT_KEYS)
_LEVEL_NAMES = {
    (False, 1): "1 user+client",
    (False, 2): "2 user+<default> client",
    (False, 3): "3 user",
    (False, 4): "4 <default> user+client",
    (False, 5): "5 <default> user+<default> client",
    (False, 6): "6 <default> user",
    (False, 7): "7 client",
    (False, 8): "8 <default> client",
    (True, 1): "ip",
    (True, 2): "<default> ip",
}
