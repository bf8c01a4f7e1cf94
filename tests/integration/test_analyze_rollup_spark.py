"""The driver-side entity roll-up (``rollup``) gives what the Spark aggregation it replaced gives
(the reference below: groupBy entity, then a left join with the resolved quotas), on generated
per-source rows with nulls, zero counts, zero and missing quotas."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F

from kconfigs_analysis import rollup
from kconfigs_analysis.local_frames import local_frame
from kconfigs_analysis.quotas import ResolvedQuota
from kconfigs_analysis.session import SessionOptions, spark_session

pytestmark = pytest.mark.integration
SOURCE_SCHEMA = (
    "kind string, user string, client_id string, ip string, source string, samples long, mean double, "
    "p50 double, p95 double, p99 double, max double, busy_samples long, throttle_samples long, "
    "throttled_samples long, throttle_ms_mean double, throttle_ms_max double, first_ts_ms long, last_ts_ms long"
)
SOURCE_COLUMNS = [part.split()[0] for part in SOURCE_SCHEMA.split(", ")]
ENTITIES = [("produce", "alice", None, None), ("produce", None, "app", None), ("connection", None, None, "10.0.0.1")]


@pytest.fixture(scope="module")
def spark():
    with spark_session(SessionOptions(master="local[2]", shuffle_partitions=2)) as session:
        yield session


def _spark_entity_rows(spark, per_source: list[dict], resolved: list) -> list[dict]:
    """The Spark reference: worst broker's rates, summed counts, Σ(mean × n) / Σn, left-joined quotas."""
    frame = local_frame(spark, [tuple(r[c] for c in SOURCE_COLUMNS) for r in per_source], SOURCE_SCHEMA)
    throttle_ms_sum = F.sum(F.col("throttle_ms_mean") * F.col("throttled_samples"))
    stats = frame.groupBy(*rollup.ENTITY_COLUMNS).agg(
        F.sum("samples").alias("samples"),
        *(F.max(c).alias(c) for c in ("mean", "p50", "p95", "p99", "max")),
        F.sum("busy_samples").alias("busy_samples"),
        F.sum("throttle_samples").alias("throttle_samples"),
        F.sum("throttled_samples").alias("throttled_samples"),
        (throttle_ms_sum / F.sum("throttled_samples")).alias("throttle_ms_mean"),
        F.max("throttle_ms_max").alias("throttle_ms_max"),
        F.min("first_ts_ms").alias("first_ts_ms"),
        F.max("last_ts_ms").alias("last_ts_ms"),
        F.count("source").alias("sources"),
    )
    schema = "kind string, user string, client_id string, ip string, quota double, quota_level string"
    quotas = local_frame(spark, [(q.kind, q.user, q.client_id, q.ip, q.quota, q.level) for q in resolved], schema)
    joined = stats.join(
        F.broadcast(quotas), on=[stats[c].eqNullSafe(quotas[c]) for c in rollup.ENTITY_COLUMNS], how="left"
    )
    has_quota = F.col("quota").isNotNull()
    fraction = F.when(F.col("throttle_samples") > 0, F.col("throttled_samples") / F.col("throttle_samples"))
    result = joined.select(
        *(stats[c] for c in rollup.STATS_COLUMNS),
        "quota",
        "quota_level",
        F.when(has_quota, F.col("p99") / F.col("quota") * 100.0).alias("util_p99_pct"),
        F.when(has_quota, F.col("max") / F.col("quota") * 100.0).alias("util_max_pct"),
        F.coalesce(fraction, F.lit(0.0)).alias("throttled_fraction"),
    )
    return [r.asDict() for r in result.collect()]


_rate = st.one_of(st.none(), st.floats(0, 1e9), st.just(math.inf))
_count = st.integers(0, 10_000)
_ts = st.one_of(st.none(), st.integers(1_700_000_000_000, 1_800_000_000_000))


@st.composite
def _source_rows(draw) -> list[dict]:
    rows = []
    for entity in draw(st.lists(st.sampled_from(ENTITIES), min_size=1, max_size=6)):
        row = dict(zip(rollup.ENTITY_COLUMNS, entity))
        row["source"] = draw(st.sampled_from(["broker-1", "broker-2", "broker-3", None]))
        row.update({c: draw(_rate) for c in ("mean", "p50", "p95", "p99", "max", "throttle_ms_max")})
        row.update({c: draw(_count) for c in ("samples", "busy_samples", "throttle_samples", "throttled_samples")})
        row["throttle_ms_mean"] = draw(st.one_of(st.none(), st.floats(0, 1e6)))
        row.update(first_ts_ms=draw(_ts), last_ts_ms=draw(_ts))
        rows.append(row)
    return rows


_quota = st.one_of(st.none(), st.just(0.0), st.floats(1, 1e9))


def _same(got: dict, want: dict) -> bool:
    """Equal, NaN equal to NaN; the pooled throttle mean to 1e-12 (Spark adds its partitions'
    partial sums in shuffle order, the roll-up in row order)."""
    for name, value in want.items():
        mine = got[name]
        if isinstance(value, float) and isinstance(mine, float):
            tolerance = 1e-12 if name == "throttle_ms_mean" else 0.0
            if not (math.isnan(value) and math.isnan(mine) or math.isclose(mine, value, rel_tol=tolerance)):
                return False
        elif mine != value:
            return False
    return list(got) == list(want)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(per_source=_source_rows(), quotas=st.lists(_quota, min_size=len(ENTITIES), max_size=len(ENTITIES)))
def test_rollup_equals_the_spark_aggregation_and_quota_join(spark, per_source, quotas):
    resolved = [ResolvedQuota(*e, q, None if q is None else "3 user") for e, q in zip(ENTITIES, quotas)]
    got = rollup.with_quotas(rollup.entity_stats(per_source), resolved)
    want = _spark_entity_rows(spark, per_source, resolved)

    def key(row):
        return repr(tuple(row[c] for c in rollup.ENTITY_COLUMNS))

    assert len(got) == len(want)
    for mine, theirs in zip(sorted(got, key=key), sorted(want, key=key)):
        assert _same(mine, theirs), (mine, theirs)
