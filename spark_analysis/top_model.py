"""``kconfigs top``'s rows: quota metrics read from one or more sources, each set against the
effective quota Kafka applies to it. Pure: values in, rows out (no I/O, no clock, no Spark).

Kafka tags a quota metric with the *sensor's* tags, not the client's: with quotas at user level a
producer's ``byte-rate`` is ``{user="alice", client-id=""}`` whatever its client-id. So a series'
tags name the sensor, and its quota is ``QuotaSnapshot.limit_for_tags`` for those tags — the
broker's own ``quotaLimit`` — with the level (1..8, Kafka's precedence) that holds it.

Sources add up per series the way Kafka's quotas are enforced: per broker (and per gateway
instance), so an entity's usage across brokers is the sum of their rates, and each broker holds it
to the full quota. The throttle time is an average per broker (``throttle-time`` is an Avg), so the
largest one is shown rather than a sum.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable, Mapping

from kconfigs.keys import QUOTA_KINDS

#: the quota kinds whose Kafka metrics top reads, in display order
KINDS: tuple[str, ...] = ("produce", "fetch", "request", "controller_mutation", "connection")
#: a change of the rate between refreshes under this share of it is shown as steady
TREND_DEAD_BAND = 0.05


@dataclass(frozen=True)
class SeriesKey:
    """One quota sensor: its kind and tags (user desanitized; "" = the tag is empty)."""

    kind: str
    user: str = ""
    client_id: str = ""
    ip: str = ""


@dataclass(frozen=True)
class Reading:
    """What one source says of one series: the Rate the quota is checked against, and the
    average throttle time given (ms; NaN or None when not throttled recently)."""

    rate: float = 0.0
    throttle_ms: float | None = None


@dataclass(frozen=True)
class Quota:
    """The quota of a series: ``value`` None = no quota; ``level`` as ``kconfigs resolve`` says
    (1..8 for clients, 1 = the ip / 2 = ``<default>`` for ips, 0 = none), ``path`` its znode."""

    value: float | None
    level: int
    path: str | None


@dataclass(frozen=True)
class Row:
    key: SeriesKey
    rate: float
    quota: Quota
    throttle_ms: float
    trend: str  # "up" | "down" | "steady" | "new"
    per_source: Mapping[str, Reading] = field(default_factory=dict, compare=False)

    @property
    def percent(self) -> float | None:
        if self.quota.value is None or self.quota.value <= 0:
            return None
        return 100.0 * self.rate / self.quota.value

    @property
    def throttled(self) -> bool:
        return self.throttle_ms > 0


def quota_of(key: SeriesKey, snapshot) -> Quota:
    """The broker's ``quotaLimit`` for this sensor (``snapshot``: an enforcement QuotaSnapshot)."""
    if key.kind == "connection":
        resolved = snapshot.resolve_ip(key.ip)
        return Quota(resolved.value, resolved.level, resolved.path)
    quota_key = QUOTA_KINDS[key.kind].name
    value, level = snapshot.limit_for_tags(quota_key, key.user, key.client_id, key.user, key.client_id)
    return Quota(value, level, snapshot.znode_path(level, key.user, key.client_id))


def _throttle(readings: Iterable[Reading]) -> float:
    values = [r.throttle_ms for r in readings if r.throttle_ms is not None and not math.isnan(r.throttle_ms)]
    return max(values, default=0.0)


def _trend(rate: float, previous: float | None) -> str:
    if previous is None:
        return "new"
    if abs(rate - previous) <= TREND_DEAD_BAND * max(abs(previous), abs(rate)):
        return "steady"
    return "up" if rate > previous else "down"


def build_rows(
    readings_by_source: Mapping[str, Mapping[SeriesKey, Reading]],
    snapshot,
    previous_rates: Mapping[SeriesKey, float] | None = None,
) -> list[Row]:
    """One row per series any source reports, its rate summed over the sources."""
    merged: dict[SeriesKey, dict[str, Reading]] = {}
    for source, readings in readings_by_source.items():
        for key, reading in readings.items():
            merged.setdefault(key, {})[source] = reading
    previous = previous_rates or {}
    rows = []
    for key, per_source in merged.items():
        rate = sum(r.rate for r in per_source.values() if not math.isnan(r.rate))
        rows.append(
            Row(
                key,
                rate,
                quota_of(key, snapshot),
                _throttle(per_source.values()),
                _trend(rate, previous.get(key)),
                per_source,
            )
        )
    return rows


def is_active(row: Row) -> bool:
    """A sensor that measured something, or throttled, in its window (idle sensors read 0)."""
    return row.rate > 0 or row.throttled


def _percent_or_minus_one(row: Row) -> float:
    percent = row.percent
    return -1.0 if percent is None else percent


#: sort columns: name -> key function (descending for numbers, ascending for names)
SORT_KEYS = {
    "percent": (_percent_or_minus_one, True),
    "rate": (lambda row: row.rate, True),
    "throttle": (lambda row: row.throttle_ms, True),
    "user": (lambda row: (row.key.user, row.key.client_id, row.key.kind), False),
    "client": (lambda row: (row.key.client_id, row.key.user, row.key.kind), False),
    "kind": (lambda row: (KINDS.index(row.key.kind), row.key.user, row.key.client_id), False),
}


def sorted_rows(rows: Iterable[Row], column: str = "percent") -> list[Row]:
    """Rows in the column's order; ties broken by kind, user and client so the screen is stable."""
    key, descending = SORT_KEYS[column]
    stable = sorted(rows, key=lambda row: (KINDS.index(row.key.kind), row.key.user, row.key.client_id, row.key.ip))
    return sorted(stable, key=key, reverse=descending)


def matching(rows: Iterable[Row], text: str) -> list[Row]:
    """Rows whose user, client-id or ip contains ``text`` (case-insensitive); all when empty."""
    needle = text.lower()
    return [r for r in rows if not needle or any(needle in v.lower() for v in (r.key.user, r.key.client_id, r.key.ip))]


def above(rows: Iterable[Row], percent: float) -> list[Row]:
    """Rows whose usage is over ``percent`` of their quota (rows without a quota never are)."""
    return [r for r in rows if r.percent is not None and r.percent > percent]
