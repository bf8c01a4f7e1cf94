"""Time ranges of a Prometheus query: durations, instants, and chunks under the points limit.

Pure: no I/O and no clock (``now_s`` comes in). Prometheus refuses a ``query_range`` that would
return more than 11,000 points per series ("exceeded maximum resolution of 11,000 points per
timeseries"), so a long range is cut into chunks of at most :data:`MAX_POINTS_PER_QUERY` steps.
"""

from __future__ import annotations

import datetime
import re

from kconfigs.errors import UsageError

#: Prometheus' own limit is 11,000 points per series per query; leave a margin
MAX_POINTS_PER_QUERY = 10_000
_UNIT_S = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400, "y": 365 * 86400}
_DURATION_RE = re.compile(r"^(?:\d+(?:ms|s|m|h|d|w|y))+$")
_PART_RE = re.compile(r"(\d+)(ms|s|m|h|d|w|y)")


def parse_duration_s(text: str) -> float:
    """Prometheus duration (``15s``, ``1h30m``, ``7d``) or plain seconds -> seconds. :raises UsageError:"""
    value = text.strip()
    try:
        seconds = float(value)
    except ValueError:
        if not _DURATION_RE.match(value):
            raise UsageError(f"Invalid duration {text!r}: use e.g. 15s, 30m, 24h, 7d or 1h30m") from None
        seconds = sum(int(n) * _UNIT_S[unit] for n, unit in _PART_RE.findall(value))
    if seconds <= 0:
        raise UsageError(f"Invalid duration {text!r}: must be more than 0")
    return seconds


def parse_instant_s(text: str, now_s: float) -> float:
    """``now``, a duration ago (``24h``), epoch seconds, or an ISO 8601 / RFC 3339 time (UTC
    unless it has an offset) -> epoch seconds. :raises UsageError:"""
    value = text.strip()
    if value == "now":
        return now_s
    if _DURATION_RE.match(value):
        return now_s - parse_duration_s(value)
    try:
        return float(value)
    except ValueError:
        pass
    try:
        moment = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(
            f"Invalid time {text!r}: use a duration ago (24h), epoch seconds, "
            "or an ISO time such as 2026-05-01T10:00:00Z"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    return moment.timestamp()


def query_range_of(since: str, until: str | None, now_s: float) -> tuple[float, float]:
    """(start, end) epoch seconds from ``--since``/``--until``. :raises UsageError: empty range."""
    end_s = parse_instant_s(until, now_s) if until else now_s
    start_s = parse_instant_s(since, end_s) if _DURATION_RE.match(since.strip()) else parse_instant_s(since, now_s)
    if start_s >= end_s:
        raise UsageError(f"--since ({since}) is not before --until ({until or 'now'})")
    return start_s, end_s


def chunks(
    start_s: float, end_s: float, step_s: float, max_points: int = MAX_POINTS_PER_QUERY
) -> list[tuple[float, float]]:
    """Consecutive ``(start, end)`` sub-ranges, each of at most ``max_points`` evaluation steps.

    query_range evaluates at ``start, start + step, ...`` up to ``end`` inclusive, so a chunk of
    n points spans ``(n - 1) × step`` and the next one starts a step after it: together they hit
    exactly the instants one query over the whole range would (24 h at 15 s = 5,761 points = one
    chunk; 7 d at 15 s = 40,321 points = 5 chunks).
    """
    span_s = (max_points - 1) * step_s
    result, current = [], start_s
    while current <= end_s:
        last = min(current + span_s, end_s)
        result.append((current, last))
        current = last + step_s
    return result
