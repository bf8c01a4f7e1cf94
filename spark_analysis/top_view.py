"""What ``kconfigs top`` shows: one refresh's state as a rich table (terminal) or a JSON document
(``--once -o json``). No I/O here: the command polls, this module draws."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from kconfigs.keys import QUOTA_KINDS
from kconfigs_analysis.top_model import Row, matching, sorted_rows

TREND_ARROWS = {"up": "↑", "down": "↓", "steady": "→", "new": "·"}
KEYS_HELP = "q quit · p pause · s sort · % r t u c k sort by column · / filter · d per-source · Esc clear filter"


@dataclass(frozen=True)
class SourceState:
    name: str
    error: str | None = None  # None: read this refresh; else why not (its last values are kept)


@dataclass(frozen=True)
class Screen:
    """Everything one frame shows."""

    rows: list[Row]
    sources: list[SourceState]
    quota_source: str
    quota_error: str | None = None
    sort: str = "percent"
    filter_text: str = ""
    filter_editing: bool = False
    paused: bool = False
    per_source: bool = False
    refresh_s: float = 2.0
    show_idle: bool = False
    stale: frozenset = field(default_factory=frozenset)  # series keys shown from an unreachable source


def format_amount(value: float | None, kind: str) -> str:
    """A rate or quota in its kind's unit, bytes scaled (KB/s = 1000 B/s, as kafka-configs' values)."""
    if value is None:
        return "none"
    unit = QUOTA_KINDS[kind].unit
    if unit == "B/s":
        for scale, prefix in ((1e9, "G"), (1e6, "M"), (1e3, "K")):
            if abs(value) >= scale:
                return f"{value / scale:.2f} {prefix}B/s"
        return f"{value:.0f} B/s"
    if unit == "% thread":
        return f"{value:.1f} %"
    return f"{value:.2f} {unit}"


def level_text(row: Row) -> str:
    if row.quota.level == 0:
        return "-"
    return f"{row.quota.level} {(row.quota.path or '').removeprefix('/config/')}"


def percent_text(row: Row) -> str:
    percent = row.percent
    return "-" if percent is None else f"{percent:.0f}%"


def visible_rows(screen: Screen) -> list[Row]:
    rows = screen.rows if screen.show_idle else [r for r in screen.rows if r.rate > 0 or r.throttled]
    return sorted_rows(matching(rows, screen.filter_text), screen.sort)


def render(screen: Screen, height: int = 50):
    """The frame as a rich renderable: status lines, then the table (as many rows as fit)."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    status = Text()
    for source in screen.sources:
        if source.error is None:
            status.append(f"● {source.name}  ", style="green")
        else:
            status.append(f"✖ {source.name}: unreachable ({source.error}); last values kept  ", style="bold red")
    quotas = Text(f"quotas: {screen.quota_source}", style="red" if screen.quota_error else "")
    if screen.quota_error:
        quotas.append(f" — cannot be read ({screen.quota_error}); the last quotas are shown")
    mode = f"every {screen.refresh_s:g} s · sorted by {screen.sort}"
    if screen.filter_text or screen.filter_editing:
        mode += f" · filter: {screen.filter_text}{'_' if screen.filter_editing else ''}"
    if screen.paused:
        mode += " · PAUSED"
    rows = visible_rows(screen)
    table = Table(expand=True, pad_edge=False, box=None, header_style="bold reverse")
    for name, justify in _COLUMNS:
        table.add_column(name, justify=justify, no_wrap=True)
    for row in rows[: max(height - 6, 1)]:
        style = "dim" if row.key in screen.stale else ("bold red" if row.throttled else None)
        table.add_row(*_cells(row, screen.per_source), style=style)
    parts = [status, quotas, Text(mode, style="cyan"), table]
    if not rows:
        parts.append(Text(_empty_reason(screen), style="yellow"))
    parts.append(Text(KEYS_HELP, style="dim"))
    return Group(*parts)


_COLUMNS = (
    ("TYPE", "left"),
    ("USER", "left"),
    ("CLIENT-ID", "left"),
    ("IP", "left"),
    ("RATE", "right"),
    ("QUOTA", "right"),
    ("LEVEL", "left"),
    ("%QUOTA", "right"),
    ("THROTTLE", "right"),
    ("THR", "left"),
    ("TREND", "left"),
)


def _cells(row: Row, per_source: bool) -> list[str]:
    rate = format_amount(row.rate, row.key.kind)
    if per_source and len(row.per_source) > 1:
        rate += " (" + " + ".join(format_amount(r.rate, row.key.kind) for r in row.per_source.values()) + ")"
    return [
        QUOTA_KINDS[row.key.kind].metric_group if row.key.kind != "connection" else "Connection",
        row.key.user,
        row.key.client_id,
        row.key.ip,
        rate,
        format_amount(row.quota.value, row.key.kind) if row.quota.value is not None else "no quota",
        level_text(row),
        percent_text(row),
        f"{row.throttle_ms:.0f} ms" if row.throttled else "0",
        "yes" if row.throttled else "no",
        TREND_ARROWS[row.trend],
    ]


def _empty_reason(screen: Screen) -> str:
    if screen.sources and all(s.error is not None for s in screen.sources):
        return "no source could be read"
    if screen.filter_text and screen.rows:
        return f"no active entity matches {screen.filter_text!r}"
    return "no traffic: no quota sensor measured anything in its window"


def snapshot_document(screen: Screen) -> dict:
    """``--once -o json``: the rows (sorted and filtered as on screen) and each source's state."""
    return {
        "quota_source": screen.quota_source,
        "quota_error": screen.quota_error,
        "sources": [{"name": s.name, "reachable": s.error is None, "error": s.error} for s in screen.sources],
        "rows": [_row_document(r, r.key in screen.stale) for r in visible_rows(screen)],
    }


def _number(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else value


def _row_document(row: Row, stale: bool) -> dict:
    return {
        "type": row.key.kind,
        "user": row.key.user or None,
        "client_id": row.key.client_id or None,
        "ip": row.key.ip or None,
        "rate": row.rate,
        "unit": QUOTA_KINDS[row.key.kind].unit,
        "quota": _number(row.quota.value),
        "quota_key": QUOTA_KINDS[row.key.kind].name,
        "level": row.quota.level,
        "quota_path": row.quota.path,
        "percent_of_quota": _number(row.percent),
        "throttle_ms": row.throttle_ms,
        "throttled": row.throttled,
        "trend": row.trend,
        "stale": stale,
        "per_source": {
            name: {"rate": r.rate, "throttle_ms": _number(r.throttle_ms)} for name, r in row.per_source.items()
        },
    }


def plain_table(screen: Screen) -> str:
    """``--once -o table``: the rows as fixed-width text, one line each (for pipes and logs)."""
    rows = [[name for name, _ in _COLUMNS]] + [_cells(r, screen.per_source) for r in visible_rows(screen)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(_COLUMNS))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]
    lines += [f"# {s.name}: unreachable ({s.error})" for s in screen.sources if s.error is not None]
    if len(rows) == 1:
        lines.append(f"# {_empty_reason(screen)}")
    return "\n".join(lines)
