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
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
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
    /// the sensor is not a native one (pure-Python rates): charge through the bridge
    pub via_bridge: bool,
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
    /// off while the control plane's clock is not the monotonic one (tests with a manual clock)
    pub native: AtomicBool,
    generation: AtomicU64,
    cache: Mutex<Cache>,
    pub usage: Usage,
    throttles: Mutex<Vec<QueuedThrottle>>,
    /// muted connections per listener since the last drain
    throttled: Mutex<HashMap<String, u64>>,
}

impl Quotas {
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
                    e.print(py);
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
            .and_then(|v| v.extract::<(Py<PyAny>, bool)>(py));
        match answer {
            Ok((sensor, finite)) => {
                if sensor.is_none(py) {
                    return Resolution {
                        sensor: None,
                        finite,
                        via_bridge: false,
                        max_fetch_bytes: None,
                    };
                }
                match sensor.extract::<PyRef<'_, RateCore>>(py) {
                    Ok(core) => Resolution {
                        sensor: Some(core.shared()),
                        finite,
                        via_bridge: false,
                        max_fetch_bytes: None,
                    },
                    Err(_) => Resolution {
                        sensor: None,
                        finite,
                        via_bridge: true,
                        max_fetch_bytes: None,
                    },
                }
            }
            Err(e) => {
                e.print(py);
                // unknown: charge through the bridge, which reports its own errors
                Resolution {
                    sensor: None,
                    finite: true,
                    via_bridge: true,
                    max_fetch_bytes: None,
                }
            }
        }
    })
}

/// Milliseconds on CLOCK_MONOTONIC, the clock of Python's `time.monotonic_ns` (the control plane's
/// `MONOTONIC.now_ms`): the data plane and Python's metrics and expiry read one clock.
pub fn monotonic_ms() -> i64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec; CLOCK_MONOTONIC always exists on Linux
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec * 1000 + ts.tv_nsec / 1_000_000
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

/// One window's totals by user, then client-id, then ip, one (value, throttle ms) slot per kind:
/// a charge borrows the caller's strings, so once its entity has been seen in the window it
/// allocates nothing.
type WindowTotals = HashMap<String, HashMap<String, HashMap<String, [Option<(f64, f64)>; KINDS]>>>;
/// Totals by epoch-aligned window start.
type Totals = HashMap<i64, WindowTotals>;
/// Usage rows: (window start ms, kind, user, client-id, ip, value, throttle ms).
pub type UsageRow = (i64, &'static str, String, String, String, f64, f64);
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
    shards: [Mutex<Totals>; USAGE_SHARDS],
}

impl Usage {
    pub fn record(&self, kind: Kind, user: &str, client_id: &str, ip: &str, value: f64, throttle_ms: i64) {
        let window_ms = self.window_ms.load(Ordering::Relaxed);
        if window_ms <= 0 {
            return;
        }
        let wall_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0);
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
        let slot = slots[kind as usize].get_or_insert((0.0, 0.0));
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
                            for (kind, slot) in Kind::ALL.iter().zip(slots) {
                                let Some((value, throttle)) = slot else { continue };
                                let key = (start, kind.name(), user.clone(), client_id.clone(), ip.clone());
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
                via_bridge: false,
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
                via_bridge: false,
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
            .map(|r| (r.1, r.2.as_str(), r.3.as_str(), r.4.as_str(), r.5, r.6))
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
    fn a_throttled_fetch_is_unrecorded() {
        let s = sensor(1000.0);
        assert_eq!(charge_fetch_replaced(&s, 500, 0, 1_000), 0);
        assert!(charge_fetch_replaced(&s, 5000, 0, 1_001) > 0);
        assert_eq!(s.lock().unwrap().ring.total(1_002), 500.0);
        assert_eq!(charge_fetch_replaced(&s, 100, 7, 1_003), 0);
        assert_eq!(s.lock().unwrap().ring.total(1_004), 500.0);
    }
}
