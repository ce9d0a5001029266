//! In-place construction of a [`DeviceConnection`] (a device has ~3 KB of stack; the
//! connection is ~15 KB): every field is written into the caller's `MaybeUninit` slot, in
//! the order and with the random draws of the general connection's `init_client`, so both
//! send the same first Initial for the same seed and configuration.
#![allow(unsafe_code)]

use core::mem::MaybeUninit;
use core::net::SocketAddr;
use core::ptr::addr_of_mut;

use mote_crypto::{CryptoProvider, CryptoRng};

use super::peer_params::DeviceHooks;
use super::streams::{Bufs, DeviceStorage, Streams, PEER_UNI};
use super::{DeviceConnection, Settings, State, TokenState};
use crate::connection::cids::RemoteCids;
use crate::connection::client_tp::encode_client;
use crate::connection::init::{put, put_in_place, zeroed};
use crate::connection::key_slot::KeySlot;
use crate::connection::random_cid::client_draw;
use crate::connection::rng::Drbg;
use crate::connection::tls::{Cids, DirKeys, Handshake, HsSignals, OneRttKeys, TlsSession};
use crate::connection::{ConnectError, ConnectionConfig, MIN_INITIAL_SIZE, SKIP_PN_GAP_MIN};
use crate::recovery::{NewReno, PnSpace, ReceivedPackets, Recovery};
use crate::stream::{CryptoRecv, CryptoSend};
use crate::time::Instant;
use crate::transport_params::Side;

impl<P, T, C, S, const SENT: usize, const RANGES: usize> DeviceConnection<P, T, C, S, SENT, RANGES>
where
    P: CryptoProvider + Clone,
    T: TlsSession,
    C: AsRef<[u8]> + AsMut<[u8]>,
    S: AsRef<[u8]> + AsMut<[u8]>,
{
    /// Starts a client connection to `remote` written into `slot` (a `static` on a device):
    /// picks connection IDs (RFC 9000 §7.2), derives the Initial keys (RFC 9001 §5.2) and
    /// has the TLS session — written into the slot `tls` is given, e.g.
    /// `ClientSession::write_new`, and returned — write the ClientHello. The first
    /// [`DeviceConnection::poll_transmit`] sends it, padded to 1200 bytes. On failure
    /// `slot` holds nothing.
    #[allow(clippy::too_many_arguments)]
    pub fn init_client<'s>(
        slot: &'s mut MaybeUninit<Self>,
        config: &ConnectionConfig,
        provider: P,
        tls: impl FnOnce(&mut MaybeUninit<T>) -> &mut T,
        storage: DeviceStorage<C, S>,
        now: Instant,
        remote: SocketAddr,
        rng: &mut dyn CryptoRng,
    ) -> Result<&'s mut Self, ConnectError> {
        let conn = Self::write_fields(slot, config, provider, tls, storage, now, remote, rng)?;
        let version = conn.hs.version;
        let dcid = conn.hs.cids.original_dcid;
        let keyed = conn.hs.keys.install_initial(&conn.hs.provider, version, &dcid, Side::Client);
        let started = match keyed {
            // The receive path's hooks (one instantiation of the TLS session's code).
            Ok(()) => {
                let hooks = &mut DeviceHooks { hs: &mut conn.hs, peer: &mut conn.peer_params };
                conn.tls.start(hooks).map_err(ConnectError::Tls)
            }
            Err(e) => Err(ConnectError::Crypto(e)),
        };
        match started {
            Ok(()) => Ok(conn),
            Err(e) => {
                // SAFETY: `conn` is the initialized slot and is not used again; the slot
                // is left uninitialized, as documented.
                unsafe { core::ptr::drop_in_place(conn) };
                Err(e)
            }
        }
    }

    /// [`Self::init_client`] returning the connection by value (hosts and tests; a device
    /// builds it in place).
    pub fn client(
        config: &ConnectionConfig,
        provider: P,
        tls: T,
        storage: DeviceStorage<C, S>,
        now: Instant,
        remote: SocketAddr,
        rng: &mut dyn CryptoRng,
    ) -> Result<Self, ConnectError> {
        let mut slot = MaybeUninit::uninit();
        Self::init_client(
            &mut slot,
            config,
            provider,
            |s| s.write(tls),
            storage,
            now,
            remote,
            rng,
        )?;
        // SAFETY: `init_client` initializes the slot whenever it returns `Ok`.
        Ok(unsafe { slot.assume_init() })
    }

    /// Writes every field into `slot` (no keys yet). Out of line: its temporaries (the
    /// transport parameters) are gone before the key derivation and the ClientHello.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn write_fields<'s>(
        slot: &'s mut MaybeUninit<Self>,
        config: &ConnectionConfig,
        provider: P,
        tls: impl FnOnce(&mut MaybeUninit<T>) -> &mut T,
        storage: DeviceStorage<C, S>,
        now: Instant,
        remote: SocketAddr,
        rng: &mut dyn CryptoRng,
    ) -> Result<&'s mut Self, ConnectError> {
        // The device connection holds none of the server's bidirectional streams (RFC 9000
        // §4.6: it must not advertise any).
        if config.local_cid_len > crate::cid::MAX_CID_LEN
            || usize::from(config.max_datagram_size) < MIN_INITIAL_SIZE
            || !config.version.is_supported()
            || config.streams.max_streams_bidi != 0
            || T::SIDE != Side::Client
        {
            return Err(ConnectError::Config);
        }
        let DeviceStorage { crypto, control, request, peer_uni } = storage;
        let [(cs0, cr0), (cs1, cr1), (cs2, cr2)] = crypto;
        let recv_buf =
            peer_uni.iter().map(|b| b.as_ref().len()).fold(request.1.as_ref().len(), usize::min);
        let version = config.version;
        let compatible = config.compatible_version.filter(|v| v.is_supported() && *v != version);
        // The streams this client can hold: up to PEER_UNI of the server's unidirectional
        // ones (what the transport parameters advertise).
        let mut streams = config.streams.for_slots(PEER_UNI);
        // RFC 9000 §4.1: the windows we enforce and extend are the ones the transport
        // parameters advertise, which `encode_client` clamps to the smallest receive buffer.
        let b = recv_buf as u64;
        streams.max_stream_data_bidi_local = streams.max_stream_data_bidi_local.min(b);
        streams.max_stream_data_uni = streams.max_stream_data_uni.min(b);
        let max_ack_delay = config.max_ack_delay();
        let threshold = config.ack_eliciting_threshold;
        let mut recovery = config.recovery;
        recovery.is_server = false;
        recovery.max_datagram_size = config.max_datagram_size;

        let p = slot.as_mut_ptr();
        // SAFETY: `p` comes from a `&mut MaybeUninit<Self>`, valid and aligned for writes of
        // every field; `addr_of_mut!` takes field addresses without references to
        // uninitialized memory, and `write` drops nothing. References are made only to
        // fields already written. Only integer, `bool` and byte-array fields may be left to the
        // zeroing below (their all-zero bytes are valid values); see `all_fields`.
        unsafe {
            // Zeroed first, in one pass: the integer, `bool` and byte-array fields whose
            // initial value is zero are not written one by one below (the byte arrays
            // `local_tp`, `token`, `remembered_tp`, `ticket`; the lengths `token_len`,
            // `remembered_tp_len`, `ticket_len`; the flags and counters from
            // `remote_cid_set` to `closing_received`). Fields of other types (options,
            // enums, structs) are written even when their value may be all zero bytes.
            p.write_bytes(0, 1);
            let hs = addr_of_mut!((*p).hs);
            // The DRBG is instantiated in its place, not built here and copied (issue 8).
            // On a failure below it is dropped (its state wiped); nothing else written holds
            // anything to release.
            let drbg = addr_of_mut!((*hs).rng);
            drbg.write(Drbg::unseeded(provider.clone()));
            // RFC 9000 §7.2, §5.1: the first Destination Connection ID and ours, from the
            // same one DRBG request as the general connection's `init_client` (which keeps
            // the reset token drawn with them; a client never sends it, RFC 9000 §18.2), so
            // both write the same ClientHello for the same seed.
            let drawn = match (*drbg).seed_from(rng) {
                Ok(()) => client_draw(&mut *drbg, config.local_cid_len),
                Err(e) => Err(ConnectError::Crypto(e)),
            };
            let local_tp = addr_of_mut!((*hs).local_tp);
            let encoded = drawn.and_then(|draw| {
                let local = draw.local;
                encode_client(config, PEER_UNI, recv_buf, &local, compatible, &mut *local_tp)
                    .map(|len| (draw, len))
                    .map_err(|_| ConnectError::Config)
            });
            let (draw, len) = match encoded {
                Ok(done) if put_in_place(addr_of_mut!((*p).tls), tls) => done,
                Ok(_) => {
                    core::ptr::drop_in_place(drbg);
                    return Err(ConnectError::Config);
                }
                Err(e) => {
                    core::ptr::drop_in_place(drbg);
                    return Err(e);
                }
            };
            let original_dcid = draw.original_dcid;
            addr_of_mut!((*hs).cids).write(Cids {
                local: draw.local,
                remote: original_dcid,
                peer_scid: original_dcid,
                original_dcid,
                retry_scid: None,
            });
            addr_of_mut!((*hs).local_tp_len).write(len);
            addr_of_mut!((*hs).provider).write(provider);
            addr_of_mut!((*hs).side).write(Side::Client);
            addr_of_mut!((*hs).version).write(version);
            addr_of_mut!((*hs).original_version).write(version);
            addr_of_mut!((*hs).compatible).write(compatible);
            CryptoSend::write_zeroed(addr_of_mut!((*hs).crypto_send[0]), cs0);
            CryptoSend::write_zeroed(addr_of_mut!((*hs).crypto_send[1]), cs1);
            CryptoSend::write_zeroed(addr_of_mut!((*hs).crypto_send[2]), cs2);
            // No keys yet: every key slot's `live` flag is false.
            let keys = addr_of_mut!((*hs).keys);
            zeroed!(addr_of_mut!((*keys).initial) => KeySlot<DirKeys<P>>, |z| z.is_none());
            zeroed!(addr_of_mut!((*keys).handshake) => KeySlot<DirKeys<P>>, |z| z.is_none());
            zeroed!(addr_of_mut!((*keys).one_rtt) => KeySlot<OneRttKeys<P>>, |z| z.is_none());
            #[cfg(feature = "resumption")]
            zeroed!(addr_of_mut!((*keys).zero_rtt) => KeySlot<crate::packet::PacketKeys<P>>, |z| z.is_none());
            // Its `None` is not all zeros (a niche of the parameters).
            addr_of_mut!((*hs).peer_tp).write(None);
            // No signal yet; only `early_data`'s `None` is not all zeros.
            let signals = addr_of_mut!((*hs).signals);
            zeroed!(signals => HsSignals, |z| matches!(
                z,
                HsSignals {
                    handshake_keys: false,
                    one_rtt_keys: false,
                    complete: false,
                    early_data: _,
                    tickets: 0,
                    version_switched: false,
                }
            ));
            addr_of_mut!((*signals).early_data).write(None);
            #[cfg(feature = "keylog")]
            addr_of_mut!((*hs).keylog).write(crate::connection::keylog::KeyLog::new());

            CryptoRecv::write_zeroed(addr_of_mut!((*p).crypto_recv[0]), cr0);
            CryptoRecv::write_zeroed(addr_of_mut!((*p).crypto_recv[1]), cr1);
            CryptoRecv::write_zeroed(addr_of_mut!((*p).crypto_recv[2]), cr2);
            // RFC 9000 §13.2.2: an ACK after every second ack-eliciting packet in the
            // handshake spaces, the configured threshold in Application Data.
            let rx = addr_of_mut!((*p).rx_initial);
            ReceivedPackets::write_zeroed(rx, PnSpace::Initial, max_ack_delay, 2);
            let rx = addr_of_mut!((*p).rx_handshake);
            ReceivedPackets::write_zeroed(rx, PnSpace::Handshake, max_ack_delay, 2);
            let rx = addr_of_mut!((*p).rx_data);
            ReceivedPackets::write_zeroed(rx, PnSpace::ApplicationData, max_ack_delay, threshold);
            let cc = NewReno::new(config.max_datagram_size);
            Recovery::write_zeroed(addr_of_mut!((*p).recovery), recovery, cc);
            let bufs = Bufs { control, request, peer_uni };
            Streams::write_zeroed(addr_of_mut!((*p).streams), &streams, bufs);
            put(addr_of_mut!((*p).remote_cids), || RemoteCids::new(original_dcid));
            super::local_cids::LocalCids::write_zeroed(addr_of_mut!((*p).local_cids));
            addr_of_mut!((*p).remote).write(remote);
            zeroed!(addr_of_mut!((*p).state) => State, |z| matches!(z, State::Open));
            addr_of_mut!((*p).settings).write(Settings {
                idle_timeout_ms: u64::from(config.local_idle_timeout_ms()),
                max_datagram_size: config.max_datagram_size,
                max_ack_ranges: u8::try_from(config.max_ack_ranges).unwrap_or(u8::MAX),
                aead_limits: config.aead_limits,
            });
            zeroed!(addr_of_mut!((*p).peer) => Option<super::Peer>, |z| z.is_none());
            zeroed!(addr_of_mut!((*p).path_response) => Option<[u8; 8]>, |z| z.is_none());
            addr_of_mut!((*p).idle_start).write(now);
            addr_of_mut!((*p).last_now).write(now);
            // Its `None` is not all zeros (a niche of `CloseReason`).
            addr_of_mut!((*p).close_reason).write(None);
            zeroed!(addr_of_mut!((*p).token_state) => TokenState, |z| matches!(z, TokenState::None));
            #[cfg(feature = "stats")]
            zeroed!(addr_of_mut!((*p).traffic) => super::DeviceStats, |z| matches!(
                z,
                super::DeviceStats {
                    key_updates: 0,
                    auth_failures: 0,
                    ptos: 0,
                    retries: 0,
                    datagrams_sent: 0,
                    bytes_sent: 0,
                    datagrams_received: 0,
                    bytes_received: 0,
                    packets_lost: 0,
                }
            ));
            #[cfg(feature = "resumption")]
            zeroed!(addr_of_mut!((*p).remembered_limits) => Option<crate::connection::ZeroRttLimits>, |z| z.is_none());
            zeroed!(addr_of_mut!((*p).peer_params) => Option<super::peer_params::PeerParams>, |z| z.is_none());
            addr_of_mut!((*p).skip_pn_at).write(SKIP_PN_GAP_MIN);
            addr_of_mut!((*p).closing_answer_at).write(1);
        }
        // SAFETY: every field was written above.
        Ok(unsafe { slot.assume_init_mut() })
    }

    /// Names every field (an exhaustive pattern, never called), so that adding a field
    /// brings the reader here and to [`Self::write_fields`]. The compiler does not check that
    /// `write_fields` writes it: the slot is zeroed first, and only integer, `bool` and
    /// byte-array fields (whose all-zero bytes are a valid value) may be left to the
    /// zeroing; every other field must be written explicitly.
    #[allow(dead_code)]
    fn all_fields(&self) {
        let Self {
            tls: _,
            hs: _,
            crypto_recv: _,
            rx_initial: _,
            rx_handshake: _,
            rx_data: _,
            recovery: _,
            streams: _,
            remote_cids: _,
            local_cids: _,
            remote: _,
            state: _,
            settings: _,
            peer: _,
            remote_cid_set: _,
            handshake_complete: _,
            handshake_confirmed: _,
            any_packet: _,
            retried: _,
            early_params: _,
            early_rejected: _,
            ticket_ready: _,
            probes: _,
            fast_resends: _,
            path_response: _,
            ping_pending: _,
            idle_start: _,
            ack_eliciting_since_recv: _,
            last_now: _,
            close_pending: _,
            close_reason: _,
            token: _,
            token_len: _,
            token_state: _,
            auth_failures: _,
            ptos: _,
            #[cfg(feature = "stats")]
                traffic: _,
            #[cfg(feature = "resumption")]
                remembered_limits: _,
            peer_params: _,
            skip_pn_at: _,
            closing_received: _,
            closing_answer_at: _,
        } = self;
        let Handshake { .. } = &self.hs;
    }
}
