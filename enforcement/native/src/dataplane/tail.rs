//! The tail of a large response streaming through (the fields after its last records, which may
//! hold broker addresses), rewritten without changing its length: the frame's length prefix has
//! already gone to the client.
//!
//! Two tails: a Fetch v16+ response's top-level tagged fields, whose tag 0 holds KIP-951
//! NodeEndpoints, and a ShareFetch response's NodeEndpoints array with its top-level tagged fields.
//! A tail is decoded and re-encoded by `kafka-protocol` behind the fields of an empty message, as
//! the whole-frame rewrite decodes the whole message, so a rewrite that happens to keep the length
//! gives the same bytes. A shorter one is padded with an unknown tag (clients skip unknown tags);
//! when the gateway's addresses do not fit, the endpoints are dropped and the padding takes their
//! place: the client learns no leader from this response and refreshes its metadata, as it does
//! with brokers older than KIP-951.

use std::collections::BTreeMap;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{FetchResponse, ShareFetchResponse};
use kafka_protocol::protocol::{Decodable, Encodable};

use super::rewrite::{decode, layout_version, swap, Address};
use super::wire::{Malformed, FETCH, SHARE_FETCH};

/// A response whose streamed tail may carry broker addresses.
pub trait EndpointTail: Encodable + Decodable + Clone {
    const API_KEY: i16;
    /// The fields before the tail of this response with nothing in them.
    const EMPTY_PREFIX: &'static [u8];
    fn addresses(&self) -> Vec<Address>;
    fn map_addresses(&mut self, map: &dyn Fn(&str, i32) -> Option<Address>) -> Result<(), Malformed>;
    fn clear_endpoints(&mut self);
    fn unknown_tags(&mut self) -> &mut BTreeMap<i32, Bytes>;
}

/// One impl per response type: the crate's messages share no trait for their NodeEndpoints, so
/// the same few lines are written for each by this macro.
macro_rules! endpoint_tail {
    ($message:ty, $api_key:expr, $empty_prefix:expr) => {
        impl EndpointTail for $message {
            const API_KEY: i16 = $api_key;
            const EMPTY_PREFIX: &'static [u8] = $empty_prefix;

            fn addresses(&self) -> Vec<Address> {
                self.node_endpoints
                    .iter()
                    .map(|b| (b.host.to_string(), b.port))
                    .collect()
            }

            fn map_addresses(&mut self, map: &dyn Fn(&str, i32) -> Option<Address>) -> Result<(), Malformed> {
                self.node_endpoints
                    .iter_mut()
                    .try_for_each(|b| swap(&mut b.host, &mut b.port, map))
            }

            fn clear_endpoints(&mut self) {
                self.node_endpoints.clear();
            }

            fn unknown_tags(&mut self) -> &mut BTreeMap<i32, Bytes> {
                &mut self.unknown_tagged_fields
            }
        }
    };
}

// throttle_time_ms, error_code, session_id, an empty compact `responses` array
endpoint_tail!(FetchResponse, FETCH, &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
// throttle_time_ms, error_code, a null error_message, acquisition_lock_timeout_ms, an empty
// compact `responses` array
endpoint_tail!(ShareFetchResponse, SHARE_FETCH, &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);

/// A streamed tail to rewrite at its own length: `decode`, then `apply` once the gateway has a
/// listener for each of `addresses`.
pub struct TailRewrite<M> {
    version: i16,
    message: M,
    length: usize,
    pub addresses: Vec<Address>,
}

pub type FetchTailRewrite = TailRewrite<FetchResponse>;
pub type ShareFetchTailRewrite = TailRewrite<ShareFetchResponse>;

/// The unknown tag used for padding (one varint byte, like tag 0).
pub const PADDING_TAG: i32 = 127;

impl<M: EndpointTail> TailRewrite<M> {
    /// None when the tail holds no broker address (the usual case: no leader moved).
    pub fn decode(version: i16, tail: &[u8]) -> Result<Option<Self>, Malformed> {
        let version = layout_version(M::API_KEY, version);
        let mut buf = Bytes::from([M::EMPTY_PREFIX, tail].concat());
        let message: M = decode(&mut buf, M::API_KEY, version)?;
        let addresses = message.addresses();
        if addresses.is_empty() {
            return Ok(None);
        }
        Ok(Some(TailRewrite {
            version,
            message,
            length: tail.len(),
            addresses,
        }))
    }

    /// The tail with every address replaced by `map(address)`, exactly as long as before; fails
    /// closed on an unmapped address.
    pub fn apply(mut self, map: &dyn Fn(&str, i32) -> Option<Address>) -> Result<Vec<u8>, Malformed> {
        self.message.map_addresses(map)?;
        if let Some(out) = self.at_length(self.message.clone())? {
            return Ok(out);
        }
        let mut blank = self.message.clone();
        blank.clear_endpoints();
        if let Some(out) = self.at_length(blank)? {
            return Ok(out);
        }
        Err(Malformed(format!(
            "api {} response NodeEndpoints cannot be rewritten at the same length",
            M::API_KEY
        )))
    }

    /// `message`'s tail encoded at exactly the original length, padded if need be (None: it
    /// does not fit, or the padding tag is already taken).
    fn at_length(&self, mut message: M) -> Result<Option<Vec<u8>>, Malformed> {
        let exact = self.encode(&message)?;
        if exact.len() == self.length {
            return Ok(Some(exact));
        }
        if exact.len() > self.length || message.unknown_tags().contains_key(&PADDING_TAG) {
            return Ok(None);
        }
        message.unknown_tags().insert(PADDING_TAG, Bytes::new());
        let bare = self.encode(&message)?.len();
        let Some(missing) = self.length.checked_sub(bare) else {
            return Ok(None);
        };
        // the bytes to add: the filler plus its size varint's bytes beyond the first
        for width in 1..=5usize {
            let Some(filler) = missing.checked_sub(width - 1) else {
                break;
            };
            if uvarint_len(filler) != width {
                continue;
            }
            message
                .unknown_tags()
                .insert(PADDING_TAG, Bytes::from(vec![0u8; filler]));
            let out = self.encode(&message)?;
            if out.len() == self.length {
                return Ok(Some(out));
            }
        }
        Ok(None)
    }

    fn encode(&self, message: &M) -> Result<Vec<u8>, Malformed> {
        let mut out = BytesMut::new();
        message
            .encode(&mut out, self.version)
            .map_err(|e| Malformed(format!("cannot encode api {} response tail: {e}", M::API_KEY)))?;
        Ok(out[M::EMPTY_PREFIX.len()..].to_vec())
    }
}

fn uvarint_len(mut value: usize) -> usize {
    let mut n = 1;
    while value >= 0x80 {
        value >>= 7;
        n += 1;
    }
    n
}
