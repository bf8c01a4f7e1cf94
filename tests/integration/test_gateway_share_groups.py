"""KIP-932 share groups through the gateway with Kafka's own Java KafkaShareConsumer, in front of
the suite's Kafka 4.x broker (share groups are production-ready there: share.version=1 by
default). ShareFetch and ShareAcknowledge responses name brokers in NodeEndpoints, which the
data plane rewrites; ShareFetch bytes count against consumer_byte_rate as a broker counts them
(a throttled ShareFetch is answered empty, as KafkaApis answers it).

One Java program (tests/integration/java/ShareGroupConsume.java) creates the topic, sets the
group to start at the earliest offset, produces, and share-consumes, all through one bootstrap.
"""

from __future__ import annotations

import json
import socket
import struct
import subprocess
import uuid
import zlib
from pathlib import Path

import pytest

from harness.javac import java_program_command
from tests.integration.compat_support import run_kconfigs
from tests.integration.gateway_support import GatewayThread, read_usage

pytestmark = pytest.mark.integration
PROGRAM = Path(__file__).resolve().parent / "java" / "ShareGroupConsume.java"
PAYLOAD_BYTES = 1000


def _api_versions(bootstrap: str) -> dict[int, tuple[int, int]]:
    """api key -> (min, max) from an ApiVersions v0 request to ``bootstrap``."""
    host, port = bootstrap.rsplit(":", 1)
    request = struct.pack(">hhih", 18, 0, 1, len(b"probe")) + b"probe"
    with socket.create_connection((host, int(port)), timeout=10) as conn:
        conn.sendall(struct.pack(">i", len(request)) + request)
        size = struct.unpack(">i", conn.recv(4, socket.MSG_WAITALL))[0]
        body = conn.recv(size, socket.MSG_WAITALL)
    error, count = struct.unpack_from(">hi", body, 4)
    assert error == 0
    entries = (struct.unpack_from(">hhh", body, 10 + 6 * i) for i in range(count))
    return {key: (low, high) for key, low, high in entries}


def _value_crc_sum(records: int) -> int:
    """What ShareGroupConsume.java's values sum to when every record arrived intact."""
    return sum(zlib.crc32(f"V{i}:".encode().ljust(PAYLOAD_BYTES, b"\0")) for i in range(records))


def _share_consume(bootstrap: str, version: str, prefix: str, records: int, max_seconds: int) -> dict:
    args = [bootstrap, f"{prefix}-topic", str(records), str(PAYLOAD_BYTES), f"{prefix}-group", prefix, str(max_seconds)]
    result = subprocess.run(
        java_program_command(PROGRAM, version, args),
        capture_output=True,
        text=True,
        timeout=max_seconds + 180,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_a_share_group_consumes_every_record_through_the_gateway_and_nothing_else(kraft_broker):
    prefix = f"sg{uuid.uuid4().hex[:6]}"
    gateway = GatewayThread(kraft_broker.bootstrap)
    try:
        offered = _api_versions(gateway.bootstrap)
        summary = _share_consume(gateway.bootstrap, kraft_broker.version, prefix, records=200, max_seconds=60)
        gateway_ports = gateway.gateway_ports()
        streamed = gateway.gateway.streamed_frames()
    finally:
        gateway.stop()
    print(summary)
    # the broker's share-group versions reach the client: ShareFetch / ShareAcknowledge v2 (their
    # NodeEndpoints rewritten in v2's layout), the rest as the broker has them
    broker = _api_versions(kraft_broker.bootstrap)
    share_apis = (76, 77, 78, 79, 90, 91, 92)
    assert {key: offered.get(key) for key in share_apis} == {key: broker.get(key) for key in share_apis}
    assert offered[78][1] >= 2 and offered[79][1] >= 2
    assert summary["distinct"] == 200
    # 200 KB of records: the large ShareFetch responses were forwarded as they arrived (records
    # spliced, NodeEndpoints checked at the tail), and every value arrived intact
    assert streamed["share_fetch_responses"] > 0, streamed
    assert summary["value_crc_sum"] == _value_crc_sum(200)
    # every connection the clients held went to the gateway: no broker address leaked to them
    assert set(summary["ports"]) <= gateway_ports, (summary["ports"], gateway_ports)


def test_a_share_consumer_under_consumer_byte_rate_gets_what_the_brokers_own_quota_gives(kraft_broker, tmp_path):
    """The same workload twice, both with Kafka's quota settings (11 samples of 1 s): against the
    broker's own consumer_byte_rate on one client id, and through the gateway holding the same
    quota on another. KafkaApis throttles a ShareFetch as a Fetch and answers it empty, so the
    records that response had acquired wait for their acquisition lock (30 s) to be delivered
    again: within the run both paths deliver the records before the throttle and no more."""
    quota, records, seconds = 50_000, 1500, 15
    direct_client = f"sb{uuid.uuid4().hex[:6]}"
    alter = run_kconfigs(
        [
            "--bootstrap-server",
            kraft_broker.bootstrap,
            "--alter",
            "--add-config",
            f"consumer_byte_rate={quota}",
            "--entity-type",
            "clients",
            "--entity-name",
            direct_client,
        ]
    )
    assert alter.rc == 0, alter.stderr
    try:
        direct = _share_consume(kraft_broker.bootstrap, kraft_broker.version, direct_client, records, seconds)
    finally:
        run_kconfigs(
            [
                "--bootstrap-server",
                kraft_broker.bootstrap,
                "--alter",
                "--delete-config",
                "consumer_byte_rate",
                "--entity-type",
                "clients",
                "--entity-name",
                direct_client,
            ]
        )
    prefix = f"sq{uuid.uuid4().hex[:6]}"
    usage = tmp_path / "usage.jsonl"
    gateway = GatewayThread(kraft_broker.bootstrap, usage_log_path=str(usage))
    try:
        gateway.call_soon(gateway.gateway.quotas.load, [({"client-id": prefix}, {"consumer_byte_rate": float(quota)})])
        via = _share_consume(gateway.bootstrap, kraft_broker.version, prefix, records, seconds)
    finally:
        gateway.stop()
    print({"broker": direct, "gateway": via})
    # both throttled the consumer, and it was told for about as long
    assert direct["fetch_throttle_max_ms"] > 0 and via["fetch_throttle_max_ms"] > 0
    assert 0.7 <= via["fetch_throttle_max_ms"] / direct["fetch_throttle_max_ms"] <= 1.4, (direct, via)
    # the same share of the records got through, far fewer than were there
    assert direct["distinct"] < records and via["distinct"] < records
    assert 0.7 <= via["distinct"] / direct["distinct"] <= 1.4, (direct, via)
    # the gateway counted the ShareFetch bytes against the quota and logged the throttle
    fetch_lines = [line for line in read_usage(usage) if line["client_id"] == prefix and line["kind"] == "fetch"]
    assert sum(line["value"] for line in fetch_lines) >= via["bytes"] > 0
    assert any(line["throttle_ms"] > 0 for line in fetch_lines), fetch_lines
