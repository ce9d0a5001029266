//! A UDP socket through `quinn-udp` on tokio: GSO batches out (one `sendmsg` for several
//! datagrams of equal size), GRO batches in, the ECN codepoint and destination address of
//! each received datagram.

use std::io::{self, IoSliceMut};
use std::net::{IpAddr, SocketAddr};
use std::task::{Context, Poll};

use mote_quic::connection::RecvInfo;
use mote_quic::recovery::Ecn;
use quinn_udp::{EcnCodepoint, RecvMeta, Transmit, UdpSocketState};
use tokio::io::Interest;

/// A bound UDP socket.
#[derive(Debug)]
pub struct UdpSocket {
    io: tokio::net::UdpSocket,
    state: UdpSocketState,
}

impl UdpSocket {
    /// Binds `addr` (call within a tokio runtime).
    pub fn bind(addr: SocketAddr) -> io::Result<Self> {
        let std = std::net::UdpSocket::bind(addr)?;
        std.set_nonblocking(true)?;
        let state = UdpSocketState::new((&std).into())?;
        // Room for bursts of a fast sender (best effort; the kernel may cap it).
        let _ = state.set_recv_buffer_size((&std).into(), 4 << 20);
        let _ = state.set_send_buffer_size((&std).into(), 4 << 20);
        Ok(Self { io: tokio::net::UdpSocket::from_std(std)?, state })
    }

    /// The bound address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.io.local_addr()
    }

    /// Datagrams one GSO send may carry (1 without GSO).
    pub fn max_gso_segments(&self) -> usize {
        self.state.max_gso_segments()
    }

    /// Datagrams one GRO receive may return coalesced (1 without GRO).
    pub fn gro_segments(&self) -> usize {
        self.state.gro_segments()
    }

    /// Sends `contents` to `destination`: one datagram, or with `segment_size` a GSO batch of
    /// datagrams of that size (the last may be shorter).
    pub async fn send(
        &self,
        destination: SocketAddr,
        contents: &[u8],
        segment_size: Option<usize>,
    ) -> io::Result<()> {
        self.send_from(destination, contents, segment_size, Ecn::NotEct, None).await
    }

    /// As [`UdpSocket::send`], with the ECN codepoint of the IP header (RFC 9000 §13.4) and,
    /// for a socket bound to a wildcard address, the source IP (`IP_PKTINFO`), so a reply
    /// leaves from the address the peer wrote to.
    pub async fn send_from(
        &self,
        destination: SocketAddr,
        contents: &[u8],
        segment_size: Option<usize>,
        ecn: Ecn,
        src_ip: Option<IpAddr>,
    ) -> io::Result<()> {
        let transmit = Transmit {
            destination,
            ecn: match ecn {
                Ecn::NotEct => None,
                Ecn::Ect0 => Some(EcnCodepoint::Ect0),
                Ecn::Ect1 => Some(EcnCodepoint::Ect1),
                Ecn::Ce => Some(EcnCodepoint::Ce),
            },
            contents,
            segment_size: segment_size.filter(|&s| s < contents.len()),
            src_ip,
        };
        loop {
            self.io.writable().await?;
            match self
                .io
                .try_io(Interest::WRITABLE, || self.state.send((&self.io).into(), &transmit))
            {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                r => return r,
            }
        }
    }

    /// Polls until datagrams may be waiting (then [`UdpSocket::try_recv`]).
    pub fn poll_recv_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.io.poll_recv_ready(cx)
    }

    /// Reads a batch if one is waiting (`WouldBlock` otherwise, clearing readiness): fills
    /// `meta[i]` for `bufs[i]`, returns how many.
    pub fn try_recv(
        &self,
        bufs: &mut [IoSliceMut<'_>],
        meta: &mut [RecvMeta],
    ) -> io::Result<usize> {
        self.io.try_io(Interest::READABLE, || self.state.recv((&self.io).into(), bufs, meta))
    }

    /// Waits for datagrams and reads a batch: fills `meta[i]` for `bufs[i]`, returns how many.
    pub async fn recv(
        &self,
        bufs: &mut [IoSliceMut<'_>],
        meta: &mut [RecvMeta],
    ) -> io::Result<usize> {
        loop {
            self.io.readable().await?;
            match self
                .io
                .try_io(Interest::READABLE, || self.state.recv((&self.io).into(), bufs, meta))
            {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                r => return r,
            }
        }
    }
}

/// How mote-quic sees a received datagram (or GRO batch) that arrived on a socket bound to
/// `bound`: the local address is the datagram's destination IP (`IP_PKTINFO`) and the
/// socket's port, so a server on a wildcard address knows which of its addresses the
/// client used.
pub fn recv_info(meta: &RecvMeta, bound: SocketAddr) -> RecvInfo {
    let ecn = match meta.ecn {
        Some(EcnCodepoint::Ect0) => Ecn::Ect0,
        Some(EcnCodepoint::Ect1) => Ecn::Ect1,
        Some(EcnCodepoint::Ce) => Ecn::Ce,
        None => Ecn::NotEct,
    };
    RecvInfo {
        remote: meta.addr,
        ecn,
        segment_size: (meta.stride > 0 && meta.stride < meta.len).then_some(meta.stride),
        local: local_address(meta.dst_ip, bound),
    }
}

/// The local address a datagram arrived on: its destination IP when the socket reports
/// it, else the bound address unless that is a wildcard.
fn local_address(dst_ip: Option<IpAddr>, bound: SocketAddr) -> Option<SocketAddr> {
    match dst_ip {
        Some(ip) => Some(SocketAddr::new(ip, bound.port())),
        None => (!bound.ip().is_unspecified()).then_some(bound),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_address_of_a_datagram() {
        let wild: SocketAddr = "0.0.0.0:4433".parse().unwrap();
        let bound: SocketAddr = "127.0.0.2:4433".parse().unwrap();
        let lo: IpAddr = "127.0.0.1".parse().unwrap();
        assert_eq!(local_address(Some(lo), wild), Some("127.0.0.1:4433".parse().unwrap()));
        assert_eq!(local_address(None, wild), None);
        assert_eq!(local_address(None, bound), Some(bound));
    }
}
