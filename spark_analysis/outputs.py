"""Report outputs other than HTML: the rich terminal summary and json / csv / parquet rows.

stdout carries results only; every file is written to a temp name and renamed, so a failure
never leaves half a file behind.
"""

from __future__ import annotations

import csv
import io
import json
import sys

from kconfigs.atomic_file import write_file_atomically
from kconfigs.errors import UsageError
from kconfigs_analysis.kinds import KIND_RATE_UNIT
from kconfigs_analysis.report import ReportData, entity_label
from kconfigs_analysis.svg_charts import human_rate

MACHINE_FORMATS = ("json", "csv", "parquet")
PIPE_WIDTH = 200  # rich uses 80 columns when stdout is not a terminal: too narrow for entity names


def _console():
    from rich.console import Console

    return Console() if sys.stdout.isatty() else Console(width=PIPE_WIDTH)


def write_text_output(text: str, path: str | None) -> None:
    if path is None:
        sys.stdout.write(text)
    else:
        write_file_atomically(path, text)


def report_document(data: ReportData, extra: dict | None = None) -> dict:
    """The stable JSON document of a report."""
    document = {
        "inputs": data.inputs,
        "quota_source": data.quota_source.as_json(),
        "rate_windows": data.rate_windows,
        "summary": data.summary,
        "entities": data.rows,
        "idle_quotas": data.idle,
        "malformed_examples": data.malformed_examples,
    }
    return {**document, **(extra or {})}


def rows_to_csv(rows: list[dict]) -> str:
    if not rows:
        return ""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def write_rows(rows: list[dict], fmt: str, path: str | None, document: dict | None = None) -> None:
    """json (whole document) / csv (rows) to ``path`` or stdout; parquet (rows) needs ``path``."""
    if fmt == "json":
        write_text_output(json.dumps(document if document is not None else rows, indent=2, default=str) + "\n", path)
    elif fmt == "csv":
        write_text_output(rows_to_csv(rows), path)
    elif fmt == "parquet":
        if path is None:
            raise UsageError("--format parquet needs --output PATH")
        import pandas as pd

        buffer = io.BytesIO()
        pd.DataFrame(rows).to_parquet(buffer, index=False)
        write_file_atomically(path, buffer.getvalue())
    else:
        raise UsageError(f"Unknown format {fmt}: use one of table, {', '.join(MACHINE_FORMATS)}")


def print_summary(data: ReportData, console=None) -> None:
    """Rich tables on stdout: counts, then the top-N entities by throttling and utilisation."""
    from rich.table import Table

    console = console or _console()
    s = data.summary
    ignored = f", {s['ignored_columns']:,} non-quota column(s) ignored" if s.get("ignored_columns") else ""
    console.print(
        f"[bold]{s['rate_samples']:,}[/] rate samples from {len(data.inputs)} file(s), "
        f"{len(data.rows):,} entities, [bold]{s['malformed_lines']:,}[/] malformed line(s){ignored}"
    )
    console.print(f"Quotas in force: {data.quota_source.text}", markup=False)
    for line in data.rate_windows:
        console.print(f"Rates: {line}", markup=False)
    table = Table(title=f"Top {data.top_n} entities", title_justify="left")
    for name in ("kind", "entity", "mean", "p50", "p95", "p99", "max", "quota", "p99/quota", "throttled"):
        table.add_column(name, justify="left" if name in ("kind", "entity") else "right")
    for r in data.rows[: data.top_n]:
        unit = KIND_RATE_UNIT.get(r["kind"], "")
        util = "–" if r.get("util_p99_pct") is None else f"{r['util_p99_pct']:.0f}%"
        style = "red" if (r.get("util_p99_pct") or 0) >= 100 or r["throttled_fraction"] > 0.01 else None
        table.add_row(
            r["kind"],
            entity_label(r),
            *(human_rate(r.get(c), unit) for c in ("mean", "p50", "p95", "p99", "max")),
            human_rate(r.get("quota"), unit) if r.get("quota") else "unlimited",
            util,
            f"{r['throttled_fraction']:.1%}",
            style=style,
        )
    console.print(table)
    if data.idle:
        console.print(
            f"[yellow]{len(data.idle)} idle quota(s)[/]: "
            + ", ".join(f"{_entity_text(i['entity'])} {i['key']}" for i in data.idle[:10])
        )


def _entity_text(entity: dict) -> str:
    return " ".join(f"{k}={'<default>' if v is None else v}" for k, v in entity.items())


def print_whatif(rows: list[dict], top_n: int, quota_source=None, console=None) -> None:
    """Rich table: who would be throttled under the proposed quotas (and under the current ones,
    from ``quota_source``)."""
    from rich.table import Table

    console = console or _console()
    if quota_source is not None:
        console.print(f"Quotas in force: {quota_source.text}", markup=False)
    compared = any("current_events" in r for r in rows)
    hit = sum(1 for r in rows if r["throttled_events"])
    console.print(
        f"[bold]{sum(r['events'] or 0 for r in rows):,}[/] requests replayed, "
        f"[bold]{hit}[/] of {len(rows)} entities would be throttled under the proposed quotas"
    )
    table = Table(title=f"Top {top_n} by throttling under the proposed quotas", title_justify="left")
    # replayed throttles are real per-request delays, so their sum is a real total
    headers = ["kind", "entity", "proposed quota", "demand", "predicted", "throttled", "throttle ms (total)", "max ms"]
    headers += ["throttled now"] if compared else []
    for name in headers:
        table.add_column(name, justify="left" if name in ("kind", "entity") else "right")
    for r in rows[:top_n]:
        unit = KIND_RATE_UNIT.get(r["kind"], "")
        cells = [
            r["kind"],
            entity_label(r),
            human_rate(r["proposed_quota"], unit) if r["proposed_quota"] else "unlimited",
            human_rate(r.get("demand_rate"), unit) if r.get("demand_rate") is not None else "–",
            human_rate(r.get("predicted_rate"), unit) if r.get("predicted_rate") is not None else "–",
            f"{r['throttled_fraction']:.1%}",
            f"{r['throttle_ms_total'] or 0:,}",
            f"{r['throttle_ms_max'] or 0:,}",
        ]
        cells += [f"{r.get('current_throttled_fraction', 0):.1%}"] if compared else []
        table.add_row(*cells, style="red" if r["throttled_events"] else None)
    console.print(table)


def print_plan(entries: list, quota_source, console=None) -> None:
    """Rich table of a recommendation plan: per configured quota, current -> proposed and why."""
    from rich.table import Table

    from kconfigs_analysis.sizing import plain_number

    console = console or _console()
    console.print(f"Quotas in force: {quota_source.text}", markup=False)
    table = Table(title=f"Plan: {len(entries)} quota(s)", title_justify="left")
    for name in ("entity", "key", "current", "proposed", "reason"):
        table.add_column(name, justify="right" if name in ("current", "proposed") else "left")
    for e in entries:
        current = "none" if e.current is None else plain_number(e.current)
        changed = e.current is None or float(e.proposed) != float(e.current)
        table.add_row(
            _entity_text(e.entity),
            e.key,
            current,
            plain_number(e.proposed),
            e.reason,
            style="bold" if changed else None,
        )
    console.print(table)
