"""Per-source statistics rolled up to the entity, joined with its effective quota. Pure.

The statistics pass (report_scan) collects one row per (entity, source): a few thousand rows
even for a 1e8-sample dump. Rolling them up here, on the driver, costs microseconds; two more
Spark queries over inline tables cost a cold JVM ~1 s of planning and code generation.

Quotas are per broker, so an entity's rates on different brokers are never added: its mean and
percentiles are those of its worst broker (sizing method D.2/D.4), its counts are summed, and
its throttle-time mean is over every throttled sample. Nulls are skipped as Spark's aggregates
skip them (an entity whose every value is null gets None).
"""

from __future__ import annotations

import math
from typing import Iterable

ENTITY_COLUMNS = ["kind", "user", "client_id", "ip"]
#: the worst broker's value
_WORST = ("mean", "p50", "p95", "p99", "max", "throttle_ms_max")
_SUMMED = ("samples", "busy_samples", "throttle_samples", "throttled_samples")
#: entity rows before the quota columns (schemas.ENTITY_STATS_SCHEMA's fields + "sources")
STATS_COLUMNS = ENTITY_COLUMNS + [
    "samples",
    "mean",
    "p50",
    "p95",
    "p99",
    "max",
    "busy_samples",
    "throttle_samples",
    "throttled_samples",
    "throttle_ms_mean",
    "throttle_ms_max",
    "first_ts_ms",
    "last_ts_ms",
    "sources",
]
QUOTA_COLUMNS = ["quota", "quota_level", "util_p99_pct", "util_max_pct", "throttled_fraction"]


def _largest(values: list) -> float | None:
    """Spark's ``max`` of doubles: nulls skipped, NaN above every number."""
    present = [v for v in values if v is not None]
    if any(isinstance(v, float) and math.isnan(v) for v in present):
        return math.nan
    return max(present) if present else None


def _smallest(values: list) -> int | None:
    present = [v for v in values if v is not None]
    return min(present) if present else None


def _sum(values: Iterable) -> float | None:
    """Spark's ``sum``: left to right, nulls skipped, None when every value is null."""
    total = None
    for value in values:
        if value is not None:
            total = value if total is None else total + value
    return total


def _entity_row(key: tuple, rows: list[dict]) -> dict:
    out = dict(zip(ENTITY_COLUMNS, key))
    out.update({name: _sum(r[name] for r in rows) or 0 for name in _SUMMED})
    out.update({name: _largest([r[name] for r in rows]) for name in _WORST})
    # Σ(mean × n) / Σn: the mean over every throttled sample of every broker
    weighted = _sum(
        None if r["throttle_ms_mean"] is None else r["throttle_ms_mean"] * r["throttled_samples"] for r in rows
    )
    throttled = out["throttled_samples"]
    out["throttle_ms_mean"] = weighted / throttled if weighted is not None and throttled else None
    out["first_ts_ms"] = _smallest([r["first_ts_ms"] for r in rows])
    out["last_ts_ms"] = _largest([r["last_ts_ms"] for r in rows])
    out["sources"] = sum(1 for r in rows if r["source"] is not None)
    return {name: out[name] for name in STATS_COLUMNS}


def entity_stats(per_source: Iterable[dict]) -> list[dict]:
    """One row per entity (:data:`STATS_COLUMNS`) from rows per (entity, source), in first-seen order."""
    grouped: dict[tuple, list[dict]] = {}
    for row in per_source:
        grouped.setdefault(tuple(row[c] for c in ENTITY_COLUMNS), []).append(row)
    return [_entity_row(key, rows) for key, rows in grouped.items()]


def with_quotas(stats: list[dict], resolved: list) -> list[dict]:
    """Attach the effective quota (``quotas.ResolvedQuota``, matched on the entity; none: None)
    and utilisation (KIP-1373: rate / quota × 100, uncapped), and the throttled fraction."""
    quota_of = {(q.kind, q.user, q.client_id, q.ip): q for q in resolved}
    rows = []
    for row in stats:
        found = quota_of.get(tuple(row[c] for c in ENTITY_COLUMNS))
        quota = found.quota if found is not None else None
        rows.append(
            {
                **row,
                "quota": quota,
                "quota_level": found.level if found is not None else None,
                "util_p99_pct": _percent_of(row["p99"], quota),
                "util_max_pct": _percent_of(row["max"], quota),
                "throttled_fraction": (
                    row["throttled_samples"] / row["throttle_samples"] if row["throttle_samples"] > 0 else 0.0
                ),
            }
        )
    return rows


def _percent_of(value: float | None, quota: float | None) -> float | None:
    """``value / quota × 100`` as Spark computes it: null in, null out; x / 0 is null."""
    if value is None or quota is None or quota == 0:
        return None
    return value / quota * 100.0
