"""Kafka JmxTool "original" CSV in Spark: one shared row parse, then two shapes of cells.

- :func:`canonical` — one row per cell with the entity's strings (schemas.CANONICAL_SCHEMA +
  ``_bad``/``_line``): ``readers.load_dumps``, the what-if and the reader tests use it.
- :func:`cells` — the report's narrow shape ``(series, ts_ms, rate, throttle_ms, _bad, _line)``:
  ``series`` is a small int naming one (file, entity) and the strings are attached to the
  aggregated rows on the driver. A 1e8-sample dump is 2e8 cells, and carrying five strings per
  cell through the explode, the shuffle and the aggregation was most of the report's time.

All parsing runs in the JVM (split / cast / transform): no Python row UDFs (style §7).
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from kconfigs.errors import UsageError
from kconfigs_analysis import dumpfiles
from kconfigs_analysis import metric_names as names
from kconfigs_analysis.dumpfiles import DumpFile, ReadOptions
from kconfigs_analysis.local_frames import array_sql, local_frame, text_frame

SNIFF_LINES = 50
#: letters of a date pattern that print a zone or an offset (the time is then absolute)
_ZONE_LETTERS = frozenset("XxZzOV")


@dataclass(frozen=True)
class JmxColumn:
    """A quota column: ``index`` into the row's values (0 = first column after ``time``)."""

    index: int
    kind: str
    user: str | None
    client_id: str | None
    ip: str | None
    is_rate: bool


@dataclass(frozen=True)
class JmxFile:
    path: str  # the plain text Spark reads (dumpfiles.DumpFile.read_path)
    source: str  # file name up to the first dot: the broker
    width: int  # number of columns after "time"
    preamble: tuple[str, ...]  # lines before the header (JmxTool's "Trying to connect ..." notes)
    columns: tuple[JmxColumn, ...]  # quota columns only
    cut_tail: str | None = None  # a last line without its newline (dumpfiles.DumpFile)
    max_ts_ms: int = 2**62  # the latest plausible sample time

    @property
    def ignored_columns(self) -> int:
        """Columns that are not quota metrics (other MBeans, text attributes such as EventType)."""
        return self.width - len(self.columns)


def read_header(dump: DumpFile) -> JmxFile:
    """The file's header: its quota columns and preamble. :raises UsageError: no header."""
    head = dumpfiles.head_lines(dump.read_path, SNIFF_LINES)
    for line_no, line in enumerate(head):
        keys = names.split_jmxtool_header(line)
        if keys is None:
            continue
        columns = []
        for index, key in enumerate(keys[1:]):
            metric = names.parse_jmxtool_key(key)
            if metric is not None:
                columns.append(
                    JmxColumn(index, metric.kind, metric.user, metric.client_id, metric.ip, metric.column == "rate")
                )
        preamble = tuple(p.strip() for p in head[:line_no] if p.strip())
        return JmxFile(
            dump.read_path,
            dumpfiles.file_stem(dump.path),
            len(keys) - 1,
            preamble,
            tuple(columns),
            dump.cut_tail,
            dump.max_ts_ms,
        )
    raise UsageError(f'{dump.path}: no JmxTool header line ("time","<ObjectName>:<attribute>",...)')


def _pattern_has_zone(pattern: str) -> bool:
    """True when a date pattern prints a zone or offset outside quoted text ('T' is text)."""
    unquoted = pattern.split("'")[::2]
    return any(letter in _ZONE_LETTERS for part in unquoted for letter in part)


def _time_ms(cell: Column, options: ReadOptions) -> Column:
    """Epoch ms, or a ``--date-format`` time: JmxTool's SimpleDateFormat prints the JVM's local
    time, so a pattern without a zone is read in ``options.timezone`` (default: this machine's)."""
    is_epoch_ms = cell.rlike(r"^[0-9]+$")
    pattern = options.jmx_date_format or "yyyy-MM-dd HH:mm:ss"
    local = F.to_timestamp(cell, pattern)  # the session time zone is UTC (session.py)
    if not _pattern_has_zone(pattern):
        local = F.to_utc_timestamp(local, options.timezone or dumpfiles.machine_timezone())
    return F.when(is_epoch_ms, cell.cast("long")).otherwise(F.unix_millis(local))


def parsed_rows(
    spark: SparkSession,
    jmx: JmxFile,
    options: ReadOptions,
    pick: list[int] | None = None,
    check_cells: bool = True,
    inline: bool = False,
) -> DataFrame:
    """One row per data line: ``ts_ms``, ``_bad``, ``_line`` (text when bad), ``_vals`` (doubles).

    ``_vals`` holds every cell after ``time``, or only the cells at ``pick``. A line is bad when
    its width is wrong, its time is missing or implausible (before 2001 in epoch ms: a cut
    timestamp; or after the file was written), it is the file's last line without a newline
    (cut short), or (``check_cells``) a quota cell is not a number. Other columns may hold text
    (``EventType=bytes``, ``RateUnit=SECONDS``): they are ignored, never malformed. A caller that
    already knows the file has no bad line may skip the per-cell check. Not one regex over the
    line: Java's regex recursion per repeated group overflows the stack on rows of thousands of
    columns (and kills the JVM).
    """
    lines = _split_lines(spark, jmx, options, inline)
    cells = F.slice("_parts", 2, max(jmx.width, 1))
    every_cell = F.transform(cells, lambda cell: cell.cast("double"))
    picked = every_cell if pick is None else F.array(*(F.col("_parts").getItem(i + 1).cast("double") for i in pick))
    # one character per column, "1" = a quota column: a literal, however wide the file
    quota_mask = F.lit("".join("1" if i in {c.index for c in jmx.columns} else "0" for i in range(max(jmx.width, 1))))
    quota_cell_bad = F.transform(
        cells, lambda cell, i: (quota_mask.substr(i + 1, F.lit(1)) == "1") & cell.cast("double").isNull()
    )
    # row-level values in their own projection: evaluated once per line, not once per cell
    typed = lines.select(
        "_raw",
        "_size",
        "_time",
        picked.alias("_typed"),
        (quota_cell_bad if check_cells else F.lit(None)).alias("_check"),
    )
    bad_cell = F.exists("_check", lambda is_bad: is_bad) if check_cells else F.lit(False)
    is_bad = _line_is_bad(jmx) | bad_cell
    checked = typed.select("_raw", "_time", "_typed", is_bad.alias("_bad"))
    return checked.select(
        F.when(~F.col("_bad"), F.col("_time")).alias("ts_ms"),
        "_bad",
        F.when(F.col("_bad"), F.col("_raw")).alias("_line"),
        F.when(~F.col("_bad"), F.col("_typed")).alias("_vals"),
    )


def _split_lines(spark: SparkSession, jmx: JmxFile, options: ReadOptions, inline: bool) -> DataFrame:
    """Each data line: ``_raw`` (trimmed text), ``_parts`` (its cells as text), ``_size``, ``_time``."""
    lines = _lines(spark, jmx.path, inline).select(F.trim("value").alias("_raw")).filter(F.col("_raw") != "")
    is_data = ~F.col("_raw").startswith('"time"') & ~F.col("_raw").isin(*jmx.preamble)
    parts = lines.filter(is_data).select("_raw", F.split("_raw", ",").alias("_parts"))
    return parts.select(
        "_raw",
        "_parts",
        F.size("_parts").alias("_size"),
        _time_ms(F.col("_parts").getItem(0), options).alias("_time"),
    )


def _line_is_bad(jmx: JmxFile) -> Column:
    """The checks of a whole line (parsed_rows), over :func:`_split_lines`' columns."""
    implausible_time = (F.col("_time") < dumpfiles.MIN_PLAUSIBLE_TS_MS) | (F.col("_time") > jmx.max_ts_ms)
    is_cut = F.col("_raw") == F.lit(jmx.cut_tail) if jmx.cut_tail else F.lit(False)
    return (F.col("_size") != jmx.width + 1) | F.col("_time").isNull() | implausible_time | is_cut


def _lines(spark: SparkSession, path: str, inline: bool) -> DataFrame:
    """The file's lines as Spark's text source reads them. ``inline`` (a file of a few hundred
    KiB at most): read here and handed to Spark as a table in the query, because the text source
    compiles a projection with Janino for every scan, whatever the codegen settings, and on a
    cold JVM that costs about a second (benchmarks/RESULTS.md, small runs)."""
    if inline:
        return text_frame(spark, dumpfiles.file_lines(path))
    return spark.read.text(path)


def _exploded(rows: DataFrame) -> DataFrame:
    """One row per cell (``_index``, ``_value``); a bad line stays one row with ``_index`` -1."""
    one_null = F.array(F.lit(None).cast("double"))
    exploded = rows.select(
        "ts_ms", "_bad", "_line", F.posexplode(F.coalesce("_vals", one_null)).alias("_index", "_value")
    )
    return exploded.withColumn("_index", F.when(F.col("_bad"), F.lit(-1)).otherwise(F.col("_index")))


def _rate_and_throttle(value: Column, is_rate: Column) -> tuple[Column, Column]:
    rate = F.when(is_rate & ~F.isnan(value), value)
    # NaN throttle-time = no throttle in the Avg's window (Kafka's tests read NaN as "not throttled")
    throttle_ms = F.when(~is_rate, F.when(F.isnan(value), F.lit(0.0)).otherwise(value))
    return rate, throttle_ms


def canonical(spark: SparkSession, jmx: JmxFile, options: ReadOptions, output_columns: list[str]) -> DataFrame:
    """One JmxTool file as canonical rows (+ ``_bad``/``_line``), quota cells only.

    Cells are joined with the broadcast column map: a wide row-to-struct expression per column
    would not compile to JVM code for hundreds of columns.
    """
    schema = "_index int, kind string, user string, client_id string, ip string, _is_rate boolean"
    columns = local_frame(spark, [(c.index, c.kind, c.user, c.client_id, c.ip, c.is_rate) for c in jmx.columns], schema)
    cells = _exploded(parsed_rows(spark, jmx, options)).join(F.broadcast(columns), on="_index", how="left")
    cells = cells.filter(F.col("_bad") | F.col("kind").isNotNull())
    rate, throttle_ms = _rate_and_throttle(F.col("_value"), F.col("_is_rate"))
    return cells.select(
        "ts_ms",
        F.lit(jmx.source).alias("source"),
        "kind",
        "user",
        "client_id",
        "ip",
        rate.alias("rate"),
        throttle_ms.alias("throttle_ms"),
        F.lit(None).cast("long").alias("window_ms"),
        "_bad",
        "_line",
    ).select(*output_columns)


def cells(
    spark: SparkSession,
    jmx: JmxFile,
    options: ReadOptions,
    series_of: dict[int, int],
    bad_series: int,
    only: set[int] | None = None,
    check_cells: bool = True,
    inline: bool = False,
) -> DataFrame:
    """Narrow cells ``(series, ts_ms, rate, throttle_ms, _bad, _line)`` of one file.

    ``series_of`` maps a column index to its series number; bad lines get ``bad_series`` (so
    their source is still known). With ``only`` (series numbers), just those columns are cast
    and exploded and bad lines are left out, which makes the chart pass cheap. ``inline``: see
    :func:`_lines`.
    """
    picks = [
        (c.index, series_of[c.index], c.is_rate) for c in jmx.columns if only is None or series_of[c.index] in only
    ]
    if only is None:
        rows = parsed_rows(spark, jmx, options, None, check_cells, inline)
    else:
        picked = [index for index, _, _ in picks]
        rows = parsed_rows(spark, jmx, options, picked, check_cells, inline).filter(~F.col("_bad"))
        picks = [(position, series, is_rate) for position, (_, series, is_rate) in enumerate(picks)]
    series_at, is_rate_at = _column_arrays(picks, len(picks) if only is not None else max(jmx.width, 1))
    index = F.col("_index")
    # F.get: 0-based, null outside the array (a bad line's -1), never an error
    series = F.when(index == -1, F.lit(bad_series)).otherwise(F.get(series_at, index))
    exploded = _exploded(rows).select("*", series.alias("series"), F.get(is_rate_at, index).alias("_is_rate"))
    kept = exploded.filter(F.col("series").isNotNull())
    rate, throttle_ms = _rate_and_throttle(F.col("_value"), F.col("_is_rate"))
    return kept.select("series", "ts_ms", rate.alias("rate"), throttle_ms.alias("throttle_ms"), "_bad", "_line")


#: the series :func:`optimistic_cells` gives a quota cell that is not a number: its line is
#: malformed, which only :func:`cells` tells (by checking the whole line before exploding it)
NOT_A_NUMBER_SERIES = -1


def optimistic_cells(
    spark: SparkSession, jmx: JmxFile, options: ReadOptions, series_of: dict[int, int], bad_series: int
) -> DataFrame:
    """:func:`cells` of every column, when no quota cell is text: the same rows, several times faster.

    The line's text cells are exploded first and each is cast on its own row, so no per-cell
    array function runs (Spark's ``transform``/``exists`` are interpreted and take whole-stage
    code generation off their operator: most of the statistics pass's time, benchmarks/RESULTS.md,
    analyze-peer). A line that fails the whole-line checks is one bad row, as in :func:`cells`;
    a quota cell that is not a number gets :data:`NOT_A_NUMBER_SERIES` instead of making its line
    bad, so a caller that sees that series must read the file again with :func:`cells`.
    """
    width = max(jmx.width, 1)
    series_at, is_rate_at = _column_arrays([(c.index, series_of[c.index], c.is_rate) for c in jmx.columns], width)
    lines = _split_lines(spark, jmx, options, inline=False).select(
        "_raw", "_parts", "_time", _line_is_bad(jmx).alias("_bad")
    )
    is_bad = F.col("_bad")
    texts = F.coalesce(F.when(~is_bad, F.slice("_parts", 2, width)), F.array(F.lit(None).cast("string")))
    exploded = lines.select(
        F.when(~is_bad, F.col("_time")).alias("ts_ms"),
        "_bad",
        F.when(is_bad, F.col("_raw")).alias("_line"),
        F.posexplode(texts).alias("_index", "_text"),
    )
    index = F.when(is_bad, F.lit(-1)).otherwise(F.col("_index"))
    typed = exploded.select(
        "ts_ms",
        "_bad",
        "_line",
        F.col("_text").cast("double").alias("_value"),
        F.get(series_at, index).alias("_column_series"),
        F.get(is_rate_at, index).alias("_is_rate"),
    )
    value, column_series = F.col("_value"), F.col("_column_series")
    series = (
        F.when(is_bad, F.lit(bad_series))
        .when(column_series.isNotNull() & value.isNull(), F.lit(NOT_A_NUMBER_SERIES))
        .otherwise(column_series)
    )
    kept = typed.select("*", series.alias("series")).filter(F.col("series").isNotNull())
    rate, throttle_ms = _rate_and_throttle(value, F.col("_is_rate"))
    return kept.select("series", "ts_ms", rate.alias("rate"), throttle_ms.alias("throttle_ms"), "_bad", "_line")


def line_cells(spark: SparkSession, jmx: JmxFile, options: ReadOptions, series_of: dict[int, int]) -> DataFrame:
    """A small file's :func:`cells`, one row per line: ``ts_ms``, ``_bad``, ``cells`` (the
    line's quota cells in column order: ``series``, ``rate``, ``throttle_ms``; null on a bad line).

    The file is read inline and nothing is exploded, so the whole query is projections and
    filters over a table in the query, which Spark evaluates while planning it: collecting it
    starts no job (a cold JVM's first job costs most of a second). A bad line's cell is the
    caller's to add (:func:`cells` gives it the ``bad_series``, no time and no values).
    """
    rows = parsed_rows(spark, jmx, options, None, True, inline=True)
    picks = [(c.index, series_of[c.index], c.is_rate) for c in jmx.columns]
    series_at, is_rate_at = _column_arrays(picks, max(jmx.width, 1))

    def cell(value: Column, index: Column) -> Column:
        rate, throttle_ms = _rate_and_throttle(value, F.get(is_rate_at, index))
        return F.struct(F.get(series_at, index).alias("series"), rate.alias("rate"), throttle_ms.alias("throttle_ms"))

    quota_cells = F.filter(F.transform("_vals", cell), lambda c: c["series"].isNotNull())
    return rows.select("ts_ms", "_bad", quota_cells.alias("cells"))


def _column_arrays(picks: list[tuple[int, int, bool]], width: int) -> tuple[Column, Column]:
    """The series and is-rate of each position as two literal arrays (folded to constants): a
    column is looked up without a join, so without a broadcast job."""
    series_at, is_rate_at = [None] * width, [None] * width
    for position, series, is_rate in picks:
        series_at[position], is_rate_at[position] = series, is_rate
    return F.expr(array_sql(series_at, "int")), F.expr(array_sql(is_rate_at, "boolean"))
