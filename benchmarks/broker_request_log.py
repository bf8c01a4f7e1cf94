"""Where a paced batch's latency went: inside the broker, or outside it (client sockets, proxy).

Why: a p99 measured at the client mixes the proxy's time with the broker's, and the broker's own
stalls (a slow run of appends, a partition's files being freed) hit either path at random, so a
paired difference of two p99s can swing by tens of ms with the proxy doing nothing. Kafka logs
every completed request on ``kafka.request.logger`` at DEBUG with the time it spent in the broker
(``totalTimeMs``: from the request read whole to its response sent). The broker serves one
request of a connection at a time, so with the generator's send and acknowledgement times a
batch's latency splits into the time the broker was working on this connection's requests (its
own and those queued ahead of it) and the rest, which is the path's: the client's sockets, and
through a proxy the proxy.

The logger writes to a file of its own (microsecond times) and is switched to DEBUG through
Kafka's own broker-loggers config only while batches are measured, as logging every request of
the throughput rounds would cost the broker more than it measures.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path

#: the logger Kafka's RequestChannel writes completed requests to
REQUEST_LOGGER = "kafka.request.logger"
#: how long after the client had a response its log line may be written: the broker stamps the
#: line (and ends its totalTimeMs) when its network thread gets round to the completed send,
#: which in a 22 ms broker stall was more than 1 ms after the client's acknowledgement
LOG_LAG_S = 0.5


def logging_config(workdir: Path) -> tuple[str, Path]:
    """(JVM flag, request log path): the test harness' broker logging plus the request logger's
    own file appender; the logger stays at the harness' WARN until ``set_request_logging``."""
    from harness.java import LOGGING_DIR

    log_path = workdir / "requests.log"
    config = workdir / "server-log4j2-requests.properties"
    base = (LOGGING_DIR / "server-log4j2.properties").read_text()
    config.write_text(
        base
        + "\n# completed requests, to a file of their own with microsecond times\n"
        + "appender.requests.type = File\n"
        + "appender.requests.name = REQUESTS\n"
        + f"appender.requests.fileName = {log_path}\n"
        + "appender.requests.layout.type = PatternLayout\n"
        + "appender.requests.layout.pattern = %d{yyyy-MM-dd HH:mm:ss.nnnnnn}{UTC} %m%n\n"
        + "logger.request.additivity = false\n"
        + "logger.request.appenderRef.requests.ref = REQUESTS\n"
    )
    # given after the harness' own -Dlog4j2.configurationFile, so this one is the one in force
    return f"-Dlog4j2.configurationFile={config}", log_path


def set_request_logging(bootstrap: str, broker_id: int, on: bool) -> None:
    """Switch the broker's request logger between DEBUG and WARN (IncrementalAlterConfigs on its
    BROKER_LOGGER resource, as ``kafka-configs.sh --entity-type broker-loggers`` does)."""
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="bench-request-log")
    try:
        resource = ConfigResource(
            ConfigResourceType.BROKER_LOGGER, str(broker_id), {REQUEST_LOGGER: "DEBUG" if on else "WARN"}
        )
        admin.alter_configs([resource], incremental=True)
    finally:
        admin.close()


def produce_timings(log_path: Path, client_id: str) -> dict[int, list[tuple[float, float]]]:
    """Correlation id -> [(response sent, epoch s; time in the broker, ms)] of every Produce
    request of ``client_id`` in the request log."""
    timings: dict[int, list[tuple[float, float]]] = {}
    with open(log_path) as log:
        for line in log:
            if f'"clientId":"{client_id}"' not in line or '"requestApiKey":0,' not in line:
                continue
            sent = datetime.datetime.strptime(line[:26], "%Y-%m-%d %H:%M:%S.%f")
            entry = json.loads(line[line.index("{") :])
            timings.setdefault(entry["requestHeader"]["correlationId"], []).append(
                (sent.replace(tzinfo=datetime.timezone.utc).timestamp(), entry["totalTimeMs"])
            )
    return timings


def outside_the_broker_ms(
    timeline: list[tuple[int, float, float]], timings: dict[int, list[tuple[float, float]]]
) -> list[float]:
    """Per batch of ``timeline`` ((correlation id, scheduled send, acknowledged), epoch s, in
    send order): its latency less the time the broker spent on this connection's requests
    between the batch's scheduled send and its response, in ms.

    :raises ValueError: a batch with no request log entry between its send and acknowledgement.
    """
    served: list[tuple[float, float]] = []  # (request read whole, response sent) per batch
    for correlation_id, due, acknowledged in timeline:
        # correlation ids repeat from round to round: the entry of this batch is the one logged
        # from its scheduled send on, and at most LOG_LAG_S after its acknowledgement
        candidates = [
            (sent, total)
            for sent, total in timings.get(correlation_id, ())
            if due - 0.001 <= sent <= acknowledged + LOG_LAG_S
        ]
        if not candidates:
            raise ValueError(f"batch {correlation_id}: not in the broker's request log")
        logged, total_ms = min(candidates, key=lambda c: abs(c[0] - acknowledged))
        # a late log line is late in both its time and totalTimeMs (both taken when it is
        # written), so the read time stands; the response was out by the acknowledgement
        served.append((logged - total_ms / 1000, min(logged, acknowledged)))
    outside = []
    for i, (_cid, due, acknowledged) in enumerate(timeline):
        in_broker, j = 0.0, i
        while j >= 0 and served[j][1] > due:  # this batch's own request and those ahead of it
            read, sent = served[j]
            in_broker += min(sent, served[i][1]) - max(read, due)
            j -= 1
        outside.append(max(0.0, (acknowledged - due - in_broker) * 1000))
    return outside
