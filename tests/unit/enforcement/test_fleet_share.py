"""The fleet's share of one quota: demand estimates, proportional shares with a floor,
membership by report age on the receiver's own clock, and the isolated fallback."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kconfigs_enforcement.fleet_share import (
    BYTES_PER_ENTITY,
    FleetView,
    ReportBoard,
    decode_report,
    demand_estimate,
    demand_from_throttle,
    encode_report,
    entity_digest,
    proportional_shares,
)
from kconfigs_enforcement.throttle import throttle_ms_for

MB = 1_000_000.0


def test_demand_inverts_kafkas_throttle_formula():
    # a client offering 1.5 MB/s against a 1 MB/s share over an 11 s window is told 5.5 s
    throttle = throttle_ms_for(1.5 * MB, 1 * MB, 11_000)
    assert throttle == 5500
    assert demand_from_throttle(1 * MB, 1 * MB, throttle, 11_000) == pytest.approx(1.5 * MB)
    assert demand_from_throttle(0.4 * MB, 1 * MB, 0, 11_000) == 0.4 * MB  # unthrottled: as observed


def test_the_docstrings_worked_example():
    shares = proportional_shares(10 * MB, {"a": 6 * MB, "b": 3 * MB, "c": 0.0}, floor=0.05)
    assert [round(shares[k] / MB, 2) for k in "abc"] == [6.55, 3.27, 0.18]


@given(
    quota=st.floats(1.0, 1e9),
    demands=st.dictionaries(st.integers(0, 200), st.floats(0.0, 1e10), min_size=1, max_size=50),
    floor=st.floats(0.0, 1.0),
)
def test_shares_add_up_to_the_quota_and_follow_demand(quota, demands, floor):
    shares = proportional_shares(quota, demands, floor)
    assert sum(shares.values()) == pytest.approx(quota, rel=1e-9)
    ordered = sorted(demands, key=demands.get)
    assert all(shares[a] <= shares[b] * (1 + 1e-9) for a, b in zip(ordered, ordered[1:]))


def test_three_instances_split_by_demand_and_a_silent_one_drops_out_after_the_expiry():
    view = FleetView("a", ReportBoard(expiry_ms=1000))
    view.board.receive("b", {"alice": 3 * MB}, now_ms=0)
    view.board.receive("c", {"alice": 1 * MB}, now_ms=0)
    share = view.allocate({"alice": 10 * MB}, {"alice": 6 * MB}, now_ms=100)["alice"]
    assert share.share == pytest.approx(6 / 10 * 10 * MB) and share.fleet_size == 3 and not share.isolated
    view.board.receive("b", {"alice": 3 * MB}, now_ms=900)  # c says nothing more
    later = view.allocate({"alice": 10 * MB}, {"alice": 6 * MB}, now_ms=1001)["alice"]
    assert later.fleet_size == 2 and later.share == pytest.approx(6 / 9 * 10 * MB)


def test_report_age_is_the_receivers_clock_not_the_senders():
    view = FleetView("a", ReportBoard(expiry_ms=1000))
    view.board.receive("b", {"alice": 1 * MB}, now_ms=5_000)  # whatever b's wall clock said
    assert view.live_instances(5_999) == {"a", "b"}
    assert view.live_instances(6_001) == {"a"}


def test_an_isolated_instance_keeps_its_last_share_then_holds_quota_over_the_last_fleet_size():
    view = FleetView("a", ReportBoard(expiry_ms=1000))
    for other in "bcd":
        view.board.receive(other, {"alice": 2 * MB}, now_ms=0)
    first = view.allocate({"alice": 8 * MB}, {"alice": 2 * MB}, now_ms=10)["alice"]
    assert first.share == pytest.approx(2 * MB) and view.last_fleet_size == 4
    kept = view.allocate({"alice": 8 * MB}, {"alice": 5 * MB}, now_ms=1500)["alice"]  # others expired
    assert kept.isolated and kept.share == pytest.approx(2 * MB)  # the last share, still fresh
    fallback = view.allocate({"alice": 8 * MB}, {"alice": 5 * MB}, now_ms=2600)["alice"]
    assert fallback.isolated and fallback.share == pytest.approx(8 * MB / 4)


def test_an_entity_alone_on_one_instance_gets_the_whole_quota_and_a_new_one_starts_at_q_over_n():
    view = FleetView("a")
    view.board.receive("b", {"bob": 1 * MB}, now_ms=0)
    assert view.allocate({"alice": 4 * MB}, {"alice": 1 * MB}, now_ms=10)["alice"].share == 4 * MB
    assert view.new_entity_share(4 * MB, now_ms=10) == 2 * MB
    assert view.allocate({"alice": 4 * MB}, {}, now_ms=20) == {}  # idle here: no allocation kept
    assert "alice" not in view.last


def test_a_new_report_replaces_the_instances_last_one():
    view = FleetView("a")
    view.board.receive("b", {"alice": 9 * MB, "bob": 1 * MB}, now_ms=0)
    view.board.receive("b", {"bob": 1 * MB}, now_ms=250)  # b's alice traffic is gone
    assert view.board.demands_for("alice") == {}
    assert view.allocate({"alice": 4 * MB}, {"alice": 1 * MB}, now_ms=300)["alice"].share == 4 * MB


def test_a_report_is_six_bytes_and_twelve_per_entity_and_decodes_to_what_was_sent():
    demands = {entity_digest("Produce-alice:"): 1.5 * MB, entity_digest("Fetch-bob:c1"): 250.0}
    report = encode_report(demands)
    assert BYTES_PER_ENTITY == 12 and len(report) == 6 + 12 * 2
    decoded, leaving = decode_report(report)
    assert not leaving
    assert decoded == pytest.approx(demands, rel=1e-7)  # float32: 7 digits
    assert decode_report(encode_report({}, leaving=True)) == ({}, True)


@pytest.mark.parametrize(
    "data, reason",
    [
        (b"", "shorter than its header"),
        (b"\x02\x00\x00\x00\x00\x00", "version 2"),
        (encode_report({1: 1.0})[:-1], "has 11 body bytes"),
    ],
)
def test_a_report_not_of_this_format_is_refused_saying_why(data, reason):
    with pytest.raises(ValueError, match=reason):
        decode_report(data)


def test_entity_digests_are_the_same_on_every_instance_and_differ_between_entities():
    assert entity_digest("Produce-alice:") == entity_digest("Produce-alice:")
    names = [f"Produce-user{i}:" for i in range(10_000)] + [f"Fetch-user{i}:" for i in range(10_000)]
    assert len({entity_digest(name) for name in names}) == len(names)


def test_an_instance_that_says_it_leaves_returns_its_share_at_once():
    view = FleetView("a")
    view.board.receive("b", {"alice": 3 * MB}, now_ms=0)
    assert view.allocate({"alice": 4 * MB}, {"alice": 3 * MB}, now_ms=10)["alice"].share == pytest.approx(2 * MB)
    view.board.leave("b")
    assert view.live_instances(20) == {"a"}
    assert view.fleet_demand("alice", 3 * MB) == 3 * MB


def test_the_fleet_demand_adds_every_live_instances_report():
    view = FleetView("a")
    view.board.receive("b", {"alice": 2 * MB}, now_ms=0)
    view.board.receive("c", {"alice": 1 * MB, "bob": 5 * MB}, now_ms=0)
    assert view.fleet_demand("alice", 0.5 * MB) == pytest.approx(3.5 * MB)


def test_a_held_sensor_asks_for_more_than_its_share_and_an_unheld_one_for_its_rate():
    assert demand_estimate(0.5 * MB, 1 * MB) == 0.5 * MB
    assert demand_estimate(0.95 * MB, 1 * MB) == pytest.approx(1.05 * MB)
    assert demand_estimate(1.2 * MB, 1 * MB) == pytest.approx(1.05 * MB)  # a throttle cycle's swing
    assert demand_estimate(3 * MB, 1 * MB) == 3 * MB  # a surge: clients moved here
    # throttled lately: held, whatever its rate over the window shows between two bursts
    assert demand_estimate(0.3 * MB, 1 * MB, throttled=True) == pytest.approx(1.05 * MB)


def test_held_instances_take_what_an_underused_one_leaves_and_keep_their_ratio_among_themselves():
    # Q = 3 MB/s over a, b, c at 1 MB/s each; c's clients use 0.2 MB/s: a and b are held, each
    # instance's rate follows min(its share, what its clients offer: a, b 5 MB/s, c 0.2 MB/s)
    quota, offered = 3 * MB, {"a": 5 * MB, "b": 5 * MB, "c": 0.2 * MB}
    shares = {i: 1 * MB for i in offered}
    for _ in range(40):
        demands = {i: demand_estimate(min(shares[i], offered[i]), shares[i]) for i in offered}
        shares = proportional_shares(quota, demands)
    used = sum(min(shares[i], offered[i]) for i in offered)
    assert used == pytest.approx(quota, rel=0.03)
    assert shares["a"] == pytest.approx(shares["b"])


def test_demands_are_smoothed_over_periods_and_a_gone_entity_is_dropped_at_once():
    view = FleetView("a", smoothing=0.5)
    assert view.smooth({"alice": 4 * MB}) == {"alice": 4 * MB}
    assert view.smooth({"alice": 2 * MB, "bob": 1 * MB}) == {"alice": 3 * MB, "bob": 1 * MB}
    assert view.smooth({"bob": 3 * MB}) == {"bob": 2 * MB}
    view = FleetView("a")
    view.smooth({"alice": 1 * MB})
    for _ in range(8):  # 2 s of 250 ms periods after a step from 1 to 2 MB/s
        smoothed = view.smooth({"alice": 2 * MB})
    assert smoothed["alice"] == pytest.approx(2 * MB, rel=0.06)
