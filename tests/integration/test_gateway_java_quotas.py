"""Kafka's own performance tools under byte-rate quotas, through the gateway and directly against
the same Kafka 4.x broker's own quotas (same window settings, same workload, same client).

ProducerPerformance (``producer_byte_rate``) and ConsumerPerformance (``consumer_byte_rate``, with
a classic and a KIP-848 consumer group) report their rate every second; the first (N+1)·W seconds
are skipped (the burst the windowed rate allows) and the rest averaged. What the broker achieves
for the client is the reference: the gateway must hold the producer within 0.95–1.05 of the quota
and of the broker's own result, and the consumer at the broker's own result (within 0.9–1.1).
A Fetch over the quota gets an empty throttled response through the gateway as from the broker
(KafkaApis ``getThrottledResponse``), so a consumer cannot burst past it.
"""

from __future__ import annotations

import concurrent.futures
import datetime
import functools
import statistics
import subprocess
import threading
import uuid

import pytest

from harness.java import java_command
from harness.versions import KAFKA_4_VERSION
from tests.integration.gateway_support import GatewayThread

pytestmark = pytest.mark.integration
WINDOW_NUM = 2
RECORD_BYTES = 1024
PRODUCE_QUOTA = 1_000_000
FETCH_QUOTA = 2_000_000
# long enough for many reports once the client runs and the rate has settled (see _steady)
RUN_S = 24
# the consumers run side by side (see the test), so twice as long costs no more time
CONSUME_RUN_S = 2 * RUN_S
SKIP_S = WINDOW_NUM + 1
SETTLE_INTERVALS = 2 * (WINDOW_NUM + 1)


@pytest.fixture(scope="module")
def broker(kraft_broker_factory):
    return kraft_broker_factory(extra_props={"quota.window.num": str(WINDOW_NUM), "quota.window.size.seconds": "1"})


def _alter_broker_quota(bootstrap: str, client_id: str, key: str, value: int) -> None:
    from tests.integration.compat_support import run_kconfigs

    result = run_kconfigs(
        [
            "--bootstrap-server",
            bootstrap,
            "--alter",
            "--add-config",
            f"{key}={value}",
            "--entity-type",
            "clients",
            "--entity-name",
            client_id,
        ]
    )
    assert result.rc == 0, result.stderr


def _steady(intervals: list[tuple[float, float]]) -> float:
    """The rate once the client runs and the windowed rate has settled: the least-squares slope of
    the cumulative bytes (or records) over time. Leading intervals with next to nothing in them
    are the client starting (a JVM on a loaded machine takes seconds), not throttling; the next
    SETTLE_INTERVALS hold the burst the windowed rate allows and the swing when its sample is
    purged. A slope weighs every report; bytes over time between the two ends (what a plain sum
    gives) moved by up to 10 % with where the second-to-second swings fell at those ends."""
    typical = statistics.median(b for b, _ in intervals)
    started = next(i for i, (b, _) in enumerate(intervals) if b >= typical / 10)
    steady = intervals[started + SETTLE_INTERVALS :]
    assert len(steady) >= 5, intervals
    times, totals = [0.0], [0.0]
    for amount, seconds in steady:
        times.append(times[-1] + seconds)
        totals.append(totals[-1] + amount)
    return statistics.linear_regression(times, totals).slope


def _rates(intervals: list[tuple[float, float]]) -> list[float]:
    return [b / s for b, s in intervals]


def _producer_intervals(
    bootstrap: str,
    topic: str,
    client_id: str,
    records: int,
    record_bytes: int,
    *props: str,
    timeout_s: float,
    intervals_wanted: int | None = None,
) -> list[tuple[float, float]]:
    """(records, seconds) per reporting interval (about a second) of ProducerPerformance:
    "N records sent, R records/sec ..." covers N / R seconds. With ``intervals_wanted`` the tool
    is stopped once it has reported that many intervals, so a run lasts as many seconds however
    fast the quota lets the client go (a fixed number of records ran out after 10 reports when
    a warm broker let the client through faster than usual)."""
    argv = java_command(
        KAFKA_4_VERSION,
        "org.apache.kafka.tools.ProducerPerformance",
        [
            "--topic",
            topic,
            "--num-records",
            str(records),
            "--record-size",
            str(record_bytes),
            "--throughput",
            "-1",
            "--reporting-interval",
            "1000",
            "--producer-props",
            f"bootstrap.servers={bootstrap}",
            f"client.id={client_id}",
            "acks=1",
            *props,
        ],
    )
    if intervals_wanted is None:
        result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, stdin=subprocess.DEVNULL)
        assert result.returncode == 0, result.stderr[-3000:]
        lines = [l for l in result.stdout.splitlines() if "records/sec" in l]
        return [_interval(line) for line in lines[:-1]]  # the last line is the whole-run summary
    return _first_intervals(argv, intervals_wanted, timeout_s)


def _interval(report: str) -> tuple[float, float]:
    sent = int(report.split(" records sent")[0])
    per_second = float(report.split(",")[1].split("records/sec")[0])
    return sent, sent / per_second


def _first_reports(argv: list[str], timeout_s: float, is_report, enough) -> list[str]:
    """The report lines of a tool left running until ``enough(reports)``, then the tool is stopped."""
    with subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, text=True
    ) as tool:
        timer = threading.Timer(timeout_s, tool.kill)
        timer.start()
        try:
            reports = []
            for line in tool.stdout:
                if is_report(line):
                    reports.append(line)
                    if enough(reports):
                        return reports
        finally:
            timer.cancel()
            tool.kill()
    raise AssertionError(f"the tool stopped after {len(reports)} reports, too few: {reports[-3:]}")


def _first_intervals(argv: list[str], wanted: int, timeout_s: float) -> list[tuple[float, float]]:
    reports = _first_reports(argv, timeout_s, lambda l: "records sent" in l, lambda r: len(r) == wanted)
    return [_interval(line) for line in reports]


def _produced_bytes(bootstrap: str, topic: str, client_id: str, records: int) -> list[tuple[float, float]]:
    """(bytes of record values, seconds) per interval, 1 KiB records batched."""
    intervals = _producer_intervals(
        bootstrap, topic, client_id, records, RECORD_BYTES, "linger.ms=5", timeout_s=RUN_S * 6 + 60
    )
    return [(sent * RECORD_BYTES, seconds) for sent, seconds in intervals]


def _consumer_intervals(
    bootstrap: str, topic: str, client_id: str, records: int, group_protocol: str
) -> list[tuple[float, float]]:
    """(bytes, seconds) per reporting interval from ConsumerPerformance's detailed stats: time,
    thread, MB consumed so far, MB/s over the interval (MB = 1024 * 1024 bytes). The tool reports
    only when a poll returns records, so a throttled second has no report: it is stopped once its
    reports span CONSUME_RUN_S seconds (held at about 0.73 Q, see the test, it would otherwise
    read a third longer)."""
    argv = java_command(
        KAFKA_4_VERSION,
        "org.apache.kafka.tools.ConsumerPerformance",
        [
            "--bootstrap-server",
            bootstrap,
            "--topic",
            topic,
            "--num-records",
            str(records),
            "--group",
            f"perf-{uuid.uuid4().hex[:6]}",
            "--show-detailed-stats",
            "--reporting-interval",
            "1000",
            "--timeout",
            "60000",
            "--hide-header",
            "--command-property",
            f"client.id={client_id}",
            "--command-property",
            f"group.protocol={group_protocol}",
            "--command-property",
            "auto.offset.reset=earliest",
        ],
    )
    spans_the_run = lambda r: _report_time(r[-1]) - _report_time(r[0]) >= CONSUME_RUN_S  # noqa: E731
    reports = _first_reports(argv, CONSUME_RUN_S * 6 + 90, _is_detailed_stats, spans_the_run)
    intervals, previous = [], None
    for line in reports:
        fields = [f.strip() for f in line.split(",")]
        at = _report_time(line)
        total = float(fields[2]) * 1024 * 1024
        if previous is None:  # the first interval starts before the first report
            mb_per_s = float(fields[3])
            intervals.append((total, total / (mb_per_s * 1024 * 1024) if mb_per_s else 1.0))
        else:
            intervals.append((total - previous[1], at - previous[0]))
        previous = (at, total)
    return intervals


def _report_time(line: str) -> float:
    return datetime.datetime.strptime(line.split(",")[0].strip(), "%Y-%m-%d %H:%M:%S:%f").timestamp()


def _is_detailed_stats(line: str) -> bool:
    fields = [f.strip() for f in line.split(",")]
    return len(fields) >= 6 and fields[3].replace(".", "", 1).isdigit()


def _fill(bootstrap: str, topic: str, records: int) -> None:
    _producer_intervals(bootstrap, topic, "fill", records, RECORD_BYTES, timeout_s=180)


def _gateway(broker) -> GatewayThread:
    return GatewayThread(broker.bootstrap, quota_window_num=WINDOW_NUM, quota_window_size_seconds=1)


def _side_by_side(*runs) -> list:
    """Every run at the same time, their results in order (direct and through the gateway
    alike): a stall of the machine hits all of them, and they take the time of one run."""
    with concurrent.futures.ThreadPoolExecutor(len(runs)) as pool:
        started = [pool.submit(run) for run in runs]
        return [run.result() for run in started]


def test_producer_performance_is_held_like_the_broker_holds_it(broker):
    """The direct producer and the one through the gateway run side by side, each under its own
    quota (the broker's for one client-id, the gateway's for another), on their own topics."""
    records = PRODUCE_QUOTA * RUN_S // RECORD_BYTES
    direct_id, gateway_id = f"pp-direct-{uuid.uuid4().hex[:6]}", f"pp-gw-{uuid.uuid4().hex[:6]}"
    _alter_broker_quota(broker.bootstrap, direct_id, "producer_byte_rate", PRODUCE_QUOTA)
    gateway = _gateway(broker)
    try:
        gateway.call_soon(
            gateway.gateway.quotas.load, [({"client-id": gateway_id}, {"producer_byte_rate": float(PRODUCE_QUOTA)})]
        )
        direct_bytes, through_bytes = _side_by_side(
            lambda: _produced_bytes(broker.bootstrap, f"pp-{uuid.uuid4().hex[:6]}", direct_id, records),
            lambda: _produced_bytes(gateway.bootstrap, f"pp-{uuid.uuid4().hex[:6]}", gateway_id, records),
        )
    finally:
        gateway.stop()
    direct, through = _steady(direct_bytes), _steady(through_bytes)
    print(
        f"ProducerPerformance: direct {direct / PRODUCE_QUOTA:.3f} Q, "
        f"through the gateway {through / PRODUCE_QUOTA:.3f} Q"
    )
    assert 0.95 * PRODUCE_QUOTA <= direct <= 1.05 * PRODUCE_QUOTA, direct / PRODUCE_QUOTA
    assert 0.95 * PRODUCE_QUOTA <= through <= 1.05 * PRODUCE_QUOTA, through / PRODUCE_QUOTA
    assert 0.95 <= through / direct <= 1.05


GROUP_PROTOCOLS = ("classic", "consumer")
#: consumers per group protocol and path, each under its own client-id's quota (see the test)
CONSUMERS_EACH = 3


def test_consumer_performance_is_held_like_the_broker_holds_it(broker):
    """For each group protocol (classic and KIP-848), CONSUMERS_EACH direct consumers and as many
    through the gateway run at the same time, each under its own quota (the broker's for the
    direct client-ids, the gateway's for the others), and their mean rates are compared: a
    consumer held by the discard-and-wait cycle below settles into a steady rate, but one second
    off that cycle (a fetch that just escaped the throttle, a stalled machine) moved a 24 s run's
    rate by up to 7 %. Run one after the other, two such seconds in opposite directions broke a
    10 % comparison; side by side, a stall hits both, and a run twice as long weighs a lucky
    second half as much. A KIP-848 consumer still settled anywhere from 0.68 to 0.76 Q from run to
    run, directly as through the gateway (classic ones within 0.735-0.737), so one consumer each
    way broke the 10 % comparison in both directions (0.90x, 1.11x) in two full suites; three
    each way narrow the mean's spread by about 1.7x. All run at once on one topic (each consumer
    in its own group), as the held consumers together use little of the machine."""
    records = FETCH_QUOTA * (CONSUME_RUN_S + 10) // RECORD_BYTES  # more than a run reads, even at Q
    topic = f"cp-{uuid.uuid4().hex[:6]}"
    _fill(broker.bootstrap, topic, records)
    ids = {
        (protocol, path, n): f"cp-{path}-{protocol}-{n}-{uuid.uuid4().hex[:6]}"
        for protocol in GROUP_PROTOCOLS
        for path in ("direct", "gw")
        for n in range(CONSUMERS_EACH)
    }
    for (_protocol, path, _n), client_id in ids.items():
        if path == "direct":
            _alter_broker_quota(broker.bootstrap, client_id, "consumer_byte_rate", FETCH_QUOTA)
    gateway = _gateway(broker)
    try:
        gateway.call_soon(
            gateway.gateway.quotas.load,
            [
                ({"client-id": client_id}, {"consumer_byte_rate": float(FETCH_QUOTA)})
                for (_protocol, path, _n), client_id in ids.items()
                if path == "gw"
            ],
        )
        bootstraps = {"direct": broker.bootstrap, "gw": gateway.bootstrap}
        consumed = _side_by_side(
            *(
                functools.partial(_consumer_intervals, bootstraps[path], topic, client_id, records, protocol)
                for (protocol, path, _n), client_id in ids.items()
            )
        )
        intervals = dict(zip(ids, consumed))
    finally:
        gateway.stop()
    for protocol in GROUP_PROTOCOLS:
        each = {path: [intervals[protocol, path, n] for n in range(CONSUMERS_EACH)] for path in ("direct", "gw")}
        _check_consumers(protocol, each["direct"], each["gw"])


def _check_consumers(group_protocol: str, direct_runs, through_runs) -> None:
    """``direct_runs`` and ``through_runs``: each consumer's intervals."""
    direct_each = [_steady(run) for run in direct_runs]
    through_each = [_steady(run) for run in through_runs]
    direct, through = statistics.mean(direct_each), statistics.mean(through_each)
    direct_peak = max(max(_rates(run)[SKIP_S:]) for run in direct_runs)
    through_peak = max(max(_rates(run)[SKIP_S:]) for run in through_runs)
    print(
        f"ConsumerPerformance ({group_protocol}): "
        f"direct {[round(r / FETCH_QUOTA, 3) for r in direct_each]} Q peak {direct_peak / FETCH_QUOTA:.2f} Q, "
        f"through the gateway {[round(r / FETCH_QUOTA, 3) for r in through_each]} Q "
        f"peak {through_peak / FETCH_QUOTA:.2f} Q ({through / direct:.3f}x)"
    )
    what = (group_protocol, direct / FETCH_QUOTA, through / FETCH_QUOTA)
    # A broker discards the whole (here up to 1 MiB) response of a throttled Fetch and the consumer
    # waits before asking again, so it holds ConsumerPerformance at about 0.73 Q (measured), not Q;
    # the gateway must do the same, neither more nor less
    assert max(direct_each) <= 1.05 * FETCH_QUOTA and max(through_each) <= 1.05 * FETCH_QUOTA, what
    assert 0.9 <= through / direct <= 1.1, what
    # no burst far above what the broker itself lets through in one second
    assert through_peak <= 1.5 * max(direct_peak, FETCH_QUOTA), what


#: small records one per request (batching off): request time, not bytes, is what is limited
SMALL_RECORD_BYTES = 100
REQUEST_PERCENTAGE = 1
#: unthrottled requests that warm the broker's produce path (about 6 s)
WARM_REQUESTS = 30_000
#: the requests a held run may send (far more than it gets to in HELD_INTERVALS)
HELD_REQUESTS = 1_000_000
#: interval reports (about a second each) a held run lasts: the client starting, the settling
#: intervals _steady skips, and many steady ones
HELD_INTERVALS = 2 + SETTLE_INTERVALS + 16
#: rounds of held runs, direct and through the gateway side by side (see the test)
HELD_RUNS = 4
#: held clients each way in a round, each under its own client-id's quota
HELD_CLIENTS = 2


def _requests(
    bootstrap: str, topic: str, client_id: str, records: int, intervals: int | None = None
) -> list[tuple[float, float]]:
    """(records = Produce requests, seconds) per interval: small records, one per request."""
    timeout_s = RUN_S * 10 + 60
    return _producer_intervals(
        bootstrap,
        topic,
        client_id,
        records,
        SMALL_RECORD_BYTES,
        "linger.ms=0",
        "batch.size=0",
        timeout_s=timeout_s,
        intervals_wanted=intervals,
    )


def test_request_percentage_migrated_from_the_broker_holds_the_client_within_1_5x(broker):
    """The gateway cannot see broker thread time: it charges its own handling time plus the
    broker's share of the upstream round trip (docs/gateway.md). The same request_percentage must
    hold the same client within 1.5x of what the broker itself allows.

    The broker's produce path is warmed first (a fresh broker held the client at 10 requests/s
    rising to 28 over two minutes; a production broker is warm). Then each round runs
    HELD_CLIENTS clients directly and as many through the gateway, all at once (one topic, each
    client under its own client-id's quota), and the mean rates over HELD_RUNS rounds are
    compared. One client alone each way was measured first: a client held this tightly on an
    otherwise idle broker settles either into bursts or into an even trickle, for the broker as
    for the gateway, and the two achieve different rates (27-32 requests/s evenly, 41-49 in
    bursts), so four rounds gave ratios from 0.64 to 1.45 between runs of this test (1.00
    pooled). With two clients each way the broker's threads stay busy, every client settles
    into the same rate (within about 10 % in a round), and the ratio held at 0.78-0.86 round
    by round."""
    _requests(broker.bootstrap, f"rq-warm-{uuid.uuid4().hex[:6]}", "rq-warm", WARM_REQUESTS)
    suffix = uuid.uuid4().hex[:6]
    direct_ids = [f"rq-direct-{n}-{suffix}" for n in range(HELD_CLIENTS)]
    gateway_ids = [f"rq-gw-{n}-{suffix}" for n in range(HELD_CLIENTS)]
    for client_id in direct_ids:
        _alter_broker_quota(broker.bootstrap, client_id, "request_percentage", REQUEST_PERCENTAGE)
    gateway = _gateway(broker)
    direct, through = [], []
    try:
        gateway.call_soon(
            gateway.gateway.quotas.load,
            [({"client-id": cid}, {"request_percentage": float(REQUEST_PERCENTAGE)}) for cid in gateway_ids],
        )
        for _ in range(HELD_RUNS):
            topic = f"rq-{uuid.uuid4().hex[:6]}"
            clients = [(broker.bootstrap, client_id) for client_id in direct_ids]
            clients += [(gateway.bootstrap, client_id) for client_id in gateway_ids]
            held = _side_by_side(
                *(
                    functools.partial(_requests, bootstrap, topic, client_id, HELD_REQUESTS, HELD_INTERVALS)
                    for bootstrap, client_id in clients
                )
            )
            rates = [_steady(run) for run in held]
            direct += rates[:HELD_CLIENTS]
            through += rates[HELD_CLIENTS:]
    finally:
        gateway.stop()
    ratio = statistics.mean(through) / statistics.mean(direct)
    print(
        f"request_percentage={REQUEST_PERCENTAGE}: direct {[round(r) for r in direct]} requests/s, "
        f"through the gateway {[round(r) for r in through]} requests/s ({ratio:.2f}x)"
    )
    assert 1 / 1.5 <= ratio <= 1.5, (direct, through)
