"""Producer-quota accuracy runs shared by the gateway tests and the Kafka reference tests.

Two over-quota producers, kafka-python and confluent-kafka (librdkafka), flood 1 KiB messages for
a fixed time and print a client-side series of cumulative bytes sent in Produce requests:
kafka-python one point per Produce request (its frame size, as the broker charges it),
librdkafka its ``txbytes`` statistic every 250 ms. The same scripts run against the gateway and
directly against a Kafka broker, so both are measured by the same method.

Steady-state rate (the method Kafka's own windowed-rate reasoning suggests; see
quota-enforcement spec §1.5): a fresh sensor lets a burst of Q·(N−1)·W through before the first
throttle, and every throttle cycle is a burst followed by a pause. The first (N+1)·W seconds
(burst allowance plus one full measurement window) are excluded, and the rate is the slope of the
least-squares line through the cumulative-bytes series up to the end of the flood loop (before
``flush``), which does not depend on where the sawtooth of throttle cycles is cut at the ends.
"""

from __future__ import annotations

CLIENT_SERIES_INTERVAL_MS = 250
#: per client: below what each client can push through the gateway on a shared 2-core machine
#: (kafka-python tops out near 0.9 MB/s of 1 KiB messages here), so the quota, not the client,
#: sets the rate
QUOTAS_BYTES_PER_SEC = {"kafka-python": 400_000, "librdkafka": 1_000_000}
#: Kafka quota.window.num for these runs (samples of 1 s): burst allowance Q·(N−1)·W = 1 s of quota
WINDOW_NUM = 2
FLOOD_S = 25

# argv: bootstrap topic client_id seconds. Prints {"start_ms", "loop_end_ms", "series", "throttle_max_ms"}.
KAFKA_PYTHON_FLOOD = r"""
import collections, json, sys, time
from kafka import KafkaProducer
from kafka.protocol.parser import KafkaProtocol
bootstrap, topic, client_id, seconds = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
sent = [[time.time(), 0]]
_send_request = KafkaProtocol.send_request
def send_request(self, request, correlation_id=None):
    # kafka-python has no cumulative byte counter; the encoded frame is the last queued buffer
    correlation_id = _send_request(self, request, correlation_id)
    if type(request).__name__.startswith("ProduceRequest"):
        sent.append([time.time(), sent[-1][1] + len(self.bytes_to_send[-1]) - 4])
    return correlation_id
KafkaProtocol.send_request = send_request
producer = KafkaProducer(bootstrap_servers=bootstrap, client_id=client_id, linger_ms=5, batch_size=16384,
                         max_block_ms=60000)
producer.send(topic, b"warm").get(30)
start = time.time(); outstanding = collections.deque()
while time.time() - start < seconds:  # at most 2 MiB unacknowledged (kafka-python 3 has no buffer_memory)
    outstanding.append(producer.send(topic, b"k" * 1024))
    if len(outstanding) > 2048:
        outstanding.popleft().get(60)
loop_end = time.time()
throttle_max = max([v for group in producer.metrics().values() for k, v in group.items()
                    if k == "throttle-time-max" and isinstance(v, (int, float)) and v == v] or [0])
producer.flush(60)
producer.close()
print(json.dumps({"start_ms": int(start * 1000), "loop_end_ms": int(loop_end * 1000),
                  "series": [(int(t * 1000), b) for t, b in sent], "throttle_max_ms": throttle_max}))
"""

# argv: bootstrap topic client_id seconds [pace_bytes_per_sec, 0 = flat out]. Same output.
CONFLUENT_FLOOD = (
    r"""
import json, sys, time
import confluent_kafka as ck
bootstrap, topic, client_id, seconds = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
pace_bytes_per_sec = float(sys.argv[5]) if len(sys.argv) > 5 else 0.0
series, throttles = [], [0]
def on_stats(text):
    stats = json.loads(text)
    brokers = [b for b in stats["brokers"].values() if b.get("nodeid", -1) >= 0]
    series.append((int(time.time() * 1000), sum(b["txbytes"] for b in brokers)))
    throttles.append(max([b["throttle"]["max"] for b in brokers] or [0]))
producer = ck.Producer({"bootstrap.servers": bootstrap, "client.id": client_id, "linger.ms": 5,
                        "queue.buffering.max.kbytes": 2048, "batch.size": 65536,
                        "statistics.interval.ms": %d, "stats_cb": on_stats})
producer.produce(topic, b"warm"); producer.flush(30)
start = time.time(); sent = 0
while time.time() - start < seconds:
    if pace_bytes_per_sec and sent > pace_bytes_per_sec * (time.time() - start):
        producer.poll(0.005)
        continue
    try:
        producer.produce(topic, b"k" * 1024)
        sent += 1024
    except BufferError:
        producer.poll(0.05)
    producer.poll(0)
loop_end = time.time()
producer.flush(60)
print(json.dumps({"start_ms": int(start * 1000), "loop_end_ms": int(loop_end * 1000), "series": series,
                  "throttle_max_ms": max(throttles)}))
"""
    % CLIENT_SERIES_INTERVAL_MS
)

FLOODS = {"kafka-python": KAFKA_PYTHON_FLOOD, "librdkafka": CONFLUENT_FLOOD}


def slope_per_sec(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of (time_ms, cumulative value) points, per second.

    :raises ValueError: fewer than two distinct times
    """
    n = len(points)
    if n < 2:
        raise ValueError("need at least two points")
    mean_t = sum(t for t, _ in points) / n
    mean_v = sum(v for _, v in points) / n
    spread = sum((t - mean_t) ** 2 for t, _ in points)
    if spread == 0:
        raise ValueError("all points at the same time")
    return sum((t - mean_t) * (v - mean_v) for t, v in points) / spread * 1000


def steady_rate(series: list[tuple[int, int]], start_ms: int, end_ms: int) -> float:
    """Bytes/s of a cumulative series inside [start_ms, end_ms] (least-squares slope)."""
    return slope_per_sec([(t, v) for t, v in series if start_ms <= t <= end_ms])


def usage_series(lines: list[dict], client_id: str, kind: str = "produce") -> list[tuple[int, int]]:
    """The gateway usage log as a cumulative series: one point at the end of each window."""
    points, total = [], 0
    for line in sorted(
        (l for l in lines if l["kind"] == kind and l["client_id"] == client_id), key=lambda l: l["ts_ms"]
    ):
        total += line["value"]
        points.append((line["ts_ms"] + line["window_ms"], total))
    return points


def shared_quota_ceiling(quota: float, window_num: int, start_ms: int, end_ms: int, window_size_s: int = 1) -> float:
    """The highest steady rate several connections of one client may show over [start_ms, end_ms]:
    1.05·Q, plus one burst allowance Q·(N−1)·W spread over the span. Each connection is muted on its
    own, so when the client's traffic pauses for (N−1)·W (all its connections muted together, or a
    stall on a loaded machine) the sensor's samples empty and it may burst again, as on a broker."""
    span_s = max(end_ms - start_ms, 1) / 1000
    return quota * (1.05 + (window_num - 1) * window_size_s / span_s)


def steady_window(run: dict, window_num: int, window_size_s: int = 1) -> tuple[int, int]:
    """[start + (N+1)·W, end of the flood loop] in epoch ms: excludes the burst allowance Q·(N−1)·W
    and one whole measurement window after it."""
    return run["start_ms"] + (window_num + 1) * window_size_s * 1000, run["loop_end_ms"]
