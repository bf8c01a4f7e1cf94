"""``run_<job>(spark, args)``: the analyses behind ``kconfigs analyze`` subcommands.

The report reads the dumps in one pass for all statistics and the input summary, then in a small
pass for the charted entities only (report_scan); a tiny JmxTool input is read once and its
cells aggregated on the driver (cell_stats); the what-if reads them once (persisted). Each
aggregates in Spark and collects only small results (one row per entity and source, one point
per chart bucket) to the driver for rendering.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Callable

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession

from kconfigs.errors import ValidationError
from kconfigs_analysis import dump_inputs, readers, report_scan, rollup, sizing, transforms
from kconfigs_analysis import quotas as quota_io
from kconfigs_analysis.dumpfiles import ReadOptions
from kconfigs_analysis.kinds import KIND_QUOTA_KEY
from kconfigs_analysis.report import ReportData, rate_windows_of
from kconfigs_analysis.schemas import ENTITY_COLUMNS
from kconfigs_analysis.session import SMALL_INPUT_BYTES, sized_for

CHART_BUCKETS = 120
#: JmxTool inputs up to this size are aggregated on the driver from their collected cells
#: (report_scan.Inputs.local_stats): some 30,000 cells at most, a fraction of a second to collect
LOCAL_STATS_INPUT_BYTES = 256 << 10
NO_QUOTA_METRICS = (
    "No quota metrics in the input: brokers emit per-client Produce/Fetch/Request metrics only "
    "while some quota of that type is set (set a high default quota first)"
)


@dataclass(frozen=True)
class InputArgs:
    paths: list[str]
    input_format: str | None = None
    strict: bool = False
    read: ReadOptions = field(default_factory=ReadOptions)
    prometheus: object | None = None  # prometheus_api.PrometheusQuery: series read from a server


def input_files(args: InputArgs, step: Step) -> list:
    """The dump files named, plus the range read from Prometheus (as one more dump file)."""
    files = readers.classify_inputs(args.paths, args.input_format) if args.paths else []
    if args.prometheus is not None:
        from kconfigs_analysis import prometheus_api

        files.append(prometheus_api.dump_file_of(args.prometheus, step))
    return files


def is_small(args: InputArgs) -> bool:
    """Whether the named dumps are small (session.SMALL_INPUT_BYTES), known before Spark starts."""
    if args.prometheus is not None:
        return False
    return sum(os.path.getsize(p) for p in dump_inputs.expand_inputs(args.paths)) <= SMALL_INPUT_BYTES


def input_bytes(files: list) -> int:
    """Size of the text Spark reads (decompressed)."""
    return sum(os.path.getsize(f.read_path) for f in files)


@dataclass(frozen=True)
class ReportArgs:
    inputs: InputArgs
    quota_source: quota_io.QuotaSource = quota_io.NO_QUOTA_SOURCE
    top_n: int = 10
    chart_entities: int = 6
    heat_entities: int = 20

    @property
    def quota_records(self) -> list | None:
        """None: no quotas known (utilisation left blank)."""
        return self.quota_source.records


@dataclass
class ReportOutcome:
    data: ReportData


Step = Callable[[str], None]


def _check_inputs(args: InputArgs, summary: dict, examples: list[str]) -> None:
    """Enforce ``--strict`` and "some quota metric exists". :raises ValidationError:

    "No quota metrics" is said only when that is the cause: when every line with a quota
    metric was malformed, the error says so and shows one.
    """
    if args.strict and summary["malformed_lines"]:
        raise ValidationError(
            f"{summary['malformed_lines']} malformed line(s) (--strict), first: {examples[0][:120]!r}"
        )
    if not summary["samples"] and summary["malformed_lines"]:
        raise ValidationError(
            f"No valid sample: all {summary['malformed_lines']} line(s) with quota metrics are malformed, "
            f"first: {examples[0][:120]!r}"
        )
    if not summary["samples"]:
        raise ValidationError(NO_QUOTA_METRICS)


def load_samples(
    spark: SparkSession, args: InputArgs, step: Step, files: list | None = None
) -> tuple[DataFrame, dict, list[str], list[str]]:
    """Read (persisted, canonical rows), count malformed lines, check them (what-if's input).

    :raises UsageError: bad paths/format; :raises ValidationError: strict + malformed, or no metrics.
    """
    files = input_files(args, step) if files is None else files
    step(f"reading {len(files)} input(s)")
    dump = readers.load_dumps(spark, files, args.read).persist(StorageLevel.MEMORY_AND_DISK)
    summary = transforms.input_summary(dump)
    examples = transforms.malformed_examples(dump) if summary["malformed_lines"] else []
    _check_inputs(args, summary, examples)
    return transforms.valid_samples(dump), summary, examples, [f.path for f in files]


def _sort_key(row: dict) -> tuple:
    return (-(row["throttled_fraction"] or 0), -(row["util_p99_pct"] or 0), -(row["p99"] or 0))


def _entity_order(row: dict) -> tuple:
    return tuple((row[c] is None, row[c] or "") for c in ENTITY_COLUMNS)


def entity_rows(per_source: list[dict], quota_records: list | None) -> list[dict]:
    """Stats per entity (from per-source rows) joined with its effective quota, most pressing
    first (ties in entity order)."""
    stats = rollup.entity_stats(per_source)
    entities = [tuple(r[c] for c in ENTITY_COLUMNS) for r in stats]
    resolved = quota_io.resolve_entities(quota_records, entities, KIND_QUOTA_KEY) if quota_records is not None else []
    rows = sorted(rollup.with_quotas(stats, resolved), key=_entity_order)
    return sorted(rows, key=_sort_key)


def _chart_data(inputs: report_scan.Inputs, rows: list[dict], summary: dict, args: ReportArgs):
    charted = rows[: args.chart_entities]
    heated = [r for r in rows if r["throttled_samples"]][: args.heat_entities]
    chosen = list({tuple(r[c] for c in ENTITY_COLUMNS): r for r in charted + heated}.values())
    span_ms = max((summary["last_ts_ms"] or 0) - (summary["first_ts_ms"] or 0), 1000)
    bucket_ms = max(1000, span_ms // CHART_BUCKETS)
    keys = [tuple(r[c] for c in ENTITY_COLUMNS) for r in chosen]
    points: dict[int, list[dict]] = {}
    for p in report_scan.chart_points(inputs, keys, bucket_ms, inputs_clean=not summary["malformed_lines"]):
        points.setdefault(p["chart_id"], []).append(p.asDict())
    by_key = {k: points.get(i, []) for i, k in enumerate(keys)}
    charts = [(r, by_key[tuple(r[c] for c in ENTITY_COLUMNS)]) for r in charted]
    first = summary["first_ts_ms"] or 0
    buckets = list(range(first - first % bucket_ms, (summary["last_ts_ms"] or first) + 1, bucket_ms))
    return charts, _heat_rows(heated, by_key, buckets), buckets


def _heat_rows(heated: list[dict], by_key: dict, buckets: list[int]) -> list[tuple[str, list]]:
    from kconfigs_analysis.report import entity_label

    rows = []
    for r in heated:
        cells = {p["bucket_ms"]: p for p in by_key[tuple(r[c] for c in ENTITY_COLUMNS)]}
        fractions = [
            (cells[b]["throttled_samples"] / cells[b]["throttle_samples"])
            if b in cells and cells[b]["throttle_samples"]
            else None
            for b in buckets
        ]
        rows.append((f"{r['kind']} {entity_label(r)}", fractions))
    return rows


def run_report(spark: SparkSession, args: ReportArgs, step: Step = lambda _: None) -> ReportOutcome:
    """The quota report: percentiles, utilisation, throttling, idle quotas, chart series.

    The inputs are read twice: once for every statistic and the summary (one Spark job), then
    for the chart series of the few entities shown (report_scan).
    """
    files = input_files(args.inputs, step)
    size_bytes = input_bytes(files)
    with sized_for(spark, size_bytes):
        return _report(spark, args, files, step, small=size_bytes <= SMALL_INPUT_BYTES)


def _report(spark: SparkSession, args: ReportArgs, files: list, step: Step, small: bool) -> ReportOutcome:
    step(f"reading {len(files)} input(s)")
    local = small and input_bytes(files) <= LOCAL_STATS_INPUT_BYTES
    inputs = report_scan.open_inputs(spark, files, args.inputs.read, reuse_scan=small, local_stats=local)
    groups = report_scan.scan_stats(inputs)
    summary = {**transforms.summary_of(groups), "ignored_columns": sum(h.ignored_columns for h, _, _ in inputs.jmx)}
    examples = report_scan.malformed_examples(inputs) if summary["malformed_lines"] else []
    _check_inputs(args.inputs, summary, examples)
    step("per-entity percentiles")
    rows = entity_rows(report_scan.source_rows(groups), args.quota_records)
    step("chart series")
    charts, heat_rows, buckets = _chart_data(inputs, rows, summary, args)
    idle = sizing.idle_quotas(args.quota_records or [], rows, KIND_QUOTA_KEY)
    data = ReportData(
        [f.path for f in files],
        summary,
        rows,
        charts,
        heat_rows,
        buckets,
        idle,
        examples,
        top_n=args.top_n,
        quota_source=args.quota_source,
        rate_windows=rate_windows_of(f.format for f in files),
    )
    return ReportOutcome(data)


def run_recommend(spark: SparkSession, args: ReportArgs, policy: sizing.SizingPolicy, step: Step = lambda _: None):
    """Report plus per-entity recommendations (sizing.recommend over the entity rows)."""
    outcome = run_report(spark, args, step)
    recommendations = sizing.recommend(outcome.data.rows, KIND_QUOTA_KEY, policy)
    return outcome, recommendations


@dataclass(frozen=True)
class WhatIfArgs:
    inputs: InputArgs
    proposed: list  # quota records to try
    current: quota_io.QuotaSource = quota_io.NO_QUOTA_SOURCE  # quotas in force: replayed too, for the comparison


def _whatif_events(
    spark: SparkSession, inputs: InputArgs, files: list, step: Step, in_force: list | None = None
) -> DataFrame:
    """Events from ``simulate`` traces, or derived from metric dumps / usage logs."""
    from kconfigs_analysis import whatif

    traces = [f.path for f in files if f.format == "trace"]
    if traces and len(traces) != len(files):
        raise ValidationError("Give either simulate traces or metric dumps to whatif, not both")
    if traces:
        step(f"reading {len(traces)} trace(s)")
        return whatif.load_trace(spark, [f.read_path for f in files])
    samples, _, _, _ = load_samples(spark, inputs, step, files)
    return whatif.events_from_samples(samples, in_force)


def _throttled_fraction(row: dict, prefix: str = "") -> float:
    """Throttled samples per sample (metric dumps, usage logs), else throttled requests per
    request (traces: requests as sent)."""
    samples, events = row.get(f"{prefix}samples") or 0, row.get(f"{prefix}events") or 0
    if samples:
        return row[f"{prefix}throttled_samples"] / samples
    return row[f"{prefix}throttled_events"] / events if events else 0.0


def _with_rates(row: dict) -> dict:
    """A per-source row plus its rates in the quota's unit: asked for, and let through (the
    predicted rate). Per broker, so that the entity's rows add up to its cluster-wide rates."""
    from kconfigs_analysis.whatif import amount_per_rate_ms

    factor = amount_per_rate_ms(row["kind"])
    rates = {}
    for prefix in ("", "current_"):
        span_ms = row.get(f"{prefix}span_ms")
        if f"{prefix}delivered" in row:
            known = bool(span_ms) and factor is not None
            rates[f"{prefix}demand_rate"] = row[f"{prefix}demand"] / (factor * span_ms) if known else None
            rates[f"{prefix}predicted_rate"] = row[f"{prefix}delivered"] / (factor * span_ms) if known else None
    return {**row, **rates}


def _rollup_whatif(rows: list[dict], proposed: list) -> list[dict]:
    """Sum the per-broker replay rows per entity; attach the proposed effective quota."""
    merged: dict[tuple, dict] = {}
    for row in map(_with_rates, rows):
        key = tuple(row[c] or None for c in ENTITY_COLUMNS)
        into = merged.setdefault(
            key, {**dict(zip(ENTITY_COLUMNS, key)), **{k: None for k in row if k not in ENTITY_COLUMNS + ["source"]}}
        )
        for name, value in row.items():
            if name in ENTITY_COLUMNS or name == "source" or value is None:
                continue
            into[name] = max(into[name] or 0, value) if name.endswith("_max") else (into[name] or 0) + value
    resolved = quota_io.resolve_entities(proposed, list(merged), KIND_QUOTA_KEY)
    for key, quota in zip(list(merged), resolved):
        row = merged[key]
        row["proposed_quota"] = quota.quota
        row["throttled_fraction"] = _throttled_fraction(row)
        if "current_events" in row:
            row["current_throttled_fraction"] = _throttled_fraction(row, "current_")
    return sorted(merged.values(), key=lambda r: (-r["throttled_fraction"], -(r["throttle_ms_total"] or 0)))


def run_whatif(spark: SparkSession, args: WhatIfArgs, step: Step = lambda _: None) -> list[dict]:
    """Who would be throttled under ``proposed`` (and under ``current``), and by how much."""
    from kconfigs_analysis import whatif

    files = input_files(args.inputs, step)
    with sized_for(spark, input_bytes(files)):
        current = args.current.records
        events = _whatif_events(spark, args.inputs, files, step, current).persist(StorageLevel.MEMORY_AND_DISK)
        step("replaying proposed quotas")
        after = whatif.replay_events(spark, events, args.proposed)
        before = whatif.replay_events(spark, events, current) if current is not None else None
        rows = [r.asDict() for r in whatif.compare(before, after).collect()]
    return _rollup_whatif(rows, args.proposed)
