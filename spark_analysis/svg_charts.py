"""Inline SVG charts for the HTML report: pure functions from numbers to SVG text.

Hand-written because the report must open with no network and no JS library would be small
enough to inline comfortably; two chart types (line-vs-quota and heat map) are all we need.
"""

from __future__ import annotations

import datetime as dt
import math
from html import escape

PALETTE_RATE = "#2563eb"
PALETTE_QUOTA = "#dc2626"
PALETTE_THROTTLE = "#f97316"


def human_rate(value: float | None, unit: str) -> str:
    """1536000 B/s -> '1.46 MiB/s'; other units keep 3 significant digits."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if unit == "B/s":
        for scale, name in ((2**30, "GiB/s"), (2**20, "MiB/s"), (2**10, "KiB/s")):
            if abs(value) >= scale:
                return f"{value / scale:.3g} {name}"
        return f"{value:.3g} B/s"
    return f"{value:.3g} {unit}"


def _time_label(ts_ms: float, span_ms: float) -> str:
    moment = dt.datetime.fromtimestamp(ts_ms / 1000, tz=dt.timezone.utc)
    return moment.strftime("%H:%M:%S" if span_ms < 6 * 3600_000 else "%m-%d %H:%M")


def _nice_max(value: float) -> float:
    if value <= 0:
        return 1.0
    exponent = 10 ** math.floor(math.log10(value))
    return next(m * exponent for m in (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10) if m * exponent >= value)


def line_chart(
    points: list[dict], quota: float | None, unit: str, title: str, width: int = 560, height: int = 220
) -> str:
    """Mean rate line, max-rate band, dashed quota line and throttle ticks over time.

    ``points``: dicts with bucket_ms, rate_mean, rate_max, throttled_samples (sorted by time).
    """
    left, right, top, bottom = 70, 12, 28, 34
    plot_w, plot_h = width - left - right, height - top - bottom
    xs = [p["bucket_ms"] for p in points] or [0]
    x0, x1 = min(xs), max(max(xs), min(xs) + 1)
    peak = max([p["rate_max"] or 0 for p in points] + [quota or 0])
    y_max = _nice_max(peak * 1.05)

    def x(ts: float) -> float:
        return left + (ts - x0) / (x1 - x0) * plot_w

    def y(value: float) -> float:
        return top + plot_h - (value / y_max) * plot_h

    parts = [
        f'<svg class="chart line-chart" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img">',
        f"<title>{escape(title)}</title>",
        f'<text x="{left}" y="16" class="chart-title">{escape(title)}</text>',
    ]
    for i in range(5):  # horizontal grid and y labels
        value = y_max * i / 4
        parts.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y(value):.1f}" y2="{y(value):.1f}" class="grid"/>')
        parts.append(
            f'<text x="{left - 6}" y="{y(value) + 4:.1f}" class="axis" text-anchor="end">{escape(human_rate(value, unit))}</text>'
        )
    for i, anchor in enumerate(("start", "middle", "middle", "end")):  # ends stay inside the box
        ts = x0 + (x1 - x0) * i / 3
        parts.append(
            f'<text x="{x(ts):.1f}" y="{height - 12}" class="axis" text-anchor="{anchor}">{escape(_time_label(ts, x1 - x0))}</text>'
        )
    if points:
        band = [f"{x(p['bucket_ms']):.1f},{y(p['rate_max'] or 0):.1f}" for p in points]
        base = [f"{x(p['bucket_ms']):.1f},{y(0):.1f}" for p in reversed(points)]
        parts.append(
            f'<polygon points="{" ".join(band + base)}" fill="{PALETTE_RATE}" fill-opacity="0.12" stroke="none"/>'
        )
        line = " ".join(f"{x(p['bucket_ms']):.1f},{y(p['rate_mean'] or 0):.1f}" for p in points)
        parts.append(
            f'<polyline points="{line}" fill="none" stroke="{PALETTE_RATE}" stroke-width="1.8" class="rate-line"/>'
        )
        for p in points:
            if p.get("throttled_samples"):
                parts.append(
                    f'<rect x="{x(p["bucket_ms"]) - 1:.1f}" y="{top + plot_h + 2}" width="3" height="6" fill="{PALETTE_THROTTLE}" class="throttle-tick"/>'
                )
    if quota:
        parts.append(
            f'<line x1="{left}" x2="{left + plot_w}" y1="{y(quota):.1f}" y2="{y(quota):.1f}" stroke="{PALETTE_QUOTA}" stroke-dasharray="6 4" stroke-width="1.5" class="quota-line"/>'
        )
        parts.append(
            f'<text x="{left + plot_w - 4}" y="{y(quota) - 5:.1f}" class="axis quota-label" text-anchor="end">quota {escape(human_rate(quota, unit))}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _heat_color(fraction: float) -> str:
    """0 -> pale grey, 1 -> deep red (linear in a warm ramp)."""
    if fraction <= 0:
        return "#f1f5f9"
    start, end = (254, 215, 170), (185, 28, 28)
    r, g, b = (round(s + (e - s) * min(fraction, 1.0)) for s, e in zip(start, end))
    return f"#{r:02x}{g:02x}{b:02x}"


def heat_map(
    rows: list[tuple[str, list[float | None]]], bucket_starts_ms: list[int], title: str, width: int = 900
) -> str:
    """Entities (rows) × time buckets (columns), colour = throttled fraction of samples."""
    label_w, top, cell_h = 320, 30, 18
    columns = max(len(bucket_starts_ms), 1)
    cell_w = (width - label_w - 10) / columns
    height = top + cell_h * len(rows) + 30
    parts = [
        f'<svg class="chart heat-map" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img">',
        f"<title>{escape(title)}</title>",
        f'<text x="0" y="16" class="chart-title">{escape(title)}</text>',
    ]
    span = (bucket_starts_ms[-1] - bucket_starts_ms[0]) if len(bucket_starts_ms) > 1 else 1
    for r, (label, fractions) in enumerate(rows):
        y = top + r * cell_h
        parts.append(
            f'<text x="{label_w - 8}" y="{y + 13}" class="axis" text-anchor="end">{escape(label if len(label) <= 50 else label[:49] + "…")}</text>'
        )
        for c, fraction in enumerate(fractions):
            shown = "no data" if fraction is None else f"{fraction:.0%} throttled"
            fill = "#ffffff" if fraction is None else _heat_color(fraction)
            tip = f"{label} @ {_time_label(bucket_starts_ms[c], span)}: {shown}"
            parts.append(
                f'<rect x="{label_w + c * cell_w:.1f}" y="{y}" width="{max(cell_w - 1, 1):.1f}" height="{cell_h - 2}" fill="{fill}" class="heat-cell"><title>{escape(tip)}</title></rect>'
            )
    for i, anchor in enumerate(("start", "middle", "middle", "end")):
        index = min(round((columns - 1) * i / 3), len(bucket_starts_ms) - 1)
        if index >= 0:
            x = label_w + (index + (1 if anchor == "end" else 0)) * cell_w
            parts.append(
                f'<text x="{x:.1f}" y="{height - 10}" class="axis" text-anchor="{anchor}">{escape(_time_label(bucket_starts_ms[index], span))}</text>'
            )
    parts.append("</svg>")
    return "".join(parts)
