"""``kconfigs serve --bootstrap-server``: a KRaft 4.x cluster is both the gateway's quota source and
its upstream. Quotas altered with the real kafka-configs 4.x (through the gateway) and with
``kconfigs --bootstrap-server`` (on the cluster) reach a Java and a librdkafka producer running
through the gateway within the documented latency (one poll, ``WATCH_INTERVAL_MS``, plus the
read); the cluster stopped and restarted (/readyz flipping with it, the last quotas kept); SASL/SCRAM
on the admin connection; and with an embedded store as source, a kafka-configs alter through the
gateway writes what the gateway enforces or is refused saying where the quotas are.

All on the session's shared SCRAM-enabled Kafka 4.x broker (PLAINTEXT and SASL_PLAINTEXT
listeners), with client ids of their own."""

from __future__ import annotations

import re
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from harness.java import java_command, run_config_command
from harness.versions import KAFKA_4_VERSION
from kconfigs.model import QuotaEntity
from kconfigs.stores.admin_api import WATCH_INTERVAL_MS
from tests.integration.compat_support import run_kconfigs
from tests.integration.gateway_support import (
    USAGE_WINDOW_MS,
    ServedGateway,
    ServeProcess,
    mean_rate,
    read_usage,
    stop_process,
    usage_inside,
    wait_until,
)

pytestmark = pytest.mark.integration
#: the documented bound from an alter's completion to the gateway enforcing it: one poll interval,
#: plus the full read and the install (milliseconds here; see docs/gateway.md for 100,000 entities),
#: plus slack for a loaded 2-core machine
ENFORCED_WITHIN_S = WATCH_INTERVAL_MS / 1000 + 3
QUOTA_BYTES_PER_SEC = 200_000
PRODUCE_S = 40


@pytest.fixture(scope="module")
def cluster(kraft_broker_factory):
    return kraft_broker_factory(sasl_scram=True)


class ClusterGateway(ServeProcess):
    """``kconfigs serve STORE_ARGS`` as a process, and the limits its metrics say it holds."""

    def limit(self, client_id: str) -> float | None:
        """The Produce limit the gateway holds ``client_id`` to, from its metrics (None: none)."""
        pattern = re.compile(
            r'^kconfigs_gateway_quota_limit\{client_id="%s",quota_type="Produce",user="[^"]*"\} (\S+)$'
            % re.escape(client_id),
            re.M,
        )
        found = pattern.search(self.get("/metrics")[1])
        return float(found.group(1)) if found else None


def _java_producer(bootstrap: str, client_id: str) -> subprocess.Popen:
    argv = java_command(
        KAFKA_4_VERSION,
        "org.apache.kafka.tools.ProducerPerformance",
        ["--topic", f"{client_id}-t", "--num-records", "100000000", "--record-size", "1024", "--throughput", "-1"]
        + ["--producer-props", f"bootstrap.servers={bootstrap}", f"client.id={client_id}", "acks=1", "linger.ms=5"],
    )
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)


LIBRDKAFKA_PRODUCER = r"""
import sys, time
import confluent_kafka as ck
bootstrap, client_id, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
producer = ck.Producer({"bootstrap.servers": bootstrap, "client.id": client_id, "linger.ms": 5, "acks": 1})
end = time.time() + seconds
while time.time() < end:
    try:
        producer.produce(client_id + "-t", b"r" * 1024)
    except BufferError:
        producer.poll(0.05)
    producer.poll(0)
producer.flush(30)
"""


def _librdkafka_producer(bootstrap: str, client_id: str, seconds: float) -> subprocess.Popen:
    argv = [sys.executable, "-c", LIBRDKAFKA_PRODUCER, bootstrap, client_id, str(seconds)]
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)


def _client_quota_args(client_id: str, value: int) -> list[str]:
    return ["--alter", "--add-config", f"producer_byte_rate={value}", "--entity-type", "clients"] + [
        "--entity-name",
        client_id,
    ]


def _seconds_until_limit(gateway: ClusterGateway, client_id: str, value: float, timeout_s: float = 60) -> float:
    start = time.monotonic()
    assert wait_until(lambda: gateway.limit(client_id) == value, timeout_s), (client_id, gateway.limit(client_id))
    return time.monotonic() - start


def _produce_lines(usage: Path, client_id: str) -> list[dict]:
    """The usage log's Produce lines of ``client_id`` (its request-time lines carry no quota here)."""
    return [l for l in read_usage(usage) if l["client_id"] == client_id and l["kind"] == "produce"]


def _produce_rate_after(usage: Path, client_id: str, start_ms: float, end_ms: float) -> tuple[float, list[dict]]:
    after, windows = usage_inside(_produce_lines(usage, client_id), start_ms, end_ms, USAGE_WINDOW_MS)
    return mean_rate(after, windows, USAGE_WINDOW_MS), after


def test_quotas_altered_on_the_cluster_reach_java_and_librdkafka_producers_within_the_poll(cluster, tmp_path):
    suffix = uuid.uuid4().hex[:6]
    java_id, rdkafka_id = f"java-{suffix}", f"rdk-{suffix}"
    gateway = ClusterGateway(tmp_path, "--bootstrap-server", cluster.bootstrap)  # no --upstream: the cluster
    producers = []
    try:
        assert wait_until(lambda: gateway.get("/readyz") == (200, "ready\n"), 30), gateway.get("/readyz")
        assert gateway.get("/healthz") == (200, "ok\n")
        messages = gateway.messages()
        store_line = f"quota store: Kafka cluster {cluster.bootstrap} (admin API, PLAINTEXT) (from --bootstrap-server)"
        assert any(m.startswith(store_line) for m in messages), messages
        assert f"gateway listening on {gateway.bootstrap} for upstream {cluster.bootstrap}" in messages, messages
        assert f"metrics on http://127.0.0.1:{gateway.metrics_port}/metrics" in " ".join(messages)

        producers = [
            _java_producer(gateway.bootstrap, java_id),
            _librdkafka_producer(gateway.bootstrap, rdkafka_id, 30),
        ]
        wait_until(lambda: False, 6)  # both producing, unthrottled
        # the real kafka-configs 4.x, through the gateway: passed to the cluster, which is the source
        altered = run_config_command(
            KAFKA_4_VERSION,
            ["--bootstrap-server", gateway.bootstrap, *_client_quota_args(java_id, QUOTA_BYTES_PER_SEC)],
        )
        assert altered.returncode == 0, altered.stderr
        java_altered_ms = time.time() * 1000
        java_latency_s = _seconds_until_limit(gateway, java_id, QUOTA_BYTES_PER_SEC)
        # kconfigs on the cluster itself
        assert (
            run_kconfigs(
                ["--bootstrap-server", cluster.bootstrap, *_client_quota_args(rdkafka_id, QUOTA_BYTES_PER_SEC)]
            ).rc
            == 0
        )
        rdkafka_altered_ms = time.time() * 1000
        rdkafka_latency_s = _seconds_until_limit(gateway, rdkafka_id, QUOTA_BYTES_PER_SEC)
        print(f"enforced after: kafka-configs {java_latency_s:.2f} s, kconfigs {rdkafka_latency_s:.2f} s")
        assert java_latency_s <= ENFORCED_WITHIN_S and rdkafka_latency_s <= ENFORCED_WITHIN_S

        described = run_config_command(
            KAFKA_4_VERSION, ["--bootstrap-server", gateway.bootstrap, "--describe", "--entity-type", "clients"]
        )
        assert f"Quota configs for client-id '{java_id}' are producer_byte_rate={QUOTA_BYTES_PER_SEC}.0" in (
            described.stdout
        ), described
        producers[1].wait(60)
        rdkafka_done_ms = time.time() * 1000
        wait_until(lambda: False, 3)
        java_done_ms = time.time() * 1000
    finally:
        for producer in producers:
            stop_process(producer, 10)
        assert gateway.stop() == 0
    for client_id, altered_ms, latency_s, done_ms in (
        (java_id, java_altered_ms, java_latency_s, java_done_ms),
        (rdkafka_id, rdkafka_altered_ms, rdkafka_latency_s, rdkafka_done_ms),
    ):
        rate, after = _produce_rate_after(gateway.usage, client_id, altered_ms + latency_s * 1000 + 3000, done_ms)
        if not after:
            # muted through the whole window by one throttle for the burst before the new quota
            # ((rate - Q) / Q x 11 s, tens of seconds when the client had produced fast): the
            # broker's, since the cluster enforces the quota it holds as well and can answer
            # first, or the gateway's; a request that reached the gateway once it held the quota
            # is throttled there, at the new quota
            held_from_ms = altered_ms + latency_s * 1000
            since = [l for l in _produce_lines(gateway.usage, client_id) if l["ts_ms"] >= held_from_ms]
            assert all(l["quota"] == QUOTA_BYTES_PER_SEC and l["throttle_ms"] > 0 for l in since[:1]), (
                client_id,
                since[:5],
            )
        assert all(l["quota"] == QUOTA_BYTES_PER_SEC for l in after), client_id
        assert not after or sum(l["throttle_ms"] for l in after) > 0, client_id
        assert rate <= 1.5 * QUOTA_BYTES_PER_SEC, (client_id, rate)
        lines = [l for l in read_usage(gateway.usage) if l["client_id"] == client_id and l["ts_ms"] < altered_ms - 1000]
        assert max(l["value"] for l in lines) > 3 * QUOTA_BYTES_PER_SEC, client_id  # well above it before


def test_the_cluster_stopped_keeps_the_last_quotas_and_readyz_follows_the_upstream(cluster, tmp_path):
    client_id = f"down-{uuid.uuid4().hex[:6]}"
    assert run_kconfigs(["--bootstrap-server", cluster.bootstrap, *_client_quota_args(client_id, 300_000)]).rc == 0
    config = tmp_path / "admin.properties"
    config.write_text("request.timeout.ms=3000\n")  # the outage is found within seconds, not 30 s
    gateway = ClusterGateway(tmp_path, "--bootstrap-server", cluster.bootstrap, "--command-config", str(config))
    producer = None
    try:
        producer = _librdkafka_producer(gateway.bootstrap, client_id, 300)
        _seconds_until_limit(gateway, client_id, 300_000)
        assert gateway.get("/readyz") == (200, "ready\n")
        cluster.stop()
        try:
            assert wait_until(lambda: gateway.get("/readyz")[0] == 503, 30)
            assert gateway.get("/readyz")[1] == f"upstream {cluster.bootstrap} not reachable (Connection refused)\n"
            said = "quota store connection lost: enforcing the last known quotas"
            assert wait_until(lambda: said in gateway.messages(), 60), gateway.messages()[-5:]
            assert gateway.limit(client_id) == 300_000  # the last quotas stay in force
        finally:
            cluster.start()
        assert wait_until(lambda: gateway.get("/readyz") == (200, "ready\n"), 60), gateway.get("/readyz")
        assert wait_until(lambda: "quota store resynced" in gateway.messages(), 60), gateway.messages()[-5:]
        assert run_kconfigs(["--bootstrap-server", cluster.bootstrap, *_client_quota_args(client_id, 400_000)]).rc == 0
        assert _seconds_until_limit(gateway, client_id, 400_000) <= ENFORCED_WITHIN_S
        assert "quotas changed: 1 entity (0 added, 1 changed, 0 removed)" in " ".join(gateway.messages())
    finally:
        if producer is not None:
            stop_process(producer, 10)
        assert gateway.stop() == 0


def test_scram_on_the_admin_connection_and_alters_through_the_gateway_refused_saying_where(cluster, tmp_path):
    """The admin connection logs in with SCRAM on the SASL listener while clients use the PLAINTEXT
    one (--upstream): the source is not the upstream, so the gateway answers quota admin itself."""
    client_id = f"scram-{uuid.uuid4().hex[:6]}"
    config = tmp_path / "admin.properties"
    config.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="{cluster.admin_user}" password="{cluster.admin_password}";\n'
    )
    source = ["--bootstrap-server", cluster.sasl_bootstrap, "--command-config", str(config)]
    gateway = ClusterGateway(tmp_path, *source, "--upstream", cluster.bootstrap)
    try:
        assert wait_until(lambda: gateway.get("/readyz") == (200, "ready\n"), 30), gateway.get("/readyz")
        assert run_kconfigs([*source, *_client_quota_args(client_id, 500_000)]).rc == 0
        said = "quotas changed: 1 entity (1 added, 0 changed, 0 removed)"
        assert wait_until(lambda: any(said in m for m in gateway.messages()), ENFORCED_WITHIN_S), gateway.messages()
        refused = run_config_command(
            KAFKA_4_VERSION, ["--bootstrap-server", gateway.bootstrap, *_client_quota_args(client_id, 1)]
        )
        where = f"Kafka cluster {cluster.sasl_bootstrap} (admin API, SASL_PLAINTEXT)"
        assert (
            refused.returncode != 0
            and f"may not alter quotas through the gateway: the quotas it enforces are in {where}; change them there"
            in refused.stdout + refused.stderr
        ), refused
        described = run_config_command(
            KAFKA_4_VERSION,
            [
                "--bootstrap-server",
                gateway.bootstrap,
                "--describe",
                "--entity-type",
                "clients",
                "--entity-name",
                client_id,
            ],
        )
        assert f"Quota configs for client-id '{client_id}' are producer_byte_rate=500000.0" in described.stdout, (
            described
        )
    finally:
        assert gateway.stop() == 0
    log_text = gateway.log_path.read_text()
    assert f"quota store: {where}" in log_text and cluster.admin_password not in log_text


def test_with_an_embedded_source_a_kafka_configs_alter_through_the_gateway_writes_what_it_enforces(cluster, tmp_path):
    """The broker holds its own quota for the entity; the gateway's store another. Through the
    gateway, kafka-configs sees and changes the store's, never the broker's."""
    client_id = f"emb-{uuid.uuid4().hex[:6]}"
    assert run_kconfigs(["--bootstrap-server", cluster.bootstrap, *_client_quota_args(client_id, 111_000)]).rc == 0
    served = ServedGateway(cluster.bootstrap, tmp_path / "gw")
    try:
        altered = run_config_command(
            KAFKA_4_VERSION, ["--bootstrap-server", served.bootstrap, *_client_quota_args(client_id, 222_000)]
        )
        assert altered.returncode == 0, altered
        assert served.snapshot() == {QuotaEntity(client_id=client_id): {"producer_byte_rate": "222000"}}
        described = run_config_command(
            KAFKA_4_VERSION,
            [
                "--bootstrap-server",
                served.bootstrap,
                "--describe",
                "--entity-type",
                "clients",
                "--entity-name",
                client_id,
            ],
        )
        assert "producer_byte_rate=222000.0" in described.stdout, described
    finally:
        served.stop()
    on_broker = run_kconfigs(
        ["--bootstrap-server", cluster.bootstrap, "--describe", "--entity-type", "clients", "--entity-name", client_id]
    )
    assert "producer_byte_rate=111000" in "\n".join(on_broker.stdout), on_broker


def test_a_cluster_whose_quotas_answer_in_more_than_a_megabyte_is_read_whole(cluster):
    """The admin connection's response limit: 1,200 client ids of 1,000 characters answer a
    describe of everything in about 1.3 MB (100,000 short names answer in 5.5 MB), over the 1 MB
    the Python connection manager accepts by default."""
    from kconfigs.kafka_admin.client import AdminClient
    from kconfigs.kafka_admin.messages import QuotaOp, build_alter_request, read_alter_response
    from kconfigs.kafka_admin.security import ClientSecurity
    from kconfigs.model import MATCH_ALL
    from kconfigs.stores.admin_api import open_admin_store

    prefix = f"big-{uuid.uuid4().hex[:6]}-".ljust(990, "x")
    entities = [QuotaEntity(client_id=f"{prefix}{i:04d}") for i in range(1200)]
    store = open_admin_store(cluster.bootstrap, None, timeout_ms=60_000)
    writer = AdminClient(cluster.bootstrap, ClientSecurity(), controller=False, request_timeout_ms=60_000)

    def alter_all(value: float | None) -> None:
        for start in range(0, len(entities), 400):
            batch = [(e, [QuotaOp("producer_byte_rate", value)]) for e in entities[start : start + 400]]
            response = writer.send(49, lambda version, batch=batch: build_alter_request(batch, False, version))
            assert [err for _e, err in read_alter_response(response) if err] == []

    try:
        alter_all(1_000_000.0)
        # the broker answers a describe from its metadata image, which the alters reach a moment later
        assert wait_until(lambda: set(entities) <= {r.entity for r in store.describe(MATCH_ALL)}, 30)
    finally:
        alter_all(None)  # the shared broker keeps no trace
        writer.close()
        store.close()


def test_a_cluster_that_cannot_be_read_at_start_is_said_keeps_the_gateway_unready_and_a_stop_quick(tmp_path):
    import socket

    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))  # bound, not listening: refused
        address = "127.0.0.1:%d" % closed.getsockname()[1]
        gateway = ClusterGateway(tmp_path, "--bootstrap-server", address)
        try:
            status, body = gateway.get("/readyz")
            assert (status, body) == (
                503,
                f"quotas not loaded yet from Kafka cluster {address} (admin API, PLAINTEXT)\n",
            )
            said = f"no quotas loaded from Kafka cluster {address} (admin API, PLAINTEXT) after 10 s"
            assert wait_until(lambda: any(m.startswith(said) for m in gateway.messages()), 30), gateway.messages()
            assert gateway.get("/healthz") == (200, "ok\n")
        finally:
            stopping = time.monotonic()
            assert gateway.stop() == 0
        # a stop waits for no read of the cluster: a refused port fails at once, and a read still
        # retrying against it (30 s) is left after 2 s (said in the log when it happens)
        assert time.monotonic() - stopping < 10
