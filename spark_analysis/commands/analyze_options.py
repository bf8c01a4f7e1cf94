"""The options ``kconfigs analyze``'s commands share: metric inputs, Prometheus, output.

Declarations and their parsing into the jobs' arguments only; the commands are in ``analyze``.
"""

from __future__ import annotations

import os
from typing import Callable

import click

from kconfigs.commands.options import refuse_empty, store_options


def _check_timezone(ctx, param, value: str | None) -> str | None:
    """A zone name (tz database) or a UTC offset; checked before Spark starts."""
    import re
    import zoneinfo

    if value is None or re.fullmatch(r"(UTC|GMT)?[+-]\d{1,2}(:\d{2})?|UTC|GMT|Z", value):
        return value
    try:
        zoneinfo.ZoneInfo(value)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise click.BadParameter(f"unknown time zone {value!r} (use e.g. Europe/Paris, UTC or +02:00)") from None
    return value


def input_args(kwargs: dict):
    """InputArgs from the shared input options (popped from ``kwargs``). :raises UsageError:"""
    from kconfigs.errors import UsageError
    from kconfigs_analysis.dumpfiles import ReadOptions

    interval_s = kwargs.pop("scrape_interval_s")
    read = ReadOptions(
        kwargs.pop("jmx_date_format"), kwargs.pop("timezone"), None if interval_s is None else round(interval_s * 1000)
    )
    prometheus = _prometheus_query(kwargs)
    paths = list(kwargs.pop("inputs"))
    if "" in paths:  # an unset shell variable: "Input path not found: " would not say which
        raise UsageError("A DUMP argument is empty: give a file, a directory or a glob")
    if not paths and prometheus is None:
        raise UsageError("Give metric dumps (DUMP...) or --prometheus-url URL")
    input_format = kwargs.pop("input_format")
    from kconfigs_analysis.jobs import InputArgs

    return InputArgs(paths, input_format, kwargs.pop("strict"), read, prometheus)


def refuse_overwriting_inputs(kwargs: dict, outputs: dict[str, str | None]) -> None:
    """An output that would replace an input (a dump file, also one a directory or glob names,
    or the --quotas / --proposed file) is refused before anything runs. :raises UsageError:"""
    from kconfigs.commands.options import refuse_output_over_inputs
    from kconfigs.errors import UsageError
    from kconfigs_analysis.dump_inputs import expand_inputs

    dumps = [p for p in kwargs.get("inputs") or () if p]  # an empty one is refused by input_args
    try:
        files = expand_inputs(dumps) if dumps else []
    except UsageError:  # a path that names nothing: input_args says so, after the option checks
        files = [p for p in dumps if os.path.exists(p)]
    quota_files = [kwargs.get(k) for k in ("quota_file", "proposed_file") if kwargs.get(k)]
    refuse_output_over_inputs(outputs, files + quota_files)


def check_dump_arguments(kwargs: dict) -> None:
    """Every DUMP file is one a reader takes, in the --input-format given: a wrong one is one line
    before anything runs (no progress, no Spark). :raises UsageError:"""
    import glob

    from kconfigs_analysis.dump_inputs import check_inputs

    paths = list(kwargs.get("inputs") or ())
    # an empty or missing one is named by input_args, after the checks of the other options
    named = all(p and (glob.glob(p) if glob.has_magic(p) else os.path.exists(p)) for p in paths)
    if paths and named:
        check_inputs(paths, kwargs.get("input_format"))


def check_output_format(fmt: str, output_path: str | None) -> None:
    """A format that cannot go to stdout (parquet) without --output is refused before anything
    runs. :raises UsageError:"""
    from kconfigs.errors import UsageError

    if fmt == "parquet" and not output_path:
        raise UsageError("--format parquet needs --output PATH (parquet is not written to a terminal or pipe)")


def checked_headroom(headroom: float) -> float:
    """``--headroom`` as a fraction; above 5 (500 %) it was almost surely meant as a percent.
    :raises UsageError:"""
    from kconfigs.errors import UsageError
    from kconfigs_analysis.sizing import MAX_HEADROOM

    if headroom > MAX_HEADROOM:
        raise UsageError(
            f"--headroom {headroom:g} would recommend {1 + headroom:g} × the percentile: headroom is a fraction "
            f"(0.3 = 30 %), at most {MAX_HEADROOM:g}"
        )
    return headroom


def parse_floors(given: tuple[str, ...]) -> dict[str, float]:
    """The default floors with each ``--floor KIND=VALUE`` applied. :raises UsageError:"""
    import math

    from kconfigs.errors import UsageError
    from kconfigs_analysis.sizing import DEFAULT_FLOORS

    floors = dict(DEFAULT_FLOORS)
    for item in given:
        kind, _, text = item.partition("=")
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if kind not in floors or not math.isfinite(value) or value < 0:
            raise UsageError(
                f"--floor {item}: give KIND=VALUE with KIND one of {', '.join(floors)} and VALUE a number >= 0"
            )
        floors[kind] = value
    return floors


def confirm_replacing_quota_file(path: str, assume_yes: bool) -> None:
    """A quota file at ``path`` that an earlier ``recommend`` did not write (an operator's own,
    or a typo for a new name) is replaced only with ``--yes`` or a yes on the terminal, checked
    before Spark starts. :raises NotConfirmed:"""
    from kconfigs.commands.confirm import ask_before_destroying
    from kconfigs_analysis.sizing import RECOMMEND_HEADER

    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            first = handle.readline()
    except OSError:
        return  # missing: a new file; unreadable: writing it fails with its own one line
    if not first or first.startswith(f"# {RECOMMEND_HEADER}"):
        return
    ask_before_destroying(
        [f"{path} exists and was not written by kconfigs analyze recommend"],
        question=f"Replace {path} with the recommendations?",
        refusal=f"--write {path}: the file exists and was not written by kconfigs analyze recommend: nothing "
        "changed; re-run with --yes to replace it, or name a new file",
        assume_yes=assume_yes,
    )


def _prometheus_query(kwargs: dict):
    """PrometheusQuery from the --prometheus-* / --since / --until / --step options, or None."""
    from kconfigs.clock import MONOTONIC
    from kconfigs.errors import UsageError
    from kconfigs_analysis.prometheus_api import PrometheusQuery
    from kconfigs_analysis.prometheus_time import parse_duration_s, query_range_of

    given = {k: kwargs.pop(k) for k in _PROMETHEUS_KEYS}
    url = given.pop("prometheus_url")
    if url is None:
        named = [k for k in ("since", "until", "step") if given[k] is not None]
        if named:
            raise UsageError(f"--{named[0]} reads from Prometheus: give --prometheus-url too")
        return None
    start_s, end_s = query_range_of(given["since"] or "24h", given["until"], MONOTONIC.wall_ms() / 1000)
    return PrometheusQuery(
        url,
        start_s,
        end_s,
        parse_duration_s(given["step"] or "15s"),
        given["prometheus_user"],
        given["prometheus_password"],
        given["prometheus_token"],
        given["prometheus_ca_file"],
        given["prometheus_insecure"],
        given["prometheus_timeout_s"],
        given["prometheus_match"],
    )


_PROMETHEUS_KEYS = (
    "prometheus_url",
    "since",
    "until",
    "step",
    "prometheus_user",
    "prometheus_password",
    "prometheus_token",
    "prometheus_ca_file",
    "prometheus_insecure",
    "prometheus_timeout_s",
    "prometheus_match",
)


def _prometheus_options(func: Callable) -> Callable:
    options = [
        click.option(
            "--prometheus-url",
            envvar="KCONFIGS_PROMETHEUS_URL",
            callback=refuse_empty,
            metavar="URL",
            help="Read the quota series from this Prometheus server (query_range) instead of, or as well as, dumps.",
        ),
        click.option(
            "--since",
            callback=refuse_empty,
            metavar="WHEN",
            help="Start of the range: a duration before --until (24h), epoch seconds or an ISO time [default: 24h].",
        ),
        click.option(
            "--until",
            callback=refuse_empty,
            metavar="WHEN",
            help="End of the range: a duration ago, epoch seconds or an ISO time [default: now].",
        ),
        click.option(
            "--step",
            callback=refuse_empty,
            metavar="DURATION",
            help="Query resolution; use the scrape interval (a larger step skips samples) [default: 15s].",
        ),
        click.option(
            "--prometheus-user",
            envvar="KCONFIGS_PROMETHEUS_USER",
            callback=refuse_empty,
            metavar="USER",
            help="Basic auth user.",
        ),
        click.option(
            "--prometheus-password",
            envvar="KCONFIGS_PROMETHEUS_PASSWORD",
            callback=refuse_empty,
            metavar="PASSWORD",
            help="Basic auth password (better: $KCONFIGS_PROMETHEUS_PASSWORD).",
        ),
        click.option(
            "--prometheus-token",
            envvar="KCONFIGS_PROMETHEUS_TOKEN",
            callback=refuse_empty,
            metavar="TOKEN",
            help="Bearer token (better: $KCONFIGS_PROMETHEUS_TOKEN).",
        ),
        click.option(
            "--prometheus-ca-file",
            type=click.Path(dir_okay=False, exists=True),
            help="CA certificates (PEM) to verify an https:// server.",
        ),
        click.option("--prometheus-insecure", is_flag=True, help="Do not verify the server's TLS certificate."),
        click.option(
            "--prometheus-timeout",
            "prometheus_timeout_s",
            type=click.FloatRange(min=0, min_open=True),
            default=30.0,
            show_default=True,
            metavar="SECONDS",
            help="Per request.",
        ),
        click.option(
            "--prometheus-match",
            metavar="MATCHERS",
            help='More label matchers for the quota series, e.g. \'job="kafka",env="prod"\'.',
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def input_options(func: Callable) -> Callable:
    options = [
        click.argument("inputs", nargs=-1, metavar="[DUMP]..."),
        click.option(
            "--input-format",
            type=click.Choice(["jmxtool", "prometheus", "usage-log", "trace"]),
            help="Format of every input (default: detected per file; trace: whatif only).",
        ),
        click.option("--strict", is_flag=True, help="Fail when any input line is malformed."),
        click.option(
            "--jmx-date-format",
            metavar="PATTERN",
            help="JmxTool --date-format pattern of the time column (default: epoch ms, else yyyy-MM-dd HH:mm:ss).",
        ),
        click.option(
            "--timezone",
            metavar="ZONE",
            callback=_check_timezone,
            help="Zone of --jmx-date-format times, e.g. Europe/Paris or +02:00 (JmxTool "
            "prints the broker host's local time; default: this machine's zone).",
        ),
        click.option(
            "--scrape-interval",
            "scrape_interval_s",
            type=click.FloatRange(min=0, min_open=True),
            metavar="SECONDS",
            help="Period of Prometheus scrapes appended to one file without timestamps "
            "(curl >> file in a loop); such a file is refused without it.",
        ),
        click.option(
            "--quotas",
            "quota_file",
            type=click.Path(dir_okay=False),
            callback=refuse_empty,  # '' would fall back to the store's quotas
            help="Quota file (TOML [[quota]] tables) with the quotas in force.",
        ),
        click.option("--master", default="local[*]", show_default=True, help="Spark master URL."),
        click.option("--driver-memory", default="2g", show_default=True, help="Spark driver memory."),
        click.option("--verbose", is_flag=True, help="Show Spark's own logging."),
        click.option("--quiet", "-q", is_flag=True, help="No progress on stderr (errors only)."),
        click.option("--no-progress", is_flag=True, hidden=True, help="Same as --quiet."),
    ]
    for option in reversed(options):
        func = option(func)
    return store_options(_prometheus_options(func))


#: --output of every command that writes entity rows (report, recommend, whatif)
output_path_option = click.option(
    "--output",
    "output_path",
    type=click.Path(dir_okay=False),
    callback=refuse_empty,
    help="Write json/csv/parquet here instead of stdout (required for parquet).",
)


def output_options(func: Callable) -> Callable:
    options = [
        click.option(
            "--format",
            "fmt",
            type=click.Choice(["table", "json", "csv", "parquet"]),
            default="table",
            show_default=True,
            help="table = rich summary on stdout; json/csv/parquet = entity rows.",
        ),
        output_path_option,
        click.option(
            "--html",
            "html_path",
            type=click.Path(dir_okay=False),
            callback=refuse_empty,
            help="Also write the HTML report here.",
        ),
        click.option("--top", "top_n", default=10, show_default=True, type=click.IntRange(1), help="Entities listed."),
    ]
    for option in reversed(options):
        func = option(func)
    return func
