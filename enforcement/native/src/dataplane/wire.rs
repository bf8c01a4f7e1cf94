//! Framing and the few fixed positions the data plane reads on every frame, without a schema.
//!
//! Why hand-walked here and not decoded by `kafka-protocol`: these run on every request and every
//! Produce/Fetch response (the hot path), and need only a handful of offsets (the request header
//! prefix, Produce `acks`, `throttle_time_ms`, where the top-level tagged fields start). Messages
//! whose content the gateway changes are decoded and re-encoded by `kafka-protocol` (rewrite.rs).

use std::fmt;

use kafka_protocol::messages::ApiKey;

pub const MIN_REQUEST_FRAME_BYTES: i32 = 10;
pub const MIN_RESPONSE_FRAME_BYTES: i32 = 4;
// Kafka API keys: the `kafka-protocol` crate's table (Python's `versions.py` is checked against
// these by a test, through `_native.testing.API_KEYS`).
pub const PRODUCE: i16 = ApiKey::Produce as i16;
pub const FETCH: i16 = ApiKey::Fetch as i16;
pub const METADATA: i16 = ApiKey::Metadata as i16;
pub const FIND_COORDINATOR: i16 = ApiKey::FindCoordinator as i16;
pub const JOIN_GROUP: i16 = ApiKey::JoinGroup as i16;
pub const SYNC_GROUP: i16 = ApiKey::SyncGroup as i16;
pub const SASL_HANDSHAKE: i16 = ApiKey::SaslHandshake as i16;
pub const API_VERSIONS: i16 = ApiKey::ApiVersions as i16;
pub const SASL_AUTHENTICATE: i16 = ApiKey::SaslAuthenticate as i16;
pub const CREATE_DELEGATION_TOKEN: i16 = ApiKey::CreateDelegationToken as i16;
pub const RENEW_DELEGATION_TOKEN: i16 = ApiKey::RenewDelegationToken as i16;
pub const EXPIRE_DELEGATION_TOKEN: i16 = ApiKey::ExpireDelegationToken as i16;
pub const DESCRIBE_DELEGATION_TOKEN: i16 = ApiKey::DescribeDelegationToken as i16;
pub const DESCRIBE_CLIENT_QUOTAS: i16 = ApiKey::DescribeClientQuotas as i16;
pub const ALTER_CLIENT_QUOTAS: i16 = ApiKey::AlterClientQuotas as i16;
pub const DESCRIBE_QUORUM: i16 = ApiKey::DescribeQuorum as i16;
pub const DESCRIBE_CLUSTER: i16 = ApiKey::DescribeCluster as i16;
pub const SHARE_FETCH: i16 = ApiKey::ShareFetch as i16;
pub const SHARE_ACKNOWLEDGE: i16 = ApiKey::ShareAcknowledge as i16;
/// every API key named here, for the cross-language check
pub const NAMED_API_KEYS: [(&str, i16); 19] = [
    ("PRODUCE", PRODUCE),
    ("FETCH", FETCH),
    ("METADATA", METADATA),
    ("FIND_COORDINATOR", FIND_COORDINATOR),
    ("JOIN_GROUP", JOIN_GROUP),
    ("SYNC_GROUP", SYNC_GROUP),
    ("SASL_HANDSHAKE", SASL_HANDSHAKE),
    ("API_VERSIONS", API_VERSIONS),
    ("SASL_AUTHENTICATE", SASL_AUTHENTICATE),
    ("CREATE_DELEGATION_TOKEN", CREATE_DELEGATION_TOKEN),
    ("RENEW_DELEGATION_TOKEN", RENEW_DELEGATION_TOKEN),
    ("EXPIRE_DELEGATION_TOKEN", EXPIRE_DELEGATION_TOKEN),
    ("DESCRIBE_DELEGATION_TOKEN", DESCRIBE_DELEGATION_TOKEN),
    ("DESCRIBE_CLIENT_QUOTAS", DESCRIBE_CLIENT_QUOTAS),
    ("ALTER_CLIENT_QUOTAS", ALTER_CLIENT_QUOTAS),
    ("DESCRIBE_QUORUM", DESCRIBE_QUORUM),
    ("DESCRIBE_CLUSTER", DESCRIBE_CLUSTER),
    ("SHARE_FETCH", SHARE_FETCH),
    ("SHARE_ACKNOWLEDGE", SHARE_ACKNOWLEDGE),
];
pub const PRODUCE_FIRST_NODE_ENDPOINTS: i16 = 10;
pub const FETCH_FIRST_NODE_ENDPOINTS: i16 = 16;

/// A frame that does not follow the protocol: ends this connection only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed(pub String);

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn bad<T>(msg: impl Into<String>) -> Result<T, Malformed> {
    Err(Malformed(msg.into()))
}

/// Validate a length prefix before anything is allocated for the body.
pub fn check_frame_size(size: i32, min: i32, max: i64) -> Result<(), Malformed> {
    if size < min {
        return bad(format!("frame length {size} is below the minimum of {min} bytes"));
    }
    if i64::from(size) > max {
        let hint = if (size as u32) >> 24 == 0x16 {
            " (a TLS handshake sent to a plaintext port?)"
        } else {
            ""
        };
        return bad(format!("frame length {size} exceeds the limit of {max} bytes{hint}"));
    }
    Ok(())
}

/// The request header prefix: the same layout in request headers v1 and v2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestPrefix {
    pub api_key: i16,
    pub api_version: i16,
    pub correlation_id: i32,
    pub client_id: Option<String>,
    /// offset of the first byte after client_id
    pub client_id_end: usize,
}

pub fn i16_at(buf: &[u8], pos: usize) -> Result<i16, Malformed> {
    match buf.get(pos..pos + 2) {
        Some(b) => Ok(i16::from_be_bytes([b[0], b[1]])),
        None => bad("frame truncated"),
    }
}

pub fn i32_at(buf: &[u8], pos: usize) -> Result<i32, Malformed> {
    match buf.get(pos..pos + 4) {
        Some(b) => Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]])),
        None => bad("frame truncated"),
    }
}

pub fn i64_at(buf: &[u8], pos: usize) -> Result<i64, Malformed> {
    match buf.get(pos..pos + 8) {
        Some(b) => Ok(i64::from_be_bytes(b.try_into().unwrap_or([0; 8]))),
        None => bad("frame truncated"),
    }
}

/// Parse the header prefix of a request frame (the bytes after the 4-byte length).
pub fn parse_request_prefix(frame: &[u8]) -> Result<RequestPrefix, Malformed> {
    if frame.len() < 10 {
        return bad(format!(
            "request of {} bytes is shorter than a request header",
            frame.len()
        ));
    }
    let api_key = i16_at(frame, 0)?;
    let api_version = i16_at(frame, 2)?;
    let correlation_id = i32_at(frame, 4)?;
    let length = i16_at(frame, 8)?;
    if length < 0 {
        return Ok(RequestPrefix {
            api_key,
            api_version,
            correlation_id,
            client_id: None,
            client_id_end: 10,
        });
    }
    let end = 10 + length as usize;
    if end > frame.len() {
        return bad(format!(
            "client_id of {length} bytes overruns a {}-byte request",
            frame.len()
        ));
    }
    let client_id = String::from_utf8_lossy(&frame[10..end]).into_owned();
    Ok(RequestPrefix {
        api_key,
        api_version,
        correlation_id,
        client_id: Some(client_id),
        client_id_end: end,
    })
}

/// Unsigned LEB128 varint at `pos` -> (value, next position).
pub fn read_uvarint(buf: &[u8], mut pos: usize) -> Result<(u64, usize), Malformed> {
    let mut value: u64 = 0;
    for shift in (0..35).step_by(7) {
        let Some(&byte) = buf.get(pos) else {
            return bad("varint runs past the end of the frame");
        };
        pos += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok((value, pos));
        }
    }
    bad("varint longer than 5 bytes")
}

#[cfg(test)]
pub fn write_uvarint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8 & 0x7f) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Past a tagged-field section.
pub fn skip_tagged_fields(buf: &[u8], pos: usize) -> Result<usize, Malformed> {
    let (count, mut pos) = read_uvarint(buf, pos)?;
    for _ in 0..count {
        let (_tag, p) = read_uvarint(buf, pos)?;
        let (size, p) = read_uvarint(buf, p)?;
        pos = p + size as usize;
        if pos > buf.len() {
            return bad("tagged field overruns the frame");
        }
    }
    Ok(pos)
}

/// `acks` of a Produce request (header + body), to know whether a response will come.
pub fn produce_acks(frame: &[u8], prefix: &RequestPrefix) -> Result<i16, Malformed> {
    let version = prefix.api_version;
    let mut pos = prefix.client_id_end;
    if version >= 9 {
        pos = skip_tagged_fields(frame, pos)?;
        let (n, p) = read_uvarint(frame, pos)?;
        pos = p + n.saturating_sub(1) as usize;
    } else if version >= 3 {
        let length = i16_at(frame, pos)?;
        pos += 2 + length.max(0) as usize;
    }
    i16_at(frame, pos).map_err(|_| Malformed("produce request truncated before acks".into()))
}

/// Lower a consumer's Fetch `max_bytes` to `cap` and `min_bytes` to the result, in place, as a
/// broker does with its quota-window bytes before it reads the log (KafkaApis
/// handleFetchRequest). Versions before 3 have no `max_bytes`; a follower's fetch (a replica
/// id of 0 or more before v15; later it is a tagged field followers put at the end) is left
/// alone, as Kafka leaves it. Returns whether anything changed.
pub fn cap_fetch_bytes(frame: &mut [u8], prefix: &RequestPrefix, cap: i32) -> Result<bool, Malformed> {
    let version = prefix.api_version;
    if version < 3 {
        return Ok(false);
    }
    let mut pos = prefix.client_id_end;
    if version >= 12 {
        pos = skip_tagged_fields(frame, pos)?;
    }
    if version < 15 {
        if i32_at(frame, pos)? >= 0 {
            return Ok(false);
        }
        pos += 4; // replica_id
    }
    cap_min_max_bytes(frame, pos + 4, cap, "fetch") // after max_wait_ms
}

/// Lower the max_bytes at `min_at + 4` to `cap` and the min_bytes at `min_at` to no more than it;
/// whether anything changed.
fn cap_min_max_bytes(frame: &mut [u8], min_at: usize, cap: i32, what: &str) -> Result<bool, Malformed> {
    let max_at = min_at + 4;
    let max_bytes =
        i32_at(frame, max_at).map_err(|_| Malformed(format!("{what} request truncated before max_bytes")))?;
    let min_bytes = i32_at(frame, min_at)?;
    let capped_max = max_bytes.min(cap);
    let capped_min = min_bytes.min(capped_max);
    frame[max_at..max_at + 4].copy_from_slice(&capped_max.to_be_bytes());
    frame[min_at..min_at + 4].copy_from_slice(&capped_min.to_be_bytes());
    Ok(capped_max != max_bytes || capped_min != min_bytes)
}

/// Cap a ShareFetch request's max_bytes (and min_bytes with it) at `cap`, in place, as
/// `cap_fetch_bytes` does for Fetch. Every ShareFetch version is flexible: the header's tagged
/// fields, then GroupId and MemberId (compact nullable strings), ShareSessionEpoch, MaxWaitMs,
/// MinBytes, MaxBytes. Hand-walked rather than decoded and re-encoded with the crate: only two
/// ints change, and the crate stops at v1 while the offsets hold for every version Kafka 4.3 has.
pub fn cap_share_fetch_bytes(frame: &mut [u8], prefix: &RequestPrefix, cap: i32) -> Result<bool, Malformed> {
    let mut pos = skip_tagged_fields(frame, prefix.client_id_end)?;
    pos = skip_string(frame, pos, true)?; // group id
    pos = skip_string(frame, pos, true)?; // member id
    cap_min_max_bytes(frame, pos + 8, cap, "share fetch") // after share_session_epoch and max_wait_ms
}

/// Producer ids (>= 0) of the magic-v2 batches in one partition's records.
pub fn batch_producer_ids(records: &[u8], out: &mut Vec<i64>) {
    let mut pos = 0usize;
    while pos + 61 <= records.len() {
        let Ok(batch_length) = i32_at(records, pos + 8) else {
            return;
        };
        if batch_length < 49 {
            return;
        }
        if records[pos + 16] == 2 {
            if let Ok(id) = i64_at(records, pos + 43) {
                if id >= 0 && !out.contains(&id) {
                    out.push(id);
                }
            }
        }
        pos += 12 + batch_length as usize;
    }
}

// ---- Produce / Fetch response walkers --------------------------------------------------------

fn uvarint_len(frame: &[u8], pos: usize, flexible: bool) -> Result<(usize, usize), Malformed> {
    if flexible {
        let (n, p) = read_uvarint(frame, pos)?;
        let count = n.saturating_sub(1) as usize;
        if count > frame.len().saturating_sub(p) {
            return bad(format!(
                "array of {count} elements in {} bytes",
                frame.len().saturating_sub(p)
            ));
        }
        Ok((count, p))
    } else {
        let n = i32_at(frame, pos)?;
        if n < -1 {
            return bad(format!("negative array length {n}"));
        }
        let count = n.max(0) as usize;
        if count > frame.len().saturating_sub(pos + 4) {
            return bad(format!("array of {count} elements in {} bytes", frame.len() - pos - 4));
        }
        Ok((count, pos + 4))
    }
}

fn skip_string(frame: &[u8], pos: usize, flexible: bool) -> Result<usize, Malformed> {
    if flexible {
        let (n, p) = read_uvarint(frame, pos)?;
        Ok(p + n.saturating_sub(1) as usize)
    } else {
        Ok(pos + 2 + i16_at(frame, pos)?.max(0) as usize)
    }
}

fn skip_tags_if(frame: &[u8], pos: usize, flexible: bool) -> Result<usize, Malformed> {
    if flexible {
        skip_tagged_fields(frame, pos)
    } else {
        Ok(pos)
    }
}

/// (offset of throttle_time_ms, None before v1; offset of the top-level tagged fields or the
/// frame end) of a whole ProduceResponse (header + body).
pub fn produce_positions(frame: &[u8], version: i16) -> Result<(Option<usize>, usize), Malformed> {
    let flexible = version >= 9;
    let mut pos = if flexible { skip_tagged_fields(frame, 4)? } else { 4 };
    let (topics, p) = uvarint_len(frame, pos, flexible)?;
    pos = p;
    for _ in 0..topics {
        pos = if version >= 13 {
            pos + 16
        } else {
            skip_string(frame, pos, flexible)?
        };
        let (partitions, p) = uvarint_len(frame, pos, flexible)?;
        pos = p;
        let fixed = 14 + if version >= 2 { 8 } else { 0 } + if version >= 5 { 8 } else { 0 };
        for _ in 0..partitions {
            pos += fixed;
            if version >= 8 {
                let (errors, p) = uvarint_len(frame, pos, flexible)?;
                pos = p;
                for _ in 0..errors {
                    pos = skip_string(frame, pos + 4, flexible)?;
                    pos = skip_tags_if(frame, pos, flexible)?;
                }
                pos = skip_string(frame, pos, flexible)?;
            }
            pos = skip_tags_if(frame, pos, flexible)?;
        }
        pos = skip_tags_if(frame, pos, flexible)?;
    }
    let end = if version >= 1 { pos + 4 } else { pos };
    if end > frame.len() {
        return bad(format!("produce response v{version} truncated"));
    }
    Ok((if version >= 1 { Some(pos) } else { None }, end))
}

/// Offset of the top-level tagged fields of a whole flexible (v12+) FetchResponse.
pub fn fetch_tags_position(frame: &[u8], version: i16) -> Result<usize, Malformed> {
    if version < 12 {
        return bad(format!("fetch response v{version} has no tagged fields"));
    }
    let fixed = 30 + if version >= 11 { 4 } else { 0 };
    let mut pos = skip_tagged_fields(frame, 4)? + 10;
    let (topics, p) = uvarint_len(frame, pos, true)?;
    pos = p;
    for _ in 0..topics {
        pos = if version >= 13 {
            pos + 16
        } else {
            skip_string(frame, pos, true)?
        };
        let (partitions, p) = uvarint_len(frame, pos, true)?;
        pos = p;
        for _ in 0..partitions {
            let (aborted, p) = uvarint_len(frame, pos + 30, true)?;
            pos = p;
            for _ in 0..aborted {
                pos = skip_tagged_fields(frame, pos + 16)?;
            }
            pos = skip_string(frame, pos + fixed - 30, true)?;
            pos = skip_tagged_fields(frame, pos)?;
        }
        pos = skip_tagged_fields(frame, pos)?;
    }
    if pos >= frame.len() {
        return bad(format!("fetch response v{version} truncated"));
    }
    Ok(pos)
}

/// Whether the top-level tagged section at `pos` holds tag 0 (KIP-951 NodeEndpoints).
pub fn has_tag_zero(frame: &[u8], pos: usize) -> Result<bool, Malformed> {
    let (count, mut pos) = read_uvarint(frame, pos)?;
    for _ in 0..count {
        let (tag, p) = read_uvarint(frame, pos)?;
        let (size, p) = read_uvarint(frame, p)?;
        if tag == 0 {
            return Ok(true);
        }
        pos = p + size as usize;
        if pos > frame.len() {
            return bad("tagged field overruns the response");
        }
    }
    Ok(false)
}

pub fn has_node_endpoints(api_key: i16, version: i16) -> bool {
    (api_key == PRODUCE && version >= PRODUCE_FIRST_NODE_ENDPOINTS)
        || (api_key == FETCH && version >= FETCH_FIRST_NODE_ENDPOINTS)
}

/// Does this response (header + body) carry NodeEndpoints that must be rewritten?
pub fn node_endpoints_present(api_key: i16, version: i16, frame: &[u8]) -> Result<bool, Malformed> {
    let tags_at = if api_key == PRODUCE {
        produce_positions(frame, version)?.1
    } else {
        fetch_tags_position(frame, version)?
    };
    if tags_at >= frame.len() {
        return bad("response truncated before its tagged fields");
    }
    has_tag_zero(frame, tags_at)
}

/// Offset of the response body: header v1 adds tagged fields after the correlation id.
pub fn response_body_offset(frame: &[u8], flexible_header: bool) -> Result<usize, Malformed> {
    if flexible_header {
        skip_tagged_fields(frame, 4)
    } else {
        Ok(4)
    }
}

/// Raise `throttle_time_ms` at `offset` to at least `throttle_ms` (in place).
pub fn raise_i32_at(frame: &mut [u8], offset: usize, throttle_ms: i64) {
    if let Ok(current) = i32_at(frame, offset) {
        if i64::from(current) < throttle_ms {
            let value = throttle_ms.min(i64::from(i32::MAX)) as i32;
            frame[offset..offset + 4].copy_from_slice(&value.to_be_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fetch_request(version: i16, replica: i32, min_bytes: i32, max_bytes: i32) -> Vec<u8> {
        use kafka_protocol::messages::{BrokerId, FetchRequest, RequestHeader};
        use kafka_protocol::protocol::{Encodable, StrBytes};
        let header_version = if version >= 12 { 2 } else { 1 };
        let header = RequestHeader::default()
            .with_request_api_key(FETCH)
            .with_request_api_version(version)
            .with_correlation_id(7)
            .with_client_id(Some(StrBytes::from_static_str("consumer-1")));
        let mut request = FetchRequest::default()
            .with_max_wait_ms(500)
            .with_min_bytes(min_bytes)
            .with_max_bytes(max_bytes);
        if version < 15 {
            request = request.with_replica_id(BrokerId(replica));
        }
        let mut out = bytes::BytesMut::new();
        header.encode(&mut out, header_version).unwrap();
        request.encode(&mut out, version).unwrap();
        out.to_vec()
    }

    fn decoded_limits(frame: &[u8], version: i16) -> (i32, i32) {
        use kafka_protocol::messages::{FetchRequest, RequestHeader};
        use kafka_protocol::protocol::Decodable;
        let mut buf = bytes::Bytes::copy_from_slice(frame);
        RequestHeader::decode(&mut buf, if version >= 12 { 2 } else { 1 }).unwrap();
        let request = FetchRequest::decode(&mut buf, version).unwrap();
        (request.min_bytes, request.max_bytes)
    }

    #[test]
    fn a_consumer_fetch_is_capped_at_every_version_and_min_bytes_follows() {
        use kafka_protocol::messages::FetchRequest;
        use kafka_protocol::protocol::Message;
        for version in FetchRequest::VERSIONS.min..=FetchRequest::VERSIONS.max {
            let mut frame = fetch_request(version, -1, 1_000_000, 52_428_800);
            let prefix = parse_request_prefix(&frame).unwrap();
            assert!(cap_fetch_bytes(&mut frame, &prefix, 50_000).unwrap(), "v{version}");
            assert_eq!(decoded_limits(&frame, version), (50_000, 50_000), "v{version}");
            let mut small = fetch_request(version, -1, 1, 10_000);
            let prefix = parse_request_prefix(&small).unwrap();
            assert!(!cap_fetch_bytes(&mut small, &prefix, 50_000).unwrap(), "v{version}");
            assert_eq!(decoded_limits(&small, version), (1, 10_000), "v{version}");
        }
    }

    #[test]
    fn follower_fetches_and_versions_without_max_bytes_are_left_alone() {
        let mut follower = fetch_request(11, 2, 1, 52_428_800);
        let original = follower.clone();
        let prefix = parse_request_prefix(&follower).unwrap();
        assert!(!cap_fetch_bytes(&mut follower, &prefix, 50_000).unwrap());
        assert_eq!(follower, original);
        let mut old = request(FETCH, 2, 7, Some("consumer-1"));
        old.extend((-1i32).to_be_bytes()); // replica_id, max_wait_ms, min_bytes, no topics
        old.extend(500i32.to_be_bytes());
        old.extend(1i32.to_be_bytes());
        old.extend(0i32.to_be_bytes());
        let original = old.clone();
        let prefix = parse_request_prefix(&old).unwrap();
        assert!(!cap_fetch_bytes(&mut old, &prefix, 50_000).unwrap());
        assert_eq!(old, original);
        let mut truncated = fetch_request(11, -1, 1, 52_428_800);
        truncated.truncate(prefix.client_id_end + 10);
        let prefix = parse_request_prefix(&truncated).unwrap();
        assert!(cap_fetch_bytes(&mut truncated, &prefix, 50_000).is_err());
    }

    #[test]
    fn a_share_fetch_is_capped_in_place_and_min_bytes_follows() {
        use kafka_protocol::messages::{GroupId, RequestHeader, ShareFetchRequest};
        use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
        let frame_with = |min_bytes: i32, max_bytes: i32| {
            let mut out = bytes::BytesMut::new();
            RequestHeader::default()
                .with_request_api_key(SHARE_FETCH)
                .with_request_api_version(1)
                .with_correlation_id(3)
                .with_client_id(Some(StrBytes::from_static_str("share-1")))
                .encode(&mut out, 2)
                .unwrap();
            ShareFetchRequest::default()
                .with_group_id(Some(GroupId(StrBytes::from_static_str("queue-group"))))
                .with_member_id(Some(StrBytes::from_static_str("member-with-a-longer-id")))
                .with_share_session_epoch(4)
                .with_max_wait_ms(500)
                .with_min_bytes(min_bytes)
                .with_max_bytes(max_bytes)
                .with_max_records(500)
                .with_batch_size(100)
                .encode(&mut out, 1)
                .unwrap();
            out.to_vec()
        };
        let decoded = |frame: &[u8]| {
            let mut buf = bytes::Bytes::copy_from_slice(frame);
            RequestHeader::decode(&mut buf, 2).unwrap();
            ShareFetchRequest::decode(&mut buf, 1).unwrap()
        };
        let mut frame = frame_with(1_000_000, 52_428_800);
        let prefix = parse_request_prefix(&frame).unwrap();
        assert!(cap_share_fetch_bytes(&mut frame, &prefix, 50_000).unwrap());
        let capped = decoded(&frame);
        assert_eq!((capped.min_bytes, capped.max_bytes), (50_000, 50_000));
        assert_eq!(
            (capped.share_session_epoch, capped.max_wait_ms, capped.max_records),
            (4, 500, 500)
        );
        let mut small = frame_with(1, 10_000);
        let original = small.clone();
        assert!(!cap_share_fetch_bytes(&mut small, &prefix, 50_000).unwrap());
        assert_eq!(small, original);
        let mut truncated = frame_with(1, 52_428_800);
        truncated.truncate(prefix.client_id_end + 20);
        assert!(cap_share_fetch_bytes(&mut truncated, &prefix, 50_000).is_err());
    }

    fn request(api_key: i16, version: i16, corr: i32, client: Option<&str>) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend(api_key.to_be_bytes());
        out.extend(version.to_be_bytes());
        out.extend(corr.to_be_bytes());
        match client {
            Some(c) => {
                out.extend((c.len() as i16).to_be_bytes());
                out.extend(c.as_bytes());
            }
            None => out.extend((-1i16).to_be_bytes()),
        }
        out
    }

    #[test]
    fn frame_limits() {
        assert!(check_frame_size(9, MIN_REQUEST_FRAME_BYTES, 100).is_err());
        assert!(check_frame_size(10, MIN_REQUEST_FRAME_BYTES, 100).is_ok());
        assert!(check_frame_size(101, MIN_REQUEST_FRAME_BYTES, 100).is_err());
        let tls = check_frame_size(0x16030100, MIN_REQUEST_FRAME_BYTES, 100 << 20).unwrap_err();
        assert!(tls.0.contains("TLS"), "{tls}");
    }

    #[test]
    fn request_prefix_with_and_without_client_id() {
        let frame = request(3, 12, 7, Some("app"));
        let prefix = parse_request_prefix(&frame).unwrap();
        assert_eq!((prefix.api_key, prefix.api_version, prefix.correlation_id), (3, 12, 7));
        assert_eq!(prefix.client_id.as_deref(), Some("app"));
        assert_eq!(prefix.client_id_end, 13);
        let null = parse_request_prefix(&request(18, 3, 1, None)).unwrap();
        assert_eq!(null.client_id, None);
        let mut overrun = request(3, 1, 1, Some("abc"));
        overrun.truncate(12);
        assert!(parse_request_prefix(&overrun).is_err());
        assert!(parse_request_prefix(&[0, 3]).is_err());
    }

    #[test]
    fn uvarints_round_trip_and_reject_overlong() {
        for value in [0u64, 1, 127, 128, 300, 16_383, 16_384, u32::MAX as u64] {
            let mut out = Vec::new();
            write_uvarint(&mut out, value);
            assert_eq!(read_uvarint(&out, 0).unwrap(), (value, out.len()));
        }
        assert!(read_uvarint(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x01], 0).is_err());
        assert!(read_uvarint(&[0x80], 0).is_err());
    }

    #[test]
    fn produce_acks_in_each_layout() {
        let mut v2 = request(0, 2, 1, Some("c"));
        v2.extend((-1i16).to_be_bytes());
        assert_eq!(produce_acks(&v2, &parse_request_prefix(&v2).unwrap()).unwrap(), -1);
        let mut v3 = request(0, 3, 1, Some("c"));
        v3.extend(2i16.to_be_bytes());
        v3.extend(b"tx");
        v3.extend(0i16.to_be_bytes());
        assert_eq!(produce_acks(&v3, &parse_request_prefix(&v3).unwrap()).unwrap(), 0);
        let mut v9 = request(0, 9, 1, Some("c"));
        v9.push(0); // header tags
        v9.push(3);
        v9.extend(b"tx");
        v9.extend(1i16.to_be_bytes());
        assert_eq!(produce_acks(&v9, &parse_request_prefix(&v9).unwrap()).unwrap(), 1);
        let short = request(0, 9, 1, Some("c"));
        assert!(produce_acks(&short, &parse_request_prefix(&short).unwrap()).is_err());
    }

    #[test]
    fn producer_ids_from_batches() {
        let mut batch = vec![0u8; 61];
        batch[8..12].copy_from_slice(&49i32.to_be_bytes());
        batch[16] = 2;
        batch[43..51].copy_from_slice(&42i64.to_be_bytes());
        let mut two = batch.clone();
        let mut other = batch.clone();
        other[43..51].copy_from_slice(&(-1i64).to_be_bytes());
        two.extend(other);
        let mut ids = Vec::new();
        batch_producer_ids(&two, &mut ids);
        assert_eq!(ids, vec![42]);
        let mut none = Vec::new();
        batch_producer_ids(&batch[..60], &mut none);
        assert!(none.is_empty());
    }

    #[test]
    fn throttle_is_raised_never_lowered() {
        let mut frame = vec![0, 0, 0, 1, 0, 0, 0, 50];
        raise_i32_at(&mut frame, 4, 20);
        assert_eq!(i32_at(&frame, 4).unwrap(), 50);
        raise_i32_at(&mut frame, 4, 900);
        assert_eq!(i32_at(&frame, 4).unwrap(), 900);
        raise_i32_at(&mut frame, 4, i64::MAX);
        assert_eq!(i32_at(&frame, 4).unwrap(), i32::MAX);
    }

    #[test]
    fn hostile_array_counts_are_malformed() {
        // produce v9 response: corr, header tags, a topic count far above the bytes left
        let frame = [0u8, 0, 0, 1, 0, 0xff, 0xff, 0xff, 0x0f];
        assert!(produce_positions(&frame, 9).is_err());
        assert!(fetch_tags_position(&[0, 0, 0, 1, 0], 16).is_err());
    }
}
