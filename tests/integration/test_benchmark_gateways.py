"""The gateways the benchmarks measure start and proxy: bench_gateway.start_gateway (which
bench_gateway_peers uses too) for each of its quota sets, in front of the harness' tansu; and the
paced batch generator of the latency measure (batch_latency.py) keeps its schedule through one.
A benchmark whose gateway or generator fails does so only when someone runs it, hours later."""

from __future__ import annotations

import socket
import struct

import pytest

from benchmarks import batch_latency, bench_gateway

pytestmark = pytest.mark.integration


def _api_versions_through(bootstrap: str) -> bytes:
    host, port = bootstrap.rsplit(":", 1)
    request = struct.pack(">hhih", 18, 0, 7, len(b"bench")) + b"bench"
    with socket.create_connection((host, int(port)), timeout=10) as conn:
        conn.sendall(struct.pack(">i", len(request)) + request)
        size = struct.unpack(">i", conn.recv(4, socket.MSG_WAITALL))[0]
        return conn.recv(size, socket.MSG_WAITALL)


@pytest.mark.parametrize("quotas", sorted(bench_gateway.QUOTA_SETS))
def test_each_benchmark_gateway_starts_and_proxies(tansu_upstream, tmp_path, quotas):
    process, bootstrap = bench_gateway.start_gateway(tansu_upstream, tmp_path, quotas)
    try:
        response = _api_versions_through(bootstrap)
    finally:
        process.terminate()
        process.wait(30)
    correlation_id, error_code = struct.unpack(">ih", response[:6])
    assert (correlation_id, error_code) == (7, 0)


def test_the_batch_latency_generator_keeps_its_schedule_and_reads_every_acknowledgement(tansu_upstream, tmp_path):
    process, bootstrap = bench_gateway.start_gateway(tansu_upstream, tmp_path)
    rate, seconds = 20.0, 2.0
    try:
        latencies, achieved = batch_latency.batch_latencies_ms(bootstrap, "bench-batches", rate, seconds)
    finally:
        process.terminate()
        process.wait(30)
    batch_mb = batch_latency.BATCH_RECORDS * batch_latency.RECORD_BYTES / 2**20
    assert len(latencies) == int(seconds / (batch_mb / rate))  # every batch sent was acknowledged
    assert all(0 < latency < 5000 for latency in latencies)
    assert 0.7 * rate <= achieved <= 1.1 * rate


def test_the_error_code_of_a_refused_batch_is_read_from_its_response():
    from kafka.protocol.producer import ProduceResponse

    response = ProduceResponse[7]
    partition = response.TopicProduceResponse.PartitionProduceResponse(
        index=0, error_code=10, base_offset=-1, log_append_time_ms=-1, log_start_offset=-1
    )
    encoded = response(
        responses=[response.TopicProduceResponse(name="t", partition_responses=[partition])], throttle_time_ms=0
    ).encode()
    assert batch_latency.produce_error_code(struct.pack(">i", 42) + bytes(encoded)) == 10  # MESSAGE_TOO_LARGE
