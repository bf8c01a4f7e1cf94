"""Spark schemas: the canonical sample table every reader produces, and each input format.

The canonical table is C.5's "one long table", made slightly wide so that a reader never has to
join a rate with its throttle time: a row carries ``rate`` and/or ``throttle_ms`` (either may be
null; a Prometheus line fills one, a JmxTool slot or a usage-log line fills both).
"""

from __future__ import annotations

from pyspark.sql.types import (
    DoubleType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from kconfigs_analysis.kinds import KIND_QUOTA_KEY, KIND_RATE_UNIT  # noqa: F401 (re-exported)

#: one measurement of one quota entity for one quota kind at one time, from one source.
CANONICAL_SCHEMA = StructType(
    [
        StructField("ts_ms", LongType(), False),
        StructField("source", StringType(), False),  # broker (file name / instance) or "gateway"
        StructField("kind", StringType(), False),  # a KIND_QUOTA_KEY key
        StructField("user", StringType(), True),  # decoded principal; null = tag absent
        StructField("client_id", StringType(), True),
        StructField("ip", StringType(), True),
        StructField("rate", DoubleType(), True),  # quota unit per second (KIND_RATE_UNIT)
        StructField("throttle_ms", DoubleType(), True),  # 0 = not throttled
        StructField("window_ms", LongType(), True),  # usage-log window; null for metric dumps
    ]
)
CANONICAL_COLUMNS: list[str] = CANONICAL_SCHEMA.fieldNames()
ENTITY_COLUMNS: list[str] = ["kind", "user", "client_id", "ip"]

#: docs/usage-log.md, field for field.
USAGE_LOG_SCHEMA = StructType(
    [
        StructField("ts_ms", LongType(), True),
        StructField("window_ms", LongType(), True),
        StructField("user", StringType(), True),
        StructField("client_id", StringType(), True),
        StructField("ip", StringType(), True),
        StructField("kind", StringType(), True),
        StructField("value", DoubleType(), True),
        StructField("throttle_ms", DoubleType(), True),
        StructField("quota", DoubleType(), True),
    ]
)

#: per-entity statistics (transforms.entity_stats) — also the machine-readable report rows.
ENTITY_STATS_SCHEMA = StructType(
    [
        StructField("kind", StringType(), False),
        StructField("user", StringType(), True),
        StructField("client_id", StringType(), True),
        StructField("ip", StringType(), True),
        StructField("samples", LongType(), False),
        StructField("p50", DoubleType(), True),
        StructField("p95", DoubleType(), True),
        StructField("p99", DoubleType(), True),
        StructField("max", DoubleType(), True),
        StructField("throttle_samples", LongType(), False),
        StructField("throttled_samples", LongType(), False),
        StructField("throttle_ms_total", DoubleType(), True),
        StructField("throttle_ms_max", DoubleType(), True),
        StructField("first_ts_ms", LongType(), True),
        StructField("last_ts_ms", LongType(), True),
    ]
)
