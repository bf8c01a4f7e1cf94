//! `kconfigs_enforcement._native.testing`: the data plane's pure stages, callable from Python so
//! that the gateway's byte-level tests (golden bytes, every version, re-decoded by kafka-python as
//! an independent codec, hostile bytes) run against the code that serves clients. Nothing here is
//! used by `kconfigs serve`; each function calls the stage the data plane calls, and a Malformed
//! frame becomes `ValueError` (the data plane closes that one connection).

use std::collections::{HashMap, HashSet};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use super::plane::produce_request_producer_ids;
use super::rewrite::{self, Address, AddressRewrite, Ranges};
use super::sasl::{self, SaslState};
use super::wire::{self, Malformed};

fn value_error(bad: Malformed) -> PyErr {
    PyValueError::new_err(bad.0)
}

fn bytes_out(py: Python<'_>, data: &[u8]) -> Py<PyBytes> {
    PyBytes::new(py, data).unbind()
}

/// Upstream addresses named by a response (header + body, no length prefix); None when the API
/// carries none, or when a Produce / Fetch response has no NodeEndpoints (left alone, as served).
#[pyfunction]
fn response_addresses(api_key: i16, version: i16, frame: &[u8]) -> PyResult<Option<Vec<Address>>> {
    Ok(decode_rewrite(api_key, version, frame)?.map(|r| r.addresses))
}

fn decode_rewrite(api_key: i16, version: i16, frame: &[u8]) -> PyResult<Option<AddressRewrite>> {
    if wire::has_node_endpoints(api_key, version)
        && !wire::node_endpoints_present(api_key, version, frame).map_err(value_error)?
    {
        return Ok(None);
    }
    AddressRewrite::decode(api_key, version, frame).map_err(value_error)
}

/// The response with every upstream address replaced through `mapping`; None as in
/// `response_addresses`. An address missing from `mapping` is a ValueError (fails closed).
#[pyfunction]
fn rewrite_addresses(
    py: Python<'_>,
    api_key: i16,
    version: i16,
    frame: &[u8],
    mapping: HashMap<Address, Address>,
) -> PyResult<Option<Py<PyBytes>>> {
    let Some(decoded) = decode_rewrite(api_key, version, frame)? else {
        return Ok(None);
    };
    let out = decoded
        .apply(&|host, port| mapping.get(&(host.to_string(), port)).cloned())
        .map_err(value_error)?;
    Ok(Some(bytes_out(py, &out)))
}

/// An ApiVersions response (header + body) with its ranges capped by `ceilings` (api key ->
/// highest version, -1 = removed) and the crate's maxima of the APIs the data plane decodes, plus
/// the gateway-owned ranges, as the data plane re-encodes it.
#[pyfunction]
fn rewrite_api_versions(
    py: Python<'_>,
    frame: &[u8],
    version: i16,
    ceilings: HashMap<i16, i16>,
    owned: Ranges,
) -> PyResult<Py<PyBytes>> {
    let (header, message, used) = rewrite::decode_api_versions(frame, version).map_err(value_error)?;
    let broker: Ranges = message
        .api_keys
        .iter()
        .map(|k| (k.api_key, k.min_version, k.max_version))
        .collect();
    let owned = if message.error_code == 0 { owned } else { Vec::new() };
    let capped = rewrite::cap_ranges(&broker, &|k| rewrite::ceiling(k, ceilings.get(&k).copied()), &owned);
    let out = rewrite::encode_api_versions(&header, message, used, &capped).map_err(value_error)?;
    Ok(bytes_out(py, &out))
}

#[pyfunction]
fn cap_ranges(broker: Ranges, ceilings: HashMap<i16, i16>, owned: Ranges) -> Ranges {
    rewrite::cap_ranges(&broker, &|k| rewrite::ceiling(k, ceilings.get(&k).copied()), &owned)
}

#[pyfunction]
fn unsupported_api_versions(py: Python<'_>, correlation_id: i32, max_version: i16) -> Py<PyBytes> {
    bytes_out(py, &rewrite::unsupported_api_versions(correlation_id, max_version))
}

/// `throttle_time_ms` raised to at least `throttle_ms` where the data plane patches it: the first
/// body field for the (api key, version) pairs in `throttle_first`, after `responses` in Produce.
#[pyfunction]
fn patch_throttle(
    py: Python<'_>,
    api_key: i16,
    version: i16,
    frame: &[u8],
    throttle_ms: i64,
    throttle_first: HashSet<(i16, i16)>,
) -> Py<PyBytes> {
    let mut out = frame.to_vec();
    rewrite::patch_throttle(api_key, version, &mut out, throttle_ms, &throttle_first);
    bytes_out(py, &out)
}

#[pyfunction]
fn throttled_fetch_response(
    py: Python<'_>,
    version: i16,
    frame: &[u8],
    throttle_ms: i64,
) -> PyResult<Option<Py<PyBytes>>> {
    let out = rewrite::throttled_fetch_response(version, frame, throttle_ms).map_err(value_error)?;
    Ok(out.map(|o| bytes_out(py, &o)))
}

#[pyfunction]
fn batch_producer_ids(records: &[u8]) -> Vec<i64> {
    let mut ids = Vec::new();
    wire::batch_producer_ids(records, &mut ids);
    ids
}

#[pyfunction(name = "produce_request_producer_ids")]
fn py_produce_request_producer_ids(version: i16, frame: &[u8]) -> PyResult<Vec<i64>> {
    produce_request_producer_ids(version, frame).map_err(value_error)
}

#[pyfunction]
fn check_frame_size(size: i32, min: i32, max: i64) -> PyResult<()> {
    wire::check_frame_size(size, min, max).map_err(value_error)
}

/// (api key, version, correlation id, client id, offset after client id) of a request frame.
#[pyfunction]
fn parse_request_prefix(frame: &[u8]) -> PyResult<(i16, i16, i32, Option<String>, usize)> {
    let p = wire::parse_request_prefix(frame).map_err(value_error)?;
    Ok((p.api_key, p.api_version, p.correlation_id, p.client_id, p.client_id_end))
}

#[pyfunction]
fn produce_acks(frame: &[u8]) -> PyResult<i16> {
    let prefix = wire::parse_request_prefix(frame).map_err(value_error)?;
    wire::produce_acks(frame, &prefix).map_err(value_error)
}

#[pyfunction]
fn read_uvarint(buf: &[u8], pos: usize) -> PyResult<(u64, usize)> {
    wire::read_uvarint(buf, pos).map_err(value_error)
}

#[pyfunction]
fn skip_tagged_fields(buf: &[u8], pos: usize) -> PyResult<usize> {
    wire::skip_tagged_fields(buf, pos).map_err(value_error)
}

#[pyfunction]
fn plain_authcid(auth: &[u8]) -> PyResult<String> {
    sasl::plain_authcid(auth).map_err(value_error)
}

#[pyfunction]
fn scram_username(client_first: &[u8]) -> PyResult<String> {
    sasl::scram_username(client_first).map_err(value_error)
}

/// One connection's SASL observation, fed the request frames and response error codes.
#[pyclass(module = "kconfigs_enforcement._native.testing")]
struct SaslObserver(SaslState);

#[pymethods]
impl SaslObserver {
    #[new]
    fn new() -> Self {
        SaslObserver(SaslState::default())
    }

    fn on_request(&mut self, api_key: i16, version: i16, frame: &[u8]) -> PyResult<()> {
        self.0.on_request(api_key, version, frame).map_err(value_error)
    }

    fn on_handshake_response(&mut self, error_code: i16) {
        self.0.on_handshake_response(error_code)
    }

    fn on_authenticate_response(&mut self, error_code: i16) -> bool {
        self.0.on_authenticate_response(error_code)
    }

    #[getter]
    fn principal(&self) -> String {
        self.0.principal.clone()
    }

    #[getter]
    fn authenticated(&self) -> bool {
        self.0.authenticated
    }
}

/// Adds the `testing` submodule to `_native`.
/// The mTLS principal the data plane gives a client presenting this DER certificate (None: the
/// certificate does not parse).
#[pyfunction]
fn certificate_principal(der: &[u8]) -> Option<String> {
    super::tls::subject_dn(der)
}

pub fn register(parent: &Bound<'_, PyModule>) -> PyResult<()> {
    let m = PyModule::new(parent.py(), "testing")?;
    m.add("ANONYMOUS", sasl::ANONYMOUS)?;
    m.add(
        "API_KEYS",
        wire::NAMED_API_KEYS.iter().copied().collect::<HashMap<&str, i16>>(),
    )?;
    m.add(
        "CHARGED_KINDS",
        super::quota::Kind::ALL.iter().map(|k| k.name()).collect::<Vec<_>>(),
    )?;
    m.add("PRODUCE_FIRST_NODE_ENDPOINTS", wire::PRODUCE_FIRST_NODE_ENDPOINTS)?;
    m.add("FETCH_FIRST_NODE_ENDPOINTS", wire::FETCH_FIRST_NODE_ENDPOINTS)?;
    m.add_class::<SaslObserver>()?;
    m.add_function(wrap_pyfunction!(response_addresses, &m)?)?;
    m.add_function(wrap_pyfunction!(certificate_principal, &m)?)?;
    m.add_function(wrap_pyfunction!(rewrite_addresses, &m)?)?;
    m.add_function(wrap_pyfunction!(rewrite_api_versions, &m)?)?;
    m.add_function(wrap_pyfunction!(cap_ranges, &m)?)?;
    m.add_function(wrap_pyfunction!(unsupported_api_versions, &m)?)?;
    m.add_function(wrap_pyfunction!(patch_throttle, &m)?)?;
    m.add_function(wrap_pyfunction!(throttled_fetch_response, &m)?)?;
    m.add_function(wrap_pyfunction!(batch_producer_ids, &m)?)?;
    m.add_function(wrap_pyfunction!(py_produce_request_producer_ids, &m)?)?;
    m.add_function(wrap_pyfunction!(check_frame_size, &m)?)?;
    m.add_function(wrap_pyfunction!(parse_request_prefix, &m)?)?;
    m.add_function(wrap_pyfunction!(produce_acks, &m)?)?;
    m.add_function(wrap_pyfunction!(read_uvarint, &m)?)?;
    m.add_function(wrap_pyfunction!(skip_tagged_fields, &m)?)?;
    m.add_function(wrap_pyfunction!(plain_authcid, &m)?)?;
    m.add_function(wrap_pyfunction!(scram_username, &m)?)?;
    parent.add_submodule(&m)
}
