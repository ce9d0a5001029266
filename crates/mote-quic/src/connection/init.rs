//! In-place construction: a connection is written field by field into caller-owned memory
//! ([`Connection::init_client`]), so the ~18 KB struct is never built on the stack and
//! moved (a device has ~3 KB of stack). The by-value constructors ([`Connection::client`],
//! [`Connection::server`]) run the same code into a local slot.
//!
//! This (with `key_slot`, `Streams::write_new` and `Recovery::write_new`) is the crate's
//! `unsafe`: writing through a `MaybeUninit` slot's raw pointer.
//! Every field is written exactly once before the slot is read; `all_fields` (an
//! exhaustive pattern) stops the build when a field is added without being written here.
#![allow(unsafe_code)]

use core::mem::MaybeUninit;
use core::net::SocketAddr;
use core::ptr::addr_of_mut;

use mote_crypto::{CryptoProvider, CryptoRng};

use super::key_slot::KeySlot;
use super::tls::{Cids, Handshake, HsSignals, Keys, TlsSession};
use super::{
    cids, path, random_cid, rotation, ConnectError, Connection, ConnectionConfig, ControlTable,
    Drbg, Events, State, Storage, TokenState, LOCAL_TP_MAX, MIN_INITIAL_SIZE, SKIP_PN_GAP_MIN,
};
#[cfg(feature = "server")]
use crate::coding::{VarInt, Writer};
use crate::recovery::{NewReno, PnSpace, ReceivedPackets, Recovery};
use crate::stream::{CryptoRecv, CryptoSend, Streams};
use crate::time::Instant;
use crate::token::TOKEN_MAX;
use crate::transport_params::{ResetToken, Side};

/// Leaves a field to a constructor's zeroing (the slot was zero-filled first) instead of
/// writing it: `zeroed!(Type, |z| check)` fails the build unless all-zero bytes are a
/// valid `Type` (references, `NonZero`, enums without a zero discriminant are rejected by
/// const evaluation) and `check` holds for that value, i.e. the zeros are the value the
/// field would have been given (`Option` niches are not guaranteed to put `None` at zero:
/// `matches!(z, None)` checks the layout actually compiled, per target). Evaluated after
/// monomorphization, so `Type` may name the constructor's generic parameters.
#[cfg_attr(not(feature = "device"), allow(unused_macros))]
macro_rules! zeroed {
    // The field at `$field` (a raw pointer), checked to be a `$t`.
    ($field:expr => $t:ty, |$z:ident| $check:expr) => {{
        let _: *mut $t = $field;
        $crate::connection::init::zeroed!($t, |$z| $check)
    }};
    ($t:ty, |$z:ident| $check:expr) => {
        const {
            // SAFETY: const evaluation rejects a type for which all-zero bytes are invalid
            // (it panics in `zeroed`, or on reading an invalid enum tag in `$check`).
            #[allow(unsafe_code, unused_unsafe)]
            let $z: $t = unsafe { core::mem::zeroed() };
            let ok = $check;
            // Not dropped: `$t` may have a destructor, which const evaluation cannot run.
            let _ = core::mem::ManuallyDrop::new($z);
            assert!(ok, "this field's all-zero bytes are not its initial value");
        }
    };
}
#[cfg_attr(not(feature = "device"), allow(unused_imports))]
pub(crate) use zeroed;

/// Writes `make()` to `dst`, out of line: the temporaries of each part of a connection
/// live only while that part is built, instead of all together in the constructor's frame.
///
/// # Safety
/// `dst` must be valid and aligned for a write of `T`; what it held is not dropped.
#[inline(never)]
pub(crate) unsafe fn put<T>(dst: *mut T, make: impl FnOnce() -> T) {
    // SAFETY: the caller's contract.
    unsafe { dst.write(make()) }
}

/// Has `make` write a value into `dst` in place (the TLS session, whose receive buffer is
/// ~1 KB on a device: built by value it would sit in this frame, issue 8), out of line.
/// Returns whether `dst` was written: `make` returned the slot it was given. If not,
/// whatever `make` wrote there is leaked, never dropped.
///
/// # Safety
/// `dst` must be valid and aligned for a write of `T`; what it held is not dropped.
#[inline(never)]
pub(crate) unsafe fn put_in_place<T>(
    dst: *mut T,
    make: impl FnOnce(&mut MaybeUninit<T>) -> &mut T,
) -> bool {
    // SAFETY: the caller's contract; `MaybeUninit<T>` has `T`'s layout and no validity
    // requirement, so a reference to it may point to uninitialized memory.
    let slot = unsafe { &mut *dst.cast::<MaybeUninit<T>>() };
    let made: *const T = make(slot);
    core::ptr::eq(made, dst)
}

impl<P, T, C, S, const N: usize, const SENT: usize, const RANGES: usize>
    Connection<P, T, C, S, N, SENT, RANGES>
where
    P: CryptoProvider + Clone,
    T: TlsSession,
    C: AsRef<[u8]> + AsMut<[u8]>,
    S: AsRef<[u8]> + AsMut<[u8]>,
{
    /// [`Connection::client`] written into `slot` (a `static` on a device) instead of
    /// returned: the connection is built in place, never on the stack, and so is the TLS
    /// session, which `tls` writes into the slot it is given (called once; e.g.
    /// `ClientSession::write_new`) and returns; a `tls` that returns another session is
    /// [`ConnectError::Config`]. On success `slot` holds the connection
    /// and the returned reference points to it; the caller drops it
    /// (`MaybeUninit::assume_init_drop`) or initializes the slot again for the next
    /// connection. On failure `slot` holds nothing.
    #[allow(clippy::too_many_arguments)]
    pub fn init_client<'s>(
        slot: &'s mut MaybeUninit<Self>,
        config: &ConnectionConfig,
        provider: P,
        tls: impl FnOnce(&mut MaybeUninit<T>) -> &mut T,
        storage: Storage<C, S, N>,
        now: Instant,
        remote: SocketAddr,
        rng: &mut dyn CryptoRng,
    ) -> Result<&'s mut Self, ConnectError> {
        let conn =
            Self::init_client_fields(slot, config, provider, tls, storage, now, remote, rng)?;
        // RFC 9369 §5: "Clients MUST NOT use a session ticket or token from a QUIC version 1
        // connection to initiate a QUIC version 2 connection, and vice versa": a ticket of
        // another version than the one we start in (or of none known) is not offered.
        let version = conn.hs.version;
        let ticket = conn.tls.resumption_params().map(crate::transport_params::ticket_version);
        if ticket.is_some_and(|v| v != Some(version)) {
            conn.tls.forget_resumption();
        }
        // RFC 9000 §18.2: a client never sends stateless_reset_token; its handshake
        // connection ID has no token the server could use.
        match conn.tls.start(&mut conn.hs) {
            Ok(()) => Ok(conn),
            Err(e) => {
                // SAFETY: `conn` is the initialized slot and is not used again; the slot
                // is left uninitialized, as documented.
                unsafe { core::ptr::drop_in_place(conn) };
                Err(ConnectError::Tls(e))
            }
        }
    }

    /// [`Self::init_client`] up to the TLS start: the DRBG, the connection IDs and every
    /// field. Out of line (issue 8): their temporaries are gone before the ClientHello is
    /// written, whose chain is the deepest of a device's connection setup.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn init_client_fields<'s>(
        slot: &'s mut MaybeUninit<Self>,
        config: &ConnectionConfig,
        provider: P,
        tls: impl FnOnce(&mut MaybeUninit<T>) -> &mut T,
        storage: Storage<C, S, N>,
        now: Instant,
        remote: SocketAddr,
        rng: &mut dyn CryptoRng,
    ) -> Result<&'s mut Self, ConnectError> {
        let mut drbg = Drbg::from_rng(provider.clone(), rng).map_err(ConnectError::Crypto)?;
        // RFC 9000 §7.2, §5.1, §10.3: the first Destination Connection ID, ours and its
        // reset token from one DRBG request, as the device connection draws them.
        let draw = random_cid::client_draw(&mut drbg, config.local_cid_len)?;
        let original_dcid = draw.original_dcid;
        let cids = Cids {
            local: draw.local,
            remote: original_dcid,
            peer_scid: original_dcid,
            original_dcid,
            retry_scid: None,
        };
        // A configured stateless reset key still decides the token (as for a server); the
        // drawn one is used otherwise. A client never sends it (RFC 9000 §18.2).
        #[cfg(feature = "stateless-reset")]
        let draw = match &config.stateless_reset_key {
            Some(key) => random_cid::ClientDraw {
                token: crate::endpoint::reset::derive_token(&provider, key, &draw.local)
                    .map_err(ConnectError::Crypto)?,
                ..draw
            },
            None => draw,
        };
        let token0 = Some(draw.token);
        Self::init(
            slot,
            config,
            Side::Client,
            provider,
            tls,
            storage,
            now,
            remote,
            drbg,
            cids,
            token0,
        )
    }

    /// Runs an `init_*` function on a local slot and returns the connection by value.
    pub(super) fn by_value(
        init: impl FnOnce(&mut MaybeUninit<Self>) -> Result<&mut Self, ConnectError>,
    ) -> Result<Self, ConnectError> {
        let mut slot = MaybeUninit::uninit();
        init(&mut slot)?;
        // SAFETY: the `init_*` functions initialize the slot whenever they return `Ok`.
        Ok(unsafe { slot.assume_init() })
    }

    /// Writes a new connection into `slot`: transport parameters, connection IDs, Initial
    /// keys (RFC 9001 §5.2) and empty state. On failure nothing is left in `slot`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn init<'s>(
        slot: &'s mut MaybeUninit<Self>,
        config: &ConnectionConfig,
        side: Side,
        provider: P,
        tls: impl FnOnce(&mut MaybeUninit<T>) -> &mut T,
        storage: Storage<C, S, N>,
        now: Instant,
        remote: SocketAddr,
        drbg: Drbg<P>,
        cids: Cids,
        token0: Option<ResetToken>,
    ) -> Result<&'s mut Self, ConnectError> {
        // RFC 9000 §10.3: the token of our handshake connection ID (`token0`, a client's,
        // drawn with its connection IDs). Drawn here, before `write_fields`, so the DRBG's
        // HMAC chain is not under that ~2 KB frame (issue 8).
        let mut drbg = drbg;
        let token0 = match token0 {
            Some(t) => t,
            None => rotation::reset_token(&provider, config, &mut drbg, &cids.local)
                .map_err(ConnectError::Crypto)?,
        };
        let conn = Self::write_fields(
            slot, config, side, provider, tls, storage, now, remote, drbg, cids, token0,
        )?;
        // RFC 9001 §5.2: Initial keys from the Destination Connection ID of the client's
        // Initial (after a Retry, the Retry's Source Connection ID, RFC 9000 §17.2.5.2).
        // Derived after `write_fields` has returned, so its ~2 KB frame (transport
        // parameters, the configuration copy) is not under the key derivation's.
        let version = conn.hs.version;
        let dcid = *conn.hs.cids.initial_dcid();
        if let Err(e) = conn.hs.keys.install_initial(&conn.hs.provider, version, &dcid, side) {
            // SAFETY: `conn` is the initialized slot and is not used again.
            unsafe { core::ptr::drop_in_place(conn) };
            return Err(ConnectError::Crypto(e));
        }
        Ok(conn)
    }

    /// Writes every field of a new connection into `slot` (no keys yet); returns it
    /// initialized. On failure nothing is left in `slot`.
    #[allow(clippy::too_many_arguments, clippy::field_reassign_with_default)]
    #[inline(never)]
    fn write_fields<'s>(
        slot: &'s mut MaybeUninit<Self>,
        config: &ConnectionConfig,
        side: Side,
        provider: P,
        tls: impl FnOnce(&mut MaybeUninit<T>) -> &mut T,
        storage: Storage<C, S, N>,
        now: Instant,
        remote: SocketAddr,
        drbg: Drbg<P>,
        cids: Cids,
        token0: ResetToken,
    ) -> Result<&'s mut Self, ConnectError> {
        if config.local_cid_len > crate::cid::MAX_CID_LEN
            || usize::from(config.max_datagram_size) < MIN_INITIAL_SIZE
            || !config.version.is_supported()
            || T::SIDE != side
        {
            return Err(ConnectError::Config);
        }
        let version = config.version;
        let Storage { crypto, streams } = storage;
        let [(cs0, cr0), (cs1, cr1), (cs2, cr2)] = crypto;
        let recv_buf = streams.iter().map(|(_, r)| r.as_ref().len()).min().unwrap_or(0);
        let compatible = config.compatible_version.filter(|v| v.is_supported() && *v != version);
        let max_ack_delay = config.max_ack_delay();
        let threshold = config.ack_eliciting_threshold;
        let local = cids.local;
        let remote_cid = cids.remote;

        let p = slot.as_mut_ptr();
        // SAFETY: `p` comes from a `&mut MaybeUninit<Self>`, so it is valid and aligned for
        // writes of every field; `addr_of_mut!` takes field addresses without creating
        // references to uninitialized memory, and `write` drops nothing. References are
        // made only to fields already written. `all_fields` keeps this list complete.
        unsafe {
            let hs = addr_of_mut!((*p).hs);
            // The configuration copy, the DRBG, the connection IDs and our transport
            // parameters go to their places first and are used there: none of them is held
            // in this frame, which sits under the stream table's construction (issue 8).
            let cfg = addr_of_mut!((*p).config);
            cfg.write(*config);
            (*cfg).recovery.is_server = side == Side::Server;
            (*cfg).recovery.max_datagram_size = (*cfg).max_datagram_size;
            let rng = addr_of_mut!((*hs).rng);
            rng.write(drbg);
            addr_of_mut!((*hs).cids).write(cids);
            put(addr_of_mut!((*p).local_cids), || cids::LocalCids::new(local, token0));
            let local_tp = addr_of_mut!((*hs).local_tp);
            local_tp.write([0; LOCAL_TP_MAX]);
            let encoded = Self::encode_local_tp(
                &*cfg,
                side,
                compatible,
                recv_buf,
                &*addr_of_mut!((*hs).cids),
                token0,
                &provider,
                &mut *rng,
                &mut *addr_of_mut!((*p).local_cids),
                &mut *local_tp,
            );
            let local_tp_len = match encoded {
                Ok(len) => len,
                Err(e) => {
                    // Nothing else written holds anything to release but the DRBG's
                    // state, which is wiped on drop.
                    core::ptr::drop_in_place(rng);
                    return Err(e);
                }
            };
            // Nothing below fails until the Initial keys: every field is written, then the
            // keys are derived into their place. The TLS session first, so that nothing
            // else is live yet if `tls` did not write its slot.
            if !put_in_place(addr_of_mut!((*p).tls), tls) {
                core::ptr::drop_in_place(rng);
                return Err(ConnectError::Config);
            }
            addr_of_mut!((*hs).provider).write(provider);
            addr_of_mut!((*hs).side).write(side);
            addr_of_mut!((*hs).version).write(version);
            addr_of_mut!((*hs).original_version).write(version);
            addr_of_mut!((*hs).compatible).write(compatible);
            put(addr_of_mut!((*hs).crypto_send), || {
                [CryptoSend::new(cs0), CryptoSend::new(cs1), CryptoSend::new(cs2)]
            });
            addr_of_mut!((*hs).local_tp_len).write(local_tp_len);
            // No keys yet; the Initial keys are derived in place below.
            let keys = addr_of_mut!((*hs).keys);
            addr_of_mut!((*keys).initial).write(KeySlot::empty());
            addr_of_mut!((*keys).handshake).write(KeySlot::empty());
            addr_of_mut!((*keys).one_rtt).write(KeySlot::empty());
            #[cfg(feature = "resumption")]
            addr_of_mut!((*keys).zero_rtt).write(KeySlot::empty());
            addr_of_mut!((*hs).peer_tp).write(None);
            addr_of_mut!((*hs).signals).write(HsSignals::default());
            #[cfg(feature = "resumption")]
            {
                addr_of_mut!((*hs).remembered_tp).write([0; super::tls::REMEMBERED_TP_MAX]);
                addr_of_mut!((*hs).remembered_tp_len).write(0);
                addr_of_mut!((*hs).ticket).write([0; super::tls::TICKET_MAX]);
                addr_of_mut!((*hs).ticket_len).write(0);
            }
            #[cfg(feature = "keylog")]
            addr_of_mut!((*hs).keylog).write(super::keylog::KeyLog::new());

            addr_of_mut!((*p).side).write(side);
            addr_of_mut!((*p).state).write(State::Handshake);
            addr_of_mut!((*p).remote).write(remote);
            put(addr_of_mut!((*p).crypto_recv), || {
                [CryptoRecv::new(cr0), CryptoRecv::new(cr1), CryptoRecv::new(cr2)]
            });
            put(addr_of_mut!((*p).rx_initial), || {
                ReceivedPackets::new(PnSpace::Initial, max_ack_delay)
            });
            put(addr_of_mut!((*p).rx_handshake), || {
                ReceivedPackets::new(PnSpace::Handshake, max_ack_delay)
            });
            put(addr_of_mut!((*p).rx_data), || {
                ReceivedPackets::new(PnSpace::ApplicationData, max_ack_delay)
                    .with_ack_eliciting_threshold(threshold)
            });
            let config = &*cfg;
            let cc = NewReno::new(config.max_datagram_size);
            Recovery::write_new(addr_of_mut!((*p).recovery), config.recovery, cc);
            Streams::write_new(addr_of_mut!((*p).streams), side, config.streams, streams);
            addr_of_mut!((*p).controls).write(ControlTable::new());
            addr_of_mut!((*p).peer).write(None);
            addr_of_mut!((*p).remote_cid_set).write(false);
            addr_of_mut!((*p).handshake_complete).write(false);
            addr_of_mut!((*p).handshake_confirmed).write(false);
            addr_of_mut!((*p).handshake_done_pending).write(false);
            addr_of_mut!((*p).address_validated).write(side == Side::Client);
            addr_of_mut!((*p).amp_received).write(0);
            addr_of_mut!((*p).amp_sent).write(0);
            addr_of_mut!((*p).probes).write([0; 3]);
            addr_of_mut!((*p).fast_resends).write(0);
            #[cfg(not(feature = "migration"))]
            addr_of_mut!((*p).path_response).write(None);
            put(addr_of_mut!((*p).remote_cids), || cids::RemoteCids::new(remote_cid));
            addr_of_mut!((*p).ecn).write(path::Ecn::new(config.ecn));
            addr_of_mut!((*p).local).write(None);
            #[cfg(feature = "pmtud")]
            addr_of_mut!((*p).pmtud).write(path::Pmtud::new(config.max_datagram_size));
            #[cfg(feature = "migration")]
            addr_of_mut!((*p).migration).write(path::Migration::new());
            #[cfg(feature = "migration")]
            addr_of_mut!((*p).preferred).write(None);
            #[cfg(feature = "stateless-reset")]
            addr_of_mut!((*p).datagram_tail).write(None);
            addr_of_mut!((*p).ping_pending).write(false);
            addr_of_mut!((*p).idle_start).write(now);
            addr_of_mut!((*p).ack_eliciting_since_recv).write(false);
            addr_of_mut!((*p).pacing_wakeup).write(None);
            addr_of_mut!((*p).close_pending).write(false);
            addr_of_mut!((*p).local_close).write(None);
            addr_of_mut!((*p).close_reason).write(None);
            put(addr_of_mut!((*p).events), Events::new);
            addr_of_mut!((*p).stats).write(Default::default());
            addr_of_mut!((*p).any_packet).write(false);
            addr_of_mut!((*p).last_now).write(now);
            addr_of_mut!((*p).early_params).write(false);
            addr_of_mut!((*p).early_rejected).write(false);
            addr_of_mut!((*p).token).write([0; TOKEN_MAX]);
            addr_of_mut!((*p).token_len).write(0);
            addr_of_mut!((*p).token_state).write(TokenState::None);
            addr_of_mut!((*p).retried).write(false);
            addr_of_mut!((*p).auth_failures).write(0);
            #[cfg(feature = "resumption")]
            addr_of_mut!((*p).remembered_limits).write(None);
            addr_of_mut!((*p).vn_choice).write(None);
            #[cfg(feature = "datagram")]
            addr_of_mut!((*p).dgram_send).write(super::datagram::DatagramQueue::new());
            #[cfg(feature = "datagram")]
            addr_of_mut!((*p).dgram_recv).write(super::datagram::DatagramQueue::new());
            addr_of_mut!((*p).skip_pn_at).write(SKIP_PN_GAP_MIN);
            addr_of_mut!((*p).closing_received).write(0);
            addr_of_mut!((*p).closing_answer_at).write(1);
            #[cfg(feature = "qlog")]
            addr_of_mut!((*p).packet_log).write(super::packet_log::PacketLog::new());
        }
        // SAFETY: every field was written above.
        Ok(unsafe { slot.assume_init_mut() })
    }

    /// Our transport parameters (RFC 9000 §7.4, §18.2), encoded into `out`; returns their
    /// length. Out of line (issue 8): the `TransportParameters` value is gone from the stack
    /// before the fields and the stream table are written.
    #[allow(clippy::too_many_arguments, clippy::field_reassign_with_default, unused_variables)]
    #[inline(never)]
    fn encode_local_tp(
        config: &ConnectionConfig,
        side: Side,
        compatible: Option<crate::version::Version>,
        recv_buf: usize,
        cids: &Cids,
        token0: ResetToken,
        provider: &P,
        drbg: &mut Drbg<P>,
        local_cids: &mut cids::LocalCids,
        out: &mut [u8; LOCAL_TP_MAX],
    ) -> Result<usize, ConnectError> {
        // A client-only build writes a client's parameters without the general encoder.
        #[cfg(not(feature = "server"))]
        return super::client_tp::encode_client(config, N, recv_buf, &cids.local, compatible, out)
            .map_err(|_| ConnectError::Config);
        // Every other build goes through the general encoder.
        #[cfg(feature = "server")]
        {
            let version = config.version;
            // Assigned field by field after `default()` (issue 8): the struct-update form
            // measured 84 B larger on the device (hence the clippy allowance above).
            let mut tp = crate::transport_params::TransportParameters::default();
            tp.max_idle_timeout = VarInt::from_u32(config.local_idle_timeout_ms());
            tp.max_udp_payload_size = VarInt::from(config.max_udp_payload_size);
            // Advertise the stream counts the table will accept (capped to the N slots).
            config.streams.for_slots(N).apply_to(&mut tp, recv_buf);
            tp.max_ack_delay = config.max_ack_delay_ms.min((1 << 14) - 1);
            // RFC 9000 §18.2: without migration support, ask the peer not to migrate.
            tp.disable_active_migration = !cfg!(feature = "migration");
            tp.active_connection_id_limit = VarInt::from_u32(cids::REMOTE_CIDS as u32);
            tp.initial_source_connection_id = Some(cids.local);
            // RFC 9368 §3: our version_information: the version in use and every version we
            // would use on this connection, the compatible version first as our preference (a
            // server picking by the client's order, as aioquic does, then upgrades a client
            // that offers it; the order does not matter to mote's server).
            tp.version_information = Some(match compatible {
                Some(c) => crate::transport_params::VersionInformation::new(version, &[c, version]),
                None => crate::transport_params::VersionInformation::new(version, &[version]),
            });
            // RFC 9221 §3: offer DATAGRAM frames up to the configured size.
            #[cfg(feature = "datagram")]
            {
                tp.max_datagram_frame_size = VarInt::from(config.max_datagram_frame_size);
            }
            if side == Side::Server {
                // RFC 9000 §7.3: a server names the client's first DCID and, after a Retry, the
                // Retry's SCID.
                tp.original_destination_connection_id = Some(cids.original_dcid);
                tp.retry_source_connection_id = cids.retry_scid;
                // RFC 9000 §10.3: the server's token for its handshake connection ID.
                #[cfg(feature = "stateless-reset")]
                if config.stateless_reset_key.is_some() {
                    tp.stateless_reset_token = Some(token0);
                }
                // RFC 9000 §9.6: the preferred address comes with connection ID sequence 1.
                #[cfg(feature = "migration")]
                if let Some(addr) = config.preferred_address {
                    let cid = random_cid(drbg, config.local_cid_len)?;
                    let token = rotation::reset_token(provider, config, drbg, &cid)
                        .map_err(ConnectError::Crypto)?;
                    if !cid.is_empty() && local_cids.issue(cid, token, true) {
                        tp.preferred_address =
                            Some(super::migrate::preferred_param(addr, cid, token));
                    }
                }
            }
            let mut w = Writer::new(out);
            tp.encode(&mut w).map_err(|_| ConnectError::Config)?;
            Ok(w.position())
        }
    }

    /// Names every field (an exhaustive pattern, never called): adding a field to
    /// [`Connection`] fails to build until [`Connection::write_fields`] writes it too.
    #[allow(dead_code)]
    fn all_fields(&self) {
        let Self {
            side: _,
            config: _,
            tls: _,
            state: _,
            remote: _,
            hs:
                Handshake {
                    provider: _,
                    rng: _,
                    side: _,
                    version: _,
                    original_version: _,
                    compatible: _,
                    crypto_send: _,
                    local_tp: _,
                    local_tp_len: _,
                    keys:
                        Keys {
                            initial: _,
                            handshake: _,
                            one_rtt: _,
                            #[cfg(feature = "resumption")]
                                zero_rtt: _,
                        },
                    cids: _,
                    peer_tp: _,
                    signals: _,
                    #[cfg(feature = "resumption")]
                        remembered_tp: _,
                    #[cfg(feature = "resumption")]
                        remembered_tp_len: _,
                    #[cfg(feature = "resumption")]
                        ticket: _,
                    #[cfg(feature = "resumption")]
                        ticket_len: _,
                    #[cfg(feature = "keylog")]
                        keylog: _,
                },
            crypto_recv: _,
            rx_initial: _,
            rx_handshake: _,
            rx_data: _,
            recovery: _,
            streams: _,
            controls: _,
            peer: _,
            remote_cid_set: _,
            handshake_complete: _,
            handshake_confirmed: _,
            handshake_done_pending: _,
            address_validated: _,
            amp_received: _,
            amp_sent: _,
            probes: _,
            fast_resends: _,
            #[cfg(not(feature = "migration"))]
                path_response: _,
            local_cids: _,
            remote_cids: _,
            ecn: _,
            local: _,
            #[cfg(feature = "pmtud")]
                pmtud: _,
            #[cfg(feature = "migration")]
                migration: _,
            #[cfg(feature = "migration")]
                preferred: _,
            #[cfg(feature = "stateless-reset")]
                datagram_tail: _,
            ping_pending: _,
            idle_start: _,
            ack_eliciting_since_recv: _,
            pacing_wakeup: _,
            close_pending: _,
            local_close: _,
            close_reason: _,
            events: _,
            stats: _,
            any_packet: _,
            last_now: _,
            early_params: _,
            early_rejected: _,
            token: _,
            token_len: _,
            token_state: _,
            retried: _,
            auth_failures: _,
            #[cfg(feature = "resumption")]
                remembered_limits: _,
            vn_choice: _,
            #[cfg(feature = "datagram")]
                dgram_send: _,
            #[cfg(feature = "datagram")]
                dgram_recv: _,
            skip_pn_at: _,
            closing_received: _,
            closing_answer_at: _,
            #[cfg(feature = "qlog")]
                packet_log: _,
        } = self;
    }
}
