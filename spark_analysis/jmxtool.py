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

import os
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from kconfigs.errors import UsageError
from kconfigs_analysis import metric_names as names

_SNIFF_LINES = 50


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
    path: str
    source: str  # file name up to the first dot: the broker
    width: int  # number of columns after "time"
    preamble: tuple[str, ...]  # lines before the header (JmxTool's "Trying to connect ..." notes)
    columns: tuple[JmxColumn, ...]  # quota columns only


def file_stem(path: str) -> str:
    return os.path.basename(path).split(".")[0] or path


def head_lines(path: str) -> list[str]:
    """The first lines of a dump, to sniff its format and header. :raises UsageError:"""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return [line for _, line in zip(range(_SNIFF_LINES), handle)]
    except OSError as err:
        raise UsageError(f"Cannot read {path}: {err.strerror}") from None


def read_header(path: str) -> JmxFile:
    """The file's header: its quota columns and preamble. :raises UsageError: no header."""
    head = head_lines(path)
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
        return JmxFile(path, file_stem(path), len(keys) - 1, preamble, tuple(columns))
    raise UsageError(f'{path}: no JmxTool header line ("time","<ObjectName>:<attribute>",...)')


def _time_ms(cell: Column, date_format: str | None) -> Column:
    is_epoch_ms = cell.rlike(r"^[0-9]+$")
    parsed = F.unix_millis(F.to_timestamp(cell, date_format or "yyyy-MM-dd HH:mm:ss"))
    return F.when(is_epoch_ms, cell.cast("long")).otherwise(parsed)


def parsed_rows(
    spark: SparkSession, jmx: JmxFile, date_format: str | None, pick: list[int] | None = None, check_cells: bool = True
) -> DataFrame:
    """One row per data line: ``ts_ms``, ``_bad``, ``_line`` (text when bad), ``_vals`` (doubles).

    ``_vals`` holds every cell after ``time``, or only the cells at ``pick``. A line is bad when
    its width, its time or (``check_cells``) any cell is wrong; a caller that already knows the
    file has no bad line may skip the per-cell check. Each cell is cast once. Not one regex
    over the line: Java's regex recursion per repeated group overflows the stack on rows of
    thousands of columns (and kills the JVM).
    """
    lines = spark.read.text(jmx.path).select(F.trim("value").alias("_raw")).filter(F.col("_raw") != "")
    is_data = ~F.col("_raw").startswith('"time"') & ~F.col("_raw").isin(*jmx.preamble)
    parts = lines.filter(is_data).select("_raw", F.split("_raw", ",").alias("_parts"))
    every_cell = F.transform(F.slice("_parts", 2, max(jmx.width, 1)), lambda cell: cell.cast("double"))
    picked = every_cell if pick is None else F.array(*(F.col("_parts").getItem(i + 1).cast("double") for i in pick))
    cell_check = every_cell if pick is None else F.slice("_parts", 2, max(jmx.width, 1))
    # row-level values in their own projection: evaluated once per line, not once per cell
    typed = parts.select(
        "_raw",
        F.size("_parts").alias("_size"),
        _time_ms(F.col("_parts").getItem(0), date_format).alias("_time"),
        picked.alias("_typed"),
        (cell_check if check_cells else F.lit(None)).alias("_check"),
    )
    bad_cell = F.exists("_check", lambda v: v.cast("double").isNull()) if check_cells else F.lit(False)
    is_bad = (F.col("_size") != jmx.width + 1) | F.col("_time").isNull() | bad_cell
    checked = typed.select("_raw", "_time", "_typed", is_bad.alias("_bad"))
    return checked.select(
        F.when(~F.col("_bad"), F.col("_time")).alias("ts_ms"),
        "_bad",
        F.when(F.col("_bad"), F.col("_raw")).alias("_line"),
        F.when(~F.col("_bad"), F.col("_typed")).alias("_vals"),
    )


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


def canonical(spark: SparkSession, jmx: JmxFile, date_format: str | None, output_columns: list[str]) -> DataFrame:
    """One JmxTool file as canonical rows (+ ``_bad``/``_line``), quota cells only.

    Cells are joined with the broadcast column map: a wide row-to-struct expression per column
    would not compile to JVM code for hundreds of columns.
    """
    schema = "_index int, kind string, user string, client_id string, ip string, _is_rate boolean"
    columns = spark.createDataFrame(
        [(c.index, c.kind, c.user, c.client_id, c.ip, c.is_rate) for c in jmx.columns], schema
    )
    cells = _exploded(parsed_rows(spark, jmx, date_format)).join(F.broadcast(columns), on="_index", how="left")
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
    date_format: str | None,
    series_of: dict[int, int],
    bad_series: int,
    only: set[int] | None = None,
    check_cells: bool = True,
) -> DataFrame:
    """Narrow cells ``(series, ts_ms, rate, throttle_ms, _bad, _line)`` of one file.

    ``series_of`` maps a column index to its series number; bad lines get ``bad_series`` (so
    their source is still known). With ``only`` (series numbers), just those columns are cast
    and exploded and bad lines are left out, which makes the chart pass cheap.
    """
    picks = [
        (c.index, series_of[c.index], c.is_rate) for c in jmx.columns if only is None or series_of[c.index] in only
    ]
    if only is None:
        rows = parsed_rows(spark, jmx, date_format, None, check_cells)
    else:
        rows = parsed_rows(spark, jmx, date_format, [index for index, _, _ in picks], check_cells).filter(
            ~F.col("_bad")
        )
        picks = [(position, series, is_rate) for position, (_, series, is_rate) in enumerate(picks)]
    schema = "_index int, series int, _is_rate boolean"
    columns = spark.createDataFrame(picks + [(-1, bad_series, None)], schema)
    joined = _exploded(rows).join(F.broadcast(columns), on="_index", how="inner")
    rate, throttle_ms = _rate_and_throttle(F.col("_value"), F.col("_is_rate"))
    return joined.select("series", "ts_ms", rate.alias("rate"), throttle_ms.alias("throttle_ms"), "_bad", "_line")
