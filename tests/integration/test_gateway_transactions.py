"""Kafka transactions through the gateway with Kafka's own Java client: KIP-890
(``transaction.version=2``, the 4.x default: partitions join a transaction through Produce v12+,
so Produce must not be capped below it) on Kafka 4.x, and classic transactions on 3.9.

One Java program (tests/integration/java/TransactionalLoop.java, compiled at test time against
the broker version's client jars) runs a transactional producer under a producer_byte_rate quota,
a consume-transform-produce loop with sendOffsetsToTransaction and read_committed consumers, and
lists its own TCP connections while every client is still open.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

import pytest

from harness.javac import java_program_command
from tests.integration.gateway_support import GatewayThread, read_usage

pytestmark = pytest.mark.integration
PROGRAM = Path(__file__).resolve().parent / "java" / "TransactionalLoop.java"
RECORDS = 200
PAYLOAD_BYTES = 1000
#: about a third of what the input producer sends (200 KB): it must be throttled
QUOTA_BYTES_PER_SEC = 60_000
ABORTED_RECORDS = 5  # the program's one aborted transaction


@pytest.fixture(params=["kafka-4", "kafka-3.9"])
def broker(request):
    return request.getfixturevalue("kraft_broker" if request.param == "kafka-4" else "kraft_broker_3")


def _run_program(bootstrap: str, version: str, prefix: str) -> dict:
    args = [bootstrap, f"{prefix}-in", f"{prefix}-out", str(RECORDS), str(PAYLOAD_BYTES), prefix]
    result = subprocess.run(
        java_program_command(PROGRAM, version, args),
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_java_transactions_and_consume_transform_produce_through_the_gateway(broker, tmp_path):
    prefix = f"tx{uuid.uuid4().hex[:6]}"
    usage = tmp_path / "usage.jsonl"
    gateway = GatewayThread(broker.bootstrap, usage_log_path=str(usage), quota_window_num=2)
    try:
        gateway.call_soon(
            gateway.gateway.quotas.load,
            [({"client-id": f"{prefix}-in"}, {"producer_byte_rate": float(QUOTA_BYTES_PER_SEC)})],
        )
        summary = _run_program(gateway.bootstrap, broker.version, prefix)
        gateway_ports = gateway.gateway_ports()
    finally:
        gateway.stop()
    print({k: v for k, v in summary.items() if k != "output_committed"})

    # exactly-once: every input record transformed once, offsets committed in the transactions
    assert summary["transformed"] == RECORDS and summary["loop_transactions"] >= RECORDS // 25
    assert sorted(summary["output_committed"]) == sorted(f"V{i}" for i in range(RECORDS))
    # the group's committed offsets are those sendOffsetsToTransaction sent in the last
    # transactions (past the records and the transaction markers between them)
    assert summary["committed_offsets"] == summary["processed_offsets"] >= RECORDS
    # read_committed hides the aborted transaction that read_uncommitted shows
    assert summary["input_committed"] == RECORDS and summary["input_aborted_seen_committed"] == 0
    assert summary["input_uncommitted"] == RECORDS + ABORTED_RECORDS
    if broker.version.startswith("4."):
        assert summary["transaction_v2"] is True  # KIP-890: no AddPartitionsToTxn, Produce v12+
        assert summary["produce_version"] >= 12
    else:
        assert summary["transaction_v2"] is None and summary["produce_version"] <= 11
    # the quota applied: the gateway throttled the input producer and the client saw it
    throttled = [l for l in read_usage(usage) if l["client_id"] == f"{prefix}-in" and l["throttle_ms"] > 0]
    assert throttled, "the producer_byte_rate quota never throttled the transactional producer"
    assert summary["input_throttle_max_ms"] > 0
    # no direct broker connection: every socket the client had open goes to the gateway
    broker_port = int(broker.bootstrap.rsplit(":", 1)[1])
    assert summary["ports"] and broker_port not in summary["ports"]
    assert set(summary["ports"]) <= gateway_ports
