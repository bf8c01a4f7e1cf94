"""Prometheus text exposition in Spark: jmx_exporter's namings (C.3, §8.2), one scrape or many.

Times of samples, in order of preference:
- the sample's own timestamp (``promtool tsdb dump``, federation): it must be plausible for the
  file (epoch ms after 2001, not after the file was written): a cut timestamp is malformed;
- a file named after its scrape time (``scrape-1714557600.prom``, one file per scrape): that
  time, and the files are one source (the name without the time), not one broker each;
- scrapes appended to one file without timestamps (``curl >> file`` in a loop): the same series
  appears once per scrape, so the k-th scrape of n is ``mtime - (n - 1 - k) × --scrape-interval``;
  without ``--scrape-interval`` that is refused (one line), never read as one instant;
- else the file's modification time (a single ``curl`` of ``/metrics`` is taken when written).

All parsing runs in the JVM (regexp_extract / window functions): no Python row UDFs (style §7).
"""

from __future__ import annotations

import os
import re

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from kconfigs.errors import ValidationError
from kconfigs_analysis import dumpfiles
from kconfigs_analysis import metric_names as names
from kconfigs_analysis.dumpfiles import DumpFile, ReadOptions

#: the series a line belongs to (name and labels), or a ``# TYPE`` line (once per scrape)
_SERIES_KEY_RE = r"^\s*(#\s*TYPE\s+\S+|[^{\s]*(?:\{.*\})?)"


def _label(labels: Column, *keys: str) -> Column:
    """First non-empty label among ``keys`` (the client-id label has several spellings)."""
    return F.coalesce(*(F.nullif(labels.getItem(k), F.lit("")) for k in keys))


def _backslash_pairs_resolved(text: Column, escapes: dict[str, str]) -> Column:
    """Resolve ``\\x`` escapes left to right in the JVM: split on escaped backslashes (``\\\\``)
    first, so that in ``\\\\n`` the ``n`` is text, then replace the other pairs in each piece."""

    def resolved(piece: Column) -> Column:
        for char, replacement in escapes.items():
            piece = F.regexp_replace(piece, F.lit("\\\\" + re.escape(char)), F.lit(replacement))
        return piece

    return F.array_join(F.transform(F.split(text, r"\\\\"), resolved), "\\")


def jmx_unquoted(value: Column) -> Column:
    """``ObjectName.unquote`` in the JVM (twin of metric_names.unquote_jmx); other text as is."""
    inner = value.substr(F.lit(2), F.length(value) - 2)
    unquoted = _backslash_pairs_resolved(inner, names.JMX_ESCAPES_AFTER_BACKSLASH)
    return F.when(value.rlike(names.JMX_QUOTED_RE), unquoted).otherwise(value)


def prometheus_label_value(raw: Column) -> Column:
    """A label value of the text exposition format: ``\\\\``, ``\\"`` and ``\\n`` resolved."""
    return _backslash_pairs_resolved(raw, names.PROM_LABEL_ESCAPES)


def _url_decoded(column: Column) -> Column:
    """Undo Sanitizer's URL encoding of the user tag; keep the raw text if it is not valid."""
    return F.coalesce(F.call_function("try_url_decode", column), column)


def _prometheus_entity(name: Column, labels: Column) -> dict[str, Column]:
    """Columns kind/user/client_id/ip/is_rate from a metric name and its labels (C.3)."""
    group_in_name = F.regexp_extract(name, names.PROM_QUOTA_NAME_RE, 1)
    attribute = F.lower(F.regexp_extract(name, names.PROM_QUOTA_NAME_RE, 2))
    resource = F.coalesce(labels.getItem("resource"), F.lit(""))
    group = F.when(group_in_name != "", group_in_name).otherwise(F.regexp_extract(resource, names.PROM_RESOURCE_RE, 1))
    user_in_resource = F.nullif(F.regexp_extract(resource, names.PROM_RESOURCE_RE, 2), F.lit(""))
    kind_map = F.create_map(*(F.lit(x) for pair in names.GROUP_TO_KIND.items() for x in pair))
    is_connection = name.rlike(names.PROM_CONNECTION_NAME_RE)
    user = F.coalesce(_label(labels, "user"), user_in_resource)
    return {
        "kind": F.when(is_connection, F.lit("connection")).otherwise(kind_map[F.lower(group)]),
        "user": F.when(is_connection, F.lit(None)).otherwise(_url_decoded(user)),
        "client_id": F.when(is_connection, F.lit(None)).otherwise(
            jmx_unquoted(_label(labels, *names.PROM_CLIENT_LABELS))
        ),
        "ip": F.when(is_connection, _label(labels, "ip")),
        "is_rate": is_connection | (attribute != "throttle_time"),
    }


def _map_of(pairs: dict) -> Column:
    return F.create_map(*(F.lit(x) for pair in pairs.items() for x in pair))


def _file_key(file_path: Column) -> Column:
    """Spark's ``_metadata.file_path`` (``file:/a%20b.prom``) as the plain absolute path."""
    decoded = F.call_function("url_decode", F.regexp_replace(file_path, r"\+", "%2B"))
    return F.regexp_replace(decoded, r"^file:(//)?", "")


def _scrape_numbers(lines: DataFrame) -> DataFrame:
    """Number each line's scrape within its file: a scrape ends where a series repeats.

    ``_occurrence`` is how often the line's series (or ``# TYPE`` line) appeared before it in
    the file; a line's scrape is the highest occurrence seen so far, so a series that first
    appears in the third scrape still belongs to the third. ``_scrapes``: the file's count.
    """
    numbered = lines.withColumn("_pos", F.monotonically_increasing_id())
    same_series = Window.partitionBy("_file", "_series").orderBy("_pos")
    so_far = Window.partitionBy("_file").orderBy("_pos").rowsBetween(Window.unboundedPreceding, Window.currentRow)
    with_occurrence = numbered.withColumn("_occurrence", F.row_number().over(same_series) - 1)
    with_scrape = with_occurrence.withColumn("_scrape", F.max("_occurrence").over(so_far))
    return with_scrape.withColumn("_scrapes", F.max("_scrape").over(Window.partitionBy("_file")) + 1)


def _untimed_files(lines: DataFrame) -> dict[str, int]:
    """Files without any timestamp -> the most times one series appears in them (1: one scrape,
    more: scrapes appended). One aggregation over the lines."""
    content = lines.filter(~F.trim("value").startswith("#") & (F.trim("value") != ""))
    has_ts = F.max((F.regexp_extract("value", names.PROM_LINE_RE, 4) != "").cast("int"))
    per_series = content.groupBy("_file", "_series").agg(F.count(F.lit(1)).alias("n"), has_ts.alias("has_ts"))
    rows = per_series.groupBy("_file").agg(F.max("n").alias("scrapes"), F.max("has_ts").alias("has_ts")).collect()
    return {r["_file"]: r["scrapes"] for r in rows if not r["has_ts"]}


def _check_numbered(untimed: dict[str, int], keys: dict[str, DumpFile], named: dict) -> None:
    """:raises ValidationError: one file per scrape, numbered: they would be read as n brokers."""
    candidates = [(keys[k].path, keys[k].mtime_ms) for k in untimed if k in keys and not named[k]]
    found = dumpfiles.numbered_scrapes(candidates)
    if found:
        pattern, count, gap_s = found
        raise ValidationError(
            f"{count} files {pattern} without timestamps, written every {gap_s:.0f} s: one scrape each, not one "
            "broker each? Name each after its time (scrape-<epoch seconds>.prom), or append them to one file "
            "and give --scrape-interval"
        )


def _check_appended(appended: dict[str, int], files: list[DumpFile], options: ReadOptions) -> None:
    """:raises ValidationError: appended scrapes and no --scrape-interval to time them."""
    if appended and options.scrape_interval_ms is None:
        key, scrapes = next(iter(appended.items()))
        path = next((f.path for f in files if os.path.abspath(f.read_path) == key), key)
        raise ValidationError(
            f"{path}: {scrapes} scrapes appended without timestamps (each series up to {scrapes} times): "
            "give --scrape-interval SECONDS, the period they were taken at"
        )


def load_prometheus(
    spark: SparkSession, files: list[DumpFile], options: ReadOptions, output_columns: list[str]
) -> DataFrame:
    """Prometheus text scrapes as canonical rows + ``_bad``/``_line`` (see the module docstring).

    :raises ValidationError: scrapes appended without timestamps and no ``--scrape-interval``.
    """
    keys = {os.path.abspath(f.read_path): f for f in files}
    named = {k: dumpfiles.scrape_time_of(f.path) for k, f in keys.items()}
    base_ms = {k: (named[k][1] if named[k] else f.mtime_ms) for k, f in keys.items()}
    source = {k: (named[k][0] if named[k] else dumpfiles.file_stem(f.path)) for k, f in keys.items()}
    lines = spark.read.text(list(keys)).select(
        "value",
        _file_key(F.col("_metadata.file_path")).alias("_file"),
        F.regexp_extract("value", _SERIES_KEY_RE, 1).alias("_series"),
    )
    untimed = _untimed_files(lines)
    appended = {k: n for k, n in untimed.items() if n > 1}
    _check_appended(appended, files, options)
    _check_numbered(untimed, keys, named)
    untimed_ms = _map_of(base_ms)[F.col("_file")]
    if appended:  # the last scrape was written last, at the file's time; each earlier one an interval before
        is_type_line = F.col("value").rlike(r"^\s*#\s*TYPE\s")
        lines = _scrape_numbers(
            lines.filter(is_type_line | ((F.trim("value") != "") & ~F.trim("value").startswith("#")))
        )
        steps_back = F.col("_scrapes") - 1 - F.col("_scrape")
        untimed_ms = untimed_ms - F.when(
            F.col("_file").isin(*appended), steps_back * options.scrape_interval_ms
        ).otherwise(0)
    content = lines.filter((F.trim("value") != "") & ~F.trim("value").startswith("#"))
    return _parsed(content, untimed_ms, keys, source).select(*output_columns)


def _parsed(content: DataFrame, untimed_ms: Column, keys: dict[str, DumpFile], source: dict[str, str]) -> DataFrame:
    """Lines -> canonical rows: labels, entity, value, time and the malformed-line checks."""
    label_text = F.regexp_extract("value", names.PROM_LINE_RE, 2)
    labels = F.map_from_arrays(
        F.regexp_extract_all(label_text, F.lit(names.PROM_LABEL_RE), 1),
        F.transform(F.regexp_extract_all(label_text, F.lit(names.PROM_LABEL_RE), 2), prometheus_label_value),
    )
    parsed = content.select(
        "value",
        "_file",
        untimed_ms.alias("_untimed_ms"),
        F.col("value").rlike(names.PROM_LINE_RE).alias("_ok"),
        labels.alias("_labels"),
        F.regexp_extract("value", names.PROM_LINE_RE, 3).alias("_value"),
        F.regexp_extract("value", names.PROM_LINE_RE, 4).alias("_ts"),
    ).withColumn(
        "_name",
        F.coalesce(
            F.nullif(F.regexp_extract("value", names.PROM_LINE_RE, 1), F.lit("")), F.col("_labels").getItem("__name__")
        ),
    )
    entity = _prometheus_entity(F.col("_name"), F.col("_labels"))
    value = F.col("_value").cast("double")
    own_ts = F.col("_ts").cast("long")
    max_ts = _map_of({k: f.max_ts_ms for k, f in keys.items()})[F.col("_file")]
    implausible_ts = (F.col("_ts") != "") & ((own_ts < dumpfiles.MIN_PLAUSIBLE_TS_MS) | (own_ts > max_ts))
    cut_tails = {k: f.cut_tail for k, f in keys.items() if f.cut_tail}
    is_cut = F.trim("value") == _map_of(cut_tails)[F.col("_file")] if cut_tails else F.lit(False)
    is_bad = (
        ~F.col("_ok") | value.isNull() | F.col("_name").isNull() | implausible_ts | F.coalesce(is_cut, F.lit(False))
    )
    ts_ms = F.when(F.col("_ts") != "", own_ts).otherwise(F.col("_untimed_ms"))
    is_quota_metric = entity["kind"].isNotNull() & (
        entity["user"].isNotNull() | entity["client_id"].isNotNull() | entity["ip"].isNotNull()
    )
    clean = F.when(F.isnan(value), F.lit(None)).otherwise(value)
    return parsed.filter(is_bad | is_quota_metric).select(
        F.when(is_bad, F.lit(None)).otherwise(ts_ms).cast("long").alias("ts_ms"),
        F.coalesce(_label(F.col("_labels"), "instance"), _map_of(source)[F.col("_file")]).alias("source"),
        *(F.when(~is_bad, entity[c]).cast("string").alias(c) for c in ("kind", "user", "client_id", "ip")),
        F.when(~is_bad & entity["is_rate"], clean).alias("rate"),
        # NaN throttle-time = no throttle in the Avg's window (Kafka's tests read NaN as "not throttled")
        F.when(~is_bad & ~entity["is_rate"], F.coalesce(clean, F.lit(0.0))).alias("throttle_ms"),
        F.lit(None).cast("long").alias("window_ms"),
        is_bad.alias("_bad"),
        F.when(is_bad, F.col("value")).alias("_line"),
    )
