"""The peers benchmark's p99 verdict: the median difference decides while the direct path's own p99
holds still between rounds; when it moves, only round pairs agreeing beyond chance (a sign test)
give a verdict, and otherwise the report says it could not tell."""

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


def test_a_moving_direct_p99_gives_a_verdict_when_the_round_pairs_agree_beyond_chance():
    direct = [_round(p) for p in (4.6, 9.8, 5.0, 7.5, 6.0, 8.8)]
    under = peers._p99_added_target("x", direct, [_round(p) for p in (5.5, 9.0, 4.0, 8.0, 6.9, 7.0)])
    assert ": met: at or under it in 6 of 6 round pairs, sign test p = 0.016" in under
    over = peers._p99_added_target("x", direct, [_round(p + 3.0) for p in (4.6, 9.8, 5.0, 7.5, 6.0, 8.8)])
    assert "**not met**: over it in 6 of 6 round pairs" in over


def test_round_pairs_that_split_or_are_too_few_are_not_resolved():
    direct = [_round(p) for p in (4.6, 9.8, 5.0, 7.5, 6.0, 8.8)]
    split = peers._p99_added_target("x", direct, [_round(p) for p in (5.5, 12.0, 4.0, 11.0, 6.9, 7.0)])
    assert "**not resolved**" in split and "4 of 6 round pairs" in split
    four = peers._p99_added_target("x", direct[:4], [_round(p) for p in (5.5, 9.0, 4.0, 8.0)])
    assert "**not resolved**" in four  # 4 of 4 happens by chance one time in 16


def test_the_sign_test_is_the_binomial_tail():
    assert peers.sign_test_p(6, 6) == 1 / 64
    assert peers.sign_test_p(7, 8) == 9 / 256
    assert peers.sign_test_p(0, 5) == 1.0
