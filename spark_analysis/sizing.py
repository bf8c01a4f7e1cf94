"""Quota recommendations and idle-quota detection. Pure: rows of entity stats in, values out.

Every rule (README "analyze recommend" lists the same):
1. recommended = roundup_nice(P(rate) × (1 + headroom)), P = p99 of the worst broker by default
   (admin-tools-and-metric-dumps.md §D.4, "proposed method").
2. Throttled samples are *censored*: while throttled, the observed rate is capped near the
   quota, so true demand is at least the quota. When more than ``censored_threshold`` of an
   entity's samples were throttled we do not trust P and step up: ``max(..., current × step_up)``.
3. Floor: never below ``floors[kind]`` (1 MiB/s for byte rates, Confluent Cloud's minimum:
   a smaller byte-rate quota throttles ordinary batches), applied after rounding.
4. Whole numbers: rounding keeps 2 significant digits, and byte/connection rates are integers.
5. The store's structure is kept: an entity whose quota comes from a default (or from a user
   quota its client-ids share) gets no quota of its own; the recommendation goes to the quota
   it inherits, sized for the largest of the entities that share it. Only entities without
   any quota get one of their own.
6. Internal and short-lived clients are skipped (:data:`INTERNAL_CLIENT_IDS`; fewer than
   ``min_busy_samples`` samples with traffic): there is too little of their traffic to size.
Worked example: p99 = 1.6 MB/s, headroom 0.25 -> 2.0 MB/s; if 5 % of samples were throttled at
a 1.5 MB/s quota, max(2.0, 1.5 × 1.5 = 2.25) -> 2.3 MB/s after rounding up to 2 significant digits.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from typing import Iterable, Mapping

from kconfigs.keys import WHOLE_NUMBER_KEYS
from kconfigs_analysis.quotas import QuotaRecordTuple

#: minimum recommended value per kind (Confluent Cloud: byte-rate quotas of at least 1 MiB/s).
DEFAULT_FLOORS: Mapping[str, float] = {
    "produce": 1048576.0,
    "fetch": 1048576.0,
    "request": 1.0,
    "controller_mutation": 1.0,
    "connection": 1.0,
}
#: quota keys Kafka stores as LONG / INT: must be whole numbers (quota-enforcement.md §0).
#: client-ids that are not applications (whole-name match): kconfigs' own admin client and
#: gateway probes; Kafka's Java AdminClient default (kafka-configs.sh, kafka-topics.sh, ...);
#: a broker's own clients (replica fetchers ``broker-<id>-fetcher-<n>``, ``broker-<id>-txn-...``).
INTERNAL_CLIENT_IDS = re.compile(r"kconfigs|kconfigs-.+|adminclient-\d+|broker-\d+-.+")
#: where an effective quota comes from (quotas.ResolvedQuota.level) -> the configured entity:
#: per tag, "own" = the entity's own name, "default" = <default>
_LEVEL_ENTITY = {
    "1 user+client": {"user": "own", "client-id": "own"},
    "2 user+<default> client": {"user": "own", "client-id": "default"},
    "3 user": {"user": "own"},
    "4 <default> user+client": {"user": "default", "client-id": "own"},
    "5 <default> user+<default> client": {"user": "default", "client-id": "default"},
    "6 <default> user": {"user": "default"},
    "7 client": {"client-id": "own"},
    "8 <default> client": {"client-id": "default"},
    "ip": {"ip": "own"},
    "<default> ip": {"ip": "default"},
}
_ROW_FIELD = {"user": "user", "client-id": "client_id", "ip": "ip"}


@dataclass(frozen=True)
class SizingPolicy:
    percentile: str = "p99"  # p50 | p95 | p99 | max
    headroom: float = 0.25  # 0.25 ≈ an 80 % utilisation target (Cruise Control's 0.8 threshold)
    censored_threshold: float = 0.01  # throttled fraction above which demand is censored
    step_up: float = 1.5
    over_provisioned_ratio: float = 0.25  # flag when P < 0.25 × quota
    floors: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_FLOORS))
    min_busy_samples: int = 3  # fewer samples with traffic: a short-lived client, not sized


@dataclass(frozen=True)
class Recommendation:
    entity: dict  # {"user"/"client-id"/"ip": name}
    kind: str
    key: str
    current: float | None
    recommended: float | int  # int for WHOLE_NUMBER_KEYS
    observed: float
    throttled_fraction: float
    reason: str
    shared_by: int = 1  # analysed entities whose quota this is


def plain_number(value: float) -> str:
    """A quota value as people write it: ``5242880``, ``2.5`` (never ``5.24288e+06``)."""
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.6f}".rstrip("0").rstrip(".")


def roundup_nice(value: float, digits: int = 2) -> float:
    """Round up to ``digits`` significant digits: 1_234_567 -> 1_300_000; 0.0123 -> 0.013."""
    if value <= 0:
        return 0.0
    exponent = math.floor(math.log10(value)) - digits + 1
    mantissa = math.ceil(round(value / 10**exponent, 9))  # round(): 2.0e6/1e5 may be 20.000000001
    return float(f"{mantissa}e{exponent}")  # via text: no 0.013000000000000001


def entity_of(row: Mapping) -> dict:
    """The quota entity a metric series is charged to (its non-empty tags)."""
    if row["kind"] == "connection":
        return {"ip": row["ip"]}
    pairs = (("user", row.get("user")), ("client-id", row.get("client_id")))
    return {k: v for k, v in pairs if v}


def recommend_one(row: Mapping, key: str, policy: SizingPolicy) -> Recommendation | None:
    """Recommendation for one entity-stats row (needs p50..max, quota, throttled_fraction)."""
    observed = row.get(policy.percentile)
    if observed is None or (isinstance(observed, float) and math.isnan(observed)):
        return None
    current = row.get("quota")
    throttled = float(row.get("throttled_fraction") or 0.0)
    value, reason = observed * (1 + policy.headroom), f"{policy.percentile} × {1 + policy.headroom:g}"
    if current is not None and throttled > policy.censored_threshold:
        if current * policy.step_up > value:
            value, reason = (
                current * policy.step_up,
                f"throttled {throttled:.1%}: demand censored, current × {policy.step_up:g}",
            )
    value = roundup_nice(value)
    floor = policy.floors.get(row["kind"], 0.0)
    if value < floor:  # after rounding: the floor is exact (1 MiB/s, not 1.1 MB/s)
        value, reason = floor, f"floor {plain_number(floor)}"
    if key in WHOLE_NUMBER_KEYS:
        value = int(math.ceil(value))
    if current is not None and observed < policy.over_provisioned_ratio * current:
        reason += f"; over-provisioned ({policy.percentile} < {policy.over_provisioned_ratio:g} × current)"
    return Recommendation(entity_of(row), row["kind"], key, current, value, observed, throttled, reason)


def skip_reason(row: Mapping, policy: SizingPolicy) -> str | None:
    """Why an entity gets no recommendation (rule 6), or None."""
    client = row.get("client_id")
    if client and INTERNAL_CLIENT_IDS.fullmatch(client):
        return "internal client"
    if (row.get("busy_samples") or 0) < policy.min_busy_samples:
        return f"short-lived (traffic in fewer than {policy.min_busy_samples} samples)"
    return None


def configured_entity(row: Mapping) -> dict:
    """The quota entity an analysed entity's effective quota is configured on (rule 5): its
    own tags when it has no quota; None = ``<default>``."""
    shape = _LEVEL_ENTITY.get(row.get("quota_level") or "")
    if row.get("quota") is None or shape is None:
        return entity_of(row)
    return {tag: (row.get(_ROW_FIELD[tag]) if part == "own" else None) for tag, part in shape.items()}


def _entity_sort_key(entity: dict) -> list:
    return sorted((tag, "" if name is None else name) for tag, name in entity.items())


def recommend(
    rows: Iterable[Mapping], kind_keys: Mapping[str, str], policy: SizingPolicy = SizingPolicy()
) -> list[Recommendation]:
    """One recommendation per configured quota the analysed entities use (rules 1-6), sorted by
    entity then key; entities sharing a quota (a default) get the largest of their values."""
    merged: dict[tuple, Recommendation] = {}
    for row in rows:
        if skip_reason(row, policy) is not None:
            continue
        rec = recommend_one(row, kind_keys[row["kind"]], policy)
        if rec is None:
            continue
        target = configured_entity(row)
        key = (tuple(_entity_sort_key(target)), rec.key)
        before = merged.get(key)
        shared = 1 if before is None else before.shared_by + 1
        largest = rec if before is None or rec.recommended > before.recommended else before
        merged[key] = replace(largest, entity=target, shared_by=shared)
    result = [
        r
        if r.shared_by == 1
        else replace(r, reason=f"{r.reason}; largest of {r.shared_by} entities sharing this quota")
        for r in merged.values()
    ]
    return sorted(result, key=lambda r: (_entity_sort_key(r.entity), r.key))


#: how a recommendation file's first line starts: ``recommend --write`` replaces such a file
#: without asking (a re-run), any other file only when told to
RECOMMEND_HEADER = "kconfigs analyze recommend:"


def policy_header(policy: SizingPolicy) -> list[str]:
    """The rules behind a recommendation file, written at its top (rules 1-6)."""
    floors = ", ".join(f"{kind} {plain_number(value)}" for kind, value in policy.floors.items())
    return [
        f"{RECOMMEND_HEADER} {policy.percentile} of the worst broker × {1 + policy.headroom:g}, "
        "rounded up to 2 significant digits (whole numbers for byte and connection rates)",
        f"throttled in more than {policy.censored_threshold:.0%} of samples: at least current × {policy.step_up:g}",
        f"floors: {floors}",
        "quotas inherited from a default stay on that default, sized for the largest entity using it",
        f"skipped: internal client-ids ({INTERNAL_CLIENT_IDS.pattern}) and entities with traffic in "
        f"fewer than {policy.min_busy_samples} samples",
        "quotas in force that the inputs do not size (idle, skipped, other keys) are kept unchanged",
    ]


def as_quota_records(recommendations: Iterable[Recommendation]) -> list[QuotaRecordTuple]:
    """Group recommendations by entity into quota-file records."""
    grouped: dict[tuple, dict[str, float]] = {}
    for rec in recommendations:
        grouped.setdefault(tuple(sorted(rec.entity.items())), {})[rec.key] = rec.recommended
    return [(dict(entity), quotas) for entity, quotas in grouped.items()]


def idle_quotas(
    records: Iterable[QuotaRecordTuple], rows: Iterable[Mapping], kind_keys: Mapping[str, str]
) -> list[dict]:
    """Explicit (named, non-default) quotas that no analysed entity used at all."""
    key_kind = {key: kind for kind, key in kind_keys.items()}
    seen = [
        (row["kind"], {"user": row.get("user"), "client-id": row.get("client_id"), "ip": row.get("ip")})
        for row in rows
        if row.get("samples")
    ]
    idle = []
    for entity, quotas in records:
        if any(name is None for name in entity.values()):
            continue  # defaults apply to whoever shows up: never "idle"
        for key, value in quotas.items():
            kind = key_kind.get(key)
            used = any(k == kind and all(tags[t] == n for t, n in entity.items()) for k, tags in seen)
            if kind and not used:
                idle.append({"entity": entity, "key": key, "quota": value})
    return idle


#: ``--headroom`` above this is refused: 30 meant as 30 % would give quotas 31 × the percentile
MAX_HEADROOM = 5.0


@dataclass(frozen=True)
class PlanEntry:
    """One line of a recommendation plan: a configured quota, in force and proposed, and the rule
    that decided it. Quotas in force that the inputs do not size are kept as they are, so the
    plan's file never drops one (``kconfigs apply --prune`` would delete it)."""

    entity: dict  # {"user"/"client-id"/"ip": name, None = <default>}
    key: str
    current: float | None  # None: no quota of its own in force
    proposed: float | int
    reason: str


def _entity_key(entity: Mapping) -> tuple:
    return tuple(sorted(entity.items(), key=lambda pair: pair[0]))


def plan(
    in_force: Iterable[QuotaRecordTuple], recommendations: Iterable[Recommendation], idle: Iterable[Mapping]
) -> list[PlanEntry]:
    """Every recommendation, and every quota in force that got none (idle or not sized), kept."""
    entries = {
        (_entity_key(r.entity), r.key): PlanEntry(r.entity, r.key, r.current, r.recommended, r.reason)
        for r in recommendations
    }
    idle_keys = {(_entity_key(i["entity"]), i["key"]) for i in idle}
    for entity, quotas in in_force:
        for key, value in quotas.items():
            where = (_entity_key(entity), key)
            if where in entries:
                continue
            why = "idle (no traffic in the inputs): kept" if where in idle_keys else "not sized by the inputs: kept"
            kept = int(round(value)) if key in WHOLE_NUMBER_KEYS else value
            entries[where] = PlanEntry(dict(entity), key, value, kept, why)
    return sorted(entries.values(), key=lambda e: (_entity_sort_key(e.entity), e.key))


def plan_records(entries: Iterable[PlanEntry]) -> list[QuotaRecordTuple]:
    """The plan as quota-file records (one per entity)."""
    grouped: dict[tuple, dict[str, float]] = {}
    for entry in entries:
        grouped.setdefault(_entity_key(entry.entity), {})[entry.key] = entry.proposed
    return [(dict(entity), quotas) for entity, quotas in grouped.items()]
