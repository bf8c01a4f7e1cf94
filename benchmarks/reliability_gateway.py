"""Reliability figures for the gateway (docs/RELIABILITY.md sections 2-5), with real servers:

    python benchmarks/reliability_gateway.py [hostile] [faults] [security] [load]   (default: all)

hostile: 10,000 fuzzed frames (seed 20260808) at a `kconfigs serve` in front of tansu during
steady kafka-python traffic. faults: ZooKeeper stopped for 60 s under load, resync measured.
load: 1,000 connections with a quota each, 10^6 client ids in hourly waves (sensor expiry),
50,000 client ids on real sockets. security: what tests/integration/test_reliability_gateway_security.py checks.
The same functions back tests/integration/test_reliability_gateway_*.py (shorter runs).
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from harness.tansu import TansuBroker  # noqa: E402
from harness.zookeeper import ZooKeeperServer  # noqa: E402

DOC = ROOT / "docs" / "RELIABILITY.md"
TITLES = {"hostile": "2. Hostile input", "faults": "3. Faults", "security": "4. Security", "load": "5. Load"}


def write_doc(name: str, body: str) -> None:
    """Replace (or append) the section between ``<!-- name -->`` markers, keeping the others."""
    text = DOC.read_text()
    start, end = f"<!-- {name} -->", f"<!-- /{name} -->"
    block = f"{start}\n## {TITLES[name]}\n\n{body.rstrip()}\n{end}"
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.DOTALL)
    DOC.write_text(
        pattern.sub(lambda _: block, text) if pattern.search(text) else text.rstrip() + "\n\n" + block + "\n"
    )


def load_line() -> str:
    return "load average %.1f / %.1f / %.1f on %d cores" % (*os.getloadavg(), os.cpu_count())


def hostile(workdir: Path, tansu: TansuBroker) -> str:
    from integration.test_reliability_gateway_hostile import CASES, SEED, run_hostile_frames

    f = run_hostile_frames(tansu.bootstrap, workdir, cases=CASES, seed=SEED)
    rows = "\n".join(
        f"| {kind} | {r['cases']} | {r['closed']} | {r['answered']} | {r['max_close_s']} |"
        for kind, r in sorted(f["summary"].items())
    )
    return f"""Command: `python benchmarks/reliability_gateway.py hostile` ({load_line()}).
{f["cases"]:,} hostile frames (seed {SEED}), 200 at a time, alternately on the bootstrap and the
per-broker listener of one `kconfigs serve` in front of tansu, with `request_read_timeout_ms=1000`
and `connections_max_idle_ms=4000`. Categories: length prefixes (negative, zero, tiny, > 100 MiB,
a TLS record), plain text/TLS/HTTP bytes, truncated headers, garbage api keys and versions, valid
headers of the APIs the gateway decodes (Produce, Fetch, Metadata, FindCoordinator, SASL,
InitProducerId, quota admin 48/49, DescribeCluster) with garbage bodies, and bit-flipped /
spliced / truncated copies of frames captured from real kafka-python producers, consumers and
kconfigs' admin client. No case half-closes: the gateway must close each connection itself.

| category | cases | closed by the gateway | got a response first | slowest close (s) |
|---|---|---|---|---|
{rows}

- Gateway alive afterwards: **{f["alive"]}**, a new client produces: **{f["fresh_client_ok"]}**;
  unexpected-error log lines: **{len(f["unexpected_errors"])}**; connections left open: **{len(f["left_open"])}**;
  `kconfigs_gateway_bad_frames_total{{side="client"}}` = {int(f["bad_frames"]):,}.
- Steady kafka-python producer + consumer through the same gateway during the {f["seconds"]} s
  barrage: errors {len(f["errors"])}, {f["acked_during"]:,} messages acknowledged and {f["consumed_during"]:,}
  consumed meanwhile; longest pause without an acknowledgement {f["longest_ack_gap_s"]} s, without a
  consumed record {f["longest_consume_gap_s"]} s.
- Gateway RSS {f["rss_before_mib"]} MiB before, {f["rss_after_mib"]} MiB after (peak {f["peak_rss_mib"]} MiB).

Fuzzing found a gateway bug, fixed: kafka-python decode errors (struct.error,
UnicodeDecodeError, IndexError, null arrays, null SASL bytes) in decoded requests ended the
connection through the "unexpected error" path with a traceback in the log; they are now one
`bad frame` line each.

**Slowloris, oversized prefixes, floods** (`tests/integration/test_reliability_gateway_hostile.py`,
asserted on every CI run): a frame dribbled one byte per 200 ms is cut
`request_read_timeout_ms` after its length prefix (1.5 s in the test, default 30 s = clients'
`request.timeout.ms`); a half frame followed by silence likewise; a connection that sends nothing
is closed after `connections_max_idle_ms` (Kafka's `connections.max.idle.ms`, default 10 min), and
a client pausing between whole requests is not cut. 400 connections announcing 64 MiB-2 GiB frames
(limit 64 MiB) are closed at once and the gateway's peak RSS (VmHWM) grows by less than 32 MiB in
total: the size is checked from the 4-byte prefix before anything is allocated. A flood of 200
connections from one IP plus 120 from three others against `max_connections=120`,
`max_connections_per_ip=50` leaves exactly 50 + 70 open (counted in
`kconfigs_gateway_connections_over_limit_total{{limit}}`: 150 and 50), and the gateway serves
normally afterwards. The per-IP `connection_creation_rate` quota (KIP-612) is measured in
`tests/integration/test_gateway_quotas.py` (accepted rate <= 1.05x the limit).
A connection that is within its frame limit costs up to `max_frame_bytes` while its frame is read
(as in Kafka without `queued.max.request.bytes`); total memory is bounded by `max_connections`.

**Metric dumps** (`tests/integration/test_reliability_gateway_metric_dumps.py`): 1,200 malformed
lines (400 each in one JmxTool CSV, one Prometheus scrape and one usage log, between valid lines;
too few/many cells, non-numbers, impossible dates, unterminated labels, missing names/values,
truncated JSON, bad kinds, negative values, zero windows) are all reported as malformed with
their text, in one Spark session; every valid line around them is still read."""


def faults(workdir: Path, tansu: TansuBroker) -> str:
    from integration.test_reliability_gateway_faults import QUOTA_BYTES_PER_SEC, run_zookeeper_outage

    zk = ZooKeeperServer(workdir / "zk")
    zk.start()
    try:
        chroot = f"/kc-{uuid.uuid4().hex[:8]}"
        admin = zk.admin_client()
        admin.ensure_path(chroot)
        f = run_zookeeper_outage(zk, zk.hosts + chroot, tansu.bootstrap, workdir, outage_s=60)
    finally:
        zk.shutdown()
    return f"""Command: `python benchmarks/reliability_gateway.py faults` ({load_line()}).

**ZooKeeper stopped for {f["outage_s"]} s under load.** `kconfigs serve --zookeeper` in front of tansu,
a kafka-python producer flat out as client `zk-outage` with `producer_byte_rate={QUOTA_BYTES_PER_SEC}`
(window 2 x 1 s). ZooKeeper is stopped and started again (a restarted ZooKeeper renews the sessions it restores, so the
session survives; expiry is tested below); right after it answers, a new entity is written.

| figure | value |
|---|---|
| producer errors | {len(f["errors"])} |
| whole usage-log windows inside the outage | {f["windows_during"]} |
| quota in force in those windows | {f["quota_during"]} |
| windows with traffic (idle: the client was throttled throughout) | {f["busy_windows_during"]} |
| windows with a throttle | {f["throttled_windows_during"]} |
| mean rate during the outage (over all its windows) | {f["rate_during_bytes_per_sec"]:,} B/s ({f["rate_during_bytes_per_sec"] / QUOTA_BYTES_PER_SEC:.2f} x quota) |
| "connection lost" logged | {f["lost_logged"]} |
| resync: ZooKeeper answering -> change written after recovery enforced | **{f["resync_s"]} s** (target <= 5 s) |
| ZooKeeper's startup race hit the reconnection | {f["zk_startup_race"]} |

The watch reconnects with a 1 s retry ceiling, re-reads the whole tree on reconnection (also
with a new session after an expiry) and installs a full snapshot; until then the last snapshot is
enforced. One limit is ZooKeeper's own: 3.8.0 (Debian's package, used here) does not close a
connection accepted while it is still loading its database (a NullPointerException
in `removeCnxn`), and does not answer it either; a client that reconnects in that instant waits its
handshake timeout, session timeout / hosts (30 s with one host; a Kafka broker's Java client
waits the same way). In 1 of 20 consecutive runs of the test the reconnection hit it and the resync took
30.3 s. A 10 s outage is asserted on every CI run
(`tests/integration/test_reliability_gateway_faults.py`; measured again when ZooKeeper's log shows
that race), as are:

- **Session expiry** (the session is expired on the server by closing it from a second client with
  its id and password; restarting ZooKeeper would renew restored sessions instead): the quotas stay
  in force, the watch gets a new session, states `lost` -> `resynced` within 5 s, and a change
  written afterwards is applied.
- **Upstream broker restart:** the Kafka 4 KRaft broker behind the gateway is stopped and started on
  the same port; the same kafka-python producer, which only knows the gateway, gets
  acknowledgements again and never connects to the broker directly.
- **SIGTERM drain:** a Fetch long poll (4 s) in flight at the broker when SIGTERM arrives gets its
  response, then the connection closes and the gateway exits 0. This test found that the drain
  cancelled the connection before its responses were written (fixed)."""


def security(_workdir: Path, _tansu: TansuBroker) -> str:
    return """Command: `python -m pytest tests/integration/test_reliability_gateway_security.py` (pass/fail checks,
no figures); ZooKeeper digest/ACL/TLS are in `test_zk_security.py` and `test_zk_tls.py`.

- **Secrets never logged:** SCRAM-SHA-256/512 sessions through the gateway to a SASL_PLAINTEXT
  Kafka 4 broker, failing logins (wrong password for both mechanisms, PLAIN against a broker
  without it) and hand-made PLAIN / SCRAM / malformed SASL exchanges carrying the password: the
  password and the wrong password appear in none of the gateway log, the usage log, the Prometheus
  output, the clients' error messages or the bytes the gateway sends back. Decode errors name the
  API and the error type, never the bytes.
- **Localhost by default:** in a private network namespace (`unshare -n`, so the default ports are
  free), `kconfigs serve` with no `--listen`/`--metrics-listen` listens on exactly
  127.0.0.1:9092, 127.0.0.1:9404 and 127.0.0.1:<per-broker port> (read from `ss -tlnp`);
  `--listen 0.0.0.0:9093 --metrics-listen 0.0.0.0:9405` binds 0.0.0.0 as told. Per-broker
  listeners use the host of `--listen`. The gateway has no other admin endpoint: quota admin is
  Kafka's API on the Kafka listeners.
- **No auth downgrade:** in front of a SASL upstream, a kafka-python client without SASL and raw
  Metadata / DescribeClientQuotas / AlterClientQuotas requests get nothing (connection closed), with
  `quota_admin` `auto` (passed to the broker, which closes) and `gateway` (answered by the gateway).
  The `gateway` case answered both admin APIs to unauthenticated clients before (an alter reached
  the store); now an unauthenticated connection gets a local answer only if the upstream serves
  anonymous clients, probed once per upstream with a Metadata request and cached for 60 s."""


def load(workdir: Path, tansu: TansuBroker) -> str:
    from integration.test_reliability_gateway_load import (
        PER_CLIENT_BYTES_PER_SEC,
        drive_million_client_ids,
        run_rotating_client_ids,
        run_thousand_connections,
    )

    (workdir / "c").mkdir()
    (workdir / "r").mkdir()
    c = run_thousand_connections(tansu.bootstrap, workdir / "c", seconds=30)
    started = time.monotonic()
    waves = drive_million_client_ids()
    million_s = time.monotonic() - started
    r = run_rotating_client_ids(tansu.bootstrap, workdir / "r", ids=50_000)
    wave_rows = "\n".join(
        f"| {w['wave']} | {w['ids_so_far']:,} | {w['live_sensors']:,} | {w['blocks_after_wave']:,} | "
        f"{w['sensors_after_expiry']} | {w['blocks_after_expiry']:,} |"
        for w in waves
    )
    return f"""Command: `python benchmarks/reliability_gateway.py load` ({load_line()}).

**1,000 concurrent connections, a quota on each.** One `kconfigs serve` in front of tansu; 1,000
asyncio clients, each with its own client id, send real kafka-python Produce requests
({c["frame_bytes"]:,} bytes, acks=1) back to back for {c["seconds"]} s and ignore `throttle_time_ms`
(as librdkafka does), so only the gateway's muting holds them. Default client quota
`producer_byte_rate={PER_CLIENT_BYTES_PER_SEC}`, window 2 x 1 s; rates from the usage log, after 5 s.

| figure | value |
|---|---|
| connections open midway (`kconfigs_gateway_open_connections`) | {int(c["open_midway"]):,} |
| client errors | {len(c["errors"])} |
| clients seen / throttled | {c["clients_seen"]:,} / {c["clients_throttled"]:,} |
| per-client rate, median / max | {c["per_client_median"]:,} / {c["per_client_max"]:,} B/s (quota {PER_CLIENT_BYTES_PER_SEC:,}) |
| aggregate throughput | {c["aggregate_bytes_per_sec"]:,} B/s ({c["responses"]:,} responses) |
| gateway RSS with 1,000 connections | {c["gateway_rss_mib"]} MiB |

**10^6 distinct client ids over time** (sensor expiry), on the gateway's `QuotaGate` with a manual
clock ({million_s:.0f} s): four waves of 250,000 new client ids, each charged a Produce and a
request time against a default client quota; an hour later the gateway's expiry pass (Kafka's
`ExpireSensorTask`, idle > 1 h) runs. Memory in allocated Python blocks above the start:

| wave | ids so far | live sensors | blocks after the wave | sensors after expiry | blocks after expiry |
|---|---|---|---|---|---|
{wave_rows}

Memory is bounded by the client ids active within one hour, not by the ids ever seen.

**Real sockets:** {r["ids"]:,} distinct client ids (one Produce each, 8 connections) through
`kconfigs serve`: {r["answered"]:,} answered in {r["seconds"]} s; {r["exported_sensors"]:,} byte-rate
sensors exported on `/metrics`; RSS {r["rss_before_mib"]} -> {r["rss_after_mib"]} MiB
({r["kib_per_1000_ids"]} KiB per 1,000 ids until they expire an hour later)."""


def main() -> None:
    wanted = sys.argv[1:] or list(TITLES)
    with tempfile.TemporaryDirectory() as tmp:
        tansu = TansuBroker(Path(tmp) / "tansu")
        (Path(tmp) / "tansu").mkdir()
        tansu.start()
        try:
            for name in wanted:
                workdir = Path(tmp) / name
                workdir.mkdir()
                body = globals()[name](workdir, tansu)
                write_doc(name, body)
                print(f"wrote section {name}", flush=True)
        finally:
            tansu.stop()


if __name__ == "__main__":
    main()
