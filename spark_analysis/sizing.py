"""Quota recommendations and idle-quota detection. Pure: rows of entity stats in, values out.

Method (admin-tools-and-metric-dumps.md §D.4, "proposed method"):
    recommended = roundup_nice(P(rate) × (1 + headroom)), P = p99 of the worst broker by default.
Throttled samples are *censored*: while throttled, the observed rate is capped near the quota,
so true demand is at least the quota. When more than ``censored_threshold`` of an entity's
samples were throttled we do not trust P and step up: ``max(..., current × step_up)``.
Worked example: p99 = 1.6 MB/s, headroom 0.25 -> 2.0 MB/s; if 5 % of samples were throttled at
a 1.5 MB/s quota, max(2.0, 1.5 × 1.5 = 2.25) -> 2.3 MB/s after rounding up to 2 significant digits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable, Mapping

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
WHOLE_NUMBER_KEYS = frozenset({"producer_byte_rate", "consumer_byte_rate", "connection_creation_rate"})


@dataclass(frozen=True)
class SizingPolicy:
    percentile: str = "p99"  # p50 | p95 | p99 | max
    headroom: float = 0.25  # 0.25 ≈ an 80 % utilisation target (Cruise Control's 0.8 threshold)
    censored_threshold: float = 0.01  # throttled fraction above which demand is censored
    step_up: float = 1.5
    over_provisioned_ratio: float = 0.25  # flag when P < 0.25 × quota
    floors: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_FLOORS))


@dataclass(frozen=True)
class Recommendation:
    entity: dict  # {"user"/"client-id"/"ip": name}
    kind: str
    key: str
    current: float | None
    recommended: float
    observed: float
    throttled_fraction: float
    reason: str


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
        value, reason = floor, f"floor {floor:g}"
    if key in WHOLE_NUMBER_KEYS:
        value = float(math.ceil(value))
    if current is not None and observed < policy.over_provisioned_ratio * current:
        reason += f"; over-provisioned ({policy.percentile} < {policy.over_provisioned_ratio:g} × current)"
    return Recommendation(entity_of(row), row["kind"], key, current, value, observed, throttled, reason)


def recommend(
    rows: Iterable[Mapping], kind_keys: Mapping[str, str], policy: SizingPolicy = SizingPolicy()
) -> list[Recommendation]:
    """Recommendations for every row with samples, sorted by entity then key."""
    result = [r for r in (recommend_one(row, kind_keys[row["kind"]], policy) for row in rows) if r is not None]
    return sorted(result, key=lambda r: (sorted(r.entity.items()), r.key))


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
