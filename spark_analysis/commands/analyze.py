"""``kconfigs analyze``: quota reports, recommendations and what-if replays on PySpark.

Only option parsing and wiring live here; pyspark, rich and numpy are imported inside the
commands so that ``kconfigs --help`` and ``kconfigs analyze --help`` stay fast.
"""

from __future__ import annotations

import contextlib
from typing import Callable, Iterator

import click

from kconfigs.commands.options import store_options

_STORE_KEYS = (
    "zookeeper",
    "bootstrap_server",
    "bootstrap_controller",
    "command_config",
    "store_path",
    "zk_auth",
    "zk_tls_config_file",
)


def _input_options(func: Callable) -> Callable:
    options = [
        click.argument("inputs", nargs=-1, required=True, metavar="DUMP..."),
        click.option(
            "--input-format",
            type=click.Choice(["jmxtool", "prometheus", "usage-log", "trace"]),
            help="Format of every input (default: detected per file; trace: whatif only).",
        ),
        click.option("--strict", is_flag=True, help="Fail when any input line is malformed."),
        click.option(
            "--jmx-date-format",
            metavar="PATTERN",
            help="JmxTool --date-format pattern of the time column (default: epoch ms, "
            "else yyyy-MM-dd HH:mm:ss in UTC).",
        ),
        click.option(
            "--quotas",
            "quota_file",
            type=click.Path(dir_okay=False),
            help="Quota file (TOML [[quota]] tables) with the quotas in force.",
        ),
        click.option("--master", default="local[*]", show_default=True, help="Spark master URL."),
        click.option("--driver-memory", default="2g", show_default=True, help="Spark driver memory."),
        click.option("--verbose", is_flag=True, help="Show Spark's own logging."),
        click.option("--no-progress", is_flag=True, help="Do not draw the progress line on stderr."),
    ]
    for option in reversed(options):
        func = option(func)
    return store_options(func)


def _output_options(func: Callable) -> Callable:
    options = [
        click.option(
            "--format",
            "fmt",
            type=click.Choice(["table", "json", "csv", "parquet"]),
            default="table",
            show_default=True,
            help="table = rich summary on stdout; json/csv/parquet = entity rows.",
        ),
        click.option(
            "--output",
            "output_path",
            type=click.Path(dir_okay=False),
            help="Write json/csv/parquet here instead of stdout (required for parquet).",
        ),
        click.option("--html", "html_path", type=click.Path(dir_okay=False), help="Also write the HTML report here."),
        click.option("--top", "top_n", default=10, show_default=True, type=click.IntRange(1), help="Entities listed."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _quota_records(kwargs: dict) -> list | None:
    """From --quotas, else from a store if one was named, else None (no quotas known)."""
    from kconfigs_analysis import quotas as quota_io

    store_given = {k: kwargs.pop(k) for k in _STORE_KEYS}
    quota_file = kwargs.pop("quota_file")
    if quota_file:
        return quota_io.load_quota_file(quota_file)
    if not any(store_given.values()):
        return None
    from kconfigs.stores.factory import StoreOptions, open_store

    store = open_store(StoreOptions(**store_given))
    try:
        return quota_io.records_from_store(store)
    finally:
        store.close()


@contextlib.contextmanager
def _spark(kwargs: dict) -> Iterator[tuple]:
    """One SparkSession for the command, with its progress line."""
    from kconfigs_analysis.session import SessionOptions, SparkProgress, spark_session

    options = SessionOptions(
        master=kwargs.pop("master"), verbose=kwargs.pop("verbose"), driver_memory=kwargs.pop("driver_memory")
    )
    show = not kwargs.pop("no_progress")
    with spark_session(options) as spark, SparkProgress(spark, enabled=show) as progress:
        yield spark, progress


def _report_args(kwargs: dict, top_n: int):
    from kconfigs_analysis.jobs import InputArgs, ReportArgs

    inputs = InputArgs(
        list(kwargs.pop("inputs")), kwargs.pop("input_format"), kwargs.pop("strict"), kwargs.pop("jmx_date_format")
    )
    return ReportArgs(inputs, _quota_records(kwargs), top_n=top_n)


def _emit(data, fmt: str, output_path: str | None, html_path: str | None, extra: dict | None = None) -> None:
    from kconfigs_analysis import outputs, report

    if html_path:
        outputs.write_text_output(report.render_html(data), html_path)
    if fmt == "table":
        outputs.print_summary(data)
    else:
        outputs.write_rows(data.rows, fmt, output_path, outputs.report_document(data, extra))


@click.group()
def analyze() -> None:
    """Analyse broker metric dumps and gateway usage logs against client quotas (PySpark)."""


@analyze.command("report")
@_input_options
@_output_options
def report_command(fmt, output_path, html_path, top_n, **kwargs) -> None:
    """Per-entity percentiles, utilisation vs the effective quota, throttling, idle quotas."""
    from kconfigs_analysis.jobs import run_report

    args = _report_args(kwargs, top_n)
    with _spark(kwargs) as (spark, progress):
        outcome = run_report(spark, args, progress.step)
    _emit(outcome.data, fmt, output_path, html_path)


@analyze.command("recommend")
@_input_options
@_output_options
@click.option(
    "--write",
    "write_path",
    type=click.Path(dir_okay=False),
    required=True,
    help="Quota file to write the recommendations to (kconfigs apply can use it).",
)
@click.option("--percentile", type=click.Choice(["p50", "p95", "p99", "max"]), default="p99", show_default=True)
@click.option(
    "--headroom",
    type=click.FloatRange(0),
    default=0.25,
    show_default=True,
    help="Recommended = percentile × (1 + headroom).",
)
def recommend_command(fmt, output_path, html_path, top_n, write_path, percentile, headroom, **kwargs) -> None:
    """Recommend per-entity quotas (throttled periods count as censored demand)."""
    from dataclasses import asdict

    from kconfigs_analysis import quotas as quota_io
    from kconfigs_analysis import sizing
    from kconfigs_analysis.jobs import run_recommend

    args = _report_args(kwargs, top_n)
    policy = sizing.SizingPolicy(percentile=percentile, headroom=headroom)
    with _spark(kwargs) as (spark, progress):
        outcome, recs = run_recommend(spark, args, policy, progress.step)
    header = [f"kconfigs analyze recommend: {percentile} × {1 + headroom:g}, throttled demand stepped up"]
    quota_io.write_quota_file(write_path, sizing.as_quota_records(recs), header)
    data = outcome.data.__class__(**{**outcome.data.__dict__, "recommendations": recs})
    _emit(data, fmt, output_path, html_path, {"recommendations": [asdict(r) for r in recs]})
    click.echo(f"Wrote {len(recs)} recommendation(s) to {write_path}", err=True)


@analyze.command("whatif")
@_input_options
@click.option(
    "--proposed",
    "proposed_file",
    type=click.Path(dir_okay=False),
    required=True,
    help="Quota file with the quotas to try.",
)
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json", "csv", "parquet"]), default="table", show_default=True
)
@click.option("--output", "output_path", type=click.Path(dir_okay=False), help="File for json/csv/parquet.")
@click.option("--top", "top_n", default=10, show_default=True, type=click.IntRange(1))
def whatif_command(proposed_file, fmt, output_path, top_n, **kwargs) -> None:
    """Replay usage (dumps, usage logs or simulate traces) against proposed quotas.

    Uses enforcement/ per Kafka sensor inside Spark, so a trace gives the same throttles as
    ``kconfigs simulate``. With --quotas (or a store) the current quotas are replayed too.
    """
    from kconfigs_analysis import outputs
    from kconfigs_analysis import quotas as quota_io
    from kconfigs_analysis.jobs import InputArgs, WhatIfArgs, run_whatif

    inputs = InputArgs(
        list(kwargs.pop("inputs")), kwargs.pop("input_format"), kwargs.pop("strict"), kwargs.pop("jmx_date_format")
    )
    args = WhatIfArgs(inputs, quota_io.load_quota_file(proposed_file), _quota_records(kwargs))
    with _spark(kwargs) as (spark, progress):
        rows = run_whatif(spark, args, progress.step)
    if fmt == "table":
        outputs.print_whatif(rows, top_n)
    else:
        outputs.write_rows(rows, fmt, output_path, {"entities": rows})


@analyze.command("generate")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["jmxtool", "prometheus", "usage-log", "trace"]),
    default="jmxtool",
    show_default=True,
)
@click.option(
    "--samples",
    type=click.IntRange(1),
    default=100_000,
    show_default=True,
    help="Approximate number of samples (canonical rows) to write.",
)
@click.option("--entities", type=click.IntRange(1), default=20, show_default=True)
@click.option("--brokers", type=click.IntRange(1), default=2, show_default=True)
@click.option("--seed", type=int, default=7, show_default=True)
@click.option("--out", "out_dir", type=click.Path(file_okay=False), required=True)
def generate_command(fmt, samples, entities, brokers, seed, out_dir) -> None:
    """Write a synthetic dump with known ground truth (truth.json) and its quotas.toml."""
    import json

    from kconfigs_analysis.generate import GeneratorSpec, generate

    summary = generate(GeneratorSpec(samples, out_dir, fmt, entities, brokers, seed=seed))
    click.echo(json.dumps(summary, indent=2))
