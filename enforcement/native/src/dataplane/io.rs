//! Socket halves and the buffers in front of them, sized for many idle connections.
//!
//! Why not tokio's `BufReader` / `BufWriter`: they own their buffer for the life of the
//! connection, and a gateway mostly holds idle connections (a consumer group's members between
//! polls, producers between batches). `LeanReader` gives its buffer back whenever it has been
//! drained and the socket has nothing more to read; `LeanWriter` whenever it has been flushed. An
//! idle proxied connection then holds no buffer at all, and a busy one allocates one per burst.
//! Like tokio's, a read or write at least as large as the buffer goes straight to the socket, so
//! large frames do not need large buffers.
//!
//! The client side is plain TCP or TLS; the enums keep the TCP socket reachable, so that large
//! frames can be moved socket to socket in the kernel (splice.rs).

use std::cell::RefCell;
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use tokio::io::{AsyncBufRead, AsyncRead, AsyncWrite, ReadBuf, ReadHalf, WriteHalf};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;

/// Bytes a reader or writer buffers at most: enough for a burst of pipelined small requests;
/// anything larger bypasses the buffer.
pub const BUFFER_BYTES: usize = 16 * 1024;
/// Buffers given back are kept for reuse by each worker thread, up to this many: a busy
/// connection takes and gives back a buffer several times per request, which would otherwise be
/// a malloc and a free each time. Bounded per thread, not per connection (512 KiB a thread).
const SPARE_BUFFERS_PER_THREAD: usize = 32;

thread_local! {
    static SPARE: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

/// An empty buffer of BUFFER_BYTES capacity, reused when this thread has one.
fn take_buffer() -> Vec<u8> {
    SPARE
        .with(|spare| spare.borrow_mut().pop())
        .unwrap_or_else(|| Vec::with_capacity(BUFFER_BYTES))
}

/// Hand `buf` back (left empty with no capacity).
fn give_back(buf: &mut Vec<u8>) {
    let mut buf = std::mem::take(buf);
    if buf.capacity() < BUFFER_BYTES {
        return;
    }
    buf.clear();
    SPARE.with(|spare| {
        let mut spare = spare.borrow_mut();
        if spare.len() < SPARE_BUFFERS_PER_THREAD {
            spare.push(buf);
        }
    });
}

pub enum ClientRead {
    Plain(OwnedReadHalf),
    Tls(ReadHalf<TlsStream<TcpStream>>),
}

pub enum ClientWrite {
    Plain(OwnedWriteHalf),
    Tls(WriteHalf<TlsStream<TcpStream>>),
}

/// The TCP socket under a plain half (None under TLS: its bytes are not the ones sent on).
pub trait PlainSocket {
    fn plain_socket(&self) -> Option<&TcpStream>;
}

impl PlainSocket for ClientRead {
    fn plain_socket(&self) -> Option<&TcpStream> {
        match self {
            ClientRead::Plain(half) => Some(half.as_ref()),
            ClientRead::Tls(_) => None,
        }
    }
}

impl PlainSocket for ClientWrite {
    fn plain_socket(&self) -> Option<&TcpStream> {
        match self {
            ClientWrite::Plain(half) => Some(half.as_ref()),
            ClientWrite::Tls(_) => None,
        }
    }
}

impl PlainSocket for OwnedReadHalf {
    fn plain_socket(&self) -> Option<&TcpStream> {
        Some(self.as_ref())
    }
}

impl PlainSocket for OwnedWriteHalf {
    fn plain_socket(&self) -> Option<&TcpStream> {
        Some(self.as_ref())
    }
}

impl AsyncRead for ClientRead {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ClientRead::Plain(half) => Pin::new(half).poll_read(cx, buf),
            ClientRead::Tls(half) => Pin::new(half).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for ClientWrite {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            ClientWrite::Plain(half) => Pin::new(half).poll_write(cx, buf),
            ClientWrite::Tls(half) => Pin::new(half).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ClientWrite::Plain(half) => Pin::new(half).poll_flush(cx),
            ClientWrite::Tls(half) => Pin::new(half).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ClientWrite::Plain(half) => Pin::new(half).poll_shutdown(cx),
            ClientWrite::Tls(half) => Pin::new(half).poll_shutdown(cx),
        }
    }
}

/// A buffered reader that holds no buffer while there is nothing to read.
pub struct LeanReader<R> {
    inner: R,
    /// the unread bytes are `buf[pos..]`; capacity 0 while idle
    buf: Vec<u8>,
    pos: usize,
}

impl<R: AsyncRead + Unpin> LeanReader<R> {
    pub fn new(inner: R) -> Self {
        LeanReader {
            inner,
            buf: Vec::new(),
            pos: 0,
        }
    }

    pub fn get_ref(&self) -> &R {
        &self.inner
    }

    /// The bytes read from the socket and not yet consumed.
    pub fn buffer(&self) -> &[u8] {
        &self.buf[self.pos..]
    }

    /// Whether a buffer is allocated (tests: an idle reader holds none).
    #[cfg(test)]
    pub fn holds_buffer(&self) -> bool {
        self.buf.capacity() > 0
    }
}

impl<R: AsyncRead + Unpin> AsyncBufRead for LeanReader<R> {
    fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        let this = self.get_mut();
        if this.pos >= this.buf.len() {
            this.buf.clear();
            this.pos = 0;
            if this.buf.capacity() == 0 {
                this.buf = take_buffer();
            }
            let mut read = ReadBuf::uninit(this.buf.spare_capacity_mut());
            match Pin::new(&mut this.inner).poll_read(cx, &mut read) {
                Poll::Ready(Ok(())) => {
                    let n = read.filled().len();
                    // SAFETY: poll_read initialised the first `n` bytes of the spare capacity
                    unsafe { this.buf.set_len(n) };
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => {
                    give_back(&mut this.buf); // nothing to read: no buffer while waiting
                    return Poll::Pending;
                }
            }
        }
        Poll::Ready(Ok(&this.buf[this.pos..]))
    }

    fn consume(self: Pin<&mut Self>, amt: usize) {
        let this = self.get_mut();
        this.pos = (this.pos + amt).min(this.buf.len());
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for LeanReader<R> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, out: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.pos >= this.buf.len() && out.remaining() >= BUFFER_BYTES {
            give_back(&mut this.buf);
            this.pos = 0;
            return Pin::new(&mut this.inner).poll_read(cx, out); // large reads skip the buffer
        }
        let available = ready!(Pin::new(&mut *this).poll_fill_buf(cx))?;
        let n = available.len().min(out.remaining());
        out.put_slice(&available[..n]);
        Pin::new(this).consume(n);
        Poll::Ready(Ok(()))
    }
}

/// A buffered writer that holds no buffer once flushed.
pub struct LeanWriter<W> {
    inner: W,
    /// bytes not yet written are `buf[written..]`
    buf: Vec<u8>,
    written: usize,
}

impl<W: AsyncWrite + Unpin> LeanWriter<W> {
    pub fn new(inner: W) -> Self {
        LeanWriter {
            inner,
            buf: Vec::new(),
            written: 0,
        }
    }

    pub fn get_ref(&self) -> &W {
        &self.inner
    }

    /// Whether a buffer is allocated (tests: a flushed writer holds none).
    #[cfg(test)]
    pub fn holds_buffer(&self) -> bool {
        self.buf.capacity() > 0
    }

    fn poll_write_buffered(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.written < self.buf.len() {
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &self.buf[self.written..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.written += n;
        }
        give_back(&mut self.buf);
        self.written = 0;
        Poll::Ready(Ok(()))
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for LeanWriter<W> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, src: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.buf.len() + src.len() > BUFFER_BYTES {
            ready!(this.poll_write_buffered(cx))?;
        }
        if src.len() >= BUFFER_BYTES {
            return Pin::new(&mut this.inner).poll_write(cx, src);
        }
        if this.buf.capacity() == 0 {
            this.buf = take_buffer();
        }
        this.buf.extend_from_slice(src);
        Poll::Ready(Ok(src.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_write_buffered(cx))?;
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_write_buffered(cx))?;
        Pin::new(&mut this.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn reader_gives_its_buffer_back_when_drained_and_waiting() {
        runtime().block_on(async {
            let (mut tx, rx) = tokio::io::duplex(1 << 20);
            let mut reader = LeanReader::new(rx);
            tx.write_all(b"hello").await.unwrap();
            assert_eq!(reader.fill_buf().await.unwrap(), b"hello");
            reader.consume(5);
            // nothing to read: the pending poll releases the buffer
            let pending = tokio::time::timeout(std::time::Duration::from_millis(20), reader.fill_buf()).await;
            assert!(pending.is_err());
            assert!(!reader.holds_buffer());
            let big: Vec<u8> = (0..200_000u32).map(|i| i as u8).collect();
            tx.write_all(&big).await.unwrap();
            let mut got = vec![0u8; big.len()];
            reader.read_exact(&mut got).await.unwrap();
            assert_eq!(got, big);
        });
    }

    #[test]
    fn writer_keeps_order_across_small_and_large_writes_and_frees_when_flushed() {
        runtime().block_on(async {
            let (tx, mut rx) = tokio::io::duplex(1 << 22);
            let mut writer = LeanWriter::new(tx);
            let mut expected = Vec::new();
            for (i, size) in [3usize, 70_000, 10, BUFFER_BYTES - 1, 1, BUFFER_BYTES, 5]
                .iter()
                .enumerate()
            {
                let chunk = vec![i as u8; *size];
                writer.write_all(&chunk).await.unwrap();
                expected.extend(chunk);
            }
            writer.flush().await.unwrap();
            assert!(!writer.holds_buffer());
            drop(writer);
            let mut got = Vec::new();
            rx.read_to_end(&mut got).await.unwrap();
            assert_eq!(got, expected);
        });
    }
}
