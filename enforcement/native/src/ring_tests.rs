//! Kafka's own vectors for the ring, each formula worked through (the same vectors as
//! `tests/unit/enforcement/test_kafka_vectors.py`, here without Python in between).

use crate::ring::{java_round, Ring, Value};

/// Kafka's MockTime starts at the wall clock: an epoch-like start.
const T0: i64 = 1_700_000_000_000;
const NO_CAP: i64 = i64::MAX;

#[test]
fn quota_violation_throttles_2100_ms() {
    // ClientQuotaManagerTest.testQuotaViolation: quota 500 B/s, N = 11, W = 1 s.
    // 10 x 400 B at 1 s intervals, then 2300 B at +10.5 s:
    // O = (4000 + 2300) / 10.5 s = 600 B/s; X = (600 - 500) / 500 * 10 500 ms = 2100 ms.
    let mut ring = Ring::new(11, 1000, false);
    for i in 0..10 {
        assert_eq!(
            ring.record_and_throttle(Value::Int(400), T0 + i * 1000, 500.0, NO_CAP),
            0
        );
    }
    assert_eq!(
        ring.record_and_throttle(Value::Int(2300), T0 + 10_500, 500.0, NO_CAP),
        2100
    );
}

#[test]
fn single_large_produce_on_a_fresh_sensor_is_measured_over_n_minus_one_windows() {
    // One 20 000 B produce, quota 1000 B/s: the window is padded to (N-1)*W = 10 s:
    // O = 20 000 / 10 s = 2000 B/s; X = (2000 - 1000) / 1000 * 10 000 ms = 10 000 ms.
    let mut ring = Ring::new(11, 1000, false);
    assert_eq!(ring.record_and_throttle(Value::Int(20_000), T0, 1000.0, NO_CAP), 10_000);
}

#[test]
fn request_percentage_throttles_210_ms() {
    // ClientRequestQuotaManagerTest.testRequestPercentageQuotaViolation, quota 1 % (10 ms/s),
    // capped at one window. 4 ms of thread time = 4e6 ns * 100 / 1e9 = 0.4 percent-seconds.
    // 10 x 0.4 at 1 s intervals, then 6.71 at +10.5 s:
    // O = (4 + 6.71) / 10.5 s = 1.02 %; X = (1.02 - 1) / 1 * 10 500 ms = 210 ms.
    let mut ring = Ring::new(11, 1000, false);
    for i in 0..10 {
        assert_eq!(ring.record_and_throttle(Value::Float(0.4), T0 + i * 1000, 1.0, 1000), 0);
    }
    assert_eq!(
        ring.record_and_throttle(Value::Float(6.71), T0 + 10_500, 1.0, 1000),
        210
    );
}

#[test]
fn a_spike_is_capped_at_one_window() {
    // 500 ms of thread time at once = 50 percent-seconds over the padded 10 s = 5 %:
    // (5 - 1) / 1 * 10 000 ms = 40 000 ms, bounded to one sample window (1000 ms).
    let mut ring = Ring::new(11, 1000, false);
    assert_eq!(ring.record_and_throttle(Value::Float(50.0), T0, 1.0, 1000), 1000);
}

#[test]
fn rate_is_the_total_over_the_padded_window() {
    // Rate.measure: 50 recorded at 1 s, measured at 2 s with N = 2, W = 1 s: the window is
    // padded to (N-1)*W = 1 s, so 50 / 1 s = 50.
    let mut ring = Ring::new(2, 1000, false);
    ring.record(Value::Int(50), T0 + 1000);
    assert_eq!(ring.window_ms(T0 + 2000), 1000);
    assert_eq!(ring.measure(T0 + 2000), 50.0);
}

#[test]
fn java_round_is_math_round() {
    // Math.round: half up (-2.5 -> -2), no double rounding (0.49999999999999994 -> 0), NaN -> 0,
    // saturating at Long.MAX_VALUE / Long.MIN_VALUE.
    assert_eq!(java_round(2.5), 3);
    assert_eq!(java_round(-2.5), -2);
    assert_eq!(java_round(0.49999999999999994), 0);
    assert_eq!(java_round(f64::NAN), 0);
    assert_eq!(java_round(1e300), i64::MAX);
    assert_eq!(java_round(-1e300), i64::MIN);
}
