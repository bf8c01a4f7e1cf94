"""The gateways the benchmarks measure start and proxy: bench_gateway.start_gateway (which
bench_gateway_peers uses too) for each of its quota sets, in front of the harness' tansu. A
benchmark whose gateway never starts fails only when someone runs it, hours later."""

from __future__ import annotations

import socket
import struct

import pytest

from benchmarks import bench_gateway

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
