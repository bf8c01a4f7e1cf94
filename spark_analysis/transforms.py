"""DataFrame -> DataFrame steps of the quota report. Each ends with a ``select`` of its schema.

Statistics are per broker (per source): quotas are per broker, so an entity's rates on
different brokers are never added. ``rollup`` takes them to the entity on the driver.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from kconfigs_analysis.local_frames import local_frame
from kconfigs_analysis.schemas import CANONICAL_COLUMNS, ENTITY_COLUMNS, ENTITY_STATS_SCHEMA

PERCENTILES = (0.5, 0.95, 0.99)
#: percentile_approx accuracy: rank error ≤ n/accuracy per (entity, broker) series. 10x Spark's
#: default: a 1e8-sample dump has 5e4 values per series, so ranks are exact there (Spark's
#: default gave up to 1.2 % error in p99 where throttled rates pile up at the quota), for the
#: same time and ~60 MB more memory (benchmarks/RESULTS.md, analyze section).
PERCENTILE_ACCURACY = 100_000


def valid_samples(dump: DataFrame) -> DataFrame:
    """Rows that parsed (``_bad`` false), canonical columns only."""
    is_good = ~F.col("_bad")
    return dump.filter(is_good).select(*CANONICAL_COLUMNS)


def input_summary(dump: DataFrame) -> dict:
    """One pass over the parsed dump: line and sample counts, time range, per-kind counts."""
    is_bad = F.col("_bad")
    row = dump.agg(
        F.count(F.when(is_bad, 1)).alias("malformed_lines"),
        F.count(F.when(~is_bad, 1)).alias("samples"),
        F.count(F.when(~is_bad & F.col("rate").isNotNull(), 1)).alias("rate_samples"),
        F.min("ts_ms").alias("first_ts_ms"),
        F.max("ts_ms").alias("last_ts_ms"),
        F.countDistinct("source").alias("sources"),
    ).first()
    return row.asDict()


def malformed_examples(dump: DataFrame, limit: int = 5) -> list[str]:
    return [r["_line"] for r in dump.filter(F.col("_bad")).select("_line").limit(limit).collect()]


def _percentile_columns(column: str) -> list:
    approx = F.percentile_approx(column, list(PERCENTILES), PERCENTILE_ACCURACY)
    return [approx[i].alias(name) for i, name in enumerate(("p50", "p95", "p99"))]


#: columns of the per-source statistics (the input of rollup.entity_stats)
SOURCE_STATS_COLUMNS = ENTITY_COLUMNS + ["source"] + ENTITY_STATS_SCHEMA.fieldNames()[4:]


def group_stats(frame: DataFrame, keys: list[str]) -> DataFrame:
    """One pass: per ``keys`` and ``_bad``, the row count and the per-source statistics.

    Bad lines form their own groups (``_bad`` true), so the same pass also yields the input
    summary (malformed lines, samples, time range): the report reads its inputs once here.
    """
    is_throttled = F.col("throttle_ms") > 0
    is_busy = F.col("rate") > 0
    return frame.groupBy(*keys, "_bad").agg(
        F.count(F.lit(1)).alias("rows"),
        F.count("rate").alias("samples"),
        F.avg("rate").alias("mean"),
        *_percentile_columns("rate"),
        F.max("rate").alias("max"),
        F.count(F.when(is_busy, 1)).alias("busy_samples"),
        F.count("throttle_ms").alias("throttle_samples"),
        F.count(F.when(is_throttled, 1)).alias("throttled_samples"),
        F.avg(F.when(is_throttled, F.col("throttle_ms"))).alias("throttle_ms_mean"),
        F.max("throttle_ms").alias("throttle_ms_max"),
        F.min("ts_ms").alias("first_ts_ms"),
        F.max("ts_ms").alias("last_ts_ms"),
    )


def summary_of(groups: list[dict]) -> dict:
    """The input summary (as :func:`input_summary` computes it) from :func:`group_stats` rows."""
    good = [g for g in groups if not g["_bad"]]
    firsts = [g["first_ts_ms"] for g in good if g["first_ts_ms"] is not None]
    lasts = [g["last_ts_ms"] for g in good if g["last_ts_ms"] is not None]
    return {
        "malformed_lines": sum(g["rows"] for g in groups if g["_bad"]),
        "samples": sum(g["rows"] for g in good),
        "rate_samples": sum(g["samples"] for g in good),
        "first_ts_ms": min(firsts) if firsts else None,
        "last_ts_ms": max(lasts) if lasts else None,
        "sources": len({g["source"] for g in groups if g["source"] is not None}),
    }


def chart_cells(samples: DataFrame, spark: SparkSession, entities: list[tuple]) -> DataFrame:
    """Canonical samples of the chosen entities as ``(chart_id, ts_ms, rate, throttle_ms)``."""
    schema = "kind string, user string, client_id string, ip string, chart_id int"
    chosen = local_frame(spark, [(*e, i) for i, e in enumerate(entities)], schema)
    same_entity = [samples[c].eqNullSafe(chosen[c]) for c in ENTITY_COLUMNS]
    joined = samples.join(F.broadcast(chosen), on=same_entity, how="inner")
    return joined.select("chart_id", "ts_ms", "rate", "throttle_ms")


def chart_buckets(cells: DataFrame, bucket_ms: int) -> DataFrame:
    """Per chart and time bucket: mean/max rate and throttled fraction (for the HTML)."""
    bucket = (F.floor(F.col("ts_ms") / bucket_ms) * bucket_ms).cast("long")
    is_throttled = F.col("throttle_ms") > 0
    series = cells.groupBy("chart_id", bucket.alias("bucket_ms")).agg(
        F.avg("rate").alias("rate_mean"),
        F.max("rate").alias("rate_max"),
        F.count("throttle_ms").alias("throttle_samples"),
        F.count(F.when(is_throttled, 1)).alias("throttled_samples"),
    )
    return series.select("chart_id", "bucket_ms", "rate_mean", "rate_max", "throttle_samples", "throttled_samples")


def chart_series(samples: DataFrame, spark: SparkSession, entities: list[tuple], bucket_ms: int) -> DataFrame:
    """Per chosen entity and time bucket: mean/max rate and throttled fraction (for the HTML)."""
    return chart_buckets(chart_cells(samples, spark, entities), bucket_ms)
