"""The split of a paced batch's latency into the broker's time and the rest (the path's): the
broker serves one request of a connection at a time, so a batch also waits through the requests
ahead of it, and that wait is the broker's, while a gap with the broker idle is the path's."""

from __future__ import annotations

import pytest

from benchmarks.broker_request_log import outside_the_broker_ms


def test_a_batch_alone_is_its_latency_less_its_time_in_the_broker():
    # sent at 0, read whole by the broker at 1 ms, response sent at 3 ms, acknowledged at 4 ms
    timeline = [(0, 100.000, 100.004)]
    timings = {0: [(100.003, 2.0)]}
    assert outside_the_broker_ms(timeline, timings) == pytest.approx([2.0])


def test_a_batch_queued_behind_another_counts_the_broker_time_it_waited_through_as_the_brokers():
    # batch 1 is due at 2 ms while the broker works on batch 0 until 3 ms; then the broker is idle
    # until batch 1's request is read whole at 5 ms (that gap is the path's), serves it until 6 ms,
    # and the acknowledgement comes at 7 ms: 5 ms of latency, 1 + 1 in the broker
    timeline = [(0, 100.000, 100.004), (1, 100.002, 100.007)]
    timings = {0: [(100.003, 2.0)], 1: [(100.006, 1.0)]}
    assert outside_the_broker_ms(timeline, timings) == pytest.approx([2.0, 3.0])


def test_correlation_ids_repeating_from_round_to_round_match_the_entry_inside_the_batch_s_own_time():
    timeline = [(0, 200.000, 200.004)]
    # the same correlation id 100 s earlier (a previous round) and this round's entry
    timings = {0: [(100.003, 0.5), (200.003, 2.0)]}
    assert outside_the_broker_ms(timeline, timings) == pytest.approx([2.0])


def test_a_batch_missing_from_the_log_is_an_error_not_a_zero():
    with pytest.raises(ValueError, match="batch 1"):
        outside_the_broker_ms([(0, 100.0, 100.004), (1, 100.002, 100.007)], {0: [(100.003, 2.0)]})


def test_a_log_line_written_after_the_acknowledgement_still_matches_and_ends_the_broker_s_part_there():
    # read whole at 1 ms, acknowledged at 4 ms; the broker's network thread wrote the line (and
    # took totalTimeMs) only at 25 ms, so the log says 24 ms in the broker ending at 25 ms
    timeline = [(0, 100.000, 100.004)]
    timings = {0: [(100.025, 24.0)]}
    assert outside_the_broker_ms(timeline, timings) == pytest.approx([1.0])
