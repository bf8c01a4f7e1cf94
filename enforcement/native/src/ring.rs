//! Kafka's `SampledStat` + `Rate` over a `WindowedSum`, O(1) per record, and the quota check
//! `QuotaUtils.(bounded)throttleTime`. Same algorithm, state and arithmetic as the pure-Python
//! `enforcement/stats.py` (its docstring says why it is not a literal port of the Java classes);
//! `tests/unit/enforcement` holds both to a literal transliteration of Kafka on random traces.
//! No Python types here: the binding lives in lib.rs.

/// "No sample yet" for the cached minima (Python's +inf).
const NONE_MS: i64 = i64::MAX;

/// A recorded value: integral values keep the sum exact (like Python ints below 2**53, where
/// Kafka's double sum is exact too); any non-integral value switches to summing the samples in
/// slot order on every measure, exactly as `WindowedSum.combine` adds doubles.
#[derive(Clone, Copy)]
pub enum Value {
    Int(i64),
    Float(f64),
}

impl Value {
    /// `-value`, of the same kind (an unrecord).
    pub fn negated(self) -> Value {
        match self {
            // -i64::MIN is no i64: Python's int would be exact, a double is the closest this holds
            Value::Int(v) => v.checked_neg().map_or(Value::Float(-(v as f64)), Value::Int),
            Value::Float(v) => Value::Float(-v),
        }
    }
}

/// One sample of the ring (`SampledStat.Sample`).
#[derive(Clone, Copy)]
struct Slot {
    value: f64,
    start_ms: i64,
    last_ms: i64,
}

/// Slots are allocated as samples open (an idle entity has one), never more than the ring holds.
#[derive(Clone)]
pub struct Ring {
    samples: i64,
    window_ms: i64,
    expire_age_ms: i64,
    ring_size: usize,
    track_last: bool,
    slots: Vec<Slot>,
    cur: usize,
    total: i64,
    exact: bool,
    min_start: i64,
    min_last: i64,
}

/// Java `Math.round(double)`: half up, without the double rounding of `x + 0.5`; NaN gives 0.
pub fn java_round(x: f64) -> i64 {
    if x.is_nan() {
        return 0;
    }
    if x >= i64::MAX as f64 {
        return i64::MAX;
    }
    if x <= i64::MIN as f64 {
        return i64::MIN;
    }
    let floor_x = x.floor();
    // x - floor(x) is exact for doubles, so the half-way test has no rounding error
    if x - floor_x >= 0.5 {
        floor_x as i64 + 1
    } else {
        floor_x as i64
    }
}

impl Ring {
    /// `samples` = quota.window.num (N), `window_ms` = W; both >= 1 (checked by the caller).
    /// Kafka >= 3.8 keeps N + 1 slots and purges by last event; `legacy_pre_3_8` keeps N and
    /// purges by sample start.
    pub fn new(samples: i64, window_ms: i64, legacy_pre_3_8: bool) -> Ring {
        let ring_size = if legacy_pre_3_8 { samples } else { samples + 1 } as usize;
        Ring {
            samples,
            window_ms,
            expire_age_ms: samples * window_ms,
            ring_size,
            track_last: !legacy_pre_3_8,
            slots: Vec::new(),
            cur: 0,
            total: 0,
            exact: true,
            min_start: NONE_MS,
            min_last: NONE_MS,
        }
    }

    pub fn samples(&self) -> i64 {
        self.samples
    }

    pub fn window(&self) -> i64 {
        self.window_ms
    }

    pub fn legacy_pre_3_8(&self) -> bool {
        !self.track_last
    }

    fn append_slot(&mut self, now_ms: i64) {
        self.slots.reserve_exact(1); // exact: memory per idle entity stays one slot
        self.slots.push(Slot {
            value: 0.0,
            start_ms: now_ms,
            last_ms: now_ms,
        });
        self.min_start = self.min_start.min(now_ms);
        self.min_last = self.min_last.min(now_ms);
    }

    /// Move to the next slot: append while the ring is not full, else reset the slot.
    fn advance(&mut self, now_ms: i64) -> usize {
        let cur = (self.cur + 1) % self.ring_size;
        self.cur = cur;
        if cur >= self.slots.len() {
            self.append_slot(now_ms);
            return cur;
        }
        let old = self.slots[cur];
        if self.exact {
            self.total -= old.value as i64;
        }
        self.slots[cur] = Slot {
            value: 0.0,
            start_ms: now_ms,
            last_ms: now_ms,
        };
        if old.start_ms == self.min_start {
            self.min_start = self.slots.iter().map(|s| s.start_ms).min().unwrap_or(NONE_MS);
        } else if now_ms < self.min_start {
            self.min_start = now_ms;
        }
        self.min_last = self.min_last.min(now_ms);
        cur
    }

    /// `SampledStat.record` (negative values are Kafka's "unrecord").
    pub fn record(&mut self, value: Value, now_ms: i64) {
        if self.slots.is_empty() {
            self.append_slot(now_ms);
        }
        let mut cur = self.cur;
        if now_ms - self.slots[cur].start_ms >= self.window_ms {
            cur = self.advance(now_ms);
        }
        let slot = &mut self.slots[cur];
        match value {
            Value::Int(v) => {
                slot.value += v as f64;
                if self.exact {
                    self.total += v;
                }
            }
            Value::Float(v) => {
                slot.value += v;
                self.exact = false;
            }
        }
        if self.track_last {
            slot.last_ms = now_ms;
            self.min_last = self.min_last.min(now_ms);
        }
    }

    fn purge_due(&self, now_ms: i64) -> bool {
        now_ms.saturating_sub(self.min_last) >= self.expire_age_ms
    }

    /// `purgeObsoleteSamples`: reset every sample with no event in the last N*W ms.
    fn purge(&mut self, now_ms: i64) {
        let expire_age_ms = self.expire_age_ms;
        for slot in self.slots.iter_mut() {
            if now_ms - slot.last_ms >= expire_age_ms {
                *slot = Slot {
                    value: 0.0,
                    start_ms: now_ms,
                    last_ms: now_ms,
                };
            }
        }
        if !self.slots.is_empty() {
            self.min_start = self.slots.iter().map(|s| s.start_ms).min().unwrap();
            self.min_last = self.slots.iter().map(|s| s.last_ms).min().unwrap();
            if self.exact {
                self.total = self.slots.iter().map(|s| s.value as i64).sum();
            }
        }
    }

    fn sum(&self) -> f64 {
        if self.exact {
            self.total as f64
        } else {
            self.slots.iter().fold(0.0, |acc, s| acc + s.value) // in slot order, like combine()
        }
    }

    /// `Rate.windowSize` once purged and non-empty: padded to N-1 whole windows, >= 1 ms.
    fn padded_window_ms(&self, now_ms: i64) -> i64 {
        let mut elapsed_ms = now_ms - self.min_start;
        let full_windows = elapsed_ms / self.window_ms; // truncates toward zero, like Java
        if full_windows < self.samples - 1 {
            elapsed_ms += (self.samples - 1 - full_windows) * self.window_ms;
        }
        elapsed_ms.max(1)
    }

    /// `WindowedSum.measure`: purge, then the sum of all samples.
    pub fn total(&mut self, now_ms: i64) -> f64 {
        if self.purge_due(now_ms) {
            self.purge(now_ms);
        }
        self.sum()
    }

    /// `Rate.windowSize` (an empty stat gets its first sample, as `SampledStat.oldest` does).
    pub fn window_ms(&mut self, now_ms: i64) -> i64 {
        if self.purge_due(now_ms) {
            self.purge(now_ms);
        }
        if self.slots.is_empty() {
            self.append_slot(now_ms);
        }
        self.padded_window_ms(now_ms)
    }

    /// `Rate.measure` per second.
    pub fn measure(&mut self, now_ms: i64) -> f64 {
        let total = self.total(now_ms);
        total / (self.window_ms(now_ms) as f64 / 1000.0)
    }

    /// `Sensor.record(v, t, checkQuotas=true)` + `QuotaUtils.throttleTime`: record, then the
    /// throttle X = (O - T) / T * W in ms (0 within quota), at most `cap_ms`.
    pub fn record_and_throttle(&mut self, value: Value, now_ms: i64, bound: f64, cap_ms: i64) -> i64 {
        self.record(value, now_ms);
        if self.purge_due(now_ms) {
            self.purge(now_ms);
        }
        let window_ms = self.padded_window_ms(now_ms);
        let rate = self.sum() / (window_ms as f64 / 1000.0);
        if rate <= bound {
            return 0;
        }
        java_round((rate - bound) / bound * window_ms as f64).min(cap_ms)
    }

    /// (value, start, last event) per slot in slot order; pre-3.8 reports the start as last.
    pub fn slots(&self) -> Vec<(f64, i64, i64)> {
        let track_last = self.track_last;
        self.slots
            .iter()
            .map(|s| (s.value, s.start_ms, if track_last { s.last_ms } else { s.start_ms }))
            .collect()
    }
}

/// A quota sensor's state: the rate plus what the hot path reads (bound, cap, last record time).
/// One object, shared (`SharedSensor`) by the Python sensor that wraps it and the data plane's
/// worker threads that record into it, so every reader sees one rate.
#[derive(Clone)]
pub struct Sensor {
    pub ring: Ring,
    /// the quota per second (Long.MAX_VALUE as a double = no quota)
    pub bound: f64,
    /// `boundedThrottleTime` cap in ms (i64::MAX = uncapped)
    pub cap_ms: i64,
    /// `Sensor.lastRecordTime`, for the one-hour inactivity expiry
    pub last_record_ms: i64,
}

pub type SharedSensor = std::sync::Arc<std::sync::Mutex<Sensor>>;

impl Sensor {
    /// `Sensor.record(v, t, checkQuotas=true)` + the throttle in ms (0 = within quota).
    pub fn record_and_throttle(&mut self, value: Value, now_ms: i64) -> i64 {
        self.last_record_ms = now_ms;
        self.ring.record_and_throttle(value, now_ms, self.bound, self.cap_ms)
    }

    /// `Sensor.record(v, t, checkQuotas=false)`: unrecord / recordNoThrottle.
    pub fn record_no_check(&mut self, value: Value, now_ms: i64) {
        self.last_record_ms = now_ms;
        self.ring.record(value, now_ms);
    }
}
