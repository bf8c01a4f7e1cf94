//! Quota charging on the worker threads, with no Python call per request.
//!
//! Each rule lives in one place. WHICH sensor and quota apply to a (user, client-id) — Kafka's
//! precedence, the metric tags, whether the quota type is enabled — is decided by Python
//! (`QuotaGate.resolve`), asked once per new (kind, user, client-id) and cached here until a
//! snapshot reload or a sensor expiry run invalidates the cache (`invalidate`). The sensor it hands
//! back is the very object Python's metrics, usage-log quota lookup and expiry read: a
//! `RateCore` whose state is a `SharedSensor`, so the ring recorded here under its mutex is the
//! one Python measures, and one entity's connections on different worker threads record into one
//! rate, one charge after another. The throttle math is the rate core's (`ring.rs`).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use pyo3::prelude::*;

use crate::ring::{SharedSensor, Value};
use crate::RateCore;

/// `ClientRequestQuotaManager.NanosToPercentagePerSecond`, as Python computes it.
const NANOS_TO_PERCENT_PER_SEC: f64 = 100.0 / 1_000_000_000.0;
/// Cached resolutions beyond this are dropped (client-id churn); the next request asks again.
const MAX_CACHED: usize = 100_000;

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Kind {
    Produce,
    Fetch,
    Request,
    /// whether a producer-id quota may apply to the user (no sensor: counted on the bridge)
    ProducerIds,
}

impl Kind {
    /// every kind, in discriminant order (the index of its slot)
    pub const ALL: [Kind; KINDS] = [Kind::Produce, Kind::Fetch, Kind::Request, Kind::ProducerIds];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Produce => "produce",
            Kind::Fetch => "fetch",
            Kind::Request => "request",
            Kind::ProducerIds => "producer_id",
        }
    }
}

/// What Python resolved for one (kind, user, client-id).
pub struct Resolution {
    /// the shared sensor; None = the quota type is disabled (Kafka records nothing)
    pub sensor: Option<SharedSensor>,
    /// a finite quota applies (the response may throttle)
    pub finite: bool,
    /// Fetch only: the most a consumer's Fetch may ask for (the broker's
    /// `getMaxValueInQuotaWindow`, saturated to an int32 as Kafka's `.toInt`); None = no cap
    pub max_fetch_bytes: Option<i32>,
}

/// Resolutions by user, then client-id, then kind: a lookup borrows the caller's strings (a
/// charge on a cache hit allocates nothing), and a (user, client-id) costs two keys at most.
#[derive(Default)]
struct Cache {
    by_user: HashMap<String, HashMap<String, PerKind>>,
    len: usize,
}

const KINDS: usize = 4;
/// one slot per `Kind` (its discriminant)
type PerKind = [Option<Arc<Resolution>>; KINDS];
const _: () = assert!(Kind::ProducerIds as usize + 1 == KINDS, "one cache slot per Kind");
const _: () = {
    let mut i = 0;
    while i < KINDS {
        assert!(Kind::ALL[i] as usize == i, "Kind::ALL in discriminant order");
        i += 1;
    }
};

impl Cache {
    fn get(&self, kind: Kind, user: &str, client_id: &str) -> Option<&Arc<Resolution>> {
        self.by_user.get(user)?.get(client_id)?[kind as usize].as_ref()
    }

    fn insert(&mut self, kind: Kind, user: &str, client_id: &str, resolved: Arc<Resolution>) {
        let slots = self
            .by_user
            .entry(user.to_string())
            .or_default()
            .entry(client_id.to_string())
            .or_default();
        if slots[kind as usize].replace(resolved).is_none() {
            self.len += 1;
        }
    }

    fn remove(&mut self, kind: Kind, user: &str, client_id: &str) {
        let slot = self
            .by_user
            .get_mut(user)
            .and_then(|clients| clients.get_mut(client_id))
            .and_then(|slots| slots[kind as usize].take());
        if slot.is_some() {
            self.len -= 1;
        }
    }

    fn clear(&mut self) {
        self.by_user.clear();
        self.len = 0;
    }
}

/// (quota type, user, client-id, throttle ms, now ms) of a throttle to record on `throttle-time`.
pub type QueuedThrottle = (&'static str, String, String, i64, i64);
/// Queued throttles beyond this wait for the next drain: the oldest are recorded, the rest dropped
/// (the `throttle-time` average is a metric, never a decision).
const MAX_QUEUED_THROTTLES: usize = 100_000;

#[derive(Default)]
pub struct Quotas {
    /// the clock every charge, throttle and usage window reads
    pub clock: Clock,
    generation: AtomicU64,
    cache: Mutex<Cache>,
    pub usage: Usage,
    throttles: Mutex<Vec<QueuedThrottle>>,
    /// muted connections per listener since the last drain
    throttled: Mutex<HashMap<String, u64>>,
}

impl Quotas {
    pub fn with_clock(clock: Clock) -> Quotas {
        Quotas {
            clock: clock.clone(),
            usage: Usage {
                clock,
                ..Usage::default()
            },
            ..Quotas::default()
        }
    }

    pub fn queue_throttle(&self, quota_type: &'static str, user: &str, client_id: &str, throttle_ms: i64, now_ms: i64) {
        let mut queue = self.throttles.lock().unwrap();
        if queue.len() < MAX_QUEUED_THROTTLES {
            queue.push((quota_type, user.to_string(), client_id.to_string(), throttle_ms, now_ms));
        }
    }

    pub fn drain_throttles(&self) -> Vec<QueuedThrottle> {
        std::mem::take(&mut *self.throttles.lock().unwrap())
    }

    pub fn count_throttled(&self, listener: &str) {
        let mut counts = self.throttled.lock().unwrap();
        match counts.get_mut(listener) {
            Some(n) => *n += 1,
            None => {
                counts.insert(listener.to_string(), 1);
            }
        }
    }

    pub fn drain_throttled(&self) -> Vec<(String, u64)> {
        std::mem::take(&mut *self.throttled.lock().unwrap())
            .into_iter()
            .collect()
    }

    /// A reload or an expiry run changed what resolutions may answer: ask again.
    pub fn invalidate(&self) {
        let mut cache = self.cache.lock().unwrap();
        self.generation.fetch_add(1, Ordering::SeqCst);
        cache.clear();
    }

    /// Drop one cached resolution (its sensor was created behind the cache's back).
    pub fn forget(&self, kind: Kind, user: &str, client_id: &str) {
        let mut cache = self.cache.lock().unwrap();
        self.generation.fetch_add(1, Ordering::SeqCst);
        cache.remove(kind, user, client_id);
    }

    /// The cached resolution, else `ask` (Python, outside the cache lock). A resolution asked
    /// across an invalidation is used once and not cached: it may predate the new snapshot.
    pub fn resolve(
        &self,
        kind: Kind,
        user: &str,
        client_id: &str,
        ask: impl FnOnce() -> Resolution,
    ) -> Arc<Resolution> {
        let generation = {
            let cache = self.cache.lock().unwrap();
            if let Some(hit) = cache.get(kind, user, client_id) {
                return hit.clone();
            }
            self.generation.load(Ordering::SeqCst)
        };
        let resolved = Arc::new(ask());
        let mut cache = self.cache.lock().unwrap();
        if self.generation.load(Ordering::SeqCst) == generation {
            if cache.len >= MAX_CACHED {
                cache.clear();
            }
            cache.insert(kind, user, client_id, resolved.clone());
        }
        resolved
    }
}

/// One connection's last resolution of each kind. A connection speaks for one principal and nearly
/// always one client-id, so its charges find their resolution here, behind the connection's own
/// lock, instead of behind the shared cache's (which every worker thread would otherwise take a
/// few times per request) and its hashing. An entry holds while the cache generation it was
/// taken at is current: every reload, expiry run or `forget` retires all of them at once. A
/// retired entry still holds its sensor's memory until the connection's next charge of that kind
/// or its close (the metrics and expiry work on Python's registry, not on this reference).
#[derive(Default)]
pub struct Memo(Mutex<[Option<Memoized>; KINDS]>);

struct Memoized {
    generation: u64,
    user: String,
    client_id: String,
    resolved: Arc<Resolution>,
}

impl Quotas {
    /// `resolve`, remembered in `memo` for the next request of the same entity.
    pub fn resolve_remembered(
        &self,
        memo: &Memo,
        kind: Kind,
        user: &str,
        client_id: &str,
        ask: impl FnOnce() -> Resolution,
    ) -> Arc<Resolution> {
        // read before resolving: an invalidation racing with the lookup leaves the entry stale
        let generation = self.generation.load(Ordering::SeqCst);
        if let Some(m) = &memo.0.lock().unwrap()[kind as usize] {
            if m.generation == generation && m.user == user && m.client_id == client_id {
                return m.resolved.clone();
            }
        }
        let resolved = self.resolve(kind, user, client_id, ask);
        memo.0.lock().unwrap()[kind as usize] = Some(Memoized {
            generation,
            user: user.to_string(),
            client_id: client_id.to_string(),
            resolved: resolved.clone(),
        });
        resolved
    }
}

/// Python's `QuotaGate.resolve(kind, user, client_id)` -> (sensor or None, finite quota).
pub fn ask_python(bridge: &Py<PyAny>, kind: Kind, user: &str, client_id: &str) -> Resolution {
    let mut resolved = ask_python_for_sensor(bridge, kind, user, client_id);
    if kind == Kind::Fetch && resolved.finite {
        resolved.max_fetch_bytes = Python::attach(|py| {
            match bridge
                .call_method1(py, "max_fetch_bytes", (user, client_id))
                .and_then(|v| v.extract::<Option<f64>>(py))
            {
                // `as` truncates toward zero and saturates (NaN = 0), as Scala's Double.toInt
                Ok(bytes) => bytes.map(|b| b as i32),
                Err(e) => {
                    bridge_error(py, bridge, "max_fetch_bytes", &e);
                    None
                }
            }
        });
    }
    resolved
}

fn ask_python_for_sensor(bridge: &Py<PyAny>, kind: Kind, user: &str, client_id: &str) -> Resolution {
    Python::attach(|py| {
        let answer = bridge
            .call_method1(py, "resolve", (kind.name(), user, client_id))
            .and_then(|v| v.extract::<(Option<PyRef<'_, RateCore>>, bool)>(py));
        match answer {
            Ok((sensor, finite)) => Resolution {
                sensor: sensor.map(|core| core.shared()),
                finite,
                max_fetch_bytes: None,
            },
            Err(e) => {
                // fails closed: an entity whose quota cannot be resolved is held by a sensor that
                // throttles every byte (bound 0), until a reload or expiry run asks again
                bridge_error(py, bridge, "resolve", &e);
                Resolution {
                    sensor: Some(closed_sensor()),
                    finite: true,
                    max_fetch_bytes: Some(0),
                }
            }
        }
    })
}

/// A control-plane call that raised: logged through the gateway's logger (`Bridge.log`, the JSON
/// log), or printed when even that fails. Each caller decides what the failure means (see there).
pub fn bridge_error(py: Python<'_>, bridge: &Py<PyAny>, call: &str, err: &PyErr) {
    let message = format!("control plane call {call} failed: {err}");
    if bridge.call_method1(py, "log", ("error", message)).is_err() {
        err.print(py);
    }
}

/// The sensor of an entity whose quota could not be resolved: a one-second window and a bound of
/// one byte (or percent), so every charge throttles, by one second at most each.
fn closed_sensor() -> SharedSensor {
    Arc::new(Mutex::new(crate::ring::Sensor {
        ring: crate::ring::Ring::new(2, 1000, false),
        bound: 1.0,
        cap_ms: 1000,
        last_record_ms: 0,
    }))
}

/// Milliseconds on CLOCK_MONOTONIC, the clock of Python's `time.monotonic_ns` (the control plane's
/// `MONOTONIC.now_ms`): the data plane and Python's metrics and expiry read one clock.
pub fn monotonic_ms() -> i64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec; CLOCK_MONOTONIC always exists on Linux
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec * 1000 + ts.tv_nsec / 1_000_000
}

/// The time quotas are charged at: CLOCK_MONOTONIC, or a `ManualClock` shared with the control
/// plane (tests and benchmarks move it; the data plane reads it without calling Python).
#[derive(Default, Clone)]
pub struct Clock(Option<Arc<AtomicI64>>);

impl Clock {
    pub fn manual(now_ms: Arc<AtomicI64>) -> Clock {
        Clock(Some(now_ms))
    }

    pub fn now_ms(&self) -> i64 {
        match &self.0 {
            None => monotonic_ms(),
            Some(now_ms) => now_ms.load(Ordering::Relaxed),
        }
    }

    /// Milliseconds since the epoch for the usage log's windows (a manual clock doubles as it).
    pub fn wall_ms(&self) -> i64 {
        match &self.0 {
            None => SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_millis() as i64)
                .unwrap_or(0),
            Some(now_ms) => now_ms.load(Ordering::Relaxed),
        }
    }
}

/// A clock that moves only when told to (Kafka's `MockTime`), readable by the data plane's worker
/// threads: the `kconfigs.clock.Clock` protocol, for a `QuotaGate` whose data plane charges at
/// the test's time.
#[pyclass(module = "kconfigs_enforcement._native")]
pub struct ManualClock {
    pub now: Arc<AtomicI64>,
}

#[pymethods]
impl ManualClock {
    #[new]
    #[pyo3(signature = (start_ms=0))]
    fn new(start_ms: i64) -> Self {
        ManualClock {
            now: Arc::new(AtomicI64::new(start_ms)),
        }
    }

    fn now_ms(&self) -> i64 {
        self.now.load(Ordering::SeqCst)
    }

    fn wall_ms(&self) -> i64 {
        self.now.load(Ordering::SeqCst)
    }

    /// Advance by `duration_ms` (>= 0).
    fn sleep(&self, duration_ms: f64) -> PyResult<()> {
        if duration_ms < 0.0 {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "cannot sleep a negative duration",
            ));
        }
        self.now.fetch_add(duration_ms as i64, Ordering::SeqCst);
        Ok(())
    }

    fn set(&self, now_ms: i64) {
        self.now.store(now_ms, Ordering::SeqCst);
    }
}

fn lock(sensor: &SharedSensor) -> std::sync::MutexGuard<'_, crate::ring::Sensor> {
    sensor.lock().unwrap_or_else(|e| e.into_inner())
}

/// `ClientQuotaManager.record`: the produce throttle in ms.
pub fn charge_bytes(sensor: &SharedSensor, nbytes: i64, now_ms: i64) -> i64 {
    lock(sensor).record_and_throttle(Value::Int(nbytes), now_ms)
}

/// `RequestQuotaManager.record_time`: thread time in ns as percent-seconds.
pub fn charge_request_time(sensor: &SharedSensor, time_ns: i64, now_ms: i64) -> i64 {
    let percent_s = time_ns as f64 * NANOS_TO_PERCENT_PER_SEC;
    lock(sensor).record_and_throttle(Value::Float(percent_s), now_ms)
}

/// `FetchQuotaManager.record_fetch`: record; if this or the request quota throttles, unrecord
/// the bytes (the response is replaced by an empty throttled one). Both under one lock, so no
/// other thread sees the bytes that are taken back.
pub fn charge_fetch_replaced(sensor: &SharedSensor, nbytes: i64, request_throttle_ms: i64, now_ms: i64) -> i64 {
    let mut s = lock(sensor);
    let throttle_ms = s.record_and_throttle(Value::Int(nbytes), now_ms);
    if throttle_ms > 0 || request_throttle_ms > 0 {
        s.record_no_check(Value::Int(-nbytes), now_ms);
    }
    throttle_ms
}

/// `unrecordQuotaSensor` with fetch quotas disabled: the sensor Python creates for it (None: the
/// bridge failed, reported).
pub fn unrecord_sensor(bridge: &Py<PyAny>, user: &str, client_id: &str) -> Option<SharedSensor> {
    Python::attach(|py| {
        match bridge
            .call_method1(py, "unrecord_sensor", (user, client_id))
            .and_then(|v| {
                v.extract::<PyRef<'_, RateCore>>(py)
                    .map(|core| core.shared())
                    .map_err(Into::into)
            }) {
            Ok(sensor) => Some(sensor),
            Err(e) => {
                bridge_error(py, bridge, "unrecord_sensor", &e);
                None
            }
        }
    })
}

/// Record `-nbytes` unchecked (the bytes of a response replaced by an empty throttled one).
pub fn unrecord(sensor: &SharedSensor, nbytes: i64, now_ms: i64) {
    lock(sensor).record_no_check(Value::Int(-nbytes), now_ms);
}

/// Whose `throttle-time` records a request's throttle (KIP-219).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum RecordedBy {
    Bandwidth,
    Request,
}

/// `KafkaApis` (Produce and Fetch): the larger throttle applies, and only its quota records it;
/// the bandwidth quota only when strictly larger (a tie goes to the request quota). Python's
/// `throttle.combined_throttle` is the same rule; both are checked against
/// `enforcement/kip219_vectors.csv`.
pub fn combined_throttle(bandwidth_ms: i64, request_ms: i64) -> (i64, Option<RecordedBy>) {
    if bandwidth_ms <= 0 && request_ms <= 0 {
        (0, None)
    } else if bandwidth_ms > request_ms {
        (bandwidth_ms, Some(RecordedBy::Bandwidth))
    } else {
        (request_ms, Some(RecordedBy::Request))
    }
}

/// One window's totals by user, then client-id, then ip, one (value, throttle ms) slot per kind:
/// a charge borrows the caller's strings, so once its entity has been seen in the window it
/// allocates nothing.
type WindowTotals = HashMap<String, HashMap<String, HashMap<String, [Option<(f64, f64)>; USAGE_SLOTS]>>>;
/// the usage slots: one per `Kind`, then connection attempts (by ip alone)
const USAGE_SLOTS: usize = KINDS + 1;
const CONNECTION_SLOT: usize = KINDS;
const USAGE_KINDS: [&str; USAGE_SLOTS] = ["produce", "fetch", "request", "producer_id", "connection"];

/// Totals by epoch-aligned window start.
type Totals = HashMap<i64, WindowTotals>;
/// Usage rows: (window start ms, kind, user, client-id, ip, value, throttle ms); a connection's
/// row has no user or client-id.
pub type UsageRow = (i64, &'static str, Option<String>, Option<String>, String, f64, f64);
/// A usage row's (window start ms, kind, user, client-id, ip): what a drain sums by.
type UsageKey = (i64, &'static str, String, String, String);

/// Shards of the totals: each worker thread adds to its own (threads are given shards in turn),
/// so charges on different threads never wait for one another; a drain merges them.
const USAGE_SHARDS: usize = 16;

fn this_threads_shard() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local!(static SHARD: usize = NEXT.fetch_add(1, Ordering::Relaxed) % USAGE_SHARDS);
    SHARD.with(|shard| *shard)
}

/// The usage log's totals, per wall-clock window (epoch-aligned, as `UsageLog` aligns them), kept
/// here so a charge costs no Python call; the usage log drains them before it writes a window.
#[derive(Default)]
pub struct Usage {
    /// 0 = no usage log
    pub window_ms: AtomicI64,
    pub clock: Clock,
    shards: [Mutex<Totals>; USAGE_SHARDS],
}

impl Usage {
    pub fn record(&self, kind: Kind, user: &str, client_id: &str, ip: &str, value: f64, throttle_ms: i64) {
        self.add(kind as usize, user, client_id, ip, value, throttle_ms);
    }

    /// A connection attempt from `ip`: 1 accepted or 0 refused, and the delay of a refused one.
    pub fn record_connection(&self, ip: &str, accepted: bool, delay_ms: i64) {
        let (value, delay) = if accepted { (1.0, 0) } else { (0.0, delay_ms) };
        self.add(CONNECTION_SLOT, "", "", ip, value, delay);
    }

    fn add(&self, slot: usize, user: &str, client_id: &str, ip: &str, value: f64, throttle_ms: i64) {
        let window_ms = self.window_ms.load(Ordering::Relaxed);
        if window_ms <= 0 {
            return;
        }
        let wall_ms = self.clock.wall_ms();
        let mut totals = self.shards[this_threads_shard()].lock().unwrap();
        let window = totals.entry(wall_ms - wall_ms % window_ms).or_default();
        let slots = match window
            .get_mut(user)
            .and_then(|clients| clients.get_mut(client_id))
            .and_then(|ips| ips.get_mut(ip))
        {
            Some(slots) => slots,
            None => window
                .entry(user.to_string())
                .or_default()
                .entry(client_id.to_string())
                .or_default()
                .entry(ip.to_string())
                .or_default(),
        };
        let slot = slots[slot].get_or_insert((0.0, 0.0));
        slot.0 += value;
        slot.1 += throttle_ms as f64;
    }

    /// Every shard's totals, summed per (window, kind, user, client-id, ip), oldest window first.
    pub fn drain(&self) -> Vec<UsageRow> {
        let mut merged: BTreeMap<UsageKey, (f64, f64)> = BTreeMap::new();
        for shard in &self.shards {
            let totals = std::mem::take(&mut *shard.lock().unwrap());
            for (start, users) in totals {
                for (user, clients) in users {
                    for (client_id, ips) in clients {
                        for (ip, slots) in ips {
                            for (kind, slot) in USAGE_KINDS.iter().zip(slots) {
                                let Some((value, throttle)) = slot else { continue };
                                let key = (start, *kind, user.clone(), client_id.clone(), ip.clone());
                                let sum = merged.entry(key).or_insert((0.0, 0.0));
                                sum.0 += value;
                                sum.1 += throttle;
                            }
                        }
                    }
                }
            }
        }
        merged
            .into_iter()
            .map(|((start, kind, user, client_id, ip), (value, throttle))| {
                let (user, client_id) = if kind == USAGE_KINDS[CONNECTION_SLOT] {
                    (None, None)
                } else {
                    (Some(user), Some(client_id))
                };
                (start, kind, user, client_id, ip, value, throttle)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ring::{Ring, Sensor};

    fn sensor(bound: f64) -> SharedSensor {
        Arc::new(Mutex::new(Sensor {
            ring: Ring::new(2, 1000, false),
            bound,
            cap_ms: i64::MAX,
            last_record_ms: 0,
        }))
    }

    #[test]
    fn a_resolution_asked_across_an_invalidation_is_not_cached() {
        let quotas = Quotas::default();
        let asked = std::cell::Cell::new(0);
        let ask = || {
            asked.set(asked.get() + 1);
            Resolution {
                sensor: None,
                finite: false,
                max_fetch_bytes: None,
            }
        };
        quotas.resolve(Kind::Produce, "u", "c", ask);
        quotas.resolve(Kind::Produce, "u", "c", ask);
        assert_eq!(asked.get(), 1);
        quotas.invalidate(); // a reload: asked again, and another reload while Python answers
        quotas.resolve(Kind::Produce, "u", "c", || {
            quotas.invalidate();
            ask()
        });
        quotas.resolve(Kind::Produce, "u", "c", ask);
        assert_eq!(asked.get(), 3);
    }

    #[test]
    fn a_remembered_resolution_holds_for_one_entity_until_the_generation_moves() {
        let quotas = Quotas::default();
        let memo = Memo::default();
        let asked = std::cell::Cell::new(0);
        let ask = || {
            asked.set(asked.get() + 1);
            Resolution {
                sensor: Some(sensor(asked.get() as f64)),
                finite: true,
                max_fetch_bytes: None,
            }
        };
        let bound = |r: &Arc<Resolution>| r.sensor.as_ref().unwrap().lock().unwrap().bound;
        let first = quotas.resolve_remembered(&memo, Kind::Request, "u", "c", ask);
        let again = quotas.resolve_remembered(&memo, Kind::Request, "u", "c", ask);
        assert!(Arc::ptr_eq(&first, &again));
        assert_eq!(asked.get(), 1);
        // another client-id or kind is another entity: the shared cache decides, then the memo
        quotas.resolve_remembered(&memo, Kind::Request, "u", "other", ask);
        quotas.resolve_remembered(&memo, Kind::Produce, "u", "c", ask);
        assert_eq!(asked.get(), 3);
        // a reload retires what the connection remembered
        quotas.invalidate();
        assert_eq!(
            bound(&quotas.resolve_remembered(&memo, Kind::Request, "u", "c", ask)),
            4.0
        );
        // a reload while Python answers: that answer is used once, never remembered
        quotas.invalidate();
        let during = quotas.resolve_remembered(&memo, Kind::Request, "u", "c", || {
            quotas.invalidate();
            ask()
        });
        assert_eq!(bound(&during), 5.0);
        assert_eq!(
            bound(&quotas.resolve_remembered(&memo, Kind::Request, "u", "c", ask)),
            6.0
        );
        // forget (one entry of the shared cache) retires what the connection remembered as well
        quotas.forget(Kind::Request, "u", "c");
        assert_eq!(
            bound(&quotas.resolve_remembered(&memo, Kind::Request, "u", "c", ask)),
            7.0
        );
    }

    #[test]
    fn one_sensor_charged_from_many_threads_adds_up_exactly() {
        let shared = sensor(1e12);
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let s = shared.clone();
                std::thread::spawn(move || {
                    for _ in 0..1000 {
                        charge_bytes(&s, 100, 1_000);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(shared.lock().unwrap().ring.total(1_000), 800_000.0);
    }

    #[test]
    fn usage_charged_on_many_threads_drains_as_one_sum_per_entity_and_kind() {
        let usage = Arc::new(Usage::default());
        usage.window_ms.store(3_600_000, Ordering::Relaxed);
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let usage = usage.clone();
                std::thread::spawn(move || {
                    for _ in 0..1000 {
                        usage.record(Kind::Produce, "alice", "app", "10.0.0.1", 100.0, 2);
                        usage.record(Kind::Fetch, "alice", "app", "10.0.0.1", 7.0, 0);
                        usage.record(Kind::Produce, "bob", &format!("c{}", t % 2), "10.0.0.2", 1.0, 0);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let rows = usage.drain();
        let found: Vec<_> = rows
            .iter()
            .map(|r| {
                (
                    r.1,
                    r.2.as_deref().unwrap(),
                    r.3.as_deref().unwrap(),
                    r.4.as_str(),
                    r.5,
                    r.6,
                )
            })
            .collect();
        // a window is an hour here: every charge lands in one (unless the test straddles an hour)
        if rows.iter().all(|r| r.0 == rows[0].0) {
            assert_eq!(
                found,
                vec![
                    ("fetch", "alice", "app", "10.0.0.1", 56_000.0, 0.0),
                    ("produce", "alice", "app", "10.0.0.1", 800_000.0, 16_000.0),
                    ("produce", "bob", "c0", "10.0.0.2", 4_000.0, 0.0),
                    ("produce", "bob", "c1", "10.0.0.2", 4_000.0, 0.0),
                ]
            );
        }
        let total: f64 = rows.iter().map(|r| r.5).sum();
        assert_eq!(total, 864_000.0);
        assert!(usage.drain().is_empty(), "a drain takes everything");
        usage.window_ms.store(0, Ordering::Relaxed);
        usage.record(Kind::Produce, "alice", "app", "10.0.0.1", 100.0, 0);
        assert!(usage.drain().is_empty(), "no usage log: nothing kept");
    }

    #[test]
    fn the_usage_slots_are_the_kinds_in_order_then_connections() {
        let names: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
        assert_eq!(names, USAGE_KINDS[..KINDS]);
        let usage = Usage::default();
        usage.window_ms.store(1_000, Ordering::Relaxed);
        usage.record_connection("10.0.0.9", false, 250);
        let rows = usage.drain();
        assert_eq!(rows.len(), 1);
        assert_eq!(
            (
                rows[0].1,
                rows[0].2.clone(),
                rows[0].3.clone(),
                rows[0].4.as_str(),
                rows[0].5,
                rows[0].6
            ),
            ("connection", None, None, "10.0.0.9", 0.0, 250.0)
        );
    }

    #[test]
    fn a_manual_clock_is_what_charges_and_usage_windows_read() {
        let now = Arc::new(AtomicI64::new(7_500));
        let quotas = Quotas::with_clock(Clock::manual(now.clone()));
        assert_eq!(quotas.clock.now_ms(), 7_500);
        quotas.usage.window_ms.store(1_000, Ordering::Relaxed);
        quotas.usage.record(Kind::Produce, "u", "c", "ip", 5.0, 0);
        now.store(9_100, Ordering::Relaxed);
        quotas.usage.record(Kind::Produce, "u", "c", "ip", 7.0, 0);
        let starts: Vec<(i64, f64)> = quotas.usage.drain().iter().map(|r| (r.0, r.5)).collect();
        assert_eq!(starts, vec![(7_000, 5.0), (9_000, 7.0)]);
    }

    #[test]
    fn the_kip219_combination_gives_kafkas_answers() {
        let text = include_str!("../../../kip219_vectors.csv");
        let rows: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).skip(1).collect();
        assert!(rows.len() >= 6);
        for row in rows {
            let f: Vec<&str> = row.split(',').collect();
            let ms = |i: usize| f[i].parse::<i64>().unwrap();
            let recorded_by = match f[3] {
                "" => None,
                "bandwidth" => Some(RecordedBy::Bandwidth),
                "request" => Some(RecordedBy::Request),
                other => panic!("unknown recorder {other}"),
            };
            assert_eq!(combined_throttle(ms(0), ms(1)), (ms(2), recorded_by), "{row}");
        }
    }

    #[test]
    fn a_throttled_fetch_is_unrecorded() {
        let s = sensor(1000.0);
        assert_eq!(charge_fetch_replaced(&s, 500, 0, 1_000), 0);
        assert!(charge_fetch_replaced(&s, 5000, 0, 1_001) > 0);
        assert_eq!(s.lock().unwrap().ring.total(1_002), 500.0);
        assert_eq!(charge_fetch_replaced(&s, 100, 7, 1_003), 0);
        assert_eq!(s.lock().unwrap().ring.total(1_004), 500.0);
    }
}
