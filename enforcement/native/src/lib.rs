//! `kconfigs_enforcement._native`: the enforcement hot path in Rust.
//!
//! Why native code: a decision (record + quota check + throttle) is ~1.8 us in CPython even with
//! the Python rate fused and inlined, half of the 1 us budget of issue 3. PyO3 (a maintained
//! library) does the CPython binding; the rate arithmetic itself is in ring.rs.
//!
//! `RateCore` carries a rate plus the sensor fields the hot path reads (bound, cap, last record
//! time). Python subclasses it: `kconfigs_enforcement.native_rates` adds names/tags and the public API.

mod ring;
#[cfg(test)]
mod ring_tests;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyInt, PyList, PyTuple};

use ring::{java_round, Ring, Value};

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

#[pyclass(subclass, module = "kconfigs_enforcement._native")]
pub struct RateCore {
    ring: Ring,
    /// the quota per second (`UNLIMITED` = no quota)
    #[pyo3(get, set)]
    bound: f64,
    /// `boundedThrottleTime` cap in ms (i64::MAX = uncapped)
    #[pyo3(get, set)]
    cap_ms: i64,
    /// `Sensor.lastRecordTime`, for the one-hour inactivity expiry
    #[pyo3(get, set)]
    last_record_ms: i64,
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
            ring: Ring::new(samples, window_ms, legacy_pre_3_8),
            bound,
            cap_ms,
            last_record_ms: now_ms,
        })
    }

    #[getter]
    fn samples(&self) -> i64 {
        self.ring.samples()
    }

    #[getter]
    fn sample_window_ms(&self) -> i64 {
        self.ring.window()
    }

    #[getter]
    fn legacy_pre_3_8(&self) -> bool {
        self.ring.legacy_pre_3_8()
    }

    /// `SampledStat.record`.
    fn record(&mut self, value: &Bound<'_, PyAny>, now_ms: i64) -> PyResult<()> {
        self.ring.record(to_value(value)?, now_ms);
        Ok(())
    }

    /// `Sensor.record(v, t, checkQuotas=false)`: unrecord / recordNoThrottle.
    fn record_no_check(&mut self, value: &Bound<'_, PyAny>, now_ms: i64) -> PyResult<()> {
        self.last_record_ms = now_ms;
        self.ring.record(to_value(value)?, now_ms);
        Ok(())
    }

    /// Record `value` at `now_ms`, then return the throttle in ms (0 = within quota).
    fn record_and_throttle(&mut self, value: &Bound<'_, PyAny>, now_ms: i64) -> PyResult<i64> {
        self.last_record_ms = now_ms;
        Ok(self
            .ring
            .record_and_throttle(to_value(value)?, now_ms, self.bound, self.cap_ms))
    }

    /// `Sensor.hasExpired`: idle for strictly more than `expiry_ms`.
    fn expired(&self, now_ms: i64, expiry_ms: i64) -> bool {
        now_ms - self.last_record_ms > expiry_ms
    }

    fn total(&mut self, now_ms: i64) -> f64 {
        self.ring.total(now_ms)
    }

    fn window_ms(&mut self, now_ms: i64) -> i64 {
        self.ring.window_ms(now_ms)
    }

    fn measure(&mut self, now_ms: i64) -> f64 {
        self.ring.measure(now_ms)
    }

    /// The ring slots as (value, start_ms, last_event_ms) tuples, in slot order.
    fn _slots<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let items: PyResult<Vec<Bound<'py, PyTuple>>> = self
            .ring
            .slots()
            .into_iter()
            .map(|(v, s, l)| (v, s, l).into_pyobject(py))
            .collect();
        PyList::new(py, items?)
    }

    /// Copy the whole native state of `other` into this object (deepcopy / pickle support).
    fn _copy_core_from(&mut self, other: PyRef<'_, RateCore>) {
        self.ring = other.ring.clone();
        self.bound = other.bound;
        self.cap_ms = other.cap_ms;
        self.last_record_ms = other.last_record_ms;
    }
}

/// Java `Math.round(double)`.
#[pyfunction(name = "java_round")]
fn py_java_round(x: f64) -> i64 {
    java_round(x)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<RateCore>()?;
    m.add_function(wrap_pyfunction!(py_java_round, m)?)?;
    Ok(())
}
