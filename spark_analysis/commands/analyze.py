"""``kconfigs analyze``: quota reports, recommendations and what-if replays on PySpark.

Only the commands' wiring lives here (their shared options in ``analyze_options``); pyspark,
rich and numpy are imported inside the commands so that ``kconfigs --help`` and
``kconfigs analyze --help`` stay fast.
"""

from __future__ import annotations

import contextlib
from typing import Iterator

import click

from kconfigs.commands.confirm import yes_option
from kconfigs.commands.options import refuse_empty
from kconfigs_analysis.commands.analyze_options import (
    check_dump_arguments,
    check_output_format,
    checked_headroom,
    confirm_replacing_quota_file,
    input_args,
    input_options,
    output_options,
    output_path_option,
    parse_floors,
    refuse_overwriting_inputs,
)


def _quota_source(kwargs: dict):
    """The quotas in force: from --quotas, else from the store the options, KCONFIGS_* variables
    or a profile name, else none (the embedded default store is not consulted).

    :raises UsageError: --quotas and a store or --profile on one command line.
    """
    from kconfigs.commands.options import pop_store_flags
    from kconfigs.errors import UsageError
    from kconfigs.profiles import FLAGS, STORE_SELECTORS, resolve_store_options
    from kconfigs_analysis import quotas as quota_io

    flags, profile = pop_store_flags(kwargs)
    options = resolve_store_options(flags, profile)  # even with --quotas: a bad --profile is an error
    quota_file = kwargs.pop("quota_file")
    named = [FLAGS[f] for f in STORE_SELECTORS if flags.get(f)] + (["--profile"] if profile else [])
    if quota_file and named:
        raise UsageError(f"--quotas and {named[0]} both name the quotas in force: give one of them")
    if quota_file:
        return quota_io.QuotaSource("file", quota_file, quota_io.load_quota_file(quota_file))
    if options.is_embedded_default:
        return quota_io.NO_QUOTA_SOURCE
    from kconfigs.stores.factory import Access, open_store

    selector = next(f for f in STORE_SELECTORS if getattr(options, f))
    kind = "profile" if options.origin.startswith("profile") else "store"
    name = f"{getattr(options, selector)} ({options.origin})"
    store = open_store(options, access=Access.READ)
    try:
        return quota_io.QuotaSource(kind, name, quota_io.records_from_store(store))
    finally:
        store.close()


@contextlib.contextmanager
def _progress(kwargs: dict, first: str) -> Iterator:
    """The command's progress on stderr, started before anything slow (quiet: none)."""
    from kconfigs_analysis.session import Progress

    quiet = kwargs.pop("quiet") | kwargs.pop("no_progress")
    with Progress(enabled=not quiet) as progress:
        progress.step(first)
        yield progress


@contextlib.contextmanager
def _spark(kwargs: dict, progress, inputs) -> Iterator:
    """One SparkSession for the command (sized for ``inputs``); its stages shown by ``progress``."""
    from kconfigs_analysis.jobs import is_small
    from kconfigs_analysis.session import SessionOptions, spark_session

    options = SessionOptions(
        master=kwargs.pop("master"),
        verbose=kwargs.pop("verbose"),
        driver_memory=kwargs.pop("driver_memory"),
        small_input=is_small(inputs),
    )
    progress.step(f"starting Spark ({options.master})")
    with spark_session(options) as spark:
        progress.watch(spark)
        try:
            yield spark
        finally:
            progress.unwatch()


def _report_args(kwargs: dict, top_n: int):
    from kconfigs_analysis.jobs import ReportArgs

    inputs = input_args(kwargs)
    return ReportArgs(inputs, _quota_source(kwargs), top_n=top_n)


def _emit(data, fmt: str, output_path: str | None, html_path: str | None, extra: dict | None = None) -> None:
    """The report: HTML to ``html_path``, and ``fmt`` on stdout or to ``output_path`` (html-only: none)."""
    from kconfigs_analysis import outputs, report

    if html_path:
        outputs.write_text_output(report.render_html(data), html_path)
    if fmt == "html-only":
        return
    if fmt == "table":
        outputs.print_summary(data)
    else:
        outputs.write_rows(data.rows, fmt, output_path, outputs.report_document(data, extra))


@click.group()
def analyze() -> None:
    """Analyse broker metric dumps and gateway usage logs against client quotas (PySpark)."""


@analyze.command("report")
@input_options
@output_options
def report_command(fmt, output_path, html_path, top_n, **kwargs) -> None:
    """Per-entity percentiles, utilisation vs the effective quota, throttling, idle quotas."""
    refuse_overwriting_inputs(kwargs, {"--output": output_path, "--html": html_path})
    check_output_format(fmt, output_path)
    check_dump_arguments(kwargs)
    with _progress(kwargs, "report: starting") as progress:
        from kconfigs_analysis.jobs import run_report  # pyspark: after the first progress line

        args = _report_args(kwargs, top_n)
        with _spark(kwargs, progress, args.inputs) as spark:
            outcome = run_report(spark, args, progress.step)
        progress.step("writing the report")
        _emit(outcome.data, fmt, output_path, html_path)


@analyze.command("recommend")
@input_options
@output_options
@click.option(
    "--write",
    "write_path",
    type=click.Path(dir_okay=False),
    callback=refuse_empty,
    required=True,
    help="Quota file to write the plan to (kconfigs apply can use it).",
)
@yes_option
@click.option("--percentile", type=click.Choice(["p50", "p95", "p99", "max"]), default="p99", show_default=True)
@click.option(
    "--headroom",
    type=click.FloatRange(0),
    default=0.25,
    show_default=True,
    help="Recommended = percentile × (1 + headroom); a fraction (0.25 = 25 %), at most 5.",
)
@click.option(
    "--floor",
    "floors",
    multiple=True,
    metavar="KIND=VALUE",
    help="Lowest value recommended for a kind (produce, fetch, request, controller_mutation, connection); "
    "repeatable [default: 1048576 B/s for produce and fetch, 1 otherwise].",
)
def recommend_command(
    fmt, output_path, html_path, top_n, write_path, assume_yes, percentile, headroom, floors, **kwargs
) -> None:
    """Recommend quotas (throttled periods count as censored demand) and write the plan.

    Quotas inherited from a default stay on that default; internal client-ids (kconfigs,
    adminclient-N, broker-N-...) and clients with traffic in fewer than 3 samples are skipped;
    byte rates are at least 1 MiB/s (--floor). Quotas in force that the inputs do not size (idle
    ones, skipped entities) are kept in the plan unchanged. The written file's header lists every
    rule; stdout shows the plan: per quota, current -> proposed and the rule that decided it.
    """
    from kconfigs_analysis import quotas as quota_io
    from kconfigs_analysis import sizing

    refuse_overwriting_inputs(kwargs, {"--output": output_path, "--html": html_path, "--write": write_path})
    check_output_format(fmt, output_path)
    check_dump_arguments(kwargs)
    policy = sizing.SizingPolicy(
        percentile=percentile, headroom=checked_headroom(headroom), floors=parse_floors(floors)
    )
    confirm_replacing_quota_file(write_path, assume_yes)
    with _progress(kwargs, "recommend: starting") as progress:
        from kconfigs_analysis.jobs import run_recommend  # pyspark: after the first progress line

        args = _report_args(kwargs, top_n)
        with _spark(kwargs, progress, args.inputs) as spark:
            outcome, recs = run_recommend(spark, args, policy, progress.step)
    entries = sizing.plan(args.quota_records or [], recs, outcome.data.idle)
    quota_io.write_quota_file(write_path, sizing.plan_records(entries), sizing.policy_header(policy))
    data = outcome.data.__class__(**{**outcome.data.__dict__, "recommendations": recs})
    if html_path:
        _emit(data, "html-only", None, html_path)
    _emit_plan(data, entries, fmt, output_path)
    skipped = sum(1 for row in outcome.data.rows if sizing.skip_reason(row, policy))
    kept = sum(1 for e in entries if e.reason.endswith(": kept"))
    click.echo(
        f"Wrote {len(entries)} quota(s) to {write_path}: {len(recs)} recommended, {kept} kept as in force"
        + (f" ({skipped} internal or short-lived entit{'y' if skipped == 1 else 'ies'} skipped)" if skipped else ""),
        err=True,
    )


def _emit_plan(data, entries: list, fmt: str, output_path: str | None) -> None:
    """The plan on stdout (table), or the report's rows with the plan in the document."""
    from dataclasses import asdict

    from kconfigs_analysis import outputs

    if fmt == "table":
        outputs.print_plan(entries, data.quota_source)
        return
    extra = {
        "recommendations": [asdict(r) for r in data.recommendations],
        "plan": [asdict(e) for e in entries],
    }
    outputs.write_rows(data.rows, fmt, output_path, outputs.report_document(data, extra))


@analyze.command("whatif")
@input_options
@click.option(
    "--proposed",
    "proposed_file",
    type=click.Path(dir_okay=False),
    callback=refuse_empty,
    required=True,
    help="Quota file with the quotas to try.",
)
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json", "csv", "parquet"]), default="table", show_default=True
)
@output_path_option
@click.option("--top", "top_n", default=10, show_default=True, type=click.IntRange(1))
def whatif_command(proposed_file, fmt, output_path, top_n, **kwargs) -> None:
    """Replay usage (dumps, usage logs or simulate traces) against proposed quotas.

    Uses enforcement/ per Kafka sensor inside Spark, so a trace gives the same throttles as
    ``kconfigs simulate``. With --quotas (or a store) the current quotas are replayed too.
    """
    from kconfigs_analysis import outputs
    from kconfigs_analysis import quotas as quota_io

    refuse_overwriting_inputs({**kwargs, "proposed_file": proposed_file}, {"--output": output_path})
    check_output_format(fmt, output_path)
    check_dump_arguments(kwargs)
    with _progress(kwargs, "whatif: starting") as progress:
        from kconfigs_analysis.jobs import WhatIfArgs, run_whatif  # pyspark: after the first progress line

        inputs = input_args(kwargs)
        args = WhatIfArgs(inputs, quota_io.load_quota_file(proposed_file), _quota_source(kwargs))
        with _spark(kwargs, progress, args.inputs) as spark:
            rows = run_whatif(spark, args, progress.step)
    if fmt == "table":
        outputs.print_whatif(rows, top_n, args.current)
    else:
        document = {"quota_source": args.current.as_json(), "proposed": proposed_file, "entities": rows}
        outputs.write_rows(rows, fmt, output_path, document)


@analyze.command("prepare")
@click.option("--quiet", "-q", is_flag=True, help="No progress on stderr (errors only).")
def prepare_command(quiet) -> None:
    """Make small runs start quicker: write the driver JVM's class-data archive.

    Runs small reports over generated dumps once and keeps the classes Spark's driver loaded
    (JDK class-data sharing) in $KCONFIGS_HOME/cache, else $XDG_CACHE_HOME/kconfigs
    (~/.cache/kconfigs). Small runs map it when it matches this JDK, PySpark and driver class
    path, and run without it otherwise: run prepare again after upgrading either.
    """
    with _progress({"quiet": quiet, "no_progress": False}, "prepare: starting") as progress:
        from kconfigs_analysis.prepare import prepare_archive

        path, size_bytes = prepare_archive(progress.step)
    click.echo(f"Wrote {path} ({size_bytes / 2**20:.0f} MiB)", err=True)


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
@click.option("--out", "out_dir", type=click.Path(file_okay=False), required=True, callback=refuse_empty)
def generate_command(fmt, samples, entities, brokers, seed, out_dir) -> None:
    """Write a synthetic dump with known ground truth (truth.json) and its quotas.toml into a new
    or empty directory."""
    import json
    import os

    from kconfigs.errors import UsageError
    from kconfigs_analysis.generate import GeneratorSpec, generate

    if os.path.isdir(out_dir) and os.listdir(out_dir):  # an operator's quotas.toml would be replaced
        raise UsageError(
            f"--out {out_dir} is not empty: generate writes quotas.toml, truth.json and dump files there; "
            "give a new or empty directory"
        )

    summary = generate(GeneratorSpec(samples, out_dir, fmt, entities, brokers, seed=seed))
    click.echo(json.dumps(summary, indent=2))
