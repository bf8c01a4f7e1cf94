//! The data plane: listeners, one task pair per proxied connection, on a tokio worker pool.
//!
//! Each client connection has a request task (client -> upstream: frame limits, header, version
//! caps, SASL observation, producer ids, quota charge for Produce, KIP-219 hold while muted) and a
//! response task (upstream -> client: pairing with the oldest in-flight request, address and
//! ApiVersions rewriting, Fetch/request-time charge, throttle_time patching). The control plane
//! (Python) is reached through one bridge object for the rare or stateful decisions: which quota
//! sensor applies to a new (user, client-id) (quota.rs charges it here, with no Python call per
//! request), the quota admin API answers, metrics events and logging.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use pyo3::prelude::*;
use pyo3::types::PyBytes;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Mutex as AsyncMutex, Notify};

use super::hop;
use super::io::{ClientRead, ClientWrite, LeanReader, LeanWriter, PlainSocket};
use super::quota::{self, Kind, Memo, Quotas, Resolution};
use super::rewrite::{self, AddressRewrite};
use super::sasl::SaslState;
use super::splice::Pipe;
use super::stream::{self, Fault, Forward};
use super::tail::{EndpointTail, FetchTailRewrite, ShareFetchTailRewrite, TailRewrite};
use super::wire::{
    self, Malformed, RequestPrefix, API_VERSIONS, FETCH, JOIN_GROUP, PRODUCE, SASL_AUTHENTICATE, SASL_HANDSHAKE,
    SHARE_ACKNOWLEDGE, SHARE_FETCH, SYNC_GROUP,
};

const EXEMPT_APIS: [i16; 3] = [API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE];
/// APIs that may wait in broker purgatory (long polls, group rendezvous): their upstream round
/// trip is not service time, so only the gateway's own handling time counts for them.
const PARKING_APIS: [i16; 4] = [FETCH, JOIN_GROUP, SYNC_GROUP, SHARE_FETCH];
/// Fetches whose response bytes a broker charges to `consumer_byte_rate`, and that it answers
/// empty when it throttles them (KafkaApis: Fetch, and ShareFetch as KIP-932 has it).
const FETCHES: [i16; 2] = [FETCH, SHARE_FETCH];
const MAX_REMEMBERED_PRODUCER_IDS: usize = 1024;

#[derive(Clone)]
pub struct Settings {
    pub upstreams: Vec<(String, u16)>,
    pub listen_host: String,
    pub listen_port: u16,
    pub advertised_host: String,
    pub broker_port_start: u16,
    pub max_frame_bytes: i64,
    pub max_preauth_frame_bytes: i64,
    pub max_inflight: usize,
    pub upstream_connect_timeout: Duration,
    pub connections_max_idle: Duration,
    pub request_read_timeout: Duration,
    pub max_connections: usize,
    pub max_connections_per_ip: usize,
    pub require_authentication: bool,
    /// the gateway's version ceilings (-1 = the API is removed)
    pub ceilings: HashMap<i16, i16>,
    /// (api key, version) pairs whose response starts with throttle_time_ms
    pub throttle_first: HashSet<(i16, i16)>,
    /// TLS listeners (and mTLS when it names a client CA)
    pub tls: Option<tokio_rustls::TlsAcceptor>,
}

/// Why a connection ends: logged by the control plane's logger, counted as a bad frame or not.
enum Close {
    Bad(String, &'static str),
    Quiet(String),
}

impl From<Malformed> for Close {
    fn from(m: Malformed) -> Self {
        Close::Bad(m.0, "client")
    }
}

impl From<std::io::Error> for Close {
    fn from(e: std::io::Error) -> Self {
        Close::Quiet(e.to_string())
    }
}

/// (api key, version, upstream addresses) of an address rewrite, kept for inspection.
pub type Rewrite = (i16, i16, Vec<(String, i32)>);
const MAX_RECENT_REWRITES: usize = 10_000;

pub struct Shared {
    pub settings: Settings,
    /// the latest address rewrites (observability; read by `DataPlane.rewrites`)
    pub rewrites: Mutex<std::collections::VecDeque<Rewrite>>,
    pub(crate) bridge: Py<PyAny>,
    pub quota_active: AtomicBool,
    /// resolved sensors, native charging and usage totals (quota.rs)
    pub quotas: Quotas,
    pub admin_owned: Mutex<Vec<i16>>,
    mapping: Mutex<HashMap<(String, i32), (String, i32)>>,
    bind_lock: AsyncMutex<u16>,
    open_per_ip: Mutex<HashMap<String, usize>>,
    open_total: AtomicUsize,
    pub connections: AtomicUsize,
    pub all_closed: Notify,
    pub stop_tx: watch::Sender<bool>,
    pub listener_tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    conns: Mutex<HashMap<u64, Weak<Conn>>>,
    next_conn_id: AtomicU64,
    /// Produce / Fetch responses checked for NodeEndpoints, by [api key][version] (observability)
    node_endpoint_checks: [[AtomicU64; 32]; 2],
    /// Produce requests and Fetch responses forwarded as they arrived (stream.rs), and the bytes
    /// of theirs moved by splice (observability; tests prove the path is taken)
    streamed: [AtomicU64; 3],
    spliced_bytes: AtomicU64,
}

impl Shared {
    pub fn new(settings: Settings, bridge: Py<PyAny>, clock: quota::Clock) -> Arc<Shared> {
        let next_port = settings.broker_port_start;
        Arc::new(Shared {
            settings,
            rewrites: Mutex::new(std::collections::VecDeque::new()),
            bridge,
            quota_active: AtomicBool::new(false),
            quotas: Quotas::with_clock(clock),
            admin_owned: Mutex::new(Vec::new()),
            mapping: Mutex::new(HashMap::new()),
            bind_lock: AsyncMutex::new(next_port),
            open_per_ip: Mutex::new(HashMap::new()),
            open_total: AtomicUsize::new(0),
            connections: AtomicUsize::new(0),
            all_closed: Notify::new(),
            stop_tx: watch::channel(false).0,
            listener_tasks: Mutex::new(Vec::new()),
            conns: Mutex::new(HashMap::new()),
            next_conn_id: AtomicU64::new(0),
            node_endpoint_checks: Default::default(),
            streamed: Default::default(),
            spliced_bytes: AtomicU64::new(0),
        })
    }

    /// (client ip, port, listener, principal) of every proxied connection.
    pub fn connections_info(&self) -> Vec<(String, u16, String, String)> {
        let conns = self.conns.lock().unwrap();
        conns
            .values()
            .filter_map(|w| w.upgrade())
            .map(|c| (c.ip.clone(), c.port, c.listener.clone(), c.principal()))
            .collect()
    }

    /// (api key, version, responses) checked for NodeEndpoints so far.
    pub fn node_endpoint_checks(&self) -> Vec<(i16, i16, u64)> {
        let mut out = Vec::new();
        for (key, versions) in self.node_endpoint_checks.iter().enumerate() {
            for (version, count) in versions.iter().enumerate() {
                let n = count.load(Ordering::Relaxed);
                if n > 0 {
                    out.push((key as i16, version as i16, n));
                }
            }
        }
        out
    }

    /// (Produce requests, Fetch responses, ShareFetch responses streamed, bytes spliced) so far.
    pub fn streamed(&self) -> (u64, u64, u64, u64) {
        (
            self.streamed[0].load(Ordering::Relaxed),
            self.streamed[1].load(Ordering::Relaxed),
            self.streamed[2].load(Ordering::Relaxed),
            self.spliced_bytes.load(Ordering::Relaxed),
        )
    }

    /// One frame streamed: `api_key` Produce (a request), Fetch or ShareFetch (a response).
    fn count_streamed(&self, api_key: i16, spliced: u64) {
        let kind = match api_key {
            PRODUCE => 0,
            FETCH => 1,
            _ => 2,
        };
        self.streamed[kind].fetch_add(1, Ordering::Relaxed);
        self.spliced_bytes.fetch_add(spliced, Ordering::Relaxed);
    }

    pub fn mapping(&self) -> Vec<((String, i32), (String, i32))> {
        self.mapping
            .lock()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    fn bridge_i64<A>(&self, name: &str, args: A) -> i64
    where
        A: for<'py> pyo3::call::PyCallArgs<'py>,
    {
        Python::attach(|py| {
            match self
                .bridge
                .call_method1(py, name, args)
                .and_then(|v| v.extract::<i64>(py))
            {
                Ok(v) => v,
                Err(e) => {
                    quota::bridge_error(py, &self.bridge, name, &e);
                    0
                }
            }
        })
    }

    /// What Python resolved for (kind, user, client-id): cached until a reload or expiry run,
    /// and remembered by the connection (`memo`) for its next request.
    fn resolution(&self, memo: &Memo, kind: Kind, user: &str, client_id: &Option<String>) -> Arc<Resolution> {
        let client_id = client_id.as_deref().unwrap_or("");
        self.quotas.resolve_remembered(memo, kind, user, client_id, || {
            quota::ask_python(&self.bridge, kind, user, client_id)
        })
    }

    /// Whether a finite quota of one of `kinds` applies (the response may throttle).
    fn may_throttle(&self, memo: &Memo, user: &str, client_id: &Option<String>, kinds: &[Kind]) -> bool {
        kinds.iter().any(|&k| self.resolution(memo, k, user, client_id).finite)
    }

    /// The most a consumer's Fetch may ask for under its fetch quota (None: no cap).
    fn max_fetch_bytes(&self, memo: &Memo, user: &str, client_id: &Option<String>) -> Option<i32> {
        self.resolution(memo, Kind::Fetch, user, client_id).max_fetch_bytes
    }

    fn wants_producer_ids(&self, memo: &Memo, user: &str) -> bool {
        self.resolution(memo, Kind::ProducerIds, user, &None).finite
    }

    pub(crate) fn charge_produce(
        &self,
        memo: &Memo,
        user: &str,
        client_id: &Option<String>,
        ip: &str,
        nbytes: i64,
    ) -> i64 {
        let r = self.resolution(memo, Kind::Produce, user, client_id);
        let now_ms = self.quotas.clock.now_ms();
        let throttle_ms = r.sensor.as_ref().map_or(0, |s| quota::charge_bytes(s, nbytes, now_ms));
        let cid = client_id.as_deref().unwrap_or("");
        self.quotas
            .usage
            .record(Kind::Produce, user, cid, ip, nbytes as f64, throttle_ms);
        throttle_ms
    }

    pub(crate) fn charge_request_time(
        &self,
        memo: &Memo,
        user: &str,
        client_id: &Option<String>,
        ip: &str,
        time_ns: i64,
    ) -> i64 {
        let r = self.resolution(memo, Kind::Request, user, client_id);
        let now_ms = self.quotas.clock.now_ms();
        let throttle_ms = r
            .sensor
            .as_ref()
            .map_or(0, |s| quota::charge_request_time(s, time_ns, now_ms));
        let cid = client_id.as_deref().unwrap_or("");
        self.quotas
            .usage
            .record(Kind::Request, user, cid, ip, time_ns as f64, throttle_ms);
        throttle_ms
    }

    pub(crate) fn charge_fetch_replaced(
        &self,
        memo: &Memo,
        user: &str,
        client_id: &Option<String>,
        ip: &str,
        nbytes: i64,
        request_throttle_ms: i64,
    ) -> i64 {
        let r = self.resolution(memo, Kind::Fetch, user, client_id);
        let cid = client_id.as_deref().unwrap_or("");
        let now_ms = self.quotas.clock.now_ms();
        let throttle_ms = match &r.sensor {
            Some(sensor) => quota::charge_fetch_replaced(sensor, nbytes, request_throttle_ms, now_ms),
            None if request_throttle_ms == 0 => 0, // fetch quotas disabled, nothing to unrecord
            None => {
                // rare: Kafka unrecords even with fetch quotas disabled, which creates the sensor;
                // the next Fetch asks again which sensor applies
                if let Some(sensor) = quota::unrecord_sensor(&self.bridge, user, cid) {
                    quota::unrecord(&sensor, nbytes, now_ms);
                }
                self.quotas.forget(Kind::Fetch, user, cid);
                0
            }
        };
        let delivered = if throttle_ms > 0 || request_throttle_ms > 0 {
            0
        } else {
            nbytes
        };
        self.quotas
            .usage
            .record(Kind::Fetch, user, cid, ip, delivered as f64, throttle_ms);
        throttle_ms
    }

    /// New producer ids of `user` (KIP-936, counted by the control plane's producer-id manager).
    fn charge_producer_ids(&self, user: &str, client_id: &Option<String>, ip: &str, ids: Vec<i64>) -> i64 {
        let count = ids.len() as f64;
        let throttle_ms = self.bridge_i64("on_producer_ids", (user, client_id.clone(), ip, ids));
        let cid = client_id.as_deref().unwrap_or("");
        self.quotas
            .usage
            .record(Kind::ProducerIds, user, cid, ip, count, throttle_ms);
        throttle_ms
    }

    /// KIP-219: the winning throttle on `<quota_type>` `throttle-time`, queued for the control
    /// plane, which records it before metrics are read (no Python call per throttled request).
    fn record_throttle(&self, quota_type: &'static str, user: &str, client_id: &Option<String>, throttle_ms: i64) {
        if throttle_ms <= 0 {
            return;
        }
        let cid = client_id.as_deref().unwrap_or("");
        self.quotas
            .queue_throttle(quota_type, user, cid, throttle_ms, self.quotas.clock.now_ms());
    }

    /// A connection was muted (counted in the metrics).
    fn throttled(&self, listener: &str) {
        self.quotas.count_throttled(listener);
    }

    pub fn log(&self, level: &str, msg: String) {
        let _ = Python::attach(|py| self.bridge.call_method1(py, "log", (level, msg)));
    }

    pub fn event(&self, name: &str, label: &str) {
        let _ = Python::attach(|py| self.bridge.call_method1(py, "event", (name, label)));
    }

    fn ceiling(&self, api_key: i16) -> Option<i16> {
        rewrite::ceiling(api_key, self.settings.ceilings.get(&api_key).copied())
    }

    /// Listeners for the broker `addresses` a `key` v`version` response is about to carry,
    /// opened as needed, and the control plane told which were rewritten (its metrics).
    async fn advertise(self: &Arc<Self>, key: i16, version: i16, addresses: &[(String, i32)]) -> Result<(), Malformed> {
        self.map_addresses(addresses).await?;
        let mut recent = self.rewrites.lock().unwrap();
        if recent.len() == MAX_RECENT_REWRITES {
            recent.pop_front();
        }
        recent.push_back((key, version, addresses.to_vec()));
        Ok(())
    }

    /// One Produce / Fetch response of a version that may carry NodeEndpoints (observability).
    fn count_node_endpoint_check(&self, key: i16, version: i16) {
        if let Some(count) = self.node_endpoint_checks[key as usize].get(version as usize) {
            count.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The advertised gateway address of each upstream address, binding listeners on first sight.
    async fn map_addresses(self: &Arc<Self>, addresses: &[(String, i32)]) -> Result<(), Malformed> {
        let missing: Vec<(String, i32)> = {
            let mapping = self.mapping.lock().unwrap();
            addresses
                .iter()
                .filter(|a| !mapping.contains_key(*a))
                .cloned()
                .collect()
        };
        if missing.is_empty() {
            return Ok(());
        }
        let mut next_port = self.bind_lock.lock().await;
        for address in missing {
            if self.mapping.lock().unwrap().contains_key(&address) {
                continue;
            }
            let port =
                u16::try_from(address.1).map_err(|_| Malformed(format!("broker port {} out of range", address.1)))?;
            let listener = TcpListener::bind((self.settings.listen_host.as_str(), *next_port))
                .await
                .map_err(|e| {
                    Malformed(format!(
                        "cannot bind a listener for broker {}:{}: {e}",
                        address.0, address.1
                    ))
                })?;
            let bound = listener.local_addr().map(|a| a.port()).unwrap_or(0);
            if *next_port != 0 {
                *next_port += 1;
            }
            let name = format!("broker-{}:{}", address.0, address.1);
            self.log(
                "info",
                format!(
                    "listener {}:{} now fronts broker {}:{}",
                    self.settings.listen_host, bound, address.0, address.1
                ),
            );
            let task = tokio::spawn(accept_loop(
                self.clone(),
                listener,
                vec![(address.0.clone(), port)],
                name,
            ));
            self.listener_tasks.lock().unwrap().push(task);
            self.mapping
                .lock()
                .unwrap()
                .insert(address, (self.settings.advertised_host.clone(), i32::from(bound)));
        }
        Ok(())
    }

    fn mapped(&self, host: &str, port: i32) -> Option<(String, i32)> {
        self.mapping.lock().unwrap().get(&(host.to_string(), port)).cloned()
    }

    fn over_connection_limit(&self, ip: &str) -> Option<&'static str> {
        let s = &self.settings;
        if self.open_total.load(Ordering::SeqCst) >= s.max_connections {
            return Some("max_connections");
        }
        if s.max_connections_per_ip > 0
            && self.open_per_ip.lock().unwrap().get(ip).copied().unwrap_or(0) >= s.max_connections_per_ip
        {
            return Some("max_connections_per_ip");
        }
        None
    }
}

/// Boxed (a named type): broker listeners are bound from inside connections this loop spawns.
pub fn accept_loop(
    shared: Arc<Shared>,
    listener: TcpListener,
    upstreams: Vec<(String, u16)>,
    name: String,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
    Box::pin(accept_connections(shared, listener, upstreams, name))
}

async fn accept_connections(shared: Arc<Shared>, listener: TcpListener, upstreams: Vec<(String, u16)>, name: String) {
    loop {
        let Ok((socket, peer)) = listener.accept().await else {
            continue;
        };
        let ip = peer.ip().to_string();
        if let Some(reason) = shared.over_connection_limit(&ip) {
            drop(socket); // a flood costs a socket for an instant, never a task or an upstream connection
            let _ = Python::attach(|py| {
                shared
                    .bridge
                    .call_method1(py, "over_limit", (ip.as_str(), name.as_str(), reason))
            });
            continue;
        }
        *shared.open_per_ip.lock().unwrap().entry(ip.clone()).or_insert(0) += 1;
        shared.open_total.fetch_add(1, Ordering::SeqCst);
        shared.connections.fetch_add(1, Ordering::SeqCst);
        let (shared2, upstreams2, name2) = (shared.clone(), upstreams.clone(), name.clone());
        tokio::spawn(async move {
            serve_client(shared2.clone(), socket, ip.clone(), peer.port(), upstreams2, name2).await;
            shared2.open_total.fetch_sub(1, Ordering::SeqCst);
            {
                let mut per_ip = shared2.open_per_ip.lock().unwrap();
                if let Some(n) = per_ip.get_mut(&ip) {
                    *n -= 1;
                    if *n == 0 {
                        per_ip.remove(&ip);
                    }
                }
            }
            if shared2.connections.fetch_sub(1, Ordering::SeqCst) == 1 {
                shared2.all_closed.notify_waiters();
            }
        });
    }
}

async fn serve_client(
    shared: Arc<Shared>,
    client: TcpStream,
    ip: String,
    port: u16,
    upstreams: Vec<(String, u16)>,
    listener: String,
) {
    if shared.quota_active.load(Ordering::Relaxed) {
        // fails closed: a connection the control plane could not judge is refused
        let (accept, delay_ms) = Python::attach(|py| {
            shared
                .bridge
                .call_method1(py, "connection_attempt", (ip.as_str(),))
                .and_then(|v| v.extract::<(bool, i64)>(py))
                .unwrap_or_else(|e| {
                    quota::bridge_error(py, &shared.bridge, "connection_attempt", &e);
                    (false, 0)
                })
        });
        shared.quotas.usage.record_connection(&ip, accept, delay_ms);
        if delay_ms > 0 {
            tokio::time::sleep(Duration::from_millis(delay_ms as u64)).await;
        }
        if !accept {
            // KIP-612: the socket is held for the throttle time without reading, then closed
            shared.event("refused", &listener);
            return;
        }
    }
    // counted open from admission to close, whatever happens in between (as the asyncio path)
    shared.event("opened", &listener);
    serve_admitted(shared.clone(), client, ip.clone(), port, upstreams, listener.clone()).await;
    shared.event("closed", &listener);
    let _ = Python::attach(|py| shared.bridge.call_method1(py, "connection_closed", (ip.as_str(),)));
}

async fn serve_admitted(
    shared: Arc<Shared>,
    client: TcpStream,
    ip: String,
    port: u16,
    upstreams: Vec<(String, u16)>,
    listener: String,
) {
    let _ = client.set_nodelay(true);
    let (client_r, client_w, tls_principal): (ClientRead, ClientWrite, Option<String>) = match &shared.settings.tls {
        None => {
            let (r, w) = client.into_split();
            (ClientRead::Plain(r), ClientWrite::Plain(w), None)
        }
        Some(acceptor) => {
            match tokio::time::timeout(shared.settings.request_read_timeout, acceptor.accept(client)).await {
                Ok(Ok(stream)) => {
                    let principal = stream
                        .get_ref()
                        .1
                        .peer_certificates()
                        .and_then(|certs| certs.first())
                        .and_then(|cert| super::tls::subject_dn(cert));
                    let (r, w) = tokio::io::split(stream);
                    (ClientRead::Tls(r), ClientWrite::Tls(w), principal)
                }
                Ok(Err(e)) => {
                    shared.log("info", format!("TLS handshake with client {ip}:{port} failed: {e}"));
                    return;
                }
                Err(_) => {
                    shared.log("info", format!("TLS handshake with client {ip}:{port} timed out"));
                    return;
                }
            }
        }
    };
    // The first frame's length is checked before an upstream connection is opened: a flood of
    // hostile prefixes costs no upstream connections, and a client that never speaks none either.
    let mut client_r = LeanReader::new(client_r);
    let mut stop_rx = shared.stop_tx.subscribe();
    if *stop_rx.borrow_and_update() {
        return;
    }
    let first = tokio::select! {
        r = tokio::time::timeout(shared.settings.connections_max_idle, client_r.fill_buf()) => r,
        _ = stop_rx.changed() => return,
    };
    match first {
        Err(_) => {
            shared.log(
                "info",
                format!(
                    "closing client {ip}:{port} (listener {listener}): idle for connections_max_idle_ms={}",
                    shared.settings.connections_max_idle.as_millis()
                ),
            );
            return;
        }
        Ok(Err(_)) => return,
        Ok(Ok([])) => return,
        Ok(Ok(buf)) if buf.len() >= 4 => {
            let size = i32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
            let s = &shared.settings;
            let limit =
                if s.require_authentication && tls_principal.is_none() && i64::from(size) > s.max_preauth_frame_bytes {
                    s.max_preauth_frame_bytes
                } else {
                    s.max_frame_bytes
                };
            if let Err(bad) = wire::check_frame_size(size, wire::MIN_REQUEST_FRAME_BYTES, limit) {
                let principal = tls_principal.as_deref().unwrap_or(super::sasl::ANONYMOUS);
                shared.log(
                    "warning",
                    format!("closing client {ip}:{port} (listener {listener}, principal {principal}): bad frame from client: {bad}"),
                );
                shared.event("bad_frame", "client");
                return;
            }
        }
        Ok(Ok(_)) => {}
    }
    let mut upstream = None;
    for (host, uport) in &upstreams {
        match tokio::time::timeout(
            shared.settings.upstream_connect_timeout,
            TcpStream::connect((host.as_str(), *uport)),
        )
        .await
        {
            Ok(Ok(stream)) => {
                upstream = Some((stream, (host.clone(), *uport)));
                break;
            }
            Ok(Err(e)) => shared.log(
                "warning",
                format!("upstream {host}:{uport} unreachable for client {ip}:{port}: {e}"),
            ),
            Err(_) => shared.log(
                "warning",
                format!("upstream {host}:{uport} unreachable for client {ip}:{port}: timed out"),
            ),
        }
    }
    let Some((upstream, upstream_address)) = upstream else {
        return;
    };
    let _ = upstream.set_nodelay(true);
    let conn = Arc::new(Conn::new(
        shared.clone(),
        ip.clone(),
        port,
        listener.clone(),
        upstream_address,
        client_w,
    ));
    if let Some(principal) = tls_principal {
        let mut st = conn.state.lock().unwrap();
        st.sasl.principal = principal;
        st.sasl.authenticated = true;
        st.established = true;
    }
    let id = shared.next_conn_id.fetch_add(1, Ordering::Relaxed);
    shared.conns.lock().unwrap().insert(id, Arc::downgrade(&conn));
    conn.run(client_r, upstream).await;
    shared.conns.lock().unwrap().remove(&id);
}

struct Entry {
    api_key: i16,
    api_version: i16,
    correlation_id: i32,
    client_id: Option<String>,
    principal: String,
    sent: Instant,
    handling: Duration,
    produce_throttle_ms: i64,
    quota_bound: bool,
}

/// What a response needs from the request it answers.
struct Matched {
    api_key: i16,
    api_version: i16,
    client_id: Option<String>,
    principal: String,
    handling: Duration,
    produce_throttle_ms: i64,
    quota_bound: bool,
    /// the broker's share of the round trip (see `hop::broker_work`)
    service: Duration,
}

struct State {
    inflight: VecDeque<Entry>,
    sasl: SaslState,
    established: bool,
    muted_until: Instant,
    quota_bound: usize,
    seen_producer_ids: Vec<i64>,
    last_active: Instant,
    last_response: Instant,
    /// the wire's own round trip to the broker (see `hop::wire_round_trip`)
    wire_round_trip: Duration,
}

struct Conn {
    shared: Arc<Shared>,
    ip: String,
    port: u16,
    listener: String,
    upstream_address: (String, u16),
    state: Mutex<State>,
    /// an in-flight entry was popped or a quota-bound response handled
    changed: Notify,
    client_out: AsyncMutex<LeanWriter<ClientWrite>>,
    /// the quota resolutions this connection charged last
    memo: Memo,
}

fn now() -> Instant {
    Instant::now()
}

impl Conn {
    fn new(
        shared: Arc<Shared>,
        ip: String,
        port: u16,
        listener: String,
        upstream_address: (String, u16),
        client_w: ClientWrite,
    ) -> Conn {
        let t = now();
        Conn {
            shared,
            ip,
            port,
            listener,
            upstream_address,
            state: Mutex::new(State {
                inflight: VecDeque::new(),
                sasl: SaslState::default(),
                established: false,
                muted_until: t,
                quota_bound: 0,
                seen_producer_ids: Vec::new(),
                last_active: t,
                last_response: t,
                wire_round_trip: Duration::ZERO,
            }),
            changed: Notify::new(),
            client_out: AsyncMutex::new(LeanWriter::new(client_w)),
            memo: Memo::default(),
        }
    }

    fn principal(&self) -> String {
        self.state.lock().unwrap().sasl.principal.clone()
    }

    async fn run(self: &Arc<Self>, client_r: LeanReader<ClientRead>, upstream: TcpStream) {
        self.state.lock().unwrap().wire_round_trip = hop::wire_round_trip(&upstream);
        let (up_r, up_w) = upstream.into_split();
        let mut stop_rx = self.shared.stop_tx.subscribe();
        let requests = {
            let conn = self.clone();
            let stop_rx = stop_rx.clone();
            tokio::spawn(async move { conn.client_to_upstream(client_r, LeanWriter::new(up_w), stop_rx).await })
        };
        let responses = {
            let conn = self.clone();
            tokio::spawn(async move { conn.upstream_to_client(LeanReader::new(up_r)).await })
        };
        let mut requests = requests;
        let mut responses = responses;
        tokio::select! {
            r = &mut requests => {
                self.report(r.unwrap_or(Err(Close::Quiet("request task ended".into()))));
                if *stop_rx.borrow_and_update() {
                    // draining: the responses still in flight must reach the client
                    let r = responses.await;
                    self.report(r.unwrap_or(Err(Close::Quiet("response task ended".into()))));
                } else {
                    responses.abort();
                }
            }
            r = &mut responses => {
                self.report(r.unwrap_or(Err(Close::Quiet("response task ended".into()))));
                requests.abort();
            }
        }
        let mut out = self.client_out.lock().await;
        let _ = out.shutdown().await;
    }

    fn report(&self, result: Result<(), Close>) {
        match result {
            Ok(()) => {}
            Err(Close::Bad(msg, side)) => {
                let principal = self.principal();
                self.shared.log(
                    "warning",
                    format!(
                        "closing client {}:{} (listener {}, principal {}): bad frame from {}: {}",
                        self.ip, self.port, self.listener, principal, side, msg
                    ),
                );
                self.shared.event("bad_frame", side);
            }
            Err(Close::Quiet(msg)) => self.shared.log(
                "debug",
                format!("client {}:{} connection ended: {}", self.ip, self.port, msg),
            ),
        }
    }

    fn mute(&self, throttle_ms: i64) {
        if throttle_ms > 0 {
            let until = now() + Duration::from_millis(throttle_ms as u64);
            let mut st = self.state.lock().unwrap();
            if until > st.muted_until {
                st.muted_until = until;
            }
            drop(st);
            self.shared.throttled(&self.listener);
        }
    }

    /// Wait until `ready(state)` holds, re-checking whenever `changed` fires.
    async fn wait_until(&self, ready: impl Fn(&State) -> bool) {
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if ready(&self.state.lock().unwrap()) {
                return;
            }
            notified.await;
        }
    }

    fn request_limit(&self, size: i32) -> i64 {
        let s = &self.shared.settings;
        let st = self.state.lock().unwrap();
        if st.established || i64::from(size) <= s.max_preauth_frame_bytes {
            return s.max_frame_bytes;
        }
        if s.require_authentication || st.sasl.mechanism.is_some() {
            return s.max_preauth_frame_bytes;
        }
        // No SASL in progress on an unauthenticated listener: an ordinary ANONYMOUS request.
        s.max_frame_bytes
    }

    async fn client_to_upstream(
        self: Arc<Self>,
        mut client: LeanReader<ClientRead>,
        mut up: LeanWriter<OwnedWriteHalf>,
        mut stop_rx: watch::Receiver<bool>,
    ) -> Result<(), Close> {
        let s = self.shared.settings.clone();
        let mut pipe: Option<Pipe> = None;
        loop {
            if self.state.lock().unwrap().inflight.len() >= s.max_inflight {
                up.flush().await?;
                let max = s.max_inflight;
                self.wait_until(|st| st.inflight.len() < max).await;
            }
            // the next request: wait for its first byte (idle rule, SIGTERM)
            if client.buffer().is_empty() {
                up.flush().await?;
                loop {
                    let idle_left = {
                        let st = self.state.lock().unwrap();
                        (st.last_active + s.connections_max_idle).saturating_duration_since(now())
                    };
                    if idle_left.is_zero() {
                        self.shared.log(
                            "info",
                            format!(
                                "closing client {}:{} (listener {}): idle for connections_max_idle_ms={}",
                                self.ip,
                                self.port,
                                self.listener,
                                s.connections_max_idle.as_millis()
                            ),
                        );
                        return Ok(());
                    }
                    if *stop_rx.borrow() {
                        return Ok(());
                    }
                    tokio::select! {
                        r = tokio::time::timeout(idle_left, client.fill_buf()) => match r {
                            Ok(Ok([])) => return Ok(()),
                            Ok(Ok(_)) => break,
                            Ok(Err(e)) => return Err(e.into()),
                            Err(_) => continue,
                        },
                        _ = stop_rx.changed() => return Ok(()),
                    }
                }
            }
            let deadline = tokio::time::Instant::now() + s.request_read_timeout;
            let mut size_bytes = [0u8; 4];
            let slow = || {
                Close::Bad(
                    format!(
                        "request not complete within request_read_timeout_ms={}",
                        s.request_read_timeout.as_millis()
                    ),
                    "client",
                )
            };
            match tokio::time::timeout_at(deadline, client.read_exact(&mut size_bytes)).await {
                Err(_) => return Err(slow()),
                Ok(Err(e)) => return Err(Close::Bad(format!("connection ended inside a frame: {e}"), "client")),
                Ok(Ok(_)) => {}
            }
            let size = i32::from_be_bytes(size_bytes);
            wire::check_frame_size(size, wire::MIN_REQUEST_FRAME_BYTES, self.request_limit(size))?;
            let whole = 4 + size as usize;
            // a large Produce is read only as far as its acks; the rest is forwarded unread
            let streamable = whole >= stream::STREAM_MIN_BYTES + 4 && self.splices(&client);
            let head = if streamable {
                4 + stream::REQUEST_HEAD_BYTES
            } else {
                whole
            };
            let mut frame = vec![0u8; head];
            frame[..4].copy_from_slice(&size_bytes);
            let incomplete = |e: Option<std::io::Error>| match e {
                None => Close::Bad(
                    format!(
                        "request of {size} bytes not complete within request_read_timeout_ms={}",
                        s.request_read_timeout.as_millis()
                    ),
                    "client",
                ),
                Some(e) => Close::Bad(format!("connection ended inside a frame: {e}"), "client"),
            };
            match tokio::time::timeout_at(deadline, client.read_exact(&mut frame[4..])).await {
                Err(_) => return Err(incomplete(None)),
                Ok(Err(e)) => return Err(incomplete(Some(e))),
                Ok(Ok(_)) => {}
            }
            let mut rest = whole - frame.len();
            if rest > 0 && !self.streams_produce(&frame[4..]) {
                frame.resize(whole, 0);
                match tokio::time::timeout_at(deadline, client.read_exact(&mut frame[head..])).await {
                    Err(_) => return Err(incomplete(None)),
                    Ok(Err(e)) => return Err(incomplete(Some(e))),
                    Ok(Ok(_)) => {}
                }
                rest = 0;
            }
            self.state.lock().unwrap().last_active = now();
            // a broker reads one request per connection at a time: one whose response may
            // throttle is answered before the next is read; and a muted connection is held
            if self.state.lock().unwrap().quota_bound > 0 {
                up.flush().await?;
                self.wait_until(|st| st.quota_bound == 0).await;
            }
            loop {
                let until = self.state.lock().unwrap().muted_until;
                if until <= now() {
                    break;
                }
                up.flush().await?;
                tokio::time::sleep_until(until.into()).await;
            }
            self.handle_request(frame, rest == 0, &mut up).await?;
            if rest > 0 {
                // the in-flight entry is pushed and the head is on its way: now the records
                let deadline = tokio::time::Instant::now() + s.request_read_timeout;
                let mut forward = Forward::new(&mut client, &mut up, &mut pipe, rest);
                match tokio::time::timeout_at(deadline, forward.pass(rest)).await {
                    Err(_) => return Err(incomplete(None)),
                    Ok(result) => result.map_err(|f| fault(f, "client"))?,
                }
                self.shared.count_streamed(PRODUCE, forward.spliced);
            }
        }
    }

    /// Whether large frames from this reader can be spliced (a plain socket, on Linux).
    fn splices<R>(&self, reader: &LeanReader<R>) -> bool
    where
        R: tokio::io::AsyncRead + Unpin + PlainSocket,
    {
        stream::splice_available() && reader.get_ref().plain_socket().is_some()
    }

    /// Whether a large request whose start is `head` (header + body) may be forwarded as it
    /// arrives: a Produce whose acks are in `head` and whose producer ids need not be read.
    fn streams_produce(&self, head: &[u8]) -> bool {
        let Ok(prefix) = wire::parse_request_prefix(head) else {
            return false;
        };
        if prefix.api_key != PRODUCE || wire::produce_acks(head, &prefix).is_err() {
            return false;
        }
        !(self.shared.quota_active.load(Ordering::Relaxed)
            && self.shared.wants_producer_ids(&self.memo, &self.principal()))
    }

    /// One request: `frame` is the whole of it, or (not `whole`) the head of a Produce whose
    /// rest the caller forwards next.
    async fn handle_request(
        self: &Arc<Self>,
        mut frame: Vec<u8>,
        whole: bool,
        up: &mut LeanWriter<OwnedWriteHalf>,
    ) -> Result<(), Close> {
        let started = now();
        let body = &frame[4..];
        let prefix = wire::parse_request_prefix(body)?;
        let key = prefix.api_key;
        if key != API_VERSIONS {
            if let Some(ceiling) = self.shared.ceiling(key) {
                if prefix.api_version > ceiling {
                    return Err(Close::Bad(
                        format!(
                            "api key {key} v{} is above the gateway's maximum v{ceiling}",
                            prefix.api_version
                        ),
                        "client",
                    ));
                }
            }
        }
        if !EXEMPT_APIS.contains(&key) {
            let mut st = self.state.lock().unwrap();
            if !st.established {
                if self.shared.settings.require_authentication && !st.sasl.authenticated {
                    return Err(Close::Bad(
                        format!("api key {key} before authentication on a listener that requires it"),
                        "client",
                    ));
                }
                st.established = true;
            }
        }
        if let Some(local) = self.answer_locally(&prefix, body, up).await? {
            up.flush().await?;
            self.wait_until(|st| st.inflight.is_empty()).await;
            let mut out = self.client_out.lock().await;
            out.write_all(&(local.len() as i32).to_be_bytes()).await?;
            out.write_all(&local).await?;
            out.flush().await?;
            return Ok(());
        }
        let principal = self.principal();
        let mut entry = Entry {
            api_key: key,
            api_version: prefix.api_version,
            correlation_id: prefix.correlation_id,
            client_id: prefix.client_id.clone(),
            principal: principal.clone(),
            sent: started,
            handling: Duration::ZERO,
            produce_throttle_ms: 0,
            quota_bound: false,
        };
        let expects_response = match key {
            SASL_HANDSHAKE | SASL_AUTHENTICATE => {
                self.state
                    .lock()
                    .unwrap()
                    .sasl
                    .on_request(key, prefix.api_version, body)?;
                true
            }
            PRODUCE => self.observe_produce(&prefix, body, whole, size_of(&frame), &mut entry)?,
            _ => true,
        };
        entry.handling = started.elapsed();
        if expects_response {
            if self.shared.quota_active.load(Ordering::Relaxed) {
                let kinds: Vec<Kind> = if FETCHES.contains(&key) {
                    vec![Kind::Fetch]
                } else {
                    vec![]
                }
                .into_iter()
                .chain((!EXEMPT_APIS.contains(&key)).then_some(Kind::Request))
                .collect();
                if !kinds.is_empty()
                    && self
                        .shared
                        .may_throttle(&self.memo, &principal, &prefix.client_id, &kinds)
                {
                    entry.quota_bound = true;
                }
            }
            entry.sent = now();
            let mut st = self.state.lock().unwrap();
            if entry.quota_bound {
                st.quota_bound += 1;
            }
            st.inflight.push_back(entry);
        }
        if FETCHES.contains(&key) && self.shared.quota_active.load(Ordering::Relaxed) {
            if let Some(cap) = self.shared.max_fetch_bytes(&self.memo, &principal, &prefix.client_id) {
                if key == FETCH {
                    wire::cap_fetch_bytes(&mut frame[4..], &prefix, cap)?;
                } else {
                    wire::cap_share_fetch_bytes(&mut frame[4..], &prefix, cap)?;
                }
            }
        }
        up.write_all(&frame).await?;
        Ok(())
    }

    /// ApiVersions above our maximum, and the quota admin APIs the gateway owns.
    async fn answer_locally(
        &self,
        prefix: &RequestPrefix,
        body: &[u8],
        up: &mut LeanWriter<OwnedWriteHalf>,
    ) -> Result<Option<Vec<u8>>, Close> {
        let key = prefix.api_key;
        if key == API_VERSIONS {
            let max = self.shared.ceiling(API_VERSIONS).unwrap_or(4);
            if prefix.api_version > max {
                return Ok(Some(rewrite::unsupported_api_versions(prefix.correlation_id, max)));
            }
            return Ok(None);
        }
        if !self.shared.admin_owned.lock().unwrap().contains(&key) {
            return Ok(None);
        }
        up.flush().await?;
        let (principal, authenticated) = {
            let st = self.state.lock().unwrap();
            (st.sasl.principal.clone(), st.sasl.authenticated)
        };
        let shared = self.shared.clone();
        let (version, corr, frame) = (prefix.api_version, prefix.correlation_id, body.to_vec());
        let upstream = self.upstream_address.clone();
        let answer = tokio::task::spawn_blocking(move || {
            Python::attach(|py| -> PyResult<Option<Vec<u8>>> {
                let result = shared.bridge.call_method1(
                    py,
                    "admin_answer",
                    (
                        key,
                        version,
                        corr,
                        PyBytes::new(py, &frame),
                        principal,
                        authenticated,
                        upstream,
                    ),
                )?;
                if result.is_none(py) {
                    return Ok(None);
                }
                Ok(Some(result.extract::<Vec<u8>>(py)?))
            })
        })
        .await
        .map_err(|e| Close::Quiet(e.to_string()))?;
        match answer {
            Ok(Some(bytes)) => Ok(Some(bytes)),
            Ok(None) => Err(Close::Bad(
                format!(
                    "api key {key} before authentication, and upstream {}:{} requires it",
                    self.upstream_address.0, self.upstream_address.1
                ),
                "client",
            )),
            Err(e) => {
                Python::attach(|py| quota::bridge_error(py, &self.shared.bridge, "admin_answer", &e));
                Err(Close::Bad(format!("cannot answer api key {key}: {e}"), "client"))
            }
        }
    }

    /// Producer ids and Produce bytes are charged as the request is forwarded, and a mute starts
    /// now: the next request is held without waiting for this response, so produce stays
    /// pipelined and a pipelining client still cannot get a request past a throttle. The mute
    /// starts again from the response (upstream_to_client), as the broker's does.
    fn observe_produce(
        &self,
        prefix: &RequestPrefix,
        body: &[u8],
        whole: bool,
        request_bytes: i64,
        entry: &mut Entry,
    ) -> Result<bool, Close> {
        let acks = wire::produce_acks(body, prefix)?;
        let mut throttle_ms = 0;
        if self.shared.quota_active.load(Ordering::Relaxed) {
            let principal = entry.principal.as_str();
            let mut pid_throttle = 0;
            // a streamed request was judged not to need its producer ids when its head was read;
            // only a quota reload in between could change that, and the next one is judged anew
            if whole && self.shared.wants_producer_ids(&self.memo, principal) {
                let ids = produce_request_producer_ids(prefix.api_version, body)?;
                let new: Vec<i64> = {
                    let mut st = self.state.lock().unwrap();
                    let new: Vec<i64> = ids.into_iter().filter(|i| !st.seen_producer_ids.contains(i)).collect();
                    if st.seen_producer_ids.len() + new.len() > MAX_REMEMBERED_PRODUCER_IDS {
                        st.seen_producer_ids.clear();
                    }
                    st.seen_producer_ids.extend(&new);
                    new
                };
                if !new.is_empty() {
                    pid_throttle = self
                        .shared
                        .charge_producer_ids(principal, &prefix.client_id, self.ip.as_str(), new);
                }
            }
            throttle_ms = self
                .shared
                .charge_produce(&self.memo, principal, &prefix.client_id, &self.ip, request_bytes);
            throttle_ms = throttle_ms.max(pid_throttle);
            self.mute(throttle_ms);
            if acks == 0 {
                // no response: the request quota does not apply (Kafka records it as exempt)
                self.shared
                    .record_throttle("Produce", principal, &prefix.client_id, throttle_ms);
            }
        }
        entry.produce_throttle_ms = throttle_ms;
        Ok(acks != 0)
    }

    async fn upstream_to_client(self: Arc<Self>, mut up: LeanReader<OwnedReadHalf>) -> Result<(), Close> {
        let max_frame = self.shared.settings.max_frame_bytes;
        let upstream_bad = |m: Malformed| Close::Bad(m.0, "upstream");
        let mut pipe: Option<Pipe> = None;
        loop {
            if up.buffer().is_empty() {
                self.client_out.lock().await.flush().await?;
                let mut stop_rx = self.shared.stop_tx.subscribe();
                loop {
                    if *stop_rx.borrow_and_update() && self.state.lock().unwrap().inflight.is_empty() {
                        return Ok(()); // drained
                    }
                    tokio::select! {
                        r = up.fill_buf() => {
                            if r?.is_empty() {
                                self.shared.log(
                                    "info",
                                    format!(
                                        "upstream {}:{} closed the connection of client {}:{}",
                                        self.upstream_address.0, self.upstream_address.1, self.ip, self.port
                                    ),
                                );
                                return Ok(());
                            }
                            break;
                        }
                        _ = stop_rx.changed() => continue,
                    }
                }
            }
            let mut size_bytes = [0u8; 4];
            up.read_exact(&mut size_bytes)
                .await
                .map_err(|e| Close::Bad(format!("response truncated: {e}"), "upstream"))?;
            let size = i32::from_be_bytes(size_bytes);
            wire::check_frame_size(size, wire::MIN_RESPONSE_FRAME_BYTES, max_frame).map_err(upstream_bad)?;
            // only a large response may stream: small ones (nearly all) skip the look at the queue
            let next = if size as usize >= stream::STREAM_MIN_BYTES {
                self.state
                    .lock()
                    .unwrap()
                    .inflight
                    .front()
                    .map(|e| (e.api_key, e.api_version))
            } else {
                None
            };
            if let Some((key @ (FETCH | SHARE_FETCH), version)) = next {
                if self.splices_to_client().await {
                    let quota_bound = self
                        .relay_streamed_fetch(&mut up, size, key, version, &mut pipe)
                        .await?;
                    self.response_sent(quota_bound);
                    continue;
                }
            }
            let mut frame = vec![0u8; 4 + size as usize];
            frame[..4].copy_from_slice(&size_bytes);
            up.read_exact(&mut frame[4..])
                .await
                .map_err(|e| Close::Bad(format!("response truncated: {e}"), "upstream"))?;
            let received = now();
            let corr = wire::i32_at(&frame, 4).map_err(upstream_bad)?;
            let m = self.match_response(corr, received)?;
            let (key, version) = (m.api_key, m.api_version);
            let started = now();
            let mut frame = self.rewrite_response(key, version, frame).await.map_err(upstream_bad)?;
            let throttle_ms = self.account(
                key,
                &m.principal,
                &m.client_id,
                size,
                m.produce_throttle_ms,
                m.service,
                m.handling + started.elapsed(),
            );
            // As the broker does (KIP-219), the throttle runs from the response: the client waits
            // the full throttle from when it reads it, and the connection stays muted as long. A
            // Produce was muted from its forwarding already (so a pipelined request could not pass
            // the throttle); counting only what remained of that made the client resume early,
            // and the rate it reached swung around the quota by half of it, second to second.
            self.mute(throttle_ms);
            if throttle_ms > 0 && FETCHES.contains(&key) {
                let empty = rewrite::throttled_fetches_response(key, version, &frame[4..], throttle_ms);
                if let Some(empty) = empty.map_err(upstream_bad)? {
                    frame = with_prefix(empty);
                }
            } else if throttle_ms > 0 {
                self.patch_throttle(key, version, &mut frame, throttle_ms);
            }
            {
                let mut out = self.client_out.lock().await;
                out.write_all(&frame).await?;
                if up.buffer().is_empty() {
                    out.flush().await?;
                }
            }
            self.response_sent(m.quota_bound);
        }
    }

    /// Whether a large response can be spliced to this client (a plain socket, on Linux).
    async fn splices_to_client(&self) -> bool {
        stream::splice_available() && self.client_out.lock().await.get_ref().plain_socket().is_some()
    }

    /// The in-flight request `corr` answers: it must be the oldest (Kafka answers in order).
    fn match_response(&self, corr: i32, received: Instant) -> Result<Matched, Close> {
        let mut guard = self.state.lock().unwrap();
        let st = &mut *guard;
        let Some(e) = st.inflight.front() else {
            return Err(Close::Bad(
                format!("unsolicited response with correlation id {corr}"),
                "upstream",
            ));
        };
        if e.correlation_id != corr {
            return Err(Close::Bad(
                format!(
                    "response correlation id {corr} does not match the oldest request's {}",
                    e.correlation_id
                ),
                "upstream",
            ));
        }
        let mut service = received.saturating_duration_since(e.sent.max(st.last_response));
        if !PARKING_APIS.contains(&e.api_key) {
            service = hop::broker_work(service, &mut st.wire_round_trip);
        }
        let matched = Matched {
            api_key: e.api_key,
            api_version: e.api_version,
            client_id: e.client_id.clone(),
            principal: e.principal.clone(),
            handling: e.handling,
            produce_throttle_ms: e.produce_throttle_ms,
            quota_bound: e.quota_bound,
            service,
        };
        st.last_response = received;
        Ok(matched)
    }

    /// The oldest in-flight request is answered: a local answer or a drain may follow it now.
    fn response_sent(&self, quota_bound: bool) {
        {
            let mut st = self.state.lock().unwrap();
            st.inflight.pop_front();
            if quota_bound {
                st.quota_bound -= 1;
            }
            st.last_active = now();
        }
        self.changed.notify_waiters();
    }

    /// A large Fetch or ShareFetch response, forwarded as it arrives (stream.rs): its head is read
    /// and charged, throttle_time_ms patched in place; over quota it is replaced by the broker's
    /// empty throttled response and its records are read and dropped; otherwise its records are
    /// spliced to the client and its NodeEndpoints (Fetch v16+, every ShareFetch) rewritten at the
    /// same length (tail.rs). Returns whether the request was quota-bound.
    async fn relay_streamed_fetch(
        &self,
        up: &mut LeanReader<OwnedReadHalf>,
        size: i32,
        key: i16,
        version: i16,
        pipe: &mut Option<Pipe>,
    ) -> Result<bool, Close> {
        let upstream_bad = |m: Malformed| Close::Bad(m.0, "upstream");
        let mut out = self.client_out.lock().await;
        let mut forward = Forward::new(up, &mut out, pipe, size as usize);
        let mut head = stream::read_head(&mut forward, key, version)
            .await
            .map_err(|f| fault(f, "upstream"))?;
        let received = now();
        let corr = wire::i32_at(&head, 0).map_err(upstream_bad)?;
        let m = self.match_response(corr, received)?;
        let started = now();
        if wire::has_node_endpoints(key, version) {
            self.shared.count_node_endpoint_check(key, version);
        }
        let throttle_ms = self.account(
            key,
            &m.principal,
            &m.client_id,
            size,
            0,
            m.service,
            m.handling + started.elapsed(),
        );
        self.mute(throttle_ms);
        if throttle_ms > 0 {
            let empty = rewrite::throttled_fetches_response(key, version, &head, throttle_ms);
            if let Some(empty) = empty.map_err(upstream_bad)? {
                // as a broker: nothing is delivered, and the consumer fetches the same offsets again
                forward.discard_rest().await.map_err(|f| fault(f, "upstream"))?;
                forward
                    .write(&with_prefix(empty))
                    .await
                    .map_err(|f| fault(f, "upstream"))?;
                drop(forward);
                out.flush().await?;
                return Ok(m.quota_bound);
            }
            rewrite::patch_throttle(
                key,
                version,
                &mut head,
                throttle_ms,
                &self.shared.settings.throttle_first,
            );
        }
        forward
            .write(&size.to_be_bytes())
            .await
            .map_err(|f| fault(f, "upstream"))?;
        forward.write(&head).await.map_err(|f| fault(f, "upstream"))?;
        let tail = stream::relay_records(&mut forward, key, version)
            .await
            .map_err(|f| fault(f, "upstream"))?;
        if let Some(tail) = tail {
            let rewritten = if key == FETCH {
                self.rewrite_tail(FetchTailRewrite::decode(version, &tail), key, version)
                    .await
            } else {
                self.rewrite_tail(ShareFetchTailRewrite::decode(version, &tail), key, version)
                    .await
            };
            let rewritten = rewritten.map_err(upstream_bad)?.unwrap_or(tail);
            forward.write(&rewritten).await.map_err(|f| fault(f, "upstream"))?;
        }
        let spliced = forward.spliced;
        drop(forward);
        self.shared.count_streamed(key, spliced);
        if up.buffer().is_empty() {
            out.flush().await?;
        }
        Ok(m.quota_bound)
    }

    /// A streamed response's tail with the gateway's addresses (None: it holds none).
    async fn rewrite_tail<M: EndpointTail>(
        &self,
        decoded: Result<Option<TailRewrite<M>>, Malformed>,
        key: i16,
        version: i16,
    ) -> Result<Option<Vec<u8>>, Malformed> {
        let Some(rewrite) = decoded? else {
            return Ok(None);
        };
        self.shared.advertise(key, version, &rewrite.addresses).await?;
        let shared = self.shared.clone();
        rewrite.apply(&|h, p| shared.mapped(h, p)).map(Some)
    }

    async fn rewrite_response(&self, key: i16, version: i16, frame: Vec<u8>) -> Result<Vec<u8>, Malformed> {
        let body = &frame[4..];
        if wire::has_node_endpoints(key, version) {
            self.shared.count_node_endpoint_check(key, version);
            if !wire::node_endpoints_present(key, version, body)? {
                return Ok(frame); // the usual case: NodeEndpoints come only with NOT_LEADER_OR_FOLLOWER
            }
        } else if !(AddressRewrite::applies(key, version)
            || matches!(key, API_VERSIONS | SASL_HANDSHAKE | SASL_AUTHENTICATE))
        {
            return Ok(frame);
        }
        match key {
            API_VERSIONS => {
                let (header, message, used) = rewrite::decode_api_versions(body, version)?;
                let broker: rewrite::Ranges = message
                    .api_keys
                    .iter()
                    .map(|k| (k.api_key, k.min_version, k.max_version))
                    .collect();
                let owned: rewrite::Ranges = if message.error_code == 0 {
                    self.owned_ranges(&broker)
                } else {
                    Vec::new()
                };
                let capped = rewrite::cap_ranges(&broker, &|k| self.shared.ceiling(k), &owned);
                Ok(with_prefix(rewrite::encode_api_versions(
                    &header, message, used, &capped,
                )?))
            }
            SASL_HANDSHAKE => {
                let error = rewrite::sasl_response_error(key, version, body)?;
                self.state.lock().unwrap().sasl.on_handshake_response(error);
                Ok(frame)
            }
            SASL_AUTHENTICATE => {
                let error = rewrite::sasl_response_error(key, version, body)?;
                let done = {
                    let mut st = self.state.lock().unwrap();
                    let done = st.sasl.on_authenticate_response(error);
                    if done {
                        st.established = true;
                    }
                    done.then(|| (st.sasl.principal.clone(), st.sasl.mechanism.clone().unwrap_or_default()))
                };
                if let Some((principal, mechanism)) = done {
                    self.shared.log(
                        "info",
                        format!(
                            "client {}:{} authenticated as {} ({})",
                            self.ip, self.port, principal, mechanism
                        ),
                    );
                }
                Ok(frame)
            }
            _ => {
                let Some(rewrite) = AddressRewrite::decode(key, version, body)? else {
                    return Ok(frame);
                };
                if rewrite.addresses.is_empty() && matches!(key, SHARE_FETCH | SHARE_ACKNOWLEDGE) {
                    return Ok(frame); // the usual case: no leader moved, nothing to re-encode
                }
                self.client_out
                    .lock()
                    .await
                    .flush()
                    .await
                    .map_err(|e| Malformed(e.to_string()))?;
                self.shared.advertise(key, version, &rewrite.addresses).await?;
                let shared = self.shared.clone();
                Ok(with_prefix(rewrite.apply(&|h, p| shared.mapped(h, p))?))
            }
        }
    }

    fn owned_ranges(&self, broker: &rewrite::Ranges) -> rewrite::Ranges {
        let keys: Vec<i16> = broker.iter().map(|r| r.0).collect();
        let (owned, ranges) = Python::attach(|py| {
            self.shared
                .bridge
                .call_method1(py, "owned_ranges", (keys,))
                .and_then(|v| v.extract::<(Vec<i16>, Vec<(i16, i16, i16)>)>(py))
                // no gateway-owned APIs: the broker's own quota admin answers (its ranges pass)
                .unwrap_or_else(|e| {
                    quota::bridge_error(py, &self.shared.bridge, "owned_ranges", &e);
                    Default::default()
                })
        });
        *self.shared.admin_owned.lock().unwrap() = owned;
        ranges
    }

    /// Charge the entity; the throttle to apply: max(bandwidth, request), KIP-219.
    #[allow(clippy::too_many_arguments)]
    fn account(
        &self,
        key: i16,
        principal: &str,
        client_id: &Option<String>,
        response_bytes: i32,
        produce_throttle: i64,
        service: Duration,
        handling: Duration,
    ) -> i64 {
        if !self.shared.quota_active.load(Ordering::Relaxed) {
            return 0;
        }
        let ip = self.ip.as_str();
        let mut request_ms = 0;
        if !EXEMPT_APIS.contains(&key) {
            let upstream = if PARKING_APIS.contains(&key) {
                Duration::ZERO
            } else {
                service
            };
            let request_ns = (handling + upstream).as_nanos() as i64;
            request_ms = self
                .shared
                .charge_request_time(&self.memo, principal, client_id, ip, request_ns);
        }
        let (bandwidth_ms, bandwidth_type) = match key {
            PRODUCE => (produce_throttle, "Produce"),
            // as a broker: a throttled Fetch or ShareFetch is answered empty, so its bytes are unrecorded
            FETCH | SHARE_FETCH => (
                self.shared.charge_fetch_replaced(
                    &self.memo,
                    principal,
                    client_id,
                    ip,
                    i64::from(response_bytes),
                    request_ms,
                ),
                "Fetch",
            ),
            _ => (0, ""),
        };
        let (throttle_ms, recorded_by) = quota::combined_throttle(bandwidth_ms, request_ms);
        let quota_type = match recorded_by {
            None => return 0,
            Some(quota::RecordedBy::Request) => "Request",
            Some(quota::RecordedBy::Bandwidth) => bandwidth_type,
        };
        self.shared
            .record_throttle(quota_type, principal, client_id, throttle_ms);
        throttle_ms
    }

    fn patch_throttle(&self, key: i16, version: i16, frame: &mut [u8], throttle_ms: i64) {
        rewrite::patch_throttle(
            key,
            version,
            &mut frame[4..],
            throttle_ms,
            &self.shared.settings.throttle_first,
        );
    }
}

/// The size a frame's length prefix announces (its head alone may be in `frame`).
fn size_of(frame: &[u8]) -> i64 {
    wire::i32_at(frame, 0).map_or(0, i64::from)
}

/// A streamed frame's fault as a reason to close: the sender's protocol error, or a closed peer.
fn fault(f: Fault, side: &'static str) -> Close {
    match f {
        Fault::Source(msg) => Close::Bad(msg, side),
        Fault::Sink(e) => Close::Quiet(e.to_string()),
    }
}

fn with_prefix(body: Vec<u8>) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + 4);
    out.extend((body.len() as i32).to_be_bytes());
    out.extend(body);
    out
}

/// Producer ids in every partition of a Produce request (header + body), via `kafka-protocol`.
pub fn produce_request_producer_ids(version: i16, body: &[u8]) -> Result<Vec<i64>, Malformed> {
    use kafka_protocol::messages::{ApiKey, ProduceRequest, RequestHeader};
    use kafka_protocol::protocol::Decodable;
    let mut buf = bytes::Bytes::copy_from_slice(body);
    let err = |e: String| Malformed(format!("produce request v{version} cannot be decoded: {e}"));
    RequestHeader::decode(&mut buf, ApiKey::Produce.request_header_version(version)).map_err(|e| err(e.to_string()))?;
    let request = ProduceRequest::decode(&mut buf, version).map_err(|e| err(e.to_string()))?;
    let mut ids = Vec::new();
    for topic in &request.topic_data {
        for partition in &topic.partition_data {
            if let Some(records) = &partition.records {
                wire::batch_producer_ids(records, &mut ids);
            }
        }
    }
    Ok(ids)
}
