"""What-if: replay usage against proposed quotas with ``kconfigs_enforcement.replay``, per sensor in Spark.

Kafka keeps one Rate sensor per (broker, quota type, metric tags), and sensors never interact,
so replaying each sensor's events on its own ``Enforcer`` gives exactly the decisions of one
replay of the whole trace (what ``kconfigs simulate`` does). Spark groups the events by sensor
and runs ``kconfigs_enforcement.replay.decide`` per group in ``applyInPandas`` — the one place Python
runs inside Spark (style §7). Sensor expiry checks keep the global 30-s schedule of
``replay.replay`` (anchored at the first event of the whole trace) and each group replays in
trace order (``seq``), so results match a single replay of the trace exactly.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from kconfigs_analysis.kinds import KIND_QUOTA_KEY
from kconfigs_analysis.local_frames import local_frame

TRACE_SCHEMA = "time_ms long, user string, client_id string, ip string, kind string, value long"
RESULT_SCHEMA = (
    "source string, kind string, user string, client_id string, ip string, events long, "
    "throttled_events long, throttle_ms_total long, throttle_ms_max long, dropped long"
)
REPLAY_KINDS = ("produce", "fetch", "request", "connection", "producer_id")
#: rate (quota unit per s) × window ms -> recording unit: bytes; request % of a thread -> ns
#: (1 % for 1 ms = 0.01 × 1e6 ns = 1e4 ns); connections/s -> count.
_AMOUNT_PER_RATE_MS = {"produce": 1e-3, "fetch": 1e-3, "request": 1e4, "connection": 1e-3}


def load_trace(spark: SparkSession, path: str) -> DataFrame:
    """A ``kconfigs simulate`` trace CSV (header optional) as events; ``seq`` keeps file order."""
    rows = spark.read.csv(path, schema=TRACE_SCHEMA, header=False, mode="PERMISSIVE")
    is_header = F.col("time_ms").isNull() & (F.col("kind") == "kind")
    events = rows.filter(~is_header).withColumn("seq", F.monotonically_increasing_id())
    return events.select(
        "time_ms",
        F.lit("trace").alias("source"),
        F.coalesce("user", F.lit("")).alias("user"),
        F.coalesce("client_id", F.lit("")).alias("client_id"),
        F.coalesce("ip", F.lit("")).alias("ip"),
        "kind",
        F.coalesce("value", F.lit(0)).alias("value"),
        "seq",
    )


def events_from_samples(samples: DataFrame) -> DataFrame:
    """Canonical rate samples -> one event per sample carrying the amount of its interval.

    The interval is what the data says: the usage-log window, else the gap to the entity's next
    sample on that broker. A gap longer than twice the series' usual spacing (its median gap) is
    a hole in the data (an expired sensor, a missed scrape), so the sample covers one usual
    spacing; so does the series' last sample. A series with a single sample takes the usual
    spacing of its broker's other series; with none (one scrape) it has no interval and no event.
    A connection sample of n/s over t s becomes round(n·t) connection events. Each interval's
    amount is one request at its start: a model of the traffic, coarser than the real requests
    the broker saw. An amount that rounds to 0 is no event.
    """
    series = ["source", "kind", "user", "client_id", "ip"]
    rated = samples.filter(F.col("rate").isNotNull() & F.col("kind").isin(*_AMOUNT_PER_RATE_MS))
    next_gap_ms = F.lead("ts_ms").over(Window.partitionBy(*series).orderBy("ts_ms")) - F.col("ts_ms")
    with_gap = rated.select("*", next_gap_ms.alias("_gap_ms"))
    usual_ms = F.coalesce(
        F.median("_gap_ms").over(Window.partitionBy(*series)), F.median("_gap_ms").over(Window.partitionBy("source"))
    )
    in_step = F.col("_gap_ms") <= 2 * F.col("_usual_ms")  # null (last sample) -> the usual spacing
    with_usual = with_gap.select("*", usual_ms.alias("_usual_ms"))
    interval_ms = F.coalesce(F.col("window_ms"), F.when(in_step, F.col("_gap_ms")).otherwise(F.col("_usual_ms")))
    factor = F.create_map(*(F.lit(x) for pair in _AMOUNT_PER_RATE_MS.items() for x in pair))
    amount = F.round(F.col("rate") * interval_ms * factor[F.col("kind")]).cast("long")
    with_amount = with_usual.select("ts_ms", "source", "kind", "user", "client_id", "ip", amount.alias("amount"))
    # an idle interval (rate 0, e.g. a window the usage log left out) is no request: a broker
    # records nothing then, so the replay does not either (sensor expiry depends on it)
    busy = with_amount.filter(F.col("amount") >= 1)
    repeat = F.when(F.col("kind") == "connection", F.col("amount")).otherwise(F.lit(1))
    exploded = busy.select("*", F.explode(F.sequence(F.lit(1), repeat)).alias("_n"))
    return exploded.select(
        F.col("ts_ms").alias("time_ms"),
        "source",
        F.coalesce("user", F.lit("")).alias("user"),
        F.coalesce("client_id", F.lit("")).alias("client_id"),
        F.coalesce("ip", F.lit("")).alias("ip"),
        "kind",
        F.when(F.col("kind") == "connection", F.lit(0)).otherwise(F.col("amount")).alias("value"),
        F.col("ts_ms").alias("seq"),  # replay in time order
    )


def _sensor_key(snapshot, kind: str, user: str, client_id: str, ip: str) -> str:
    """The Kafka sensor an event is charged to under the proposed quotas."""
    if kind == "connection":
        return f"ip:{ip}"
    key = KIND_QUOTA_KEY[kind]
    tags = snapshot.resolve(user, client_id, key).metric_tags
    return f"{kind}:{tags.get('user', '')}:{tags.get('client-id', '')}"


def sensor_groups(spark: SparkSession, events: DataFrame, records: list) -> DataFrame:
    """Tiny frame (kind, user, client_id, ip) -> sensor key, resolved on the driver."""
    from kconfigs_analysis.quotas import build_snapshot

    snapshot = build_snapshot(records)
    entities = events.select("kind", "user", "client_id", "ip").distinct().collect()
    rows = [(*e, _sensor_key(snapshot, *e)) for e in entities]
    return local_frame(spark, rows, "kind string, user string, client_id string, ip string, sensor string")


def _replay_function(records: list, origin_ms: int, config_kwargs: dict):
    """The pandas function run per (source, sensor) group inside Spark's Python workers."""

    def replay_group(frame):
        import pandas as pd

        from kconfigs_analysis.shipping import executor_imports

        executor_imports()  # an executor without kconfigs installed runs the shipped code
        from kconfigs_enforcement import EnforcementConfig, Enforcer, QuotaSnapshot
        from kconfigs_enforcement.replay import EXPIRE_INTERVAL_MS, UsageEvent, decide

        enforcer = Enforcer(QuotaSnapshot.from_records(records), EnforcementConfig(**config_kwargs))
        frame = frame.sort_values("seq", kind="stable")  # trace file order, as simulate replays it
        next_expiry_ms = origin_ms + EXPIRE_INTERVAL_MS
        totals: dict[tuple, list[int]] = {}
        for row in frame.itertuples(index=False):
            while row.time_ms >= next_expiry_ms:  # replay.replay's schedule, from the trace start
                enforcer.expire_sensors(next_expiry_ms)
                next_expiry_ms += EXPIRE_INTERVAL_MS
            event = UsageEvent(int(row.time_ms), row.user, row.client_id, row.ip, row.kind, int(row.value))
            result = decide(enforcer, event)
            total = totals.setdefault((row.source, row.kind, row.user, row.client_id, row.ip), [0, 0, 0, 0, 0])
            total[0] += 1
            total[1] += result.throttle_ms > 0
            total[2] += result.throttle_ms
            total[3] = max(total[3], result.throttle_ms)
            total[4] += not result.accepted
        return pd.DataFrame([(*k, *v) for k, v in totals.items()], columns=RESULT_SCHEMA_COLUMNS)

    return replay_group


RESULT_SCHEMA_COLUMNS = [part.split()[0] for part in RESULT_SCHEMA.split(", ")]


def replay_events(
    spark: SparkSession, events: DataFrame, records: list, config_kwargs: dict | None = None
) -> DataFrame:
    """Per (source, entity): events, throttled events, throttle ms (sum, max), dropped connections."""
    replayable = events.filter(F.col("kind").isin(*REPLAY_KINDS))
    origin_ms = replayable.agg(F.min_by("time_ms", "seq")).first()[0]  # replay.replay: first event
    if origin_ms is None:
        return local_frame(spark, [], RESULT_SCHEMA)
    groups = sensor_groups(spark, replayable, records)
    same_entity = ["kind", "user", "client_id", "ip"]
    keyed = replayable.join(F.broadcast(groups), on=same_entity, how="inner")
    function = _replay_function(records, int(origin_ms), config_kwargs or {})
    result = keyed.groupBy("source", "sensor").applyInPandas(function, RESULT_SCHEMA)
    return result.select(*RESULT_SCHEMA_COLUMNS)


def compare(before: DataFrame | None, after: DataFrame) -> DataFrame:
    """Entity rows of the proposed replay, with the current-quota replay's numbers beside them."""
    keys = ["source", "kind", "user", "client_id", "ip"]
    if before is None:
        return after.select(*RESULT_SCHEMA_COLUMNS)
    renamed = before.select(*keys, *(F.col(c).alias(f"current_{c}") for c in RESULT_SCHEMA_COLUMNS[5:]))
    joined = after.join(renamed, on=keys, how="left")
    return joined.select(*RESULT_SCHEMA_COLUMNS, *(f"current_{c}" for c in RESULT_SCHEMA_COLUMNS[5:]))
