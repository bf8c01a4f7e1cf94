//! The responses the gateway changes, decoded and re-encoded with the `kafka-protocol` crate:
//! broker addresses (Metadata, FindCoordinator, DescribeCluster, and the KIP-951 NodeEndpoints of
//! Produce v10+ / Fetch v16+ and of every ShareFetch / ShareAcknowledge), the controllers'
//! listeners of DescribeQuorum v2+ (removed: no gateway listener leads to a controller) and the
//! version ranges of ApiVersions.
//!
//! Two phases, so the listener registry can bind ports in between: `AddressRewrite::decode` lists
//! the upstream addresses, `apply` re-encodes with the gateway's. An unmapped address fails closed
//! (an error, never the original address). The crate keeps unknown tagged fields on re-encode.

use std::collections::HashSet;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::{
    ApiKey, ApiVersionsResponse, DescribeClusterResponse, DescribeQuorumResponse, FetchResponse,
    FindCoordinatorResponse, MetadataResponse, ProduceResponse, ResponseHeader, ShareAcknowledgeResponse,
    ShareFetchResponse,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

use super::wire::{
    self, Malformed, API_VERSIONS, DESCRIBE_CLUSTER, DESCRIBE_QUORUM, FETCH, FIND_COORDINATOR, METADATA, PRODUCE,
    SHARE_ACKNOWLEDGE, SHARE_FETCH,
};

pub type Address = (String, i32);

fn malformed(api_key: i16, version: i16, err: impl std::fmt::Display) -> Malformed {
    Malformed(format!("cannot decode api {api_key} v{version} response: {err}"))
}

pub fn response_header_version(api_key: i16, version: i16) -> Option<i16> {
    if api_key == API_VERSIONS {
        return Some(0); // always v0, so any client can read the error
    }
    ApiKey::try_from(api_key)
        .ok()
        .map(|k| k.response_header_version(version))
}

/// The highest version `kafka-protocol` decodes for `api_key` (None: unknown to the crate).
fn crate_max_version(api_key: i16) -> Option<i16> {
    ApiKey::try_from(api_key).ok().map(|k| k.valid_versions().max)
}

/// ApiVersions v5 (KIP-1242, Kafka 4.4) added the cluster id and node id the client expects to
/// the request only: no response field is versioned 5+ in Kafka 4.4.0's ApiVersionsResponse.json,
/// so a v5 response is laid out as v4. `kafka-protocol` 0.18 stops at v4; without this rule every
/// 4.4 client would be held at v4 and lose its misrouted-connection check. The request itself is
/// forwarded as sent (the gateway reads only its header).
const API_VERSIONS_LAID_OUT_AS_V4_UP_TO: i16 = 5;

/// ShareFetch and ShareAcknowledge v2 (Kafka 4.2+) against v1, the `kafka-protocol` crate's
/// last: every ShareFetchResponse struct of kafka-clients 4.3.1 and 4.4.0 has SCHEMA_2 = SCHEMA_1
/// (v2 added request fields only), so a v2 ShareFetch response is read and written as v1; a v2
/// ShareAcknowledgeResponse adds AcquisitionLockTimeoutMs after ErrorMessage and is otherwise
/// v1, so that field is set aside, the rest read and written as v1, and the field put back.
const SHARE_V2: i16 = 2;

/// DescribeQuorum v2 (KIP-853) added Nodes: each voter's controller listeners (name, host, port).
/// A client reaches the quorum through a broker, and no gateway listener leads to a controller,
/// so the gateway sends each node with no listeners: the status it answers stays the broker's,
/// and an address it does not front is never forwarded.
const DESCRIBE_QUORUM_FIRST_NODES: i16 = 2;

/// The version a response of `api_key` v`version` is decoded and encoded as (the rules above).
pub(super) fn layout_version(api_key: i16, version: i16) -> i16 {
    match (api_key, crate_max_version(api_key)) {
        (API_VERSIONS, Some(known)) if version > known && version <= API_VERSIONS_LAID_OUT_AS_V4_UP_TO => known,
        (SHARE_FETCH | SHARE_ACKNOWLEDGE, _) if version == SHARE_V2 => 1,
        _ => version,
    }
}

/// The highest version of `api_key` the gateway can decode and re-encode (None: unknown).
pub fn decodable_max_version(api_key: i16) -> Option<i16> {
    let known = crate_max_version(api_key);
    match api_key {
        API_VERSIONS => known.map(|v| v.max(API_VERSIONS_LAID_OUT_AS_V4_UP_TO)),
        SHARE_FETCH | SHARE_ACKNOWLEDGE => known.map(|v| v.max(SHARE_V2)),
        _ => known,
    }
}

/// Offset, in a ShareAcknowledge v2 body, of AcquisitionLockTimeoutMs: after ThrottleTimeMs,
/// ErrorCode and ErrorMessage (a compact nullable string).
fn share_ack_lock_timeout_at(body: &[u8]) -> Result<usize, Malformed> {
    let (length, after) = wire::read_uvarint(body, 6)?;
    let at = after + length.saturating_sub(1) as usize;
    if at + 4 > body.len() {
        return Err(Malformed(
            "share acknowledge response truncated before its lock timeout".into(),
        ));
    }
    Ok(at)
}

/// The highest version of `api_key` clients may use through the gateway: the control plane's
/// ceiling `own` (None: none), and for the APIs the data plane decodes, the crate's maximum.
pub fn ceiling(api_key: i16, own: Option<i16>) -> Option<i16> {
    let decoded = matches!(
        api_key,
        PRODUCE
            | FETCH
            | METADATA
            | FIND_COORDINATOR
            | wire::SASL_HANDSHAKE
            | API_VERSIONS
            | wire::SASL_AUTHENTICATE
            | DESCRIBE_CLUSTER
            | DESCRIBE_QUORUM
            | SHARE_FETCH
            | SHARE_ACKNOWLEDGE
    );
    let native = if decoded { decodable_max_version(api_key) } else { None };
    match (own, native) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

enum Message {
    Metadata(MetadataResponse),
    FindCoordinator(FindCoordinatorResponse),
    DescribeCluster(DescribeClusterResponse),
    DescribeQuorum(DescribeQuorumResponse),
    Produce(ProduceResponse),
    Fetch(FetchResponse),
    ShareFetch(ShareFetchResponse),
    ShareAcknowledge(ShareAcknowledgeResponse),
}

/// A decoded address-bearing response and the upstream addresses it names.
pub struct AddressRewrite {
    api_key: i16,
    version: i16,
    header: ResponseHeader,
    message: Message,
    /// a ShareAcknowledge v2's AcquisitionLockTimeoutMs, set aside while the rest is v1
    lock_timeout: Option<[u8; 4]>,
    pub addresses: Vec<Address>,
}

fn real(host: &str, port: i32) -> bool {
    // FindCoordinator errors carry node -1, host "" and port -1: nothing to rewrite or leak
    !host.is_empty() && port >= 0
}

pub(super) fn decode<T: Decodable>(buf: &mut Bytes, api_key: i16, version: i16) -> Result<T, Malformed> {
    let message = T::decode(buf, version).map_err(|e| malformed(api_key, version, e))?;
    if !buf.is_empty() {
        return Err(malformed(
            api_key,
            version,
            format!("{} bytes after the message", buf.len()),
        ));
    }
    Ok(message)
}

impl AddressRewrite {
    /// Whether responses of this API and version may name brokers (or controllers).
    pub fn applies(api_key: i16, version: i16) -> bool {
        matches!(
            api_key,
            METADATA | FIND_COORDINATOR | DESCRIBE_CLUSTER | SHARE_FETCH | SHARE_ACKNOWLEDGE
        ) || (api_key == DESCRIBE_QUORUM && version >= DESCRIBE_QUORUM_FIRST_NODES)
            || wire::has_node_endpoints(api_key, version)
    }

    /// Decode `frame` (header + body). None for APIs that carry no addresses.
    pub fn decode(api_key: i16, version: i16, frame: &[u8]) -> Result<Option<AddressRewrite>, Malformed> {
        if !Self::applies(api_key, version) {
            return Ok(None);
        }
        let header_version = response_header_version(api_key, version).unwrap_or(0);
        let mut buf = Bytes::copy_from_slice(frame);
        let header = ResponseHeader::decode(&mut buf, header_version).map_err(|e| malformed(api_key, version, e))?;
        let mut lock_timeout = None;
        if api_key == SHARE_ACKNOWLEDGE && version == SHARE_V2 {
            let at = share_ack_lock_timeout_at(&buf)?;
            lock_timeout = Some([buf[at], buf[at + 1], buf[at + 2], buf[at + 3]]);
            let mut v1 = BytesMut::from(&buf[..at]);
            v1.extend_from_slice(&buf[at + 4..]);
            buf = v1.freeze();
        }
        let layout = layout_version(api_key, version);
        let mut addresses = Vec::new();
        let message = match api_key {
            METADATA => {
                let m: MetadataResponse = decode(&mut buf, api_key, layout)?;
                addresses.extend(m.brokers.iter().map(|b| (b.host.to_string(), b.port)));
                Message::Metadata(m)
            }
            FIND_COORDINATOR => {
                let m: FindCoordinatorResponse = decode(&mut buf, api_key, layout)?;
                if version >= 4 {
                    addresses.extend(
                        m.coordinators
                            .iter()
                            .filter(|c| real(&c.host, c.port))
                            .map(|c| (c.host.to_string(), c.port)),
                    );
                } else if real(&m.host, m.port) {
                    addresses.push((m.host.to_string(), m.port));
                }
                Message::FindCoordinator(m)
            }
            DESCRIBE_CLUSTER => {
                let m: DescribeClusterResponse = decode(&mut buf, api_key, layout)?;
                addresses.extend(m.brokers.iter().map(|b| (b.host.to_string(), b.port)));
                Message::DescribeCluster(m)
            }
            // controllers' listeners: nothing to map, they are removed by `apply`
            DESCRIBE_QUORUM => Message::DescribeQuorum(decode(&mut buf, api_key, layout)?),
            PRODUCE => {
                let m: ProduceResponse = decode(&mut buf, api_key, layout)?;
                addresses.extend(m.node_endpoints.iter().map(|b| (b.host.to_string(), b.port)));
                Message::Produce(m)
            }
            FETCH => {
                let m: FetchResponse = decode(&mut buf, api_key, layout)?;
                addresses.extend(m.node_endpoints.iter().map(|b| (b.host.to_string(), b.port)));
                Message::Fetch(m)
            }
            // NodeEndpoints is a plain field of every version here, empty unless a leader moved
            SHARE_FETCH => {
                let m: ShareFetchResponse = decode(&mut buf, api_key, layout)?;
                addresses.extend(m.node_endpoints.iter().map(|b| (b.host.to_string(), b.port)));
                Message::ShareFetch(m)
            }
            SHARE_ACKNOWLEDGE => {
                let m: ShareAcknowledgeResponse = decode(&mut buf, api_key, layout)?;
                addresses.extend(m.node_endpoints.iter().map(|b| (b.host.to_string(), b.port)));
                Message::ShareAcknowledge(m)
            }
            _ => return Ok(None),
        };
        Ok(Some(AddressRewrite {
            api_key,
            version,
            header,
            message,
            lock_timeout,
            addresses,
        }))
    }

    /// Re-encode with every address replaced by `map(address)`; fails closed on an unmapped one.
    pub fn apply(mut self, map: &dyn Fn(&str, i32) -> Option<Address>) -> Result<Vec<u8>, Malformed> {
        match &mut self.message {
            Message::Metadata(m) => m
                .brokers
                .iter_mut()
                .try_for_each(|b| swap(&mut b.host, &mut b.port, map))?,
            Message::DescribeCluster(m) => m
                .brokers
                .iter_mut()
                .try_for_each(|b| swap(&mut b.host, &mut b.port, map))?,
            Message::DescribeQuorum(m) => m.nodes.iter_mut().for_each(|node| node.listeners.clear()),
            Message::Produce(m) => m
                .node_endpoints
                .iter_mut()
                .try_for_each(|b| swap(&mut b.host, &mut b.port, map))?,
            Message::Fetch(m) => m
                .node_endpoints
                .iter_mut()
                .try_for_each(|b| swap(&mut b.host, &mut b.port, map))?,
            Message::ShareFetch(m) => m
                .node_endpoints
                .iter_mut()
                .try_for_each(|b| swap(&mut b.host, &mut b.port, map))?,
            Message::ShareAcknowledge(m) => m
                .node_endpoints
                .iter_mut()
                .try_for_each(|b| swap(&mut b.host, &mut b.port, map))?,
            Message::FindCoordinator(m) => {
                if self.version >= 4 {
                    for c in m.coordinators.iter_mut().filter(|c| real(&c.host, c.port)) {
                        swap(&mut c.host, &mut c.port, map)?;
                    }
                } else if real(&m.host, m.port) {
                    swap(&mut m.host, &mut m.port, map)?;
                }
            }
        }
        let (api_key, version) = (self.api_key, self.version);
        let mut out = BytesMut::new();
        let header_version = response_header_version(api_key, version).unwrap_or(0);
        let enc = |e: String| Malformed(format!("cannot encode api {api_key} v{version} response: {e}"));
        self.header
            .encode(&mut out, header_version)
            .map_err(|e| enc(e.to_string()))?;
        let body_at = out.len();
        let layout = layout_version(api_key, version);
        match &self.message {
            Message::Metadata(m) => m.encode(&mut out, layout),
            Message::FindCoordinator(m) => m.encode(&mut out, layout),
            Message::DescribeCluster(m) => m.encode(&mut out, layout),
            Message::DescribeQuorum(m) => m.encode(&mut out, layout),
            Message::Produce(m) => m.encode(&mut out, layout),
            Message::Fetch(m) => m.encode(&mut out, layout),
            Message::ShareFetch(m) => m.encode(&mut out, layout),
            Message::ShareAcknowledge(m) => m.encode(&mut out, layout),
        }
        .map_err(|e| enc(e.to_string()))?;
        let mut out = out.to_vec();
        if let Some(lock_timeout) = self.lock_timeout {
            let at = body_at + share_ack_lock_timeout_at(&out[body_at..])?;
            out.splice(at..at, lock_timeout);
        }
        Ok(out)
    }
}

/// One broker address replaced by `map(address)`; fails closed on an unmapped one.
pub(super) fn swap(
    host: &mut StrBytes,
    port: &mut i32,
    map: &dyn Fn(&str, i32) -> Option<Address>,
) -> Result<(), Malformed> {
    let Some((new_host, new_port)) = map(host.as_str(), *port) else {
        return Err(Malformed(format!(
            "no gateway listener for broker {}:{}",
            host.as_str(),
            port
        )));
    };
    *host = StrBytes::from_string(new_host);
    *port = new_port;
    Ok(())
}

/// (api key, min, max) ranges of an ApiVersions response.
pub type Ranges = Vec<(i16, i16, i16)>;

/// Decode an ApiVersions response (header v0). An error response is read as v0, as brokers send it.
pub fn decode_api_versions(
    frame: &[u8],
    version: i16,
) -> Result<(ResponseHeader, ApiVersionsResponse, i16), Malformed> {
    let mut buf = Bytes::copy_from_slice(frame);
    let header = ResponseHeader::decode(&mut buf, 0).map_err(|e| malformed(API_VERSIONS, version, e))?;
    let error_code = wire::i16_at(&buf, 0)?;
    let used = if error_code != 0 {
        0
    } else {
        layout_version(API_VERSIONS, version)
    };
    let message: ApiVersionsResponse = decode(&mut buf, API_VERSIONS, used)?;
    Ok((header, message, used))
}

/// Re-encode an ApiVersions response with `ranges` as its api_keys.
pub fn encode_api_versions(
    header: &ResponseHeader,
    mut message: ApiVersionsResponse,
    version: i16,
    ranges: &Ranges,
) -> Result<Vec<u8>, Malformed> {
    message.api_keys = ranges
        .iter()
        .map(|&(k, lo, hi)| {
            ApiVersion::default()
                .with_api_key(k)
                .with_min_version(lo)
                .with_max_version(hi)
        })
        .collect();
    let mut out = BytesMut::new();
    header.encode(&mut out, 0).map_err(|e| Malformed(e.to_string()))?;
    message
        .encode(&mut out, version)
        .map_err(|e| Malformed(e.to_string()))?;
    Ok(out.to_vec())
}

/// Intersect every broker range with the gateway's ceiling (`ceiling(key)`: None = none, -1 =
/// remove the API); then add or replace the APIs the gateway answers itself, sorted by key.
pub fn cap_ranges(broker: &Ranges, ceiling: &dyn Fn(i16) -> Option<i16>, owned: &Ranges) -> Ranges {
    let mut out: std::collections::BTreeMap<i16, (i16, i16, i16)> = std::collections::BTreeMap::new();
    for &(key, lo, hi) in broker {
        let capped = match ceiling(key) {
            None => hi,
            Some(c) => hi.min(c),
        };
        if capped >= lo {
            out.insert(key, (key, lo, capped));
        }
    }
    for &r in owned {
        out.insert(r.0, r);
    }
    out.into_values().collect()
}

/// A broker's answer to an ApiVersions request above its maximum: v0, UNSUPPORTED_VERSION (35),
/// listing the ApiVersions range so the client retries lower.
pub fn unsupported_api_versions(correlation_id: i32, max_version: i16) -> Vec<u8> {
    let message = ApiVersionsResponse::default()
        .with_error_code(35)
        .with_api_keys(vec![ApiVersion::default()
            .with_api_key(API_VERSIONS)
            .with_min_version(0)
            .with_max_version(max_version)]);
    let mut out = BytesMut::new();
    let _ = ResponseHeader::default()
        .with_correlation_id(correlation_id)
        .encode(&mut out, 0);
    let _ = message.encode(&mut out, 0);
    out.to_vec()
}

/// What a broker answers to a Fetch or ShareFetch (`api_key`) it throttles: the two below.
pub fn throttled_fetches_response(
    api_key: i16,
    version: i16,
    frame: &[u8],
    throttle_ms: i64,
) -> Result<Option<Vec<u8>>, Malformed> {
    if api_key == SHARE_FETCH {
        throttled_share_fetch_response(version, frame, throttle_ms)
    } else {
        throttled_fetch_response(version, frame, throttle_ms)
    }
}

/// What a broker answers to a Fetch it throttles (KafkaApis `getThrottledResponse`): no data,
/// `throttle_time_ms`, and the session of the response it replaces, so an incremental fetch session
/// goes on (the consumer fetches the same offsets again). None when the response carries a
/// top-level error: the broker would have sent that, unthrottled.
pub fn throttled_fetch_response(version: i16, frame: &[u8], throttle_ms: i64) -> Result<Option<Vec<u8>>, Malformed> {
    let header_version = response_header_version(FETCH, version).unwrap_or(0);
    let mut buf = Bytes::copy_from_slice(frame);
    let header = ResponseHeader::decode(&mut buf, header_version).map_err(|e| malformed(FETCH, version, e))?;
    let (error_code, session_id) = if version >= 7 {
        (wire::i16_at(&buf, 4)?, wire::i32_at(&buf, 6)?)
    } else {
        (0, 0)
    };
    if error_code != 0 {
        return Ok(None);
    }
    let message = FetchResponse::default()
        .with_throttle_time_ms(throttle_ms.min(i64::from(i32::MAX)) as i32)
        .with_session_id(session_id);
    encoded(&header, header_version, &message, version).map(Some)
}

/// A response's header and body, encoded.
fn encoded<T: Encodable>(
    header: &ResponseHeader,
    header_version: i16,
    message: &T,
    version: i16,
) -> Result<Vec<u8>, Malformed> {
    let mut out = BytesMut::new();
    header
        .encode(&mut out, header_version)
        .map_err(|e| Malformed(e.to_string()))?;
    message
        .encode(&mut out, version)
        .map_err(|e| Malformed(e.to_string()))?;
    Ok(out.to_vec())
}

/// What a broker answers to a ShareFetch it throttles (KafkaApis `processShareFetchResponse` ->
/// `ShareFetchContext.throttleResponse`): no error, `throttle_time_ms`, no data, no endpoints, a
/// zero acquisition lock timeout. As there, the records the replaced response acquired stay
/// acquired until their lock times out and are then delivered again. None when the response
/// carries a top-level error: the broker would have sent that, unthrottled.
pub fn throttled_share_fetch_response(
    version: i16,
    frame: &[u8],
    throttle_ms: i64,
) -> Result<Option<Vec<u8>>, Malformed> {
    let header_version = response_header_version(SHARE_FETCH, version).unwrap_or(1);
    let mut buf = Bytes::copy_from_slice(frame);
    let header = ResponseHeader::decode(&mut buf, header_version).map_err(|e| malformed(SHARE_FETCH, version, e))?;
    if wire::i16_at(&buf, 4)? != 0 {
        return Ok(None);
    }
    let message = ShareFetchResponse::default().with_throttle_time_ms(throttle_ms.min(i64::from(i32::MAX)) as i32);
    encoded(&header, header_version, &message, layout_version(SHARE_FETCH, version)).map(Some)
}

/// The error code of a SaslHandshake / SaslAuthenticate response.
pub fn sasl_response_error(api_key: i16, version: i16, frame: &[u8]) -> Result<i16, Malformed> {
    let offset = wire::response_body_offset(frame, response_header_version(api_key, version) == Some(1))?;
    wire::i16_at(frame, offset)
}

/// Raises a response's `throttle_time_ms` to at least `throttle_ms` where Kafka puts it: the first
/// body field for the (api key, version) pairs in `throttle_first`, after `responses` in Produce
/// v1+, last in the delegation-token responses. `body` is the response without its length
/// prefix; a response too short (or that does not decode) is left alone: the connection's mute
/// holds the client all the same, it is only not told.
pub fn patch_throttle(key: i16, version: i16, body: &mut [u8], throttle_ms: i64, throttle_first: &HashSet<(i16, i16)>) {
    let offset = if throttle_first.contains(&(key, version)) {
        response_header_version(key, version).and_then(|hv| wire::response_body_offset(body, hv == 1).ok())
    } else if key == PRODUCE && version >= 1 {
        wire::produce_positions(body, version).ok().and_then(|p| p.0)
    } else if DELEGATION_TOKEN_APIS.contains(&key) {
        delegation_token_throttle_offset(key, version, body).ok()
    } else {
        None
    };
    if let Some(offset) = offset {
        if offset + 4 <= body.len() {
            wire::raise_i32_at(body, offset, throttle_ms);
        }
    }
}

/// Create / Renew / Expire / DescribeDelegationToken: `throttle_time_ms` follows the token's
/// variable-length fields (principals, token id, hmac, the described tokens).
const DELEGATION_TOKEN_APIS: [i16; 4] = [
    wire::CREATE_DELEGATION_TOKEN,
    wire::RENEW_DELEGATION_TOKEN,
    wire::EXPIRE_DELEGATION_TOKEN,
    wire::DESCRIBE_DELEGATION_TOKEN,
];

/// Where a delegation-token response's `throttle_time_ms` is: the response decoded with the crate
/// and re-encoded with a marker value in that field, whose bytes are the only ones that differ
/// (the field is an int32 whatever its value, so nothing else moves). v0 is laid out as v1
/// (v1 only changed when the broker throttles, KIP-219), the crate's first.
fn delegation_token_throttle_offset(key: i16, version: i16, body: &[u8]) -> Result<usize, Malformed> {
    use kafka_protocol::messages::{
        CreateDelegationTokenResponse, DescribeDelegationTokenResponse, ExpireDelegationTokenResponse,
        RenewDelegationTokenResponse,
    };
    fn marked<T: Decodable + Encodable>(
        body: &[u8],
        key: i16,
        version: i16,
        throttle: impl Fn(&mut T) -> &mut i32,
    ) -> Result<(Vec<u8>, Vec<u8>), Malformed> {
        let mut message: T = decode(&mut Bytes::copy_from_slice(body), key, version)?;
        let encode = |value: i32, message: &mut T| {
            *throttle(message) = value;
            let mut out = BytesMut::new();
            message
                .encode(&mut out, version)
                .map(|_| out.to_vec())
                .map_err(|e| malformed(key, version, e))
        };
        Ok((encode(0, &mut message)?, encode(-1, &mut message)?))
    }
    let hv = response_header_version(key, version).ok_or_else(|| malformed(key, version, "unknown api"))?;
    let at = wire::response_body_offset(body, hv == 1)?;
    let layout = version.max(1);
    let (zero, ones) = match key {
        wire::CREATE_DELEGATION_TOKEN => marked(&body[at..], key, layout, |m: &mut CreateDelegationTokenResponse| {
            &mut m.throttle_time_ms
        })?,
        wire::RENEW_DELEGATION_TOKEN => marked(&body[at..], key, layout, |m: &mut RenewDelegationTokenResponse| {
            &mut m.throttle_time_ms
        })?,
        wire::EXPIRE_DELEGATION_TOKEN => marked(&body[at..], key, layout, |m: &mut ExpireDelegationTokenResponse| {
            &mut m.throttle_time_ms
        })?,
        _ => marked(&body[at..], key, layout, |m: &mut DescribeDelegationTokenResponse| {
            &mut m.throttle_time_ms
        })?,
    };
    let first = zero.iter().zip(&ones).position(|(a, b)| a != b);
    match first {
        Some(offset) if zero.len() == body.len() - at => Ok(at + offset),
        _ => Err(malformed(key, version, "no throttle_time_ms where the layout puts it")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::fetch_response::NodeEndpoint as FetchNodeEndpoint;
    use kafka_protocol::messages::find_coordinator_response::Coordinator;
    use kafka_protocol::messages::metadata_response::MetadataResponseBroker;
    use kafka_protocol::messages::produce_response::NodeEndpoint;
    use kafka_protocol::messages::BrokerId;

    fn encode<T: Encodable>(api_key: i16, version: i16, corr: i32, message: &T) -> Vec<u8> {
        let mut out = BytesMut::new();
        let hv = response_header_version(api_key, version).unwrap();
        ResponseHeader::default()
            .with_correlation_id(corr)
            .encode(&mut out, hv)
            .unwrap();
        message.encode(&mut out, version).unwrap();
        out.to_vec()
    }

    fn gateway(host: &str, port: i32) -> Option<Address> {
        (host == "broker-1").then(|| ("127.0.0.1".to_string(), port + 10_000))
    }

    #[test]
    fn delegation_token_responses_get_the_throttle_after_their_variable_fields() {
        use kafka_protocol::messages::describe_delegation_token_response::{
            DescribedDelegationToken, DescribedDelegationTokenRenewer,
        };
        use kafka_protocol::messages::{
            CreateDelegationTokenResponse, DescribeDelegationTokenResponse, ExpireDelegationTokenResponse,
            RenewDelegationTokenResponse,
        };
        let text = StrBytes::from_static_str;
        let create = CreateDelegationTokenResponse::default()
            .with_principal_type(text("User"))
            .with_principal_name(text("alice"))
            .with_token_id(text("token-1"))
            .with_hmac(Bytes::from_static(b"0123456789"))
            .with_expiry_timestamp_ms(7)
            .with_throttle_time_ms(3);
        let token = DescribedDelegationToken::default()
            .with_principal_name(text("alice"))
            .with_token_id(text("token-1"))
            .with_hmac(Bytes::from_static(b"abc"))
            .with_renewers(vec![
                DescribedDelegationTokenRenewer::default().with_principal_name(text("bob"))
            ]);
        let describe = DescribeDelegationTokenResponse::default()
            .with_tokens(vec![token.clone(), token])
            .with_throttle_time_ms(3);
        let renew = RenewDelegationTokenResponse::default()
            .with_expiry_timestamp_ms(9)
            .with_throttle_time_ms(3);
        let expire = ExpireDelegationTokenResponse::default()
            .with_expiry_timestamp_ms(9)
            .with_throttle_time_ms(3);
        let none = HashSet::new();
        for (key, versions) in [
            (wire::CREATE_DELEGATION_TOKEN, 0..=3),
            (wire::RENEW_DELEGATION_TOKEN, 0..=2),
            (wire::EXPIRE_DELEGATION_TOKEN, 0..=2),
            (wire::DESCRIBE_DELEGATION_TOKEN, 0..=3),
        ] {
            for version in versions {
                let layout = version.max(1);
                let mut frame = match key {
                    wire::CREATE_DELEGATION_TOKEN => encode(key, layout, 5, &create),
                    wire::RENEW_DELEGATION_TOKEN => encode(key, layout, 5, &renew),
                    wire::EXPIRE_DELEGATION_TOKEN => encode(key, layout, 5, &expire),
                    _ => encode(key, layout, 5, &describe),
                };
                let before = frame.clone();
                patch_throttle(key, version, &mut frame, 1500, &none);
                let changed: Vec<usize> = (0..frame.len()).filter(|&i| frame[i] != before[i]).collect();
                assert!(
                    !changed.is_empty() && changed.len() <= 4,
                    "api {key} v{version}: {changed:?}"
                );
                let mut buf = Bytes::from(frame.clone());
                ResponseHeader::decode(&mut buf, response_header_version(key, version).unwrap()).unwrap();
                let throttle = match key {
                    wire::CREATE_DELEGATION_TOKEN => {
                        CreateDelegationTokenResponse::decode(&mut buf, layout)
                            .unwrap()
                            .throttle_time_ms
                    }
                    wire::RENEW_DELEGATION_TOKEN => {
                        RenewDelegationTokenResponse::decode(&mut buf, layout)
                            .unwrap()
                            .throttle_time_ms
                    }
                    wire::EXPIRE_DELEGATION_TOKEN => {
                        ExpireDelegationTokenResponse::decode(&mut buf, layout)
                            .unwrap()
                            .throttle_time_ms
                    }
                    _ => {
                        DescribeDelegationTokenResponse::decode(&mut buf, layout)
                            .unwrap()
                            .throttle_time_ms
                    }
                };
                assert_eq!(throttle, 1500, "api {key} v{version}");
                let mut lower = frame.clone();
                patch_throttle(key, version, &mut lower, 10, &none); // raised only, never lowered
                assert_eq!(lower, frame);
            }
        }
        let mut truncated = encode(wire::DESCRIBE_DELEGATION_TOKEN, 3, 5, &describe);
        truncated.truncate(truncated.len() - 6);
        let before = truncated.clone();
        patch_throttle(wire::DESCRIBE_DELEGATION_TOKEN, 3, &mut truncated, 1500, &none);
        assert_eq!(truncated, before, "a response that does not decode is left alone");
    }

    #[test]
    fn describe_quorum_v2_keeps_the_status_and_loses_the_controllers_listeners() {
        use kafka_protocol::messages::describe_quorum_response::{
            Listener, Node, PartitionData, ReplicaState, TopicData,
        };
        use kafka_protocol::protocol::StrBytes as S;
        let voter = ReplicaState::default()
            .with_replica_id(BrokerId(1))
            .with_log_end_offset(42);
        let partition = PartitionData::default()
            .with_leader_id(BrokerId(1))
            .with_leader_epoch(3)
            .with_high_watermark(42)
            .with_current_voters(vec![voter]);
        let listener = Listener::default()
            .with_name(S::from_static_str("CONTROLLER"))
            .with_host(S::from_static_str("controller-1"))
            .with_port(9093);
        let message = DescribeQuorumResponse::default()
            .with_topics(vec![TopicData::default()
                .with_topic_name(S::from_static_str("__cluster_metadata").into())
                .with_partitions(vec![partition])])
            .with_nodes(vec![Node::default()
                .with_node_id(BrokerId(1))
                .with_listeners(vec![listener])]);
        for version in 0..=1 {
            assert!(
                !AddressRewrite::applies(DESCRIBE_QUORUM, version),
                "v{version} has no nodes"
            );
        }
        let frame = encode(DESCRIBE_QUORUM, 2, 9, &message);
        let rewrite = AddressRewrite::decode(DESCRIBE_QUORUM, 2, &frame).unwrap().unwrap();
        assert!(rewrite.addresses.is_empty(), "no listener is bound for a controller");
        let out = rewrite.apply(&|_, _| panic!("nothing is mapped")).unwrap();
        let mut buf = Bytes::from(out);
        let header = ResponseHeader::decode(&mut buf, response_header_version(DESCRIBE_QUORUM, 2).unwrap()).unwrap();
        let again = DescribeQuorumResponse::decode(&mut buf, 2).unwrap();
        assert_eq!(header.correlation_id, 9);
        assert_eq!(
            again.topics, message.topics,
            "leader, epoch, voters and directory ids unchanged"
        );
        assert_eq!(again.nodes.len(), 1);
        assert_eq!(again.nodes[0].node_id, BrokerId(1));
        assert!(again.nodes[0].listeners.is_empty());
        assert_eq!(ceiling(DESCRIBE_QUORUM, None), Some(2));
    }

    #[test]
    fn metadata_brokers_are_rewritten_at_every_version() {
        for version in 0..=13 {
            let broker = MetadataResponseBroker::default()
                .with_node_id(BrokerId(1))
                .with_host(StrBytes::from_static_str("broker-1"))
                .with_port(9092);
            let frame = encode(
                METADATA,
                version,
                5,
                &MetadataResponse::default().with_brokers(vec![broker]),
            );
            let rewrite = AddressRewrite::decode(METADATA, version, &frame).unwrap().unwrap();
            assert_eq!(rewrite.addresses, vec![("broker-1".to_string(), 9092)]);
            let out = rewrite.apply(&gateway).unwrap();
            let again = AddressRewrite::decode(METADATA, version, &out).unwrap().unwrap();
            assert_eq!(again.addresses, vec![("127.0.0.1".to_string(), 19092)], "v{version}");
            assert_eq!(wire::i32_at(&out, 0).unwrap(), 5);
        }
    }

    #[test]
    fn unmapped_addresses_fail_closed() {
        let broker = MetadataResponseBroker::default()
            .with_host(StrBytes::from_static_str("elsewhere"))
            .with_port(1);
        let frame = encode(METADATA, 12, 1, &MetadataResponse::default().with_brokers(vec![broker]));
        assert!(AddressRewrite::decode(METADATA, 12, &frame)
            .unwrap()
            .unwrap()
            .apply(&gateway)
            .is_err());
    }

    #[test]
    fn find_coordinator_single_and_array_skip_errors() {
        let v3 = FindCoordinatorResponse::default()
            .with_host(StrBytes::from_static_str("broker-1"))
            .with_port(9092);
        let frame = encode(FIND_COORDINATOR, 3, 1, &v3);
        let out = AddressRewrite::decode(FIND_COORDINATOR, 3, &frame)
            .unwrap()
            .unwrap()
            .apply(&gateway)
            .unwrap();
        assert_eq!(
            AddressRewrite::decode(FIND_COORDINATOR, 3, &out)
                .unwrap()
                .unwrap()
                .addresses,
            vec![("127.0.0.1".into(), 19092)]
        );
        let coordinators = vec![
            Coordinator::default()
                .with_key(StrBytes::from_static_str("g"))
                .with_host(StrBytes::from_static_str("broker-1"))
                .with_port(9092),
            Coordinator::default()
                .with_key(StrBytes::from_static_str("h"))
                .with_node_id(BrokerId(-1))
                .with_port(-1),
        ];
        let frame = encode(
            FIND_COORDINATOR,
            6,
            1,
            &FindCoordinatorResponse::default().with_coordinators(coordinators),
        );
        let rewrite = AddressRewrite::decode(FIND_COORDINATOR, 6, &frame).unwrap().unwrap();
        assert_eq!(rewrite.addresses.len(), 1);
        assert!(rewrite.apply(&gateway).is_ok());
    }

    #[test]
    fn node_endpoints_of_share_fetch_and_share_acknowledge_are_rewritten_and_records_kept() {
        use kafka_protocol::messages::share_acknowledge_response::NodeEndpoint as AckEndpoint;
        use kafka_protocol::messages::share_fetch_response::{
            NodeEndpoint as ShareEndpoint, PartitionData, ShareFetchableTopicResponse,
        };
        let records = Bytes::from_static(b"record batches, passed as they came");
        let share = ShareFetchResponse::default()
            .with_acquisition_lock_timeout_ms(30_000)
            .with_responses(vec![ShareFetchableTopicResponse::default().with_partitions(vec![
                PartitionData::default().with_records(Some(records.clone())),
            ])])
            .with_node_endpoints(vec![ShareEndpoint::default()
                .with_node_id(BrokerId(1))
                .with_host(StrBytes::from_static_str("broker-1"))
                .with_port(9095)]);
        let frame = encode(SHARE_FETCH, 1, 5, &share);
        let rewrite = AddressRewrite::decode(SHARE_FETCH, 1, &frame).unwrap().unwrap();
        assert_eq!(rewrite.addresses, vec![("broker-1".into(), 9095)]);
        let out = rewrite.apply(&gateway).unwrap();
        let mut buf = Bytes::copy_from_slice(&out);
        let header = ResponseHeader::decode(&mut buf, 1).unwrap();
        let decoded = ShareFetchResponse::decode(&mut buf, 1).unwrap();
        assert_eq!(header.correlation_id, 5);
        assert_eq!(decoded.node_endpoints[0].host.as_str(), "127.0.0.1");
        assert_eq!(decoded.node_endpoints[0].port, 19095);
        assert_eq!(decoded.responses[0].partitions[0].records, Some(records));
        assert_eq!(decoded.acquisition_lock_timeout_ms, 30_000);
        // no endpoints (the usual case): nothing to map
        let plain = encode(SHARE_FETCH, 1, 6, &ShareFetchResponse::default());
        assert!(AddressRewrite::decode(SHARE_FETCH, 1, &plain)
            .unwrap()
            .unwrap()
            .addresses
            .is_empty());

        let ack = ShareAcknowledgeResponse::default().with_node_endpoints(vec![AckEndpoint::default()
            .with_host(StrBytes::from_static_str("broker-1"))
            .with_port(9096)]);
        let out = AddressRewrite::decode(SHARE_ACKNOWLEDGE, 1, &encode(SHARE_ACKNOWLEDGE, 1, 7, &ack))
            .unwrap()
            .unwrap()
            .apply(&gateway)
            .unwrap();
        assert_eq!(
            AddressRewrite::decode(SHARE_ACKNOWLEDGE, 1, &out)
                .unwrap()
                .unwrap()
                .addresses,
            vec![("127.0.0.1".into(), 19096)]
        );
        // an endpoint the gateway has no listener for fails closed
        let unknown = ShareAcknowledgeResponse::default().with_node_endpoints(vec![AckEndpoint::default()
            .with_host(StrBytes::from_static_str("broker-9"))
            .with_port(9096)]);
        assert!(
            AddressRewrite::decode(SHARE_ACKNOWLEDGE, 1, &encode(SHARE_ACKNOWLEDGE, 1, 8, &unknown))
                .unwrap()
                .unwrap()
                .apply(&gateway)
                .is_err()
        );
    }

    #[test]
    fn a_throttled_share_fetch_is_empty_as_the_brokers_and_an_error_passes() {
        use kafka_protocol::messages::share_fetch_response::{PartitionData, ShareFetchableTopicResponse};
        let full = ShareFetchResponse::default()
            .with_acquisition_lock_timeout_ms(30_000)
            .with_responses(vec![ShareFetchableTopicResponse::default().with_partitions(vec![
                PartitionData::default().with_records(Some(Bytes::from_static(b"batches"))),
            ])]);
        let frame = encode(SHARE_FETCH, 1, 11, &full);
        let empty = throttled_share_fetch_response(1, &frame, 1500).unwrap().unwrap();
        let mut buf = Bytes::copy_from_slice(&empty);
        assert_eq!(ResponseHeader::decode(&mut buf, 1).unwrap().correlation_id, 11);
        let decoded = ShareFetchResponse::decode(&mut buf, 1).unwrap();
        assert_eq!(decoded, ShareFetchResponse::default().with_throttle_time_ms(1500));
        let failed = encode(SHARE_FETCH, 1, 12, &ShareFetchResponse::default().with_error_code(22));
        assert!(throttled_share_fetch_response(1, &failed, 1500).unwrap().is_none());
    }

    #[test]
    fn share_fetch_and_acknowledge_are_capped_at_the_versions_the_gateway_lays_out() {
        // Kafka 4.3.1 and 4.4.0 offer v1..v2: v1 through the crate, v2 as v1's layout
        assert_eq!(ceiling(SHARE_FETCH, None), Some(2));
        assert_eq!(ceiling(SHARE_ACKNOWLEDGE, None), Some(2));
        assert_eq!(
            cap_ranges(
                &vec![(SHARE_FETCH, 1, 3), (76, 1, 1), (77, 1, 1)],
                &|k| ceiling(k, None),
                &vec![]
            ),
            vec![(76, 1, 1), (77, 1, 1), (SHARE_FETCH, 1, 2)]
        );
        // an API the data plane never decodes keeps the broker's range
        assert_eq!(ceiling(22, None), None);
    }

    /// A ShareAcknowledge v2 response: v1's bytes with AcquisitionLockTimeoutMs after ErrorMessage.
    fn share_ack_v2(corr: i32, message: &ShareAcknowledgeResponse, lock_timeout_ms: i32) -> Vec<u8> {
        let mut frame = encode(SHARE_ACKNOWLEDGE, 1, corr, message);
        let body_at = 4 + 1; // correlation id, header tags
        let at = body_at + share_ack_lock_timeout_at(&frame[body_at..]).unwrap();
        frame.splice(at..at, lock_timeout_ms.to_be_bytes());
        frame
    }

    #[test]
    fn share_fetch_and_acknowledge_v2_are_rewritten_in_their_own_layout() {
        use kafka_protocol::messages::share_acknowledge_response::NodeEndpoint as AckEndpoint;
        use kafka_protocol::messages::share_fetch_response::NodeEndpoint as ShareEndpoint;
        let share = ShareFetchResponse::default()
            .with_acquisition_lock_timeout_ms(15_000)
            .with_node_endpoints(vec![ShareEndpoint::default()
                .with_host(StrBytes::from_static_str("broker-1"))
                .with_port(9095)]);
        let v1 = encode(SHARE_FETCH, 1, 5, &share);
        let out = AddressRewrite::decode(SHARE_FETCH, 2, &v1)
            .unwrap()
            .unwrap()
            .apply(&gateway)
            .unwrap();
        let mut buf = Bytes::copy_from_slice(&out[5..]);
        let decoded = ShareFetchResponse::decode(&mut buf, 1).unwrap();
        assert_eq!(decoded.node_endpoints[0].port, 19095);
        assert_eq!(decoded.acquisition_lock_timeout_ms, 15_000);

        let ack = ShareAcknowledgeResponse::default()
            .with_error_message(Some(StrBytes::from_static_str("a message of some length")))
            .with_node_endpoints(vec![AckEndpoint::default()
                .with_host(StrBytes::from_static_str("broker-1"))
                .with_port(9096)]);
        let frame = share_ack_v2(7, &ack, 30_000);
        let rewrite = AddressRewrite::decode(SHARE_ACKNOWLEDGE, 2, &frame).unwrap().unwrap();
        assert_eq!(rewrite.addresses, vec![("broker-1".into(), 9096)]);
        let out = rewrite.apply(&gateway).unwrap();
        let mut expected_ack = ack.clone();
        expected_ack.node_endpoints[0].host = StrBytes::from_static_str("127.0.0.1");
        expected_ack.node_endpoints[0].port = 19096;
        assert_eq!(out, share_ack_v2(7, &expected_ack, 30_000));
        // a v2 response cut before its lock timeout is malformed, not a panic
        let short = &frame[..5 + 6 + 2];
        assert!(AddressRewrite::decode(SHARE_ACKNOWLEDGE, 2, short).is_err());
    }

    #[test]
    fn node_endpoints_of_produce_and_fetch_are_rewritten_and_unknown_tags_kept() {
        let endpoint = NodeEndpoint::default()
            .with_node_id(BrokerId(1))
            .with_host(StrBytes::from_static_str("broker-1"))
            .with_port(9093);
        let produce = ProduceResponse::default()
            .with_node_endpoints(vec![endpoint])
            .with_throttle_time_ms(7);
        let frame = encode(PRODUCE, 13, 9, &produce);
        assert!(wire::node_endpoints_present(PRODUCE, 13, &frame).unwrap());
        let out = AddressRewrite::decode(PRODUCE, 13, &frame)
            .unwrap()
            .unwrap()
            .apply(&gateway)
            .unwrap();
        assert_eq!(
            AddressRewrite::decode(PRODUCE, 13, &out).unwrap().unwrap().addresses,
            vec![("127.0.0.1".into(), 19093)]
        );
        assert_eq!(
            wire::produce_positions(&out, 13)
                .unwrap()
                .0
                .map(|p| wire::i32_at(&out, p).unwrap()),
            Some(7)
        );

        let mut fetch = FetchResponse::default().with_node_endpoints(vec![FetchNodeEndpoint::default()
            .with_host(StrBytes::from_static_str("broker-1"))
            .with_port(9094)]);
        fetch.unknown_tagged_fields.insert(99, Bytes::from_static(b"xyz"));
        let frame = encode(FETCH, 18, 3, &fetch);
        assert!(wire::node_endpoints_present(FETCH, 18, &frame).unwrap());
        let out = AddressRewrite::decode(FETCH, 18, &frame)
            .unwrap()
            .unwrap()
            .apply(&gateway)
            .unwrap();
        let mut buf = Bytes::from(out[5..].to_vec());
        let decoded = FetchResponse::decode(&mut buf, 18).unwrap();
        assert_eq!(decoded.node_endpoints[0].port, 19094);
        assert_eq!(
            decoded.unknown_tagged_fields.get(&99).map(|b| b.to_vec()),
            Some(b"xyz".to_vec())
        );
        let plain = encode(FETCH, 18, 3, &FetchResponse::default());
        assert!(!wire::node_endpoints_present(FETCH, 18, &plain).unwrap());
    }

    #[test]
    fn api_versions_are_capped_removed_and_owned() {
        let broker = vec![(0, 3, 13), (1, 4, 18), (55, 0, 2), (76, 0, 1), (48, 0, 1)];
        let ceiling = |k: i16| match k {
            55 => Some(1),
            76 => Some(-1),
            0 => Some(12),
            _ => None,
        };
        let capped = cap_ranges(&broker, &ceiling, &vec![(49, 0, 1)]);
        assert_eq!(capped, vec![(0, 3, 12), (1, 4, 18), (48, 0, 1), (49, 0, 1), (55, 0, 1)]);
        let message = ApiVersionsResponse::default()
            .with_api_keys(vec![ApiVersion::default().with_api_key(0).with_max_version(13)]);
        let frame = encode(API_VERSIONS, 3, 4, &message);
        let (header, message, used) = decode_api_versions(&frame, 3).unwrap();
        let out = encode_api_versions(&header, message, used, &capped).unwrap();
        let (_, again, _) = decode_api_versions(&out, 3).unwrap();
        assert_eq!(again.api_keys.len(), 5);
        let unsupported = unsupported_api_versions(8, 4);
        let (header, message, used) = decode_api_versions(&unsupported, 9).unwrap();
        assert_eq!((header.correlation_id, message.error_code, used), (8, 35, 0));
    }

    #[test]
    fn an_api_versions_v5_response_is_read_and_written_as_v4() {
        // Kafka 4.4.0's answer to a v5 request: v4's layout (the broker writes no v5-only field)
        let message = ApiVersionsResponse::default().with_api_keys(vec![
            ApiVersion::default().with_api_key(18).with_max_version(5),
            ApiVersion::default().with_api_key(76).with_max_version(1),
        ]);
        let frame = encode(API_VERSIONS, 4, 4, &message);
        assert_eq!(decodable_max_version(API_VERSIONS), Some(5));
        let (header, message, used) = decode_api_versions(&frame, 5).unwrap();
        assert_eq!(used, 4);
        let capped = cap_ranges(&vec![(18, 0, 5), (76, 0, 1)], &|k| (k == 76).then_some(-1), &vec![]);
        let out = encode_api_versions(&header, message, used, &capped).unwrap();
        let (_, again, _) = decode_api_versions(&out, 5).unwrap();
        let ranges: Vec<_> = again.api_keys.iter().map(|k| (k.api_key, k.max_version)).collect();
        assert_eq!(ranges, vec![(18, 5)]);
        // a version beyond the rule is not guessed at
        assert!(decode_api_versions(&frame, 6).is_err());
    }

    #[test]
    fn throttled_fetch_is_empty_and_keeps_the_session() {
        use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
        let data = FetchResponse::default()
            .with_session_id(77)
            .with_responses(vec![FetchableTopicResponse::default().with_partitions(vec![
                PartitionData::default().with_records(Some(Bytes::from_static(&[1; 300]))),
            ])]);
        for version in [4i16, 7, 12, 16, 18] {
            let data = if version >= 7 {
                data.clone()
            } else {
                data.clone().with_session_id(0)
            };
            let frame = encode(FETCH, version, 3, &data);
            let out = throttled_fetch_response(version, &frame, 1500).unwrap().unwrap();
            assert!(out.len() < 64, "v{version}: {} bytes", out.len());
            let mut buf = Bytes::from(out);
            let header = ResponseHeader::decode(&mut buf, response_header_version(FETCH, version).unwrap()).unwrap();
            let decoded = FetchResponse::decode(&mut buf, version).unwrap();
            assert_eq!((header.correlation_id, decoded.throttle_time_ms), (3, 1500));
            assert!(decoded.responses.is_empty());
            assert_eq!(decoded.session_id, if version >= 7 { 77 } else { 0 });
        }
        let failed = encode(FETCH, 12, 3, &FetchResponse::default().with_error_code(70));
        assert_eq!(throttled_fetch_response(12, &failed, 10).unwrap(), None);
    }

    #[test]
    fn truncated_responses_are_malformed_not_panics() {
        let broker = MetadataResponseBroker::default()
            .with_host(StrBytes::from_static_str("broker-1"))
            .with_port(9092);
        let frame = encode(METADATA, 12, 1, &MetadataResponse::default().with_brokers(vec![broker]));
        for cut in 0..frame.len() {
            assert!(
                AddressRewrite::decode(METADATA, 12, &frame[..cut]).is_err(),
                "cut at {cut}"
            );
        }
    }
}
