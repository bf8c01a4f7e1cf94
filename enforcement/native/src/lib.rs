//! `kconfigs_enforcement._native`: the enforcement hot path in Rust.
//!
//! Why native code: a decision (record + quota check + throttle) is ~1.8 us in CPython even with
//! the Python rate fused and inlined, half of its 1 us budget per decision. PyO3 (a maintained
//! library) does the CPython binding; the rate arithmetic itself is in ring.rs.
//!
//! `RateCore` carries a rate plus the sensor fields the hot path reads (bound, cap, last record
//! time). Python subclasses it: `kconfigs_enforcement.native_rates` adds names/tags and the public API.

// Java's Long.MAX_VALUE as a double is written out in full, as Kafka's code has it.
#![allow(clippy::excessive_precision)]

mod dataplane;
mod ring;
#[cfg(test)]
mod ring_tests;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyInt, PyList, PyTuple};

use ring::{java_round, Ring, Sensor, SharedSensor, Value};

use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dataplane::plane::{accept_loop, Settings, Shared};
use pyo3::exceptions::{PyOSError, PyRuntimeError};

const UNLIMITED: f64 = i64::MAX as f64; // Long.MAX_VALUE as a double (2^63): "no quota"

/// Ints stay exact (`type(v) is int`, as the Python stat tests); everything else is a double.
fn to_value(value: &Bound<'_, PyAny>) -> PyResult<Value> {
    if value.is_exact_instance_of::<PyInt>() {
        if let Ok(v) = value.extract::<i64>() {
            return Ok(Value::Int(v));
        }
    }
    Ok(Value::Float(value.extract::<f64>()?))
}

// frozen: every method takes &self (the state is behind the sensor's own mutex), so PyO3 keeps no
// borrow flag, whose two atomic operations per call cost as much as the mutex's own two.
#[pyclass(frozen, subclass, module = "kconfigs_enforcement._native")]
pub struct RateCore {
    /// Shared with the native data plane's worker threads, which record into the same sensor
    /// (one rate per entity, whichever thread or language records).
    core: SharedSensor,
}

impl RateCore {
    fn lock(&self) -> std::sync::MutexGuard<'_, Sensor> {
        // a panic while recording cannot leave the ring half-updated in a way later reads rely on
        self.core.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The state the data plane records into.
    pub fn shared(&self) -> SharedSensor {
        self.core.clone()
    }
}

#[pymethods]
impl RateCore {
    /// Extra keyword arguments belong to Python subclasses' `__init__` (names, tags).
    #[new]
    #[pyo3(signature = (samples=11, window_ms=1000, legacy_pre_3_8=false, *, bound=UNLIMITED, cap_ms=i64::MAX, now_ms=0, **_extra))]
    fn new(
        samples: i64,
        window_ms: i64,
        legacy_pre_3_8: bool,
        bound: f64,
        cap_ms: i64,
        now_ms: i64,
        _extra: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        if samples < 1 || window_ms < 1 {
            return Err(PyValueError::new_err("samples and window_ms must be >= 1"));
        }
        Ok(RateCore {
            core: Arc::new(Mutex::new(Sensor {
                ring: Ring::new(samples, window_ms, legacy_pre_3_8),
                bound,
                cap_ms,
                last_record_ms: now_ms,
            })),
        })
    }

    /// the quota per second (`UNLIMITED` = no quota)
    #[getter]
    fn bound(&self) -> f64 {
        self.lock().bound
    }

    #[setter]
    fn set_bound(&self, bound: f64) {
        self.lock().bound = bound;
    }

    /// `boundedThrottleTime` cap in ms (i64::MAX = uncapped)
    #[getter]
    fn cap_ms(&self) -> i64 {
        self.lock().cap_ms
    }

    #[setter]
    fn set_cap_ms(&self, cap_ms: i64) {
        self.lock().cap_ms = cap_ms;
    }

    /// `Sensor.lastRecordTime`, for the one-hour inactivity expiry
    #[getter]
    fn last_record_ms(&self) -> i64 {
        self.lock().last_record_ms
    }

    #[setter]
    fn set_last_record_ms(&self, last_record_ms: i64) {
        self.lock().last_record_ms = last_record_ms;
    }

    #[getter]
    fn samples(&self) -> i64 {
        self.lock().ring.samples()
    }

    #[getter]
    fn sample_window_ms(&self) -> i64 {
        self.lock().ring.window()
    }

    #[getter]
    fn legacy_pre_3_8(&self) -> bool {
        self.lock().ring.legacy_pre_3_8()
    }

    /// `SampledStat.record`.
    fn record(&self, value: &Bound<'_, PyAny>, now_ms: i64) -> PyResult<()> {
        let value = to_value(value)?;
        self.lock().ring.record(value, now_ms);
        Ok(())
    }

    /// `Sensor.record(v, t, checkQuotas=false)`: unrecord / recordNoThrottle.
    fn record_no_check(&self, value: &Bound<'_, PyAny>, now_ms: i64) -> PyResult<()> {
        let value = to_value(value)?;
        self.lock().record_no_check(value, now_ms);
        Ok(())
    }

    /// Record `value` at `now_ms`, then return the throttle in ms (0 = within quota).
    fn record_and_throttle(&self, value: &Bound<'_, PyAny>, now_ms: i64) -> PyResult<i64> {
        let value = to_value(value)?;
        Ok(self.lock().record_and_throttle(value, now_ms))
    }

    /// `Sensor.hasExpired`: idle for strictly more than `expiry_ms`.
    fn expired(&self, now_ms: i64, expiry_ms: i64) -> bool {
        now_ms - self.lock().last_record_ms > expiry_ms
    }

    fn total(&self, now_ms: i64) -> f64 {
        self.lock().ring.total(now_ms)
    }

    fn window_ms(&self, now_ms: i64) -> i64 {
        self.lock().ring.window_ms(now_ms)
    }

    fn measure(&self, now_ms: i64) -> f64 {
        self.lock().ring.measure(now_ms)
    }

    /// The ring slots as (value, start_ms, last_event_ms) tuples, in slot order.
    fn _slots<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let slots = self.lock().ring.slots();
        let items: PyResult<Vec<Bound<'py, PyTuple>>> =
            slots.into_iter().map(|(v, s, l)| (v, s, l).into_pyobject(py)).collect();
        PyList::new(py, items?)
    }

    /// Copy the whole native state of `other` into this object (deepcopy / pickle support): a
    /// copy, never the same shared state.
    fn _copy_core_from(&self, other: PyRef<'_, RateCore>) {
        if Arc::ptr_eq(&self.core, &other.core) {
            return;
        }
        let state = other.lock().clone();
        *self.lock() = state;
    }
}

/// Many `record_and_throttle` decisions in one call, in order: for each i, record `values[i]` at
/// `times_ms[i]` into `sensors[i]` and give its throttle in ms; a `None` sensor records nothing and
/// gives 0 (a disabled quota type). Where `unrecord_throttled[i]` is true, a throttled value is
/// recorded back out under the same lock (a throttled Fetch returns nothing: `record_fetch`).
/// Each decision takes its sensor's lock once, as a single call does, so the data plane's threads
/// recording into the same sensors interleave between decisions, never inside one.
#[pyfunction]
#[pyo3(signature = (sensors, values, times_ms, unrecord_throttled=None))]
fn record_and_throttle_each<'py>(
    py: Python<'py>,
    sensors: &Bound<'py, PyList>,
    values: &Bound<'py, PyList>,
    times_ms: &Bound<'py, PyList>,
    unrecord_throttled: Option<&Bound<'py, PyList>>,
) -> PyResult<Bound<'py, PyList>> {
    let count = sensors.len();
    if values.len() != count || times_ms.len() != count || unrecord_throttled.is_some_and(|u| u.len() != count) {
        return Err(PyValueError::new_err(
            "sensors, values, times_ms and unrecord_throttled differ in length",
        ));
    }
    let mut throttles = Vec::with_capacity(count);
    for i in 0..count {
        let sensor = sensors.get_item(i)?;
        if sensor.is_none() {
            throttles.push(0);
            continue;
        }
        let core = sensor.cast::<RateCore>()?.get();
        let value = to_value(&values.get_item(i)?)?;
        let now_ms: i64 = times_ms.get_item(i)?.extract()?;
        let unrecord = match unrecord_throttled {
            Some(flags) => flags.get_item(i)?.is_truthy()?,
            None => false,
        };
        let mut state = core.lock();
        let throttle_ms = state.record_and_throttle(value, now_ms);
        if unrecord && throttle_ms > 0 {
            state.record_no_check(value.negated(), now_ms);
        }
        throttles.push(throttle_ms);
    }
    PyList::new(py, throttles)
}

/// Benchmark support (benchmarks/bench_enforcement.py): ns per decision for `count` decisions
/// made in Rust alone over `entities` fresh sensors with the default ring (11 x 1 s), values and
/// entities drawn as the benchmark draws them, 1000 decisions per simulated ms. With `locked`, each
/// decision takes its sensor's mutex as a call from Python does; without, the arithmetic alone.
#[pyfunction]
fn _time_decisions_ns(py: Python<'_>, count: usize, entities: usize, locked: bool) -> PyResult<f64> {
    if entities == 0 {
        return Err(PyValueError::new_err("entities must be >= 1"));
    }
    let sensor = |_| Sensor {
        ring: Ring::new(11, 1000, false),
        bound: 1_000_000.0,
        cap_ms: i64::MAX,
        last_record_ms: 0,
    };
    let mut plain: Vec<Sensor> = (0..entities).map(sensor).collect();
    let shared: Vec<SharedSensor> = (0..entities).map(|i| Arc::new(Mutex::new(sensor(i)))).collect();
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut draw = move |below: u64| {
        seed ^= seed << 13; // xorshift64: cheap next to a decision, and the same stream each run
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % below
    };
    let events: Vec<(usize, i64, i64)> = (0..count)
        .map(|i| {
            (
                draw(entities as u64) as usize,
                100 + draw(16_284) as i64,
                1_700_000_000_000 + (i / 1000) as i64,
            )
        })
        .collect();
    Ok(py.detach(|| {
        let started = std::time::Instant::now();
        let mut throttled = 0i64;
        for &(entity, value, now_ms) in &events {
            throttled += if locked {
                shared[entity]
                    .lock()
                    .unwrap()
                    .record_and_throttle(Value::Int(value), now_ms)
            } else {
                plain[entity].record_and_throttle(Value::Int(value), now_ms)
            };
        }
        std::hint::black_box(throttled);
        started.elapsed().as_nanos() as f64 / count.max(1) as f64
    }))
}

/// Java `Math.round(double)`.
#[pyfunction(name = "java_round")]
fn py_java_round(x: f64) -> i64 {
    java_round(x)
}

fn setting<'py, T: FromPyObjectOwned<'py>>(d: &Bound<'py, PyDict>, key: &str) -> PyResult<T> {
    match d.get_item(key)? {
        Some(v) => v
            .extract::<T>()
            .map_err(Into::<PyErr>::into)
            .map_err(|e| PyValueError::new_err(format!("data plane setting {key}: {e}"))),
        None => Err(PyValueError::new_err(format!("data plane setting {key} is missing"))),
    }
}

/// The gateway's native data plane: listeners and proxied connections on a tokio worker pool.
/// Python (kconfigs_enforcement.gateway.native_plane) owns configuration, quota state, metrics and logs,
/// reached through the `bridge` object for the rare or stateful decisions.
#[pyclass(module = "kconfigs_enforcement._native")]
pub struct DataPlane {
    runtime: Mutex<Option<tokio::runtime::Runtime>>,
    shared: Arc<Shared>,
    /// what `charge` remembers between calls, as a connection does
    memo: dataplane::quota::Memo,
}

#[pymethods]
impl DataPlane {
    #[new]
    #[pyo3(signature = (settings, bridge, workers=0, clock=None))]
    fn new(
        settings: &Bound<'_, PyDict>,
        bridge: Py<PyAny>,
        workers: usize,
        clock: Option<PyRef<'_, dataplane::quota::ManualClock>>,
    ) -> PyResult<Self> {
        let clock = clock.map_or_else(Default::default, |c| dataplane::quota::Clock::manual(c.now.clone()));
        let ms = |v: u64| Duration::from_millis(v);
        let ceilings: HashMap<i16, i16> = setting(settings, "ceilings")?;
        let throttle_first: Vec<(i16, i16)> = setting(settings, "throttle_first")?;
        let tls_cert: Option<String> = setting(settings, "tls_cert_file")?;
        let tls = match tls_cert {
            None => None,
            Some(cert) => {
                let key: String = setting(settings, "tls_key_file")?;
                let ca: Option<String> = setting(settings, "tls_client_ca_file")?;
                Some(dataplane::tls::acceptor(&cert, &key, ca.as_deref()).map_err(PyValueError::new_err)?)
            }
        };
        let parsed = Settings {
            tls,
            upstreams: setting(settings, "upstreams")?,
            listen_host: setting(settings, "listen_host")?,
            listen_port: setting(settings, "listen_port")?,
            advertised_host: setting(settings, "advertised_host")?,
            broker_port_start: setting(settings, "broker_port_start")?,
            max_frame_bytes: setting(settings, "max_frame_bytes")?,
            max_preauth_frame_bytes: setting(settings, "max_preauth_frame_bytes")?,
            max_inflight: setting(settings, "max_inflight_requests")?,
            upstream_connect_timeout: ms(setting(settings, "upstream_connect_timeout_ms")?),
            connections_max_idle: ms(setting(settings, "connections_max_idle_ms")?),
            request_read_timeout: ms(setting(settings, "request_read_timeout_ms")?),
            max_connections: setting(settings, "max_connections")?,
            max_connections_per_ip: setting(settings, "max_connections_per_ip")?,
            require_authentication: setting(settings, "require_authentication")?,
            ceilings,
            throttle_first: throttle_first.into_iter().collect::<HashSet<_>>(),
        };
        let mut builder = tokio::runtime::Builder::new_multi_thread();
        if workers > 0 {
            builder.worker_threads(workers);
        }
        let runtime = builder
            .thread_name("kconfigs-dataplane")
            .enable_all()
            .build()
            .map_err(|e| PyRuntimeError::new_err(format!("cannot start the data plane's threads: {e}")))?;
        Ok(DataPlane {
            runtime: Mutex::new(Some(runtime)),
            shared: Shared::new(parsed, bridge, clock),
            memo: Default::default(),
        })
    }

    /// Bind the bootstrap listener and start accepting; returns its port.
    fn start(&self, py: Python<'_>) -> PyResult<u16> {
        let shared = self.shared.clone();
        let guard = self.runtime.lock().unwrap();
        let runtime = guard
            .as_ref()
            .ok_or_else(|| PyRuntimeError::new_err("data plane stopped"))?;
        py.detach(|| {
            runtime.block_on(async move {
                let s = &shared.settings;
                let listener = tokio::net::TcpListener::bind((s.listen_host.as_str(), s.listen_port))
                    .await
                    // OSError(errno, text): callers tell "address in use" apart by errno, as for asyncio
                    .map_err(|e| {
                        PyOSError::new_err((
                            e.raw_os_error().unwrap_or(0),
                            format!("cannot listen on {}:{}: {e}", s.listen_host, s.listen_port),
                        ))
                    })?;
                let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
                let task = tokio::spawn(accept_loop(
                    shared.clone(),
                    listener,
                    s.upstreams.clone(),
                    "bootstrap".to_string(),
                ));
                shared.listener_tasks.lock().unwrap().push(task);
                Ok(port)
            })
        })
    }

    /// Whether a quota snapshot is installed (no quota: nothing is charged, nothing called).
    fn set_quota_active(&self, active: bool) {
        self.shared.quota_active.store(active, Ordering::SeqCst);
    }

    /// A reload or sensor expiry: resolved sensors are asked for again.
    fn invalidate_quotas(&self) {
        self.shared.quotas.invalidate();
    }

    /// Keep usage-log totals per `window_ms` wall-clock window (0 = no usage log).
    fn set_usage_window(&self, window_ms: i64) {
        self.shared.quotas.usage.window_ms.store(window_ms, Ordering::SeqCst);
    }

    /// Charge as a worker thread charges one request of `kind` ("produce": bytes, "fetch": bytes
    /// of a response (with the request quota's throttle), "request": thread time in ns), for
    /// in-process callers (tests, benchmarks) that drive the charging path without sockets.
    /// Returns the throttle in ms.
    #[pyo3(signature = (kind, user, client_id, ip, value, request_throttle_ms=0))]
    fn charge(
        &self,
        kind: &str,
        user: &str,
        client_id: Option<String>,
        ip: &str,
        value: i64,
        request_throttle_ms: i64,
    ) -> PyResult<i64> {
        let memo = &self.memo;
        let s = &self.shared;
        Ok(match kind {
            "produce" => s.charge_produce(memo, user, &client_id, ip, value),
            "request" => s.charge_request_time(memo, user, &client_id, ip, value),
            "fetch" => s.charge_fetch_replaced(memo, user, &client_id, ip, value, request_throttle_ms),
            _ => return Err(PyValueError::new_err(format!("unknown charge kind: {kind}"))),
        })
    }

    /// (api key, version, upstream addresses) of the latest address rewrites (at most 10,000).
    fn rewrites(&self) -> Vec<dataplane::plane::Rewrite> {
        self.shared.rewrites.lock().unwrap().iter().cloned().collect()
    }

    /// The usage totals so far: (window start ms, kind, user, client-id, ip, value, throttle ms).
    fn drain_usage(&self) -> Vec<dataplane::quota::UsageRow> {
        self.shared.quotas.usage.drain()
    }

    /// Throttles queued for `throttle-time`: (quota type, user, client-id, throttle ms, now ms).
    fn drain_throttles(&self) -> Vec<(&'static str, String, String, i64, i64)> {
        self.shared.quotas.drain_throttles()
    }

    /// Muted connections per listener since the last call: (listener, count).
    fn drain_throttled(&self) -> Vec<(String, u64)> {
        self.shared.quotas.drain_throttled()
    }

    /// The quota admin API keys the gateway answers itself.
    fn set_admin_owned(&self, keys: Vec<i16>) {
        *self.shared.admin_owned.lock().unwrap() = keys;
    }

    /// Upstream broker address -> advertised gateway address, for every listener bound so far.
    fn mapping(&self) -> Vec<((String, i32), (String, i32))> {
        self.shared.mapping()
    }

    /// (client ip, port, listener, principal) of every proxied connection.
    fn connections(&self) -> Vec<(String, u16, String, String)> {
        self.shared.connections_info()
    }

    /// (api key, version, count) of the Produce / Fetch responses checked for NodeEndpoints.
    fn node_endpoint_checks(&self) -> Vec<(i16, i16, u64)> {
        self.shared.node_endpoint_checks()
    }

    /// (Produce requests, Fetch responses, ShareFetch responses) forwarded as they arrived, and
    /// the bytes spliced.
    fn streamed(&self) -> (u64, u64, u64, u64) {
        self.shared.streamed()
    }

    fn open_connections(&self) -> usize {
        self.shared.connections.load(Ordering::SeqCst)
    }

    /// Stop accepting, let in-flight requests finish (at most `drain_ms`), then close everything.
    fn stop(&self, py: Python<'_>, drain_ms: u64) -> usize {
        let Some(runtime) = self.runtime.lock().unwrap().take() else {
            return 0;
        };
        let shared = self.shared.clone();
        py.detach(|| {
            let open = runtime.block_on(async move {
                for task in shared.listener_tasks.lock().unwrap().drain(..) {
                    task.abort();
                }
                let open = shared.connections.load(Ordering::SeqCst);
                let _ = shared.stop_tx.send(true);
                let _ = tokio::time::timeout(Duration::from_millis(drain_ms), async {
                    loop {
                        let notified = shared.all_closed.notified();
                        if shared.connections.load(Ordering::SeqCst) == 0 {
                            return;
                        }
                        notified.await;
                    }
                })
                .await;
                open
            });
            runtime.shutdown_timeout(Duration::from_secs(1));
            open
        })
    }
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<RateCore>()?;
    m.add_class::<DataPlane>()?;
    m.add_class::<dataplane::quota::ManualClock>()?;
    m.add_function(wrap_pyfunction!(py_java_round, m)?)?;
    m.add_function(wrap_pyfunction!(record_and_throttle_each, m)?)?;
    m.add_function(wrap_pyfunction!(_time_decisions_ns, m)?)?;
    dataplane::testing::register(m)?;
    Ok(())
}
