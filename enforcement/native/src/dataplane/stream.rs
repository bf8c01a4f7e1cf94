//! Large frames forwarded as they arrive instead of being held whole.
//!
//! A Produce request or Fetch response above `STREAM_MIN_BYTES` is not read into memory: the few
//! fields the gateway reads (request header, client id and acks; response header,
//! throttle_time_ms, error code and session id) come from the buffer, and the rest, almost all of
//! it record batches, is forwarded unread, spliced socket to socket where both ends are plain TCP
//! on Linux (splice.rs), copied through the buffers otherwise.
//!
//! Fetch v16+ responses end with top-level tagged fields that may hold KIP-951 NodeEndpoints
//! (broker addresses), behind every partition's records; ShareFetch responses end with a
//! NodeEndpoints array. So such a response is walked as it streams (`relay_records`):
//! structural fields are read and passed on, records forwarded
//! unread, and the tail after the last records is handed back to be rewritten. Its length prefix
//! left first, so the rewrite keeps the tail's length (tail.rs).
//!
//! Field layouts follow Kafka's FetchResponse.json (versions 0-18, flexible from 12) and
//! ShareFetchResponse.json (versions 1-2, one layout).

use std::io;
use std::pin::Pin;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::io::{LeanReader, LeanWriter, PlainSocket};
use super::splice::{Pipe, SpliceError, MIN_SPLICE_BYTES};
use super::wire::SHARE_FETCH;

/// Frames at least this large are streamed (smaller ones are held whole: one read, one write).
pub const STREAM_MIN_BYTES: usize = 64 * 1024;
/// The most of a streamed request read before it is forwarded: any real header and acks fit.
pub const REQUEST_HEAD_BYTES: usize = 16 * 1024;
/// A tail (Fetch's top-level tagged fields, ShareFetch's NodeEndpoints and tags) larger than
/// this is not an honest response's: refused.
const MAX_TAIL_BYTES: usize = 1024 * 1024;

/// A streamed frame that cannot go on: the source broke the protocol or ended (`Source`, the
/// sender's fault, logged as a bad frame), or the sink failed (`Sink`, a closed peer).
#[derive(Debug)]
pub enum Fault {
    Source(String),
    Sink(io::Error),
}

fn truncated(e: io::Error) -> Fault {
    Fault::Source(format!("frame truncated: {e}"))
}

/// Whether this platform splices (else large frames are copied, still without being held whole).
pub fn splice_available() -> bool {
    cfg!(target_os = "linux")
}

/// The rest of one frame, from `src` to `dst`: `left` bytes not yet read. While `held` is set,
/// what is read is kept there instead of written (a head that may still change).
pub struct Forward<'a, R, W> {
    src: &'a mut LeanReader<R>,
    dst: &'a mut LeanWriter<W>,
    pipe: &'a mut Option<Pipe>,
    pub left: usize,
    held: Option<Vec<u8>>,
    /// bytes moved by splice (observability)
    pub spliced: u64,
}

impl<'a, R, W> Forward<'a, R, W>
where
    R: AsyncRead + Unpin + PlainSocket,
    W: AsyncWrite + Unpin + PlainSocket,
{
    pub fn new(
        src: &'a mut LeanReader<R>,
        dst: &'a mut LeanWriter<W>,
        pipe: &'a mut Option<Pipe>,
        left: usize,
    ) -> Self {
        Forward {
            src,
            dst,
            pipe,
            left,
            held: None,
            spliced: 0,
        }
    }

    /// From now on keep what is read (see `release`).
    pub fn hold(&mut self) {
        self.held = Some(Vec::new());
    }

    /// The bytes kept since `hold`; later reads are written through again.
    pub fn take_held(&mut self) -> Vec<u8> {
        self.held.take().unwrap_or_default()
    }

    pub async fn write(&mut self, bytes: &[u8]) -> Result<(), Fault> {
        match &mut self.held {
            Some(held) => held.extend_from_slice(bytes),
            None => self.dst.write_all(bytes).await.map_err(Fault::Sink)?,
        }
        Ok(())
    }

    fn claim(&mut self, n: usize) -> Result<(), Fault> {
        if n > self.left {
            return Err(Fault::Source(format!(
                "a field of {n} bytes runs past the frame ({} bytes left)",
                self.left
            )));
        }
        self.left -= n;
        Ok(())
    }

    async fn field<const N: usize>(&mut self) -> Result<[u8; N], Fault> {
        self.claim(N)?;
        let mut out = [0u8; N];
        self.src.read_exact(&mut out).await.map_err(truncated)?;
        self.write(&out).await?;
        Ok(out)
    }

    pub async fn i16(&mut self) -> Result<i16, Fault> {
        Ok(i16::from_be_bytes(self.field::<2>().await?))
    }

    pub async fn i32(&mut self) -> Result<i32, Fault> {
        Ok(i32::from_be_bytes(self.field::<4>().await?))
    }

    pub async fn uvarint(&mut self) -> Result<u64, Fault> {
        let mut value = 0u64;
        for shift in (0..35).step_by(7) {
            let [byte] = self.field::<1>().await?;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(Fault::Source("varint longer than 5 bytes".into()))
    }

    /// `n` opaque bytes, passed on unread: spliced when large and both ends are plain sockets.
    pub async fn pass(&mut self, n: usize) -> Result<(), Fault> {
        self.claim(n)?;
        let buffered = n.min(self.src.buffer().len());
        if self.held.is_none() && n - buffered >= MIN_SPLICE_BYTES && self.pipe_ready() {
            // what the reader already holds goes first, then the socket's bytes in the kernel
            self.dst
                .write_all(&self.src.buffer()[..buffered])
                .await
                .map_err(Fault::Sink)?;
            Pin::new(&mut *self.src).consume(buffered);
            self.dst.flush().await.map_err(Fault::Sink)?;
            let (Some(from), Some(to), Some(pipe)) = (
                self.src.get_ref().plain_socket(),
                self.dst.get_ref().plain_socket(),
                self.pipe.as_mut(),
            ) else {
                return Err(Fault::Sink(io::ErrorKind::Unsupported.into()));
            };
            pipe.transfer(from, to, n - buffered).await.map_err(|e| match e {
                SpliceError::Source(e) => truncated(e),
                SpliceError::Sink(e) => Fault::Sink(e),
            })?;
            self.spliced += (n - buffered) as u64;
            return Ok(());
        }
        let mut rest = n;
        while rest > 0 {
            let chunk = self.src.fill_buf().await.map_err(truncated)?;
            if chunk.is_empty() {
                return Err(truncated(io::ErrorKind::UnexpectedEof.into()));
            }
            let k = chunk.len().min(rest);
            match &mut self.held {
                Some(held) => held.extend_from_slice(&chunk[..k]),
                None => self.dst.write_all(&chunk[..k]).await.map_err(Fault::Sink)?,
            }
            Pin::new(&mut *self.src).consume(k);
            rest -= k;
        }
        Ok(())
    }

    /// Whether both ends are plain sockets and a pipe is open (opened on first use).
    fn pipe_ready(&mut self) -> bool {
        if self.src.get_ref().plain_socket().is_none() || self.dst.get_ref().plain_socket().is_none() {
            return false;
        }
        if self.pipe.is_none() {
            *self.pipe = Pipe::new().ok();
        }
        self.pipe.is_some()
    }

    /// The rest of the frame read, not written (the caller rewrites and writes it).
    pub async fn read_rest(&mut self, limit: usize) -> Result<Vec<u8>, Fault> {
        if self.left > limit {
            return Err(Fault::Source(format!(
                "{} bytes left where at most {limit} were expected",
                self.left
            )));
        }
        let mut out = vec![0u8; self.left];
        self.src.read_exact(&mut out).await.map_err(truncated)?;
        self.left = 0;
        Ok(out)
    }

    /// The rest of the frame read and dropped (a response replaced by the gateway's own).
    pub async fn discard_rest(&mut self) -> Result<(), Fault> {
        while self.left > 0 {
            let chunk = self.src.fill_buf().await.map_err(truncated)?;
            if chunk.is_empty() {
                return Err(truncated(io::ErrorKind::UnexpectedEof.into()));
            }
            let k = chunk.len().min(self.left);
            Pin::new(&mut *self.src).consume(k);
            self.left -= k;
        }
        Ok(())
    }

    async fn tags(&mut self) -> Result<(), Fault> {
        for _ in 0..self.uvarint().await? {
            self.uvarint().await?;
            let size = self.uvarint().await?;
            self.pass(size as usize).await?;
        }
        Ok(())
    }

    async fn array_len(&mut self, flexible: bool) -> Result<usize, Fault> {
        let count = if flexible {
            self.uvarint().await?.saturating_sub(1) as usize
        } else {
            let n = self.i32().await?;
            if n < -1 {
                return Err(Fault::Source(format!("negative array length {n}")));
            }
            n.max(0) as usize
        };
        // every element takes at least one byte: a larger count cannot be honest
        if count > self.left {
            return Err(Fault::Source(format!(
                "array of {count} elements in {} bytes",
                self.left
            )));
        }
        Ok(count)
    }

    async fn bytes(&mut self, flexible: bool) -> Result<(), Fault> {
        let length = if flexible {
            self.uvarint().await? as i64 - 1
        } else {
            i64::from(self.i32().await?)
        };
        if length > 0 {
            self.pass(length as usize).await?;
        }
        Ok(())
    }

    async fn string(&mut self, flexible: bool) -> Result<(), Fault> {
        let length = if flexible {
            self.uvarint().await? as i64 - 1
        } else {
            i64::from(self.i16().await?)
        };
        if length > 0 {
            self.pass(length as usize).await?;
        }
        Ok(())
    }
}

/// A streamed Fetch or ShareFetch (`api_key`) response's head, kept (not written).
pub async fn read_head<R, W>(forward: &mut Forward<'_, R, W>, api_key: i16, version: i16) -> Result<Vec<u8>, Fault>
where
    R: AsyncRead + Unpin + PlainSocket,
    W: AsyncWrite + Unpin + PlainSocket,
{
    if api_key == SHARE_FETCH {
        read_share_fetch_head(forward).await
    } else {
        read_fetch_head(forward, version).await
    }
}

/// After `read_head`: the records passed on, and the tail that may hold broker addresses
/// returned unwritten (None: nothing to rewrite).
pub async fn relay_records<R, W>(
    forward: &mut Forward<'_, R, W>,
    api_key: i16,
    version: i16,
) -> Result<Option<Vec<u8>>, Fault>
where
    R: AsyncRead + Unpin + PlainSocket,
    W: AsyncWrite + Unpin + PlainSocket,
{
    if api_key == SHARE_FETCH {
        relay_share_fetch_records(forward).await.map(Some)
    } else {
        relay_fetch_records(forward, version).await
    }
}

/// A Fetch response's head, kept (not written): header, throttle_time_ms (v1+), error code and
/// session id (v7+). `forward.left` must be the frame's size.
async fn read_fetch_head<R, W>(forward: &mut Forward<'_, R, W>, version: i16) -> Result<Vec<u8>, Fault>
where
    R: AsyncRead + Unpin + PlainSocket,
    W: AsyncWrite + Unpin + PlainSocket,
{
    forward.hold();
    forward.i32().await?; // correlation id
    if version >= 12 {
        forward.tags().await?;
    }
    if version >= 1 {
        forward.i32().await?;
    }
    if version >= 7 {
        forward.i16().await?;
        forward.i32().await?;
    }
    Ok(forward.take_held())
}

/// After `read_fetch_head`: the responses passed on (records unread). For v16+ the top-level
/// tagged section is returned unwritten, to be rewritten at the same length; before v16 there is
/// none that matters and everything is passed on.
async fn relay_fetch_records<R, W>(forward: &mut Forward<'_, R, W>, version: i16) -> Result<Option<Vec<u8>>, Fault>
where
    R: AsyncRead + Unpin + PlainSocket,
    W: AsyncWrite + Unpin + PlainSocket,
{
    if version < super::wire::FETCH_FIRST_NODE_ENDPOINTS {
        forward.pass(forward.left).await?;
        return Ok(None);
    }
    let flexible = true;
    for _ in 0..forward.array_len(flexible).await? {
        if version >= 13 {
            forward.pass(16).await?; // topic id
        } else {
            forward.string(flexible).await?;
        }
        for _ in 0..forward.array_len(flexible).await? {
            // partition index, error, high watermark, last stable offset, log start offset
            forward.pass(4 + 2 + 8 + 8 + 8).await?;
            for _ in 0..forward.array_len(flexible).await? {
                forward.pass(16).await?; // aborted transaction: producer id, first offset
                forward.tags().await?;
            }
            forward.pass(4).await?; // preferred read replica
            forward.bytes(flexible).await?; // records: forwarded unread
            forward.tags().await?;
        }
        forward.tags().await?;
    }
    if forward.left == 0 {
        return Err(Fault::Source(format!(
            "fetch response v{version} ends before its tagged fields"
        )));
    }
    Ok(Some(forward.read_rest(MAX_TAIL_BYTES).await?))
}

/// A ShareFetch response's head, kept (not written): header, throttle_time_ms and error code.
/// `forward.left` must be the frame's size.
async fn read_share_fetch_head<R, W>(forward: &mut Forward<'_, R, W>) -> Result<Vec<u8>, Fault>
where
    R: AsyncRead + Unpin + PlainSocket,
    W: AsyncWrite + Unpin + PlainSocket,
{
    forward.hold();
    forward.i32().await?; // correlation id
    forward.tags().await?;
    forward.i32().await?; // throttle_time_ms
    forward.i16().await?; // error code
    Ok(forward.take_held())
}

/// After `read_share_fetch_head`: the responses passed on (records unread); the tail
/// (NodeEndpoints and the top-level tagged fields) returned unwritten, to be rewritten at the same
/// length.
async fn relay_share_fetch_records<R, W>(forward: &mut Forward<'_, R, W>) -> Result<Vec<u8>, Fault>
where
    R: AsyncRead + Unpin + PlainSocket,
    W: AsyncWrite + Unpin + PlainSocket,
{
    let flexible = true;
    forward.string(flexible).await?; // error message
    forward.pass(4).await?; // acquisition lock timeout
    for _ in 0..forward.array_len(flexible).await? {
        forward.pass(16).await?; // topic id
        for _ in 0..forward.array_len(flexible).await? {
            forward.pass(4 + 2).await?; // partition index, error code
            forward.string(flexible).await?; // error message
            forward.pass(2).await?; // acknowledge error code
            forward.string(flexible).await?; // acknowledge error message
            forward.pass(4 + 4).await?; // current leader: id, epoch
            forward.tags().await?;
            forward.bytes(flexible).await?; // records: forwarded unread
            for _ in 0..forward.array_len(flexible).await? {
                forward.pass(8 + 8 + 2).await?; // acquired records: first, last offset, delivery count
                forward.tags().await?;
            }
            forward.tags().await?;
        }
        forward.tags().await?;
    }
    if forward.left == 0 {
        return Err(Fault::Source(
            "share fetch response ends before its NodeEndpoints".into(),
        ));
    }
    forward.read_rest(MAX_TAIL_BYTES).await
}

#[cfg(test)]
mod tests {
    use super::super::rewrite::{response_header_version, AddressRewrite};
    use super::super::tail::{FetchTailRewrite, ShareFetchTailRewrite, PADDING_TAG};
    use super::super::wire::FETCH;
    use super::*;
    use bytes::{Bytes, BytesMut};
    use kafka_protocol::messages::fetch_response::{
        AbortedTransaction, FetchableTopicResponse, NodeEndpoint, PartitionData,
    };
    use kafka_protocol::messages::share_fetch_response::{
        AcquiredRecords, LeaderIdAndEpoch, NodeEndpoint as ShareNodeEndpoint, PartitionData as ShareFetchPartition,
        ShareFetchableTopicResponse,
    };
    use kafka_protocol::messages::{
        BrokerId, FetchResponse, ProducerId, ResponseHeader, ShareFetchResponse, TopicName,
    };
    use kafka_protocol::protocol::{Encodable, StrBytes};
    use std::task::{Context, Poll};
    use tokio::io::ReadBuf;

    type Mapper = dyn Fn(&str, i32) -> Option<(String, i32)>;

    /// Bytes handed out in the given chunk sizes, one per read: arbitrary read boundaries.
    struct Chunked {
        data: Vec<u8>,
        pos: usize,
        sizes: Vec<usize>,
        turn: usize,
    }

    impl AsyncRead for Chunked {
        fn poll_read(mut self: Pin<&mut Self>, _cx: &mut Context<'_>, out: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
            let size = self.sizes[self.turn % self.sizes.len()].max(1);
            self.turn += 1;
            let n = size.min(out.remaining()).min(self.data.len() - self.pos);
            let start = self.pos;
            out.put_slice(&self.data[start..start + n]);
            self.pos += n;
            Poll::Ready(Ok(()))
        }
    }

    impl PlainSocket for Chunked {
        fn plain_socket(&self) -> Option<&tokio::net::TcpStream> {
            None
        }
    }

    impl PlainSocket for Vec<u8> {
        fn plain_socket(&self) -> Option<&tokio::net::TcpStream> {
            None
        }
    }

    fn gateway(host: &str, port: i32) -> Option<(String, i32)> {
        (host.starts_with("broker-")).then(|| ("127.0.0.1".to_string(), port + 10_000))
    }

    fn long_gateway(_host: &str, port: i32) -> Option<(String, i32)> {
        Some(("a-much-longer-gateway-hostname.example.internal".to_string(), port))
    }

    fn response(version: i16, hosts: &[&str], record_sizes: &[usize]) -> Vec<u8> {
        let partitions = record_sizes
            .iter()
            .enumerate()
            .map(|(i, &n)| {
                PartitionData::default()
                    .with_partition_index(i as i32)
                    .with_high_watermark(1000 + i as i64)
                    .with_aborted_transactions(Some(
                        vec![AbortedTransaction::default().with_producer_id(ProducerId(7))],
                    ))
                    .with_records(Some(Bytes::from(
                        (0..n).map(|b| (b * 31 + i) as u8).collect::<Vec<u8>>(),
                    )))
            })
            .collect();
        let mut topic = FetchableTopicResponse::default().with_partitions(partitions);
        if version < 13 {
            topic.topic = TopicName(StrBytes::from_static_str("orders"));
        }
        let endpoints = hosts
            .iter()
            .enumerate()
            .map(|(i, h)| {
                NodeEndpoint::default()
                    .with_node_id(BrokerId(i as i32))
                    .with_host(StrBytes::from_string(h.to_string()))
                    .with_port(9092 + i as i32)
            })
            .collect();
        let mut message = FetchResponse::default()
            .with_throttle_time_ms(3)
            .with_session_id(42)
            .with_responses(vec![topic.clone(), topic])
            .with_node_endpoints(endpoints);
        message.unknown_tagged_fields.insert(5, Bytes::from_static(b"keep"));
        let mut out = BytesMut::new();
        let hv = response_header_version(1, version).unwrap();
        ResponseHeader::default()
            .with_correlation_id(9)
            .encode(&mut out, hv)
            .unwrap();
        message.encode(&mut out, version).unwrap();
        let mut framed = (out.len() as i32).to_be_bytes().to_vec();
        framed.extend_from_slice(&out);
        framed
    }

    /// The streamed path as the data plane runs it, minus the socket plumbing.
    fn stream(version: i16, framed: &[u8], sizes: Vec<usize>, map: &Mapper) -> Result<Vec<u8>, Fault> {
        stream_api(FETCH, version, framed, sizes, map)
    }

    fn stream_api(key: i16, version: i16, framed: &[u8], sizes: Vec<usize>, map: &Mapper) -> Result<Vec<u8>, Fault> {
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        runtime.block_on(async {
            let source = Chunked {
                data: framed.to_vec(),
                pos: 0,
                sizes,
                turn: 0,
            };
            let mut src = LeanReader::new(source);
            let mut dst = LeanWriter::new(Vec::new());
            let mut pipe = None;
            let mut size = [0u8; 4];
            src.read_exact(&mut size).await.map_err(truncated)?;
            let size = i32::from_be_bytes(size) as usize;
            let mut forward = Forward::new(&mut src, &mut dst, &mut pipe, size);
            let head = read_head(&mut forward, key, version).await?;
            forward.write(&(size as i32).to_be_bytes()).await?;
            forward.write(&head).await?;
            if let Some(tail) = relay_records(&mut forward, key, version).await? {
                let rewritten = if key == SHARE_FETCH {
                    ShareFetchTailRewrite::decode(version, &tail).and_then(|r| r.map(|r| r.apply(map)).transpose())
                } else {
                    FetchTailRewrite::decode(version, &tail).and_then(|r| r.map(|r| r.apply(map)).transpose())
                };
                let out = rewritten.map_err(|m| Fault::Source(m.0))?.unwrap_or(tail);
                forward.write(&out).await?;
            }
            assert_eq!(forward.left, 0);
            dst.flush().await.map_err(Fault::Sink)?;
            Ok(dst.get_ref().clone())
        })
    }

    fn whole_rewrite(version: i16, framed: &[u8], map: &Mapper) -> Vec<u8> {
        whole_rewrite_api(FETCH, version, framed, map)
    }

    fn whole_rewrite_api(key: i16, version: i16, framed: &[u8], map: &Mapper) -> Vec<u8> {
        let body = AddressRewrite::decode(key, version, &framed[4..])
            .unwrap()
            .unwrap()
            .apply(map)
            .unwrap();
        let mut out = (body.len() as i32).to_be_bytes().to_vec();
        out.extend(body);
        out
    }

    fn decode(version: i16, framed: &[u8]) -> FetchResponse {
        use kafka_protocol::protocol::Decodable;
        let mut buf = Bytes::copy_from_slice(&framed[4..]);
        ResponseHeader::decode(&mut buf, response_header_version(1, version).unwrap()).unwrap();
        let message = FetchResponse::decode(&mut buf, version).unwrap();
        assert!(buf.is_empty());
        message
    }

    fn boundaries(seed: u64) -> Vec<usize> {
        // a small deterministic generator: read sizes from 1 byte to 100 KiB
        let mut x = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (0..97)
            .map(|_| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                match (x >> 33) % 4 {
                    0 => 1 + (x >> 40) as usize % 7,
                    1 => 1 + (x >> 40) as usize % 300,
                    2 => 1 + (x >> 40) as usize % 20_000,
                    _ => 1 + (x >> 40) as usize % 100_000,
                }
            })
            .collect()
    }

    #[test]
    fn same_length_rewrite_streams_to_the_whole_frame_rewrite_at_any_read_boundaries() {
        for version in [16i16, 17, 18] {
            // "broker-1" (8) -> "127.0.0.1" (9) and a port one byte... same varint widths: the
            // rewritten hosts are chosen with the lengths of the originals
            let framed = response(version, &["broker-11", "broker-22"], &[200_000, 5, 0, 70_000]);
            let expected = whole_rewrite(version, &framed, &gateway);
            assert_eq!(expected.len(), framed.len(), "fixture keeps the length");
            for seed in 0..40 {
                let got = stream(version, &framed, boundaries(seed), &gateway).unwrap();
                assert_eq!(got, expected, "v{version} seed {seed}");
            }
            let got = stream(version, &framed, vec![1], &gateway).unwrap();
            assert_eq!(got, expected, "v{version}, one byte per read");
        }
    }

    #[test]
    fn a_shorter_rewrite_is_padded_with_an_unknown_tag() {
        let version = 17;
        let framed = response(version, &["broker-1-long-name.internal"], &[90_000, 3]);
        for seed in 0..10 {
            let got = stream(version, &framed, boundaries(seed), &gateway).unwrap();
            assert_eq!(got.len(), framed.len());
            let decoded = decode(version, &got);
            let original = decode(version, &framed);
            assert_eq!(decoded.node_endpoints.len(), 1);
            assert_eq!(decoded.node_endpoints[0].host.as_str(), "127.0.0.1");
            assert_eq!(decoded.node_endpoints[0].port, 19092);
            assert_eq!(decoded.responses, original.responses, "records unchanged");
            assert_eq!(
                decoded.unknown_tagged_fields.get(&5).map(|b| b.to_vec()),
                Some(b"keep".to_vec())
            );
            assert!(decoded.unknown_tagged_fields.contains_key(&PADDING_TAG));
        }
    }

    #[test]
    fn a_rewrite_that_does_not_fit_blanks_the_endpoints() {
        let version = 16;
        let framed = response(version, &["b1", "b2"], &[80_000]);
        let got = stream(version, &framed, boundaries(3), &long_gateway).unwrap();
        assert_eq!(got.len(), framed.len());
        let decoded = decode(version, &got);
        assert!(
            decoded.node_endpoints.is_empty(),
            "no leader learnt: the client refreshes metadata"
        );
        assert_eq!(decoded.responses, decode(version, &framed).responses);
        assert_eq!(
            decoded.unknown_tagged_fields.get(&5).map(|b| b.to_vec()),
            Some(b"keep".to_vec())
        );
    }

    #[test]
    fn responses_without_endpoints_and_older_versions_pass_unchanged() {
        for version in [12i16, 15, 16, 18] {
            let framed = response(version, &[], &[100_000, 1]);
            for seed in 0..5 {
                assert_eq!(stream(version, &framed, boundaries(seed), &gateway).unwrap(), framed);
            }
        }
    }

    #[test]
    fn truncated_and_overrunning_responses_are_the_senders_fault() {
        let version = 16;
        let framed = response(version, &["broker-11"], &[100_000]);
        for cut in [5usize, 12, 40, 60_000, framed.len() - 3] {
            let err = stream(version, &framed[..cut], vec![1000], &gateway).unwrap_err();
            assert!(matches!(err, Fault::Source(_)), "cut {cut}: {err:?}");
        }
        // a size prefix smaller than the fields inside it
        let mut short = framed.clone();
        short[..4].copy_from_slice(&((framed.len() - 4 - 50_000) as i32).to_be_bytes());
        let err = stream(version, &short, vec![4096], &gateway).unwrap_err();
        assert!(matches!(err, Fault::Source(_)), "{err:?}");
    }

    fn share_response(hosts: &[&str], record_sizes: &[usize]) -> Vec<u8> {
        let partitions = record_sizes
            .iter()
            .enumerate()
            .map(|(i, &n)| {
                ShareFetchPartition::default()
                    .with_partition_index(i as i32)
                    .with_error_message(Some(StrBytes::from_static_str("kept")))
                    .with_current_leader(LeaderIdAndEpoch::default().with_leader_id(2))
                    .with_records(Some(Bytes::from(
                        (0..n).map(|b| (b * 17 + i) as u8).collect::<Vec<u8>>(),
                    )))
                    .with_acquired_records(vec![AcquiredRecords::default()
                        .with_last_offset(9)
                        .with_delivery_count(1)])
            })
            .collect();
        let topic = ShareFetchableTopicResponse::default().with_partitions(partitions);
        let endpoints = hosts
            .iter()
            .enumerate()
            .map(|(i, h)| {
                ShareNodeEndpoint::default()
                    .with_node_id(BrokerId(i as i32))
                    .with_host(StrBytes::from_string(h.to_string()))
                    .with_port(9092 + i as i32)
            })
            .collect();
        let mut message = ShareFetchResponse::default()
            .with_throttle_time_ms(3)
            .with_acquisition_lock_timeout_ms(30_000)
            .with_responses(vec![topic.clone(), topic])
            .with_node_endpoints(endpoints);
        message.unknown_tagged_fields.insert(5, Bytes::from_static(b"keep"));
        let mut out = BytesMut::new();
        ResponseHeader::default()
            .with_correlation_id(9)
            .encode(&mut out, 1)
            .unwrap();
        message.encode(&mut out, 1).unwrap(); // v2's layout is v1's
        let mut framed = (out.len() as i32).to_be_bytes().to_vec();
        framed.extend_from_slice(&out);
        framed
    }

    fn decode_share(framed: &[u8]) -> ShareFetchResponse {
        use kafka_protocol::protocol::Decodable;
        let mut buf = Bytes::copy_from_slice(&framed[4..]);
        ResponseHeader::decode(&mut buf, 1).unwrap();
        let message = ShareFetchResponse::decode(&mut buf, 1).unwrap();
        assert!(buf.is_empty());
        message
    }

    #[test]
    fn share_fetch_rewrite_streams_to_the_whole_frame_rewrite_at_any_read_boundaries() {
        let framed = share_response(&["broker-11", "broker-22"], &[200_000, 5, 0, 70_000]);
        for version in [1i16, 2] {
            let expected = whole_rewrite_api(SHARE_FETCH, version, &framed, &gateway);
            assert_eq!(expected.len(), framed.len(), "fixture keeps the length");
            assert_ne!(expected, framed);
            for seed in 0..40 {
                let got = stream_api(SHARE_FETCH, version, &framed, boundaries(seed), &gateway).unwrap();
                assert_eq!(got, expected, "v{version} seed {seed}");
            }
            let got = stream_api(SHARE_FETCH, version, &framed, vec![1], &gateway).unwrap();
            assert_eq!(got, expected, "v{version}, one byte per read");
        }
    }

    #[test]
    fn share_fetch_rewrites_are_padded_or_blanked_at_the_same_length() {
        let framed = share_response(&["broker-1-long-name.internal"], &[90_000, 3]);
        let original = decode_share(&framed);
        for seed in 0..10 {
            let got = stream_api(SHARE_FETCH, 2, &framed, boundaries(seed), &gateway).unwrap();
            assert_eq!(got.len(), framed.len());
            let decoded = decode_share(&got);
            assert_eq!(decoded.node_endpoints.len(), 1);
            assert_eq!(decoded.node_endpoints[0].host.as_str(), "127.0.0.1");
            assert_eq!(decoded.node_endpoints[0].port, 19092);
            assert_eq!(
                decoded.responses, original.responses,
                "records and acquired ranges unchanged"
            );
            assert_eq!(decoded.acquisition_lock_timeout_ms, 30_000);
            assert_eq!(
                decoded.unknown_tagged_fields.get(&5).map(|b| b.to_vec()),
                Some(b"keep".to_vec())
            );
            assert!(decoded.unknown_tagged_fields.contains_key(&PADDING_TAG));
        }
        let framed = share_response(&["b1", "b2"], &[80_000]);
        let got = stream_api(SHARE_FETCH, 1, &framed, boundaries(3), &long_gateway).unwrap();
        assert_eq!(got.len(), framed.len());
        let decoded = decode_share(&got);
        assert!(
            decoded.node_endpoints.is_empty(),
            "no leader learnt: the client refreshes metadata"
        );
        assert_eq!(decoded.responses, decode_share(&framed).responses);
    }

    #[test]
    fn share_fetch_responses_without_endpoints_pass_unchanged_and_broken_ones_are_the_senders_fault() {
        let framed = share_response(&[], &[100_000, 1]);
        for seed in 0..5 {
            assert_eq!(
                stream_api(SHARE_FETCH, 1, &framed, boundaries(seed), &gateway).unwrap(),
                framed
            );
        }
        let framed = share_response(&["broker-11"], &[100_000]);
        for cut in [5usize, 12, 40, 60_000, framed.len() - 3] {
            let err = stream_api(SHARE_FETCH, 1, &framed[..cut], vec![1000], &gateway).unwrap_err();
            assert!(matches!(err, Fault::Source(_)), "cut {cut}: {err:?}");
        }
        let mut unmapped = share_response(&["elsewhere"], &[100_000]);
        let err = stream_api(SHARE_FETCH, 1, &unmapped, vec![4096], &gateway).unwrap_err();
        assert!(
            matches!(err, Fault::Source(ref m) if m.contains("no gateway listener")),
            "{err:?}"
        );
        // a size prefix smaller than the fields inside it
        let len = unmapped.len();
        unmapped[..4].copy_from_slice(&((len - 4 - 50_000) as i32).to_be_bytes());
        let err = stream_api(SHARE_FETCH, 1, &unmapped, vec![4096], &gateway).unwrap_err();
        assert!(matches!(err, Fault::Source(_)), "{err:?}");
    }
}
