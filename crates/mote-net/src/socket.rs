//! A UDP socket through `quinn-udp` on tokio: GSO batches out (one `sendmsg` for several
//! datagrams of equal size), GRO batches in, the ECN codepoint and destination address of
//! each received datagram.

use std::io::{self, IoSliceMut};
use std::net::SocketAddr;

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
        let transmit = Transmit {
            destination,
            ecn: None,
            contents,
            segment_size: segment_size.filter(|&s| s < contents.len()),
            src_ip: None,
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

/// How mote-quic sees a received datagram (or GRO batch).
pub fn recv_info(meta: &RecvMeta) -> RecvInfo {
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
    }
}
