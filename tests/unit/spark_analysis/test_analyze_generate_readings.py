"""The generator's polls read what a broker's would: the Rate over the 11-s quota window, and a
throttle-time Avg that remembers the throttles of the last minute (NaN, here 0, without one)."""

from __future__ import annotations

import numpy as np
import pytest

from kconfigs_analysis.generate import quota_window_rates, throttle_time_readings


def test_a_throttle_reads_for_the_minute_after_its_interval_across_chunks():
    throttles = np.array([0, 5500, 0, 0, 0, 0, 0, 0, 0.0])
    first, kept = throttle_time_readings(throttles[:3], np.zeros(0), 10_000)
    rest, _ = throttle_time_readings(throttles[3:], kept, 10_000)
    assert np.concatenate([first, rest]).tolist() == [0, 5500, 5500, 5500, 5500, 5500, 5500, 5500, 0]
    # two throttles 20 s apart: their Avg while both are remembered
    assert throttle_time_readings(np.array([0, 1000, 0, 3000, 0.0]), np.zeros(0), 10_000)[0].tolist() == [
        0,
        1000,
        1000,
        2000,
        2000,
    ]


def test_a_poll_reads_the_rate_of_the_quota_window_before_it():
    rates, kept = quota_window_rates(np.array([1.0, 2.0, 2.0]), np.zeros(0), 10_000)
    assert rates.tolist() == pytest.approx([1.0, (10 * 2.0 + 1.0) / 11, 2.0])
    # 1-s polls: the mean of the last 11 intervals, carried across chunks
    first, kept = quota_window_rates(np.ones(10), np.zeros(0), 1000)
    assert quota_window_rates(np.array([12.0]), kept, 1000)[0].tolist() == pytest.approx([(10 + 12) / 11])
