//! Zero-copy forwarding of the bytes of a frame the gateway never reads (Linux `splice(2)`).
//!
//! Why: relaying a large Produce request or Fetch response through user space copies every byte
//! into a buffer and back into the kernel. `splice` moves them socket -> pipe -> socket inside the
//! kernel, up to a pipe's worth per call. Only opaque bytes (record batches) go this way: the
//! fields the gateway reads or rewrites are handled from its buffers first (stream.rs).
//!
//! Readiness comes from tokio's reactor (`try_io`, `readable`, `writable` on the sockets it
//! already watches), so no descriptor is registered twice. One subtlety: splicing into a pipe that
//! is out of slots also fails with EAGAIN (the kernel counts pipe buffers, not bytes), which must
//! not be taken for an empty socket. So the source is only read through `try_io` (which clears its
//! readiness on EAGAIN) while the pipe is empty; with bytes still in the pipe it is tried directly
//! and an EAGAIN is ignored, and the loop waits on the sink instead.

use std::io;

/// Below this many bytes a frame is cheaper to copy than to set the pipe up for.
pub const MIN_SPLICE_BYTES: usize = 64 * 1024;

/// Which end of a transfer failed: the source's faults are the sender's, the sink's are quiet.
#[derive(Debug)]
pub enum SpliceError {
    Source(io::Error),
    Sink(io::Error),
}

#[cfg(target_os = "linux")]
mod linux {
    use std::io;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

    use tokio::io::Interest;
    use tokio::net::TcpStream;

    use super::SpliceError;

    /// Pipe capacity asked for: a whole typical batch per call (the kernel may grant less).
    const PIPE_BYTES: libc::c_int = 1024 * 1024;
    /// Bytes moved before other tasks on this worker get a turn (a fast pair never blocks).
    const YIELD_EVERY_BYTES: usize = 4 * 1024 * 1024;

    /// A pipe kept by one direction of a connection for its large frames (created on the first).
    pub struct Pipe {
        read: OwnedFd,
        write: OwnedFd,
        capacity: usize,
    }

    fn splice(from: RawFd, to: RawFd, count: usize) -> io::Result<usize> {
        let flags = libc::SPLICE_F_MOVE | libc::SPLICE_F_NONBLOCK;
        // SAFETY: both descriptors are open for the duration of the call; no offsets are passed
        let n = unsafe { libc::splice(from, std::ptr::null_mut(), to, std::ptr::null_mut(), count, flags) };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }

    impl Pipe {
        pub fn new() -> io::Result<Pipe> {
            let mut fds = [0 as libc::c_int; 2];
            // SAFETY: `fds` has room for the two descriptors pipe2 writes
            if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) } != 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: pipe2 succeeded, so both are fresh descriptors owned by nobody else
            let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
            // SAFETY: fcntl on a descriptor we own; over pipe-max-size or the user's pipe budget
            // it fails and the default capacity stays
            let mut capacity = unsafe { libc::fcntl(write.as_raw_fd(), libc::F_SETPIPE_SZ, PIPE_BYTES) };
            if capacity <= 0 {
                capacity = unsafe { libc::fcntl(write.as_raw_fd(), libc::F_GETPIPE_SZ) };
            }
            if capacity <= 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(Pipe {
                read,
                write,
                capacity: capacity as usize,
            })
        }

        /// Move exactly `count` bytes from socket `src` to socket `dst`. Backpressure: while the
        /// sink takes nothing, at most a pipe's worth is read from the source. On success the
        /// pipe is empty again.
        pub async fn transfer(&mut self, src: &TcpStream, dst: &TcpStream, count: usize) -> Result<(), SpliceError> {
            let (src_fd, dst_fd) = (src.as_raw_fd(), dst.as_raw_fd());
            let (pipe_in, pipe_out) = (self.write.as_raw_fd(), self.read.as_raw_fd());
            let (mut left, mut in_pipe, mut since_yield) = (count, 0usize, 0usize);
            while left > 0 || in_pipe > 0 {
                let mut filled = false;
                if left > 0 && in_pipe < self.capacity {
                    let want = left.min(self.capacity - in_pipe);
                    let moved = if in_pipe == 0 {
                        src.try_io(Interest::READABLE, || splice(src_fd, pipe_in, want))
                    } else {
                        splice(src_fd, pipe_in, want) // EAGAIN may mean a full pipe: readiness untouched
                    };
                    match moved {
                        Ok(0) => return Err(SpliceError::Source(io::ErrorKind::UnexpectedEof.into())),
                        Ok(n) => {
                            left -= n;
                            in_pipe += n;
                            filled = true;
                        }
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                        Err(e) => return Err(SpliceError::Source(e)),
                    }
                }
                if in_pipe > 0 {
                    match dst.try_io(Interest::WRITABLE, || splice(pipe_out, dst_fd, in_pipe)) {
                        Ok(0) => return Err(SpliceError::Sink(io::ErrorKind::WriteZero.into())),
                        Ok(n) => {
                            in_pipe -= n;
                            since_yield += n;
                            if since_yield >= YIELD_EVERY_BYTES {
                                since_yield = 0;
                                tokio::task::yield_now().await;
                            }
                        }
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                            dst.writable().await.map_err(SpliceError::Sink)?;
                        }
                        Err(e) => return Err(SpliceError::Sink(e)),
                    }
                } else if !filled {
                    src.readable().await.map_err(SpliceError::Source)?;
                }
            }
            Ok(())
        }
    }
}

#[cfg(target_os = "linux")]
pub use linux::Pipe;

/// Elsewhere there is no splice: `Pipe::new` fails and large frames are copied.
#[cfg(not(target_os = "linux"))]
pub struct Pipe;

#[cfg(not(target_os = "linux"))]
use tokio::net::TcpStream;

#[cfg(not(target_os = "linux"))]
impl Pipe {
    pub fn new() -> io::Result<Pipe> {
        Err(io::ErrorKind::Unsupported.into())
    }

    pub async fn transfer(&mut self, _src: &TcpStream, _dst: &TcpStream, _count: usize) -> Result<(), SpliceError> {
        Err(SpliceError::Sink(io::ErrorKind::Unsupported.into()))
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    async fn pair() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (a, b) = tokio::join!(TcpStream::connect(addr), listener.accept());
        (a.unwrap(), b.unwrap().0)
    }

    #[test]
    fn exactly_count_bytes_move_and_the_rest_stays() {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(async {
                let (mut producer, src) = pair().await;
                let (dst, mut consumer) = pair().await;
                let data: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7) as u8).collect();
                let count = 2_500_000;
                let writer = tokio::spawn(async move {
                    producer.write_all(&data).await.unwrap();
                    producer
                });
                let reader = tokio::spawn(async move {
                    let mut got = vec![0u8; count];
                    consumer.read_exact(&mut got).await.unwrap();
                    got
                });
                let mut pipe = Pipe::new().unwrap();
                pipe.transfer(&src, &dst, count).await.unwrap();
                let got = reader.await.unwrap();
                let expected: Vec<u8> = (0..count as u32).map(|i| (i * 7) as u8).collect();
                assert_eq!(got, expected);
                // the bytes after `count` are still in the source socket, in order
                let mut src = src;
                let mut next = [0u8; 4];
                src.read_exact(&mut next).await.unwrap();
                assert_eq!(next.to_vec(), expected_at(count, 4));
                drop(writer.await.unwrap());
                // a source that ends early is the source's fault
                let (mut short, src2) = pair().await;
                let (dst2, _open) = pair().await;
                short.write_all(&[1, 2, 3]).await.unwrap();
                drop(short);
                let err = pipe.transfer(&src2, &dst2, 10).await.unwrap_err();
                assert!(matches!(err, SpliceError::Source(_)), "{err:?}");
            });
    }

    fn expected_at(start: usize, n: usize) -> Vec<u8> {
        (start as u32..(start + n) as u32).map(|i| (i * 7) as u8).collect()
    }
}
