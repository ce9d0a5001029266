//! The tokio driver: one task runs one socket and the sans-IO endpoint behind it.
//!
//! Each turn: the application acts on the endpoint (reads and writes streams, drains
//! events), everything `poll_transmit` has is sent, then the task sleeps until a datagram
//! arrives or the endpoint's `poll_timeout` deadline passes, and feeds that in. The endpoint
//! never sees the socket or the clock; the driver owns both.
//!
//! The endpoint may live on several sockets (a server's listening address and its
//! preferred address): every socket is read, each datagram carries the local address it
//! arrived on ([`RecvInfo::local`]) and each transmit leaves from the socket its
//! [`Transmit::src`] names. A client that migrates hands the driver a new socket
//! ([`Application::take_socket`]), which replaces the first.

use std::io::IoSliceMut;
use std::net::{IpAddr, SocketAddr};
use std::task::Poll;

use mote_crypto::CryptoProvider;
use mote_quic::connection::{RecvInfo, TlsSession, Transmit};
use mote_quic::endpoint::{Accept, Slot};
use mote_quic::{Connection, Endpoint, Instant};
use quinn_udp::RecvMeta;

use crate::clock::Clock;
use crate::socket::{recv_info, UdpSocket};
use crate::Error;

/// Stack of the thread [`block_on`] runs on. A host connection is about 150 KB of inline
/// state (1024 sent-packet records) and is created by value in `Endpoint::connect` /
/// accept; unoptimized builds keep several copies on the stack, more than the 2 MiB of a
/// default thread.
pub const DRIVER_STACK: usize = 64 << 20;

/// Runs `future` to completion on a current-thread tokio runtime in a thread of its own
/// with a [`DRIVER_STACK`] stack (the one task per socket of the driver).
pub fn block_on<F, R>(future: F) -> Result<R, Error>
where
    F: std::future::Future<Output = R> + Send + 'static,
    R: Send + 'static,
{
    std::thread::Builder::new()
        .name("mote-net".into())
        .stack_size(DRIVER_STACK)
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| Error::new(format!("tokio runtime: {e}")))?;
            Ok(rt.block_on(future))
        })
        .map_err(|e| Error::new(format!("driver thread: {e}")))?
        .join()
        .map_err(|_| Error::new("the driver thread panicked"))?
}

/// Bytes of one receive buffer: a whole GRO batch.
const RECV_BUFFER: usize = 64 * 1024;
/// Receive buffers per `recvmmsg`.
const RECV_BATCH: usize = 8;

/// What the driver needs of a sans-IO endpoint.
pub trait SansIo {
    /// A datagram or GRO batch arrived.
    fn handle_recv(&mut self, now: Instant, info: &RecvInfo, data: &mut [u8]);
    /// The next datagram (or GSO batch) to send.
    fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<Transmit>;
    /// When [`SansIo::handle_timeout`] is due.
    fn poll_timeout(&self) -> Option<Instant>;
    /// Runs due timers.
    fn handle_timeout(&mut self, now: Instant);
}

impl<P, T, C, S, A, L, const N: usize, const SENT: usize, const RANGES: usize> SansIo
    for Endpoint<P, T, C, S, A, L, N, SENT, RANGES>
where
    P: CryptoProvider + Clone,
    T: TlsSession,
    C: AsRef<[u8]> + AsMut<[u8]>,
    S: AsRef<[u8]> + AsMut<[u8]>,
    A: Accept<T, C, S, N>,
    L: AsMut<[Slot<Connection<P, T, C, S, N, SENT, RANGES>>]>
        + AsRef<[Slot<Connection<P, T, C, S, N, SENT, RANGES>>]>,
{
    fn handle_recv(&mut self, now: Instant, info: &RecvInfo, data: &mut [u8]) {
        Endpoint::handle_recv(self, now, info, data);
    }
    fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<Transmit> {
        Endpoint::poll_transmit(self, now, buf)
    }
    fn poll_timeout(&self) -> Option<Instant> {
        Endpoint::poll_timeout(self)
    }
    fn handle_timeout(&mut self, now: Instant) {
        Endpoint::handle_timeout(self, now);
    }
}

/// Whether the driver goes on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// Keep running.
    Continue,
    /// Send what is pending once more, then return.
    Stop,
}

/// The application on top of an endpoint.
pub trait Application<E> {
    /// Acts on the endpoint after every input (datagram, timer) and before sending.
    fn drive(&mut self, now: Instant, endpoint: &mut E) -> Flow;

    /// When the application wants to act again without input (a keep-alive): the driver
    /// wakes at the earlier of this and the endpoint's deadline.
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }

    /// Everything pending was sent (after the transmit loop of each turn).
    fn sent_all(&mut self, _now: Instant, _endpoint: &mut E) {}

    /// A socket the application bound to move to (a client migrating, RFC 9000 §9.2): it
    /// replaces the first socket; the old one is closed. Asked after every
    /// [`Application::drive`].
    fn take_socket(&mut self) -> Option<UdpSocket> {
        None
    }

    /// A datagram arrived, before the endpoint sees it (it decrypts in place).
    fn on_datagram_received(&mut self, _now: Instant, _from: SocketAddr, _data: &[u8]) {}

    /// A datagram (or GSO batch of `segment_size` datagrams) was handed to the socket.
    fn on_datagram_sent(
        &mut self,
        _now: Instant,
        _to: SocketAddr,
        _data: &[u8],
        _segment_size: Option<usize>,
    ) {
    }
}

/// The socket a transmit from `src` leaves on, and the source IP to ask for when that
/// socket is bound to a wildcard address. Without a match (no source, or a client whose
/// connection still names the address it migrated away from): the first socket, the
/// kernel's choice of source.
fn socket_for(bound: &[SocketAddr], src: Option<SocketAddr>) -> (usize, Option<IpAddr>) {
    let Some(src) = src else { return (0, None) };
    for (i, b) in bound.iter().enumerate() {
        if b.port() != src.port() {
            continue;
        }
        if b.ip().is_unspecified() {
            return (i, Some(src.ip()));
        }
        if b.ip() == src.ip() {
            return (i, None);
        }
    }
    (0, None)
}

/// Runs `endpoint` on `sockets` (at least one) with `app` until the application says
/// [`Flow::Stop`]. `max_datagram_size × max_gso_segments` bounds one transmit.
pub async fn run<E: SansIo, A: Application<E>>(
    sockets: &mut [UdpSocket],
    clock: &Clock,
    endpoint: &mut E,
    app: &mut A,
    transmit_buffer: usize,
) -> Result<(), Error> {
    if sockets.is_empty() {
        return Err(Error::new("the driver needs a socket"));
    }
    let mut bound: Vec<SocketAddr> =
        sockets.iter().map(UdpSocket::local_addr).collect::<Result<_, _>>()?;
    let mut tx = vec![0u8; transmit_buffer];
    let mut rx: Vec<Vec<u8>> = (0..RECV_BATCH).map(|_| vec![0u8; RECV_BUFFER]).collect();
    let mut meta = vec![RecvMeta::default(); RECV_BATCH];
    // Which socket is asked first for readiness, turn by turn, so none starves.
    let mut first = 0usize;
    loop {
        let now = clock.now();
        let flow = app.drive(now, endpoint);
        if let Some(socket) = app.take_socket() {
            if let Some(b) = bound.first_mut() {
                *b = socket.local_addr()?;
            }
            if let Some(s) = sockets.first_mut() {
                *s = socket;
            }
        }
        while let Some(t) = endpoint.poll_transmit(now, &mut tx) {
            let data = tx.get(..t.len).unwrap_or(&[]);
            app.on_datagram_sent(now, t.destination, data, t.segment_size);
            let (i, src_ip) = socket_for(&bound, t.src);
            let Some(socket) = sockets.get(i) else { continue };
            // A failed send is a lost datagram: loss recovery handles it.
            if let Err(e) =
                socket.send_from(t.destination, data, t.segment_size, t.ecn, src_ip).await
            {
                if e.kind() != std::io::ErrorKind::WouldBlock {
                    eprintln!("mote-net: send to {}: {e}", t.destination);
                }
            }
        }
        app.sent_all(now, endpoint);
        if flow == Flow::Stop {
            return Ok(());
        }
        let deadline = match (endpoint.poll_timeout(), app.poll_timeout()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let sleep = async {
            match deadline {
                Some(t) => tokio::time::sleep_until(clock.to_std(t).into()).await,
                None => std::future::pending::<()>().await,
            }
        };
        let n = sockets.len();
        first = (first + 1) % n;
        let ready = std::future::poll_fn(|cx| {
            for k in 0..n {
                let i = (first + k) % n;
                if let Some(Poll::Ready(r)) = sockets.get(i).map(|s| s.poll_recv_ready(cx)) {
                    return Poll::Ready(r.map(|()| i));
                }
            }
            Poll::Pending
        });
        let ready = tokio::select! {
            r = ready => Some(r?),
            () = sleep => None,
        };
        let now = clock.now();
        let Some(i) = ready else {
            endpoint.handle_timeout(now);
            continue;
        };
        let (Some(socket), Some(&local)) = (sockets.get(i), bound.get(i)) else { continue };
        let received = {
            let mut bufs: Vec<IoSliceMut<'_>> =
                rx.iter_mut().map(|b| IoSliceMut::new(b.as_mut_slice())).collect();
            socket.try_recv(&mut bufs, &mut meta)
        };
        let n = match received {
            Ok(n) => n,
            // Readiness was stale; it is cleared, wait again.
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => 0,
            Err(e) => return Err(e.into()),
        };
        for (m, buf) in meta.iter().zip(rx.iter_mut()).take(n) {
            let Some(data) = buf.get_mut(..m.len) else { continue };
            app.on_datagram_received(now, m.addr, data);
            endpoint.handle_recv(now, &recv_info(m, local), data);
        }
        // Timers that fell due while we were receiving.
        if endpoint.poll_timeout().is_some_and(|t| t <= now) {
            endpoint.handle_timeout(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transmits_leave_from_the_socket_their_source_names() {
        let bound: Vec<SocketAddr> =
            vec!["0.0.0.0:4433".parse().unwrap(), "127.0.0.2:4434".parse().unwrap()];
        let a = |s: &str| Some(s.parse::<SocketAddr>().unwrap());
        assert_eq!(socket_for(&bound, None), (0, None));
        assert_eq!(
            socket_for(&bound, a("127.0.0.1:4433")),
            (0, Some("127.0.0.1".parse().unwrap()))
        );
        assert_eq!(socket_for(&bound, a("127.0.0.2:4434")), (1, None));
        // An address no socket has: the first, the kernel's source.
        assert_eq!(socket_for(&bound, a("127.0.0.3:9")), (0, None));
    }
}
