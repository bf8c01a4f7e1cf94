"""The peers benchmark's p99 verdict: a difference of two p99s is a result only when the direct
path's own p99 held still between rounds; otherwise the report says it could not tell."""

from __future__ import annotations

from benchmarks import bench_gateway_peers as peers


def _round(p99_ms: float) -> list[float]:
    # 1,000 latencies whose 99th percentile is about p99_ms: 985 at 1 ms, the rest at p99_ms
    return [1.0] * 985 + [p99_ms] * 15


def test_a_steady_direct_p99_gives_a_verdict_either_way():
    direct = [_round(5.0), _round(5.2), _round(5.4)]
    assert peers._p99_added_target("x", direct, [_round(5.5), _round(5.6), _round(5.9)]).endswith(": met)")
    assert "**not met**" in peers._p99_added_target("x", direct, [_round(8.0), _round(8.2), _round(8.4)])


def test_a_direct_p99_that_moves_more_than_the_target_is_not_resolved_even_when_the_median_is_negative():
    direct = [_round(20.0), _round(240.0), _round(8.0)]
    line = peers._p99_added_target("x", direct, [_round(13.0), _round(1.0), _round(9.0)])
    assert "**not resolved**" in line
    assert "8.00–240.00 ms" in line
    assert "met)" not in line
