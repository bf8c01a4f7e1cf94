//! How much of an upstream round trip a broker would charge to the request, as far as a proxy can
//! tell.

use std::time::Duration;

/// The share of a round trip's time above the wire's own that a broker charges to the request.
/// Kafka charges the time its network and handler threads spend on a request, not the request's
/// wait in its request queue, the response's wait in its response queue, or the threads'
/// wake-ups, and a proxy sees only the whole round trip. Measured against Kafka 4.3's own
/// accounting with a Java producer held at `request_percentage=1` (small Produce requests, one
/// record each), the broker charged 0.46–0.69 of the mean round trip the gateway saw (five runs);
/// 0.45 of it plus the gateway's own handling time lands in that range.
///
/// Charging the round trip above the connection's fastest one instead (a broker that happened to
/// be awake) tracked the broker worse: with a floor that crept up towards slower round trips, a
/// client ran at up to 2.2x the broker's rate when round trips were steady; with the fastest of
/// the last 30 s as the floor, at half of it.
const BROKER_SHARE: (u32, u32) = (9, 20);

/// The time a broker would charge for a request whose round trip to the broker and back took
/// `service`, over a wire whose own round trip is `wire`. No round trip is faster than the wire,
/// so a faster one lowers `wire` for good: Linux reports a handshake it timed at 0 µs as one
/// jiffy (1–10 ms), which would otherwise leave every request on loopback uncharged.
pub fn broker_work(service: Duration, wire: &mut Duration) -> Duration {
    *wire = (*wire).min(service);
    service.saturating_sub(*wire) * BROKER_SHARE.0 / BROKER_SHARE.1
}

/// The wire's own round trip to the broker, read once the upstream connection is made: the
/// kernel's measure of the TCP handshake (`TCP_INFO` `min_rtt`), which the broker's threads take
/// no part in. A distant broker therefore does not inflate the charge.
#[cfg(target_os = "linux")]
pub fn wire_round_trip(socket: &impl std::os::fd::AsRawFd) -> Duration {
    // SAFETY: `info` is a plain C struct the kernel fills up to `len` bytes; a failure leaves
    // it zeroed, which reads as no wire time.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    let rc = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        )
    };
    if rc != 0 || info.tcpi_min_rtt == u32::MAX {
        return Duration::ZERO;
    }
    Duration::from_micros(u64::from(info.tcpi_min_rtt))
}

#[cfg(not(target_os = "linux"))]
pub fn wire_round_trip<T>(_socket: &T) -> Duration {
    Duration::ZERO
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(n: u64) -> Duration {
        Duration::from_micros(n)
    }

    #[test]
    fn the_broker_is_charged_its_share_of_the_round_trip_above_the_wire() {
        let mut wire = us(80);
        assert_eq!(broker_work(us(1080), &mut wire), us(450));
        assert_eq!(broker_work(us(80), &mut wire), us(0));
        assert_eq!(wire, us(80));
    }

    #[test]
    fn a_round_trip_faster_than_the_wire_lowers_it_for_good() {
        let mut wire = us(4000); // a handshake the kernel timed at 0 µs, reported as one jiffy
        assert_eq!(broker_work(us(100), &mut wire), us(0));
        assert_eq!(wire, us(100));
        assert_eq!(broker_work(us(1100), &mut wire), us(450));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_wire_round_trip_of_a_connected_socket_is_what_the_kernel_measured() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let _server = listener.accept().unwrap();
        let wire = wire_round_trip(&client);
        // the handshake on loopback: measured, and below a millisecond, unless the kernel timed
        // it at 0 µs and reports one jiffy instead (HZ = 1000, 300, 250 or 100)
        let one_jiffy = [1000, 3333, 4000, 10000].map(Duration::from_micros);
        assert!(wire > Duration::ZERO, "{wire:?}");
        assert!(wire < Duration::from_millis(1) || one_jiffy.contains(&wire), "{wire:?}");
    }
}
