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

from kconfigs_analysis import traffic_model
from kconfigs_analysis.kinds import KIND_QUOTA_KEY
from kconfigs_analysis.local_frames import local_frame

TRACE_SCHEMA = "time_ms long, user string, client_id string, ip string, kind string, value long"
RESULT_SCHEMA = (
    "source string, kind string, user string, client_id string, ip string, events long, "
    "throttled_events long, throttle_ms_total long, throttle_ms_max long, dropped long, "
    "samples long, throttled_samples long, demand double, delivered double, span_ms long"
)
REPLAY_KINDS = ("produce", "fetch", "request", "connection", "producer_id")
#: rate (quota unit per s) × window ms -> recording unit: bytes; request % of a thread -> ns
#: (1 % for 1 ms = 0.01 × 1e6 ns = 1e4 ns); connections/s -> count.
_AMOUNT_PER_RATE_MS = {"produce": 1e-3, "fetch": 1e-3, "request": 1e4, "connection": 1e-3}


def amount_per_rate_ms(kind: str) -> float | None:
    """Recording units per (quota unit per second × ms) of ``kind``; None: not replayed as a rate."""
    return _AMOUNT_PER_RATE_MS.get(kind)


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
        F.lit(0).cast("long").alias("slot_ms"),  # a trace is requests as sent: no client model
        F.lit(False).alias("last_of_sample"),
        F.lit(False).alias("elastic"),
        F.lit(True).alias("counted"),
        F.lit(0).cast("long").alias("throttle_lookback_ms"),
    )


def events_from_samples(samples: DataFrame, in_force: list | None = None) -> DataFrame:
    """Canonical rate samples -> the requests of ``traffic_model``: each sample's demand as one
    request per second of its interval, the last one at the sample's time.

    A rate sample's interval is the gap from the entity's previous sample on that broker; a gap
    longer than twice the series' usual spacing (its median gap) is a hole in the data (an
    expired sensor, a missed scrape), so the sample covers one usual spacing; so does the series'
    first sample. A series with a single sample takes the usual spacing of its broker's other
    series; with none (one scrape) it has no interval and no request. A usage-log line covers its
    own window from its start. A connection sample of n/s becomes round(n × 1 s) connections per
    second of its interval (the broker delays a connection; it does not mute a client). An
    amount that rounds to 0 is no request: a broker records nothing then.

    ``in_force``: the quota records the broker enforced when the dump was taken; a throttled
    sample at its quota was held back (``traffic_model``). Without them, a series' highest rate
    stands for its quota.
    """
    series = ["source", "kind", "user", "client_id", "ip"]
    # a Prometheus scrape has its rate and its throttle time on two lines (two rows)
    joined = samples.groupBy(*series, "ts_ms", "window_ms").agg(
        F.max("rate").alias("rate"), F.max("throttle_ms").alias("throttle_ms")
    )
    rated = joined.filter(F.col("rate").isNotNull() & F.col("kind").isin(*_AMOUNT_PER_RATE_MS))
    prev_gap_ms = F.col("ts_ms") - F.lag("ts_ms").over(Window.partitionBy(*series).orderBy("ts_ms"))
    with_gap = rated.select("*", prev_gap_ms.alias("_gap_ms"))
    usual_ms = F.coalesce(
        F.median("_gap_ms").over(Window.partitionBy(*series)), F.median("_gap_ms").over(Window.partitionBy("source"))
    )
    in_step = F.col("_gap_ms") <= 2 * F.col("_usual_ms")  # null (first sample) -> the usual spacing
    with_usual = _with_quota_in_force(with_gap.select("*", usual_ms.alias("_usual_ms")), in_force)
    sampled_ms = F.when(in_step, F.col("_gap_ms")).otherwise(F.col("_usual_ms"))
    interval_ms = F.coalesce(F.col("window_ms"), sampled_ms).cast("long")
    end_ms = F.when(F.col("window_ms").isNotNull(), F.col("ts_ms") + F.col("window_ms")).otherwise(F.col("ts_ms"))
    # a broker sample held back in its own interval asked for more than it got (traffic_model);
    # a usage-log line is what was sent
    share = traffic_model.HELD_RATE_SHARE
    held_at = F.coalesce(
        F.col("_quota") * share["quota"], F.max("rate").over(Window.partitionBy(*series)) * share["series_max"]
    )
    held = (F.col("throttle_ms") > 0) & (F.col("rate") > held_at)
    demand = F.when(
        F.col("window_ms").isNull() & held,
        F.col("rate") * (1 + F.col("throttle_ms") / F.lit(float(traffic_model.QUOTA_WINDOW_MS))),
    ).otherwise(F.col("rate"))
    lookback_ms = F.coalesce(F.col("window_ms"), F.lit(traffic_model.THROTTLE_AVG_MS)).cast("long")
    slots = F.greatest(F.lit(1), F.round(interval_ms / F.lit(float(traffic_model.SLOT_MS)))).cast("int")
    # a series' first broker sample is the Rate of the quota window before it: replayed from the
    # window's start, the part before the sample's own interval as uncounted warm-up
    is_first_rate = F.col("_gap_ms").isNull() & F.col("window_ms").isNull()
    warm_ms = F.greatest(F.lit(traffic_model.QUOTA_WINDOW_MS) - interval_ms, F.lit(0))
    warm = F.when(is_first_rate, F.round(warm_ms / F.lit(float(traffic_model.SLOT_MS)))).otherwise(0).cast("int")
    with_slots = with_usual.select(
        *series,
        end_ms.alias("_end_ms"),
        interval_ms.alias("_interval_ms"),
        slots.alias("_slots"),
        warm.alias("_warm"),
        demand.alias("_d"),
        lookback_ms.alias("_lookback_ms"),
        (F.col("window_ms").isNull() & in_step).alias("_follows"),
    ).filter(F.col("_interval_ms").isNotNull())
    with_slots = with_slots.withColumn("_d", _flow_of_rates(series))
    slot_ms = (F.col("_interval_ms") / F.col("_slots")).cast("long")
    factor = F.create_map(*(F.lit(x) for pair in _AMOUNT_PER_RATE_MS.items() for x in pair))
    amount = F.round(F.col("_d") * slot_ms * factor[F.col("kind")]).cast("long")
    exploded = with_slots.select(
        "*",
        slot_ms.alias("_slot_ms"),
        amount.alias("_amount"),
        F.explode(F.sequence(F.lit(1) - F.col("_warm"), F.col("_slots"))).alias("_k"),
    )
    time_ms = F.col("_end_ms") - (F.col("_slots") - F.col("_k")) * F.col("_slot_ms")
    is_connection = F.col("kind") == "connection"
    busy = exploded.filter(F.col("_amount") >= 1)
    repeat = F.when(is_connection, F.col("_amount")).otherwise(F.lit(1))
    connections = busy.select("*", F.explode(F.sequence(F.lit(1), repeat)).alias("_n"))
    return connections.select(
        time_ms.alias("time_ms"),
        "source",
        F.coalesce("user", F.lit("")).alias("user"),
        F.coalesce("client_id", F.lit("")).alias("client_id"),
        F.coalesce("ip", F.lit("")).alias("ip"),
        "kind",
        F.when(is_connection, F.lit(0)).otherwise(F.col("_amount")).alias("value"),
        time_ms.alias("seq"),  # replay in time order
        F.when(is_connection, F.lit(0)).otherwise(F.col("_slot_ms")).alias("slot_ms"),
        (~is_connection & (F.col("_k") == F.col("_slots"))).alias("last_of_sample"),
        (~is_connection).alias("elastic"),
        (F.col("_k") >= 1).alias("counted"),
        F.col("_lookback_ms").alias("throttle_lookback_ms"),
    )


def _flow_of_rates(series: list[str]):
    """The steady flow of each broker sample's interval whose Rate over the quota window reads
    the sample's (demand) rate. The window W (11 s) of a poll I ms after the one before, with
    W / 2 <= I < W, holds this interval and the last W - I ms of the one before, so the rate
    R = (I × F + (W - I) × F') / W and F = (W × R - (W - I) × R') / I, the previous sample's rate
    R' standing for its flow F'. Other spacings, a series' first sample and usage-log lines
    (measured per window) keep their rate as their flow.

    Worked example, 10-s polls: rates 1.0 then 1.91 MB/s: (11 × 1.91 - 1 × 1.0) / 10 = 2.0 MB/s.
    """
    window_ms = float(traffic_model.QUOTA_WINDOW_MS)
    interval_ms = F.col("_interval_ms").cast("double")
    previous = F.lag("_d").over(Window.partitionBy(*series).orderBy("_end_ms"))
    inverted = (window_ms * F.col("_d") - (window_ms - interval_ms) * previous) / interval_ms
    spans_two = (interval_ms >= window_ms / 2) & (interval_ms < window_ms) & previous.isNotNull()
    return F.when(F.col("_follows") & spans_two, F.greatest(inverted, F.lit(0.0))).otherwise(F.col("_d"))


def _with_quota_in_force(samples: DataFrame, in_force: list | None) -> DataFrame:
    """``samples`` with ``_quota``: the quota in force of each series (null: unknown or none),
    resolved on the driver for the distinct series (as the report resolves them)."""
    from kconfigs_analysis.kinds import KIND_QUOTA_KEY as keys
    from kconfigs_analysis.quotas import resolve_entities

    if not in_force:
        return samples.withColumn("_quota", F.lit(None).cast("double"))
    entity = ["kind", "user", "client_id", "ip"]
    series = [tuple(r) for r in samples.select(*entity).distinct().collect() if r["kind"] in keys]
    rows = [(q.kind, q.user, q.client_id, q.ip, q.quota) for q in resolve_entities(in_force, series, keys)]
    quotas = local_frame(
        samples.sparkSession, rows, "kind string, user string, client_id string, ip string, _quota double"
    ).alias("q")
    same = [samples[c].eqNullSafe(F.col(f"q.{c}")) for c in entity]
    joined = samples.join(F.broadcast(quotas), on=same, how="left")
    return joined.select(*(samples[c] for c in samples.columns), F.col("q._quota").alias("_quota"))


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
        from kconfigs_analysis.traffic_model import SensorGroupReplay
        from kconfigs_enforcement import EnforcementConfig, Enforcer, QuotaSnapshot
        from kconfigs_enforcement.replay import EXPIRE_INTERVAL_MS, UsageEvent, decide

        enforcer = Enforcer(QuotaSnapshot.from_records(records), EnforcementConfig(**config_kwargs))
        next_expiry_ms = [origin_ms + EXPIRE_INTERVAL_MS]

        def advance(now_ms):  # replay.replay's expiry schedule, from the trace start
            while now_ms >= next_expiry_ms[0]:
                enforcer.expire_sensors(next_expiry_ms[0])
                next_expiry_ms[0] += EXPIRE_INTERVAL_MS

        def send(key, now_ms, value):
            _, kind, user, client_id, ip = key
            result = decide(enforcer, UsageEvent(int(now_ms), user, client_id, ip, kind, int(value)))
            return result.throttle_ms, result.accepted

        group = SensorGroupReplay(send, advance)
        frame = frame.sort_values("seq", kind="stable")  # trace file order, as simulate replays it
        for row in frame.itertuples(index=False):
            key = (row.source, row.kind, row.user, row.client_id, row.ip)
            if row.elastic:
                group.elastic(
                    key,
                    row.kind,
                    int(row.time_ms),
                    int(row.value),
                    int(row.slot_ms),
                    bool(row.last_of_sample),
                    bool(row.counted),
                    int(row.throttle_lookback_ms),
                )
            else:
                group.as_sent(key, row.kind, int(row.time_ms), int(row.value))
        totals = group.finish()
        rows = [(*key, *(getattr(t, name) for name in RESULT_SCHEMA_COLUMNS[5:])) for key, t in totals.items()]
        return pd.DataFrame(rows, columns=RESULT_SCHEMA_COLUMNS)

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
