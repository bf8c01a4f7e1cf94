"""Self-contained HTML report: summary cards, usage-vs-quota charts, throttle heat map, tables.

Pure rendering (no Spark): ``jobs`` collects small results to the driver and calls
:func:`render_html`. The page has no external resources, so it opens offline.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from html import escape

from kconfigs_analysis import svg_charts
from kconfigs_analysis.kinds import KIND_QUOTA_KEY, KIND_RATE_UNIT
from kconfigs_analysis.quotas import NO_QUOTA_SOURCE, QuotaSource
from kconfigs_analysis.sizing import plain_number

_KEY_UNIT = {key: KIND_RATE_UNIT[kind] for kind, key in KIND_QUOTA_KEY.items()}

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#0f172a;background:#f8fafc}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 10px;border-bottom:1px solid #e2e8f0;padding-bottom:4px}
.sub{color:#64748b;font-size:13px}.cards{display:flex;gap:12px;flex-wrap:wrap;margin:16px 0}
.card{background:#fff;border:1px solid #e2e8f0;border-radius:8px;padding:10px 16px;min-width:130px}
.card .v{font-size:22px;font-weight:600}.card .k{font-size:12px;color:#64748b}.card.warn .v{color:#b91c1c}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(570px,1fr));gap:12px}
.chart{background:#fff;border:1px solid #e2e8f0;border-radius:8px}
.chart-title{font-size:13px;font-weight:600;fill:#0f172a}.axis{font-size:10.5px;fill:#475569}
.grid{stroke:#e2e8f0;stroke-width:1}.quota-label{fill:#b91c1c}
table{border-collapse:collapse;background:#fff;font-size:12.5px;width:100%}
th,td{border-bottom:1px solid #e2e8f0;padding:5px 8px;text-align:left}th{background:#f1f5f9}
td.n{text-align:right;font-variant-numeric:tabular-nums}
.bar{display:inline-block;height:8px;background:#2563eb;border-radius:2px;vertical-align:middle}
.bar.hot{background:#dc2626}.legend{font-size:12px;color:#475569;margin:6px 0}
.legend span{display:inline-block;width:14px;height:4px;margin:0 4px 2px 10px;vertical-align:middle}
code{background:#f1f5f9;padding:1px 4px;border-radius:3px}
"""


@dataclass(frozen=True)
class ReportData:
    """Everything the page shows; plain Python values collected from Spark."""

    inputs: list[str]
    summary: dict
    rows: list[dict]  # entity stats joined with quotas (transforms.with_quotas)
    charts: list[tuple[dict, list[dict]]]  # (entity row, time-bucket points)
    heat_rows: list[tuple[str, list[float | None]]]
    heat_buckets_ms: list[int]
    idle: list[dict] = field(default_factory=list)
    malformed_examples: list[str] = field(default_factory=list)
    recommendations: list = field(default_factory=list)
    top_n: int = 10
    quota_source: QuotaSource = NO_QUOTA_SOURCE
    rate_windows: list[str] = field(default_factory=list)  # what a rate sample averages, per input kind


#: what one rate sample of each input format averages over, said beside every comparison with a quota
RATE_WINDOW_TEXT = {
    "jmxtool": "broker samples: Kafka's Rate over its quota window (quota.window.num × quota.window.size.seconds, 11 s)",
    "prometheus": "broker samples: Kafka's Rate over its quota window (quota.window.num × quota.window.size.seconds, 11 s)",
    "usage-log": "usage-log samples: one logged window each (1 s by default), not Kafka's 11 s quota window: "
    "a client Kafka holds to its quota over 11 s can read above it in single windows",
}


def rate_windows_of(formats) -> list[str]:
    """The :data:`RATE_WINDOW_TEXT` lines for the input formats read (each line once)."""
    return list(dict.fromkeys(RATE_WINDOW_TEXT[f] for f in formats if f in RATE_WINDOW_TEXT))


def entity_label(row: dict) -> str:
    """``user=alice client-id=app-1`` (tags that are present), or ``ip=10.0.0.7``."""
    if row.get("ip"):
        return f"ip={row['ip']}"
    tags = [
        f"user={row['user']}" if row.get("user") else "",
        f"client-id={row['client_id']}" if row.get("client_id") else "",
    ]
    return " ".join(t for t in tags if t)


def quota_entity_text(entity: dict) -> str:
    """A configured quota entity: ``client-id=<default>`` for a default (None), as in quota files."""
    return " ".join(f"{tag}={'<default>' if name is None else name}" for tag, name in entity.items())


def _time(ts_ms: int | None) -> str:
    if ts_ms is None:
        return "–"
    return dt.datetime.fromtimestamp(ts_ms / 1000, tz=dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _cards(data: ReportData) -> str:
    s = data.summary
    throttled = sum(1 for r in data.rows if r.get("throttled_samples"))
    over = sum(1 for r in data.rows if (r.get("util_p99_pct") or 0) >= 80)
    cards = [
        ("rate samples", f"{s.get('rate_samples', 0):,}", False),
        ("entities", f"{len(data.rows):,}", False),
        ("throttled entities", f"{throttled:,}", throttled > 0),
        ("p99 ≥ 80 % of quota", f"{over:,}", over > 0),
        ("idle quotas", f"{len(data.idle):,}", False),
        ("malformed lines", f"{s.get('malformed_lines', 0):,}", s.get("malformed_lines", 0) > 0),
    ]
    items = "".join(
        f'<div class="card{" warn" if warn else ""}"><div class="v">{v}</div><div class="k">{escape(k)}</div></div>'
        for k, v, warn in cards
    )
    return f'<div class="cards">{items}</div>'


def _util_cell(value: float | None) -> str:
    if value is None:
        return '<td class="n">no quota</td>'
    width = max(1, min(int(value), 150))
    return f'<td class="n">{value:.1f} % <span class="bar{" hot" if value >= 100 else ""}" style="width:{width // 2}px"></span></td>'


def _offenders_table(data: ReportData) -> str:
    head = (
        "<tr><th>kind</th><th>entity</th><th>mean</th><th>p50</th><th>p95</th><th>p99</th><th>max</th><th>quota</th>"
        "<th>p99 / quota</th><th>throttled</th><th>mean throttle-time when throttled</th></tr>"
    )
    body = []
    for r in data.rows[: data.top_n]:
        unit = KIND_RATE_UNIT.get(r["kind"], "")
        cells = [escape(r["kind"]), escape(entity_label(r))] + [
            svg_charts.human_rate(r.get(c), unit) for c in ("mean", "p50", "p95", "p99", "max")
        ]
        quota = svg_charts.human_rate(r.get("quota"), unit) if r.get("quota") else "unlimited"
        throttle = "–" if r.get("throttle_ms_mean") is None else f"{r['throttle_ms_mean']:,.0f} ms"
        body.append(
            "<tr>"
            + "".join(f"<td>{c}</td>" for c in cells[:2])
            + "".join(f'<td class="n">{c}</td>' for c in cells[2:])
            + f'<td class="n">{quota}</td>'
            + _util_cell(r.get("util_p99_pct"))
            + f'<td class="n">{r.get("throttled_fraction", 0):.1%}</td><td class="n">{throttle}</td></tr>'
        )
    return f"<table>{head}{''.join(body)}</table>"


def _simple_table(headers: list[str], rows: list[list[str]]) -> str:
    if not rows:
        return '<p class="sub">none</p>'
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _charts_section(data: ReportData) -> str:
    charts = []
    for row, points in data.charts:
        unit = KIND_RATE_UNIT.get(row["kind"], "")
        charts.append(svg_charts.line_chart(points, row.get("quota"), unit, f"{row['kind']}: {entity_label(row)}"))
    legend = (
        '<div class="legend"><span style="background:#2563eb"></span>mean rate per bucket'
        '<span style="background:#2563eb;opacity:.25;height:8px"></span>max rate'
        '<span style="background:#dc2626"></span>effective quota'
        '<span style="background:#f97316;height:6px;width:4px"></span>throttled</div>'
    )
    return legend + f'<div class="charts">{"".join(charts)}</div>' if charts else '<p class="sub">no series</p>'


def render_html(data: ReportData) -> str:
    """The whole page as one string."""
    s = data.summary
    heat = (
        svg_charts.heat_map(data.heat_rows, data.heat_buckets_ms, "throttled share of samples per time bucket")
        if data.heat_rows
        else '<p class="sub">no entity was throttled</p>'
    )
    idle_rows = [
        [
            entity_label(
                {
                    "user": i["entity"].get("user"),
                    "client_id": i["entity"].get("client-id"),
                    "ip": i["entity"].get("ip"),
                }
            ),
            i["key"],
            svg_charts.human_rate(i["quota"], _KEY_UNIT.get(i["key"], "")),
        ]
        for i in data.idle
    ]
    recs = [
        [
            r.kind,
            quota_entity_text(r.entity),
            r.key,
            "unlimited" if r.current is None else plain_number(r.current),
            plain_number(r.recommended),
            r.reason,
        ]
        for r in data.recommendations
    ]
    sections = [
        f"<h1>Kafka client quota report</h1><div class='sub'>{escape(_time(s.get('first_ts_ms')))} → {escape(_time(s.get('last_ts_ms')))} · "
        f"{len(data.inputs)} input file(s): {escape(', '.join(data.inputs[:6]))}{' …' if len(data.inputs) > 6 else ''}</div>",
        f"<div class='sub' id='quota-source'>Quotas in force: {escape(data.quota_source.text)}</div>",
        "".join(f"<div class='sub rate-window'>Rates: {escape(line)}</div>" for line in data.rate_windows),
        _cards(data),
        "<h2>Usage against the effective quota (top entities)</h2>",
        _charts_section(data),
        "<h2>Throttling heat map</h2>",
        heat,
        f"<h2>Top {data.top_n} by utilisation and throttling</h2>",
        _offenders_table(data),
        "<h2>Idle quotas (set but never used)</h2>",
        _simple_table(["entity", "key", "quota"], idle_rows),
    ]
    if recs:
        sections += [
            "<h2>Recommendations</h2>",
            _simple_table(["kind", "entity", "key", "current", "recommended", "why"], recs),
        ]
    if data.malformed_examples:
        sections += [
            f"<h2>Malformed lines ({s.get('malformed_lines', 0):,})</h2>",
            "<ul>"
            + "".join(f"<li><code>{escape(line[:200])}</code></li>" for line in data.malformed_examples)
            + "</ul>",
        ]
    return f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>kconfigs quota report</title><style>{_CSS}</style></head><body>{''.join(sections)}</body></html>"
