"""``load_<format>()``: metric dumps -> the canonical sample table (schemas.CANONICAL_SCHEMA).

Every reader returns the canonical columns plus ``_bad`` (the input line was malformed) and
``_line`` (its text, only when bad), so malformed lines are counted and shown, never dropped
silently. Lines that are well formed but are not quota metrics (other MBeans, ``# HELP``) are
skipped without being counted as malformed.

All parsing runs in the JVM (split / regexp_extract / from_json): no Python row UDFs (style §7).
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from kconfigs.errors import UsageError
from kconfigs_analysis import jmxtool
from kconfigs_analysis import metric_names as names
from kconfigs_analysis.schemas import CANONICAL_COLUMNS, USAGE_LOG_SCHEMA

FORMATS = ("jmxtool", "prometheus", "usage-log")
TRACE_HEADER = "time_ms,user,client_id,ip,kind,value"  # kconfigs simulate --trace (what-if only)
_OUTPUT_COLUMNS = CANONICAL_COLUMNS + ["_bad", "_line"]
#: usage-log value -> rate factor (docs/usage-log.md): request time is recorded in ns, and
#: Kafka's request-time metric is a percentage of one thread: ns / 1e9 * 100 = ns * 1e-7.
_USAGE_RATE_FACTOR = {"request": 1e-7}
_USAGE_KINDS = ("produce", "fetch", "request", "controller_mutation", "connection", "producer_id")


@dataclass(frozen=True)
class DumpFile:
    path: str
    format: str


def expand_inputs(paths: list[str]) -> list[str]:
    """Files named by paths, globs and directories (recursively), sorted. :raises UsageError:"""
    files: list[str] = []
    for path in paths:
        matches = sorted(glob.glob(path)) if glob.has_magic(path) else [path]
        if not matches or not all(os.path.exists(m) for m in matches):
            raise UsageError(f"Input path not found: {path}")
        for match in matches:
            if os.path.isdir(match):
                for root, _, children in os.walk(match):
                    files.extend(os.path.join(root, c) for c in children if _is_dump_name(c))
            else:
                files.append(match)
    if not files:
        raise UsageError(f"No input files under: {' '.join(paths)}")
    return sorted(set(files))


#: in a directory, only these are read (a generated dump sits next to quotas.toml / truth.json);
#: files named explicitly are always read. Spark decompresses .gz / .bz2 transparently.
DUMP_SUFFIXES = (".csv", ".tsv", ".prom", ".txt", ".metrics", ".jsonl", ".ndjson", ".log")


def _is_dump_name(name: str) -> bool:
    stem = name.removesuffix(".gz").removesuffix(".bz2")
    return not name.startswith(".") and stem.endswith(DUMP_SUFFIXES)


def sniff_format(path: str) -> str:
    """Guess a dump's format from its first lines. :raises UsageError: when none fits."""
    lines = [line.strip() for line in jmxtool.head_lines(path) if line.strip()]
    if any(names.split_jmxtool_header(line) for line in lines):
        return "jmxtool"
    if lines and lines[0].startswith("{"):
        return "usage-log"
    if lines and lines[0].replace(" ", "") == TRACE_HEADER:
        return "trace"
    if lines and (lines[0].startswith("# ") or lines[0].startswith("kafka_") or "{" in lines[0]):
        return "prometheus"
    raise UsageError(f"Cannot tell the format of {path}: use --input-format {'|'.join(FORMATS)}")


def classify_inputs(paths: list[str], input_format: str | None = None) -> list[DumpFile]:
    """Expand ``paths`` and attach each file's format (given or sniffed)."""
    return [DumpFile(p, input_format or sniff_format(p)) for p in expand_inputs(paths)]


def load_dumps(spark: SparkSession, files: list[DumpFile], jmx_date_format: str | None = None) -> DataFrame:
    """Union of all files, canonical columns + ``_bad``/``_line``. :raises UsageError: for traces."""
    traces = [f.path for f in files if f.format == "trace"]
    if traces:
        raise UsageError(f"{traces[0]} is a simulate trace: only 'kconfigs analyze whatif' replays traces")
    frames = [_load_jmxtool(spark, f.path, jmx_date_format) for f in files if f.format == "jmxtool"]
    prom = [f.path for f in files if f.format == "prometheus"]
    usage = [f.path for f in files if f.format == "usage-log"]
    if prom:
        frames.append(load_prometheus(spark, prom))
    if usage:
        frames.append(load_usage_log(spark, usage))
    result = frames[0]
    for frame in frames[1:]:
        result = result.unionByName(frame)
    return result


# --- JmxTool "original" CSV (kconfigs_analysis.jmxtool) ----------------------------------------------


def _load_jmxtool(spark: SparkSession, path: str, date_format: str | None) -> DataFrame:
    """One JmxTool file (each file has its own header, so its own column map)."""
    return jmxtool.canonical(spark, jmxtool.read_header(path), date_format, _OUTPUT_COLUMNS)


# --- Prometheus text exposition ------------------------------------------------------------------


def _label(labels: Column, *keys: str) -> Column:
    """First non-empty label among ``keys`` (the client-id label has several spellings)."""
    return F.coalesce(*(F.nullif(labels.getItem(k), F.lit("")) for k in keys))


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
        "client_id": F.when(is_connection, F.lit(None)).otherwise(_label(labels, *names.PROM_CLIENT_LABELS)),
        "ip": F.when(is_connection, _label(labels, "ip")),
        "is_rate": is_connection | (attribute != "throttle_time"),
    }


def load_prometheus(spark: SparkSession, paths: list[str]) -> DataFrame:
    """Prometheus text scrapes (one or many concatenated, with or without timestamps).

    A sample without a timestamp gets its file's modification time: a single ``curl`` of
    ``/metrics`` has no timestamps, and that is when it was taken.
    """
    mtimes = F.create_map(*(F.lit(x) for p in paths for x in (os.path.basename(p), int(os.path.getmtime(p) * 1000))))
    lines = spark.read.text(paths).select("value", F.col("_metadata.file_name").alias("_file"))
    content = lines.filter((F.trim("value") != "") & ~F.trim("value").startswith("#"))
    label_text = F.regexp_extract("value", names.PROM_LINE_RE, 2)
    labels = F.map_from_arrays(
        F.regexp_extract_all(label_text, F.lit(names.PROM_LABEL_RE), 1),
        F.transform(
            F.regexp_extract_all(label_text, F.lit(names.PROM_LABEL_RE), 2),
            lambda v: F.regexp_replace(v, r"\\(.)", "$1"),
        ),
    )
    parsed = content.select(
        "value",
        "_file",
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
    is_bad = ~F.col("_ok") | value.isNull() | F.col("_name").isNull()
    ts_ms = F.when(F.col("_ts") != "", F.col("_ts").cast("long")).otherwise(mtimes[F.col("_file")])
    is_quota_metric = entity["kind"].isNotNull() & (
        entity["user"].isNotNull() | entity["client_id"].isNotNull() | entity["ip"].isNotNull()
    )
    clean = F.when(F.isnan(value), F.lit(None)).otherwise(value)
    return (
        parsed.filter(is_bad | is_quota_metric)
        .select(
            F.when(is_bad, F.lit(None)).otherwise(ts_ms).cast("long").alias("ts_ms"),
            F.coalesce(_label(F.col("_labels"), "instance"), F.regexp_extract("_file", r"^([^.]+)", 1)).alias("source"),
            *(F.when(~is_bad, entity[c]).cast("string").alias(c) for c in ("kind", "user", "client_id", "ip")),
            F.when(~is_bad & entity["is_rate"], clean).alias("rate"),
            # NaN throttle-time = no throttle in the Avg's window (Kafka's tests read NaN as "not throttled")
            F.when(~is_bad & ~entity["is_rate"], F.coalesce(clean, F.lit(0.0))).alias("throttle_ms"),
            F.lit(None).cast("long").alias("window_ms"),
            is_bad.alias("_bad"),
            F.when(is_bad, F.col("value")).alias("_line"),
        )
        .select(*_OUTPUT_COLUMNS)
    )


# --- gateway usage log (docs/usage-log.md) -------------------------------------------------------


def load_usage_log(spark: SparkSession, paths: list[str]) -> DataFrame:
    """JSON lines written by ``kconfigs serve``; ``value`` per window becomes a rate per second."""
    lines = spark.read.text(paths).select("value", F.col("_metadata.file_name").alias("_file"))
    lines = lines.filter(F.trim("value") != "")
    record = F.from_json("value", USAGE_LOG_SCHEMA, {"mode": "PERMISSIVE"})
    parsed = lines.select("value", "_file", record.alias("r"))
    r = F.col("r")
    is_ok = (
        F.trim("value").startswith("{")
        & r.isNotNull()
        & r.ts_ms.isNotNull()
        & (F.coalesce(r.window_ms, F.lit(0)) > 0)
        & r.kind.isin(*_USAGE_KINDS)
        & (F.coalesce(r.value, F.lit(-1.0)) >= 0)
    )
    factor = F.create_map(*(F.lit(x) for pair in _USAGE_RATE_FACTOR.items() for x in pair))
    rate = r.value * F.coalesce(factor[r.kind], F.lit(1.0)) * 1000.0 / r.window_ms
    # quotas do not depend on the address: a client's lines from several ips are one entity
    ip = F.when(r.kind == "connection", r.ip)
    lines_out = parsed.select(
        F.when(is_ok, r.ts_ms).alias("ts_ms"),
        F.regexp_extract("_file", r"^([^.]+)", 1).alias("source"),
        *(F.when(is_ok, r[c]).alias(c) for c in ("kind", "user", "client_id")),
        F.when(is_ok, ip).alias("ip"),
        F.when(is_ok, rate).alias("rate"),
        F.when(is_ok, F.coalesce(r.throttle_ms, F.lit(0.0))).alias("throttle_ms"),
        F.when(is_ok, r.window_ms).alias("window_ms"),
        (~is_ok).alias("_bad"),
        F.when(~is_ok, F.col("value")).alias("_line"),
        F.when(~is_ok, F.monotonically_increasing_id()).alias("_bad_id"),  # bad lines never merge
    )
    keys = ["ts_ms", "source", "kind", "user", "client_id", "ip", "window_ms", "_bad", "_line", "_bad_id"]
    summed = lines_out.groupBy(*keys).agg(F.sum("rate").alias("rate"), F.sum("throttle_ms").alias("throttle_ms"))
    return with_idle_windows(summed.select(*_OUTPUT_COLUMNS))


def with_idle_windows(usage: DataFrame) -> DataFrame:
    """Add the windows the usage log omits as idle (docs/usage-log.md): rate 0, not throttled.

    After each line of an entity, every window until its next line is idle, for at most the
    life of a Kafka quota sensor without recordings (1 h): a broker's metric reads 0 for an idle
    client until then, and a JmxTool dump has those zeros. Without them, percentiles and the
    throttled fraction would describe only the windows in which the entity sent something.
    Each line becomes itself plus its idle successors in one explode (one pass over the input).
    """
    from kconfigs_enforcement.enforcer import EnforcementConfig

    entity = Window.partitionBy("_bad", "source", "kind", "user", "client_id", "ip", "window_ms").orderBy("ts_ms")
    # a generator cannot hold a window function: the next line's start becomes a column first
    with_next = usage.select("*", F.lead("ts_ms").over(entity).alias("_next_ts_ms"))
    window_ms = F.col("window_ms").cast("long")
    first_idle = F.col("ts_ms") + window_ms
    last_idle = F.least(F.col("_next_ts_ms") - 1, F.col("ts_ms") + EnforcementConfig.sensor_expiry_ms)
    # no next line (the entity's last, or a bad line): nothing added; least() alone skips nulls
    has_gap = ~F.col("_bad") & F.col("_next_ts_ms").isNotNull() & (last_idle >= first_idle)
    idle_starts = F.when(has_gap, F.sequence(first_idle, last_idle, window_ms)).otherwise(F.array().cast("array<long>"))
    measured = ("ts_ms", "rate", "throttle_ms", "_bad", "_line")
    idle = F.transform(
        idle_starts,
        lambda start: F.struct(
            start.alias("ts_ms"),
            F.lit(0.0).alias("rate"),
            F.lit(0.0).alias("throttle_ms"),
            F.lit(False).alias("_bad"),
            F.lit(None).cast("string").alias("_line"),
        ),
    )
    rows = with_next.select(
        "source",
        "kind",
        "user",
        "client_id",
        "ip",
        "window_ms",
        F.explode(F.concat(F.array(F.struct(*measured)), idle)).alias("_w"),
    )
    return rows.select(*(F.col(f"_w.{c}").alias(c) if c in measured else c for c in _OUTPUT_COLUMNS))
