"""``load_<format>()``: metric dumps -> the canonical sample table (schemas.CANONICAL_SCHEMA).

Every reader returns the canonical columns plus ``_bad`` (the input line was malformed) and
``_line`` (its text, only when bad), so malformed lines are counted and shown, never dropped
silently. Lines that are well formed but are not quota metrics (other MBeans, ``# HELP``) are
skipped without being counted as malformed.

All parsing runs in the JVM (split / regexp_extract / from_json): no Python row UDFs (style §7).
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from kconfigs.errors import UsageError
from kconfigs.keys import QUOTA_KINDS
from kconfigs_analysis import dumpfiles, jmxtool, prometheus
from kconfigs_analysis.dump_inputs import check_inputs, file_format
from kconfigs_analysis.dumpfiles import DumpFile, ReadOptions
from kconfigs_analysis.schemas import CANONICAL_COLUMNS, USAGE_LOG_SCHEMA

_OUTPUT_COLUMNS = CANONICAL_COLUMNS + ["_bad", "_line"]
#: usage-log value -> rate factor (docs/usage-log.md): request time is recorded in ns, and
#: Kafka's request-time metric is a percentage of one thread: ns / 1e9 * 100 = ns * 1e-7.
_USAGE_RATE_FACTOR = {"request": 1e-7}
_USAGE_KINDS = tuple(QUOTA_KINDS)


def sniff_format(path: str) -> str:
    """A dump's format from its first lines (dump_inputs.file_format). :raises UsageError:"""
    return file_format(path)


def classify_inputs(paths: list[str], input_format: str | None = None) -> list[DumpFile]:
    """Expand ``paths`` and attach each file's format (given and checked, or sniffed); compressed
    files are decompressed (dumpfiles). :raises UsageError:"""
    return [dumpfiles.dump_file(p, fmt) for p, fmt in check_inputs(paths, input_format)]


def load_dumps(spark: SparkSession, files: list[DumpFile], options: ReadOptions | None = None) -> DataFrame:
    """Union of all files, canonical columns + ``_bad``/``_line``. :raises UsageError: for traces."""
    options = options or ReadOptions()
    traces = [f.path for f in files if f.format == "trace"]
    if traces:
        raise UsageError(f"{traces[0]} is a simulate trace: only 'kconfigs analyze whatif' replays traces")
    frames = [_load_jmxtool(spark, f, options) for f in files if f.format == "jmxtool"]
    prom = [f for f in files if f.format == "prometheus"]
    usage = [f.read_path for f in files if f.format == "usage-log"]
    if prom:
        frames.append(prometheus.load_prometheus(spark, prom, options, _OUTPUT_COLUMNS))
    if usage:
        frames.append(load_usage_log(spark, usage))
    result = frames[0]
    for frame in frames[1:]:
        result = result.unionByName(frame)
    return result


# --- JmxTool "original" CSV (kconfigs_analysis.jmxtool) ----------------------------------------------


def _load_jmxtool(spark: SparkSession, dump: DumpFile, options: ReadOptions) -> DataFrame:
    """One JmxTool file (each file has its own header, so its own column map)."""
    return jmxtool.canonical(spark, jmxtool.read_header(dump), options, _OUTPUT_COLUMNS)


# --- Prometheus text exposition: kconfigs_analysis.prometheus ---------------------------------------


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
