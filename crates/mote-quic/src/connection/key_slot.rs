//! Slots for packet-protection keys, filled in place (RFC 9001 §5: one set per encryption
//! level). An `Option<DirKeys>` can only be filled by moving a finished value in, and on a
//! device each by-value copy of a level's keys (AES key schedules and GHASH keys, ~1.5 KB
//! per level) is stack it does not have. A [`KeySlot`] is filled part by part where the
//! keys stay, each part built by the crypto provider and written to its final place.
//!
//! With `init.rs` the crate's only `unsafe`: a slot's memory is initialized exactly when
//! `live` is set, and every access goes through that flag.
#![allow(unsafe_code)]

use core::mem::MaybeUninit;
use core::ptr::addr_of_mut;

use mote_crypto::{hkdf, AeadAlgorithm, CryptoProvider, Error, Secret, NONCE_LEN};

use super::tls::{DirKeys, OneRttKeys};
use crate::packet::{PacketKey, PacketKeys};
use crate::time::Instant;
use crate::version::Version;

/// Keys of one level (or one direction), or none. Dropping the slot drops the keys.
pub(crate) struct KeySlot<T> {
    live: bool,
    keys: MaybeUninit<T>,
}

impl<T> KeySlot<T> {
    /// No keys.
    pub(crate) const fn empty() -> Self {
        Self { live: false, keys: MaybeUninit::uninit() }
    }

    /// The keys, if the slot holds any.
    pub(crate) fn as_ref(&self) -> Option<&T> {
        // SAFETY: `live` is set only once `keys` is fully written.
        self.live.then(|| unsafe { self.keys.assume_init_ref() })
    }

    /// The keys, if the slot holds any.
    pub(crate) fn as_mut(&mut self) -> Option<&mut T> {
        // SAFETY: as in `as_ref`.
        self.live.then(|| unsafe { self.keys.assume_init_mut() })
    }

    /// Whether the slot holds keys.
    pub(crate) const fn is_some(&self) -> bool {
        self.live
    }

    /// Whether the slot is empty.
    pub(crate) const fn is_none(&self) -> bool {
        !self.live
    }

    /// Drops the keys where they are (their `Drop` erases them); returns whether there
    /// were any.
    pub(crate) fn clear(&mut self) -> bool {
        if !self.live {
            return false;
        }
        self.live = false;
        // SAFETY: `keys` was initialized (`live`), and is marked empty before the drop, so
        // it is never dropped twice.
        unsafe { self.keys.assume_init_drop() };
        true
    }
}

impl<T> Drop for KeySlot<T> {
    fn drop(&mut self) {
        self.clear();
    }
}

/// RFC 9001 §5.1: writes the AEAD key, IV and header-protection key derived from `secret`
/// to `dst`, each part straight from the provider. On an error nothing is left written.
///
/// # Safety
/// `dst` must be valid and aligned for writes of `PacketKeys<P>`; what it held is not
/// dropped.
unsafe fn write_packet_keys<P: CryptoProvider>(
    dst: *mut PacketKeys<P>,
    provider: &P,
    version: Version,
    alg: AeadAlgorithm,
    secret: &[u8],
) -> Result<(), Error> {
    // RFC 9001 §5.1 (as `KeyMaterial::derive`): the header-protection key ("quic hp"), the
    // AEAD key ("quic key") and IV ("quic iv"), each derived just before it is written, so
    // only one raw key is in a frame at a time; each half in its own function, so this
    // frame holds none of them under the AEAD key's schedule (issue 8: a device's stack).
    // SAFETY: the caller's contract; field addresses only, no references to the
    // uninitialized value.
    unsafe {
        let header = &mut *addr_of_mut!((*dst).header).cast::<MaybeUninit<P::HeaderKey>>();
        write_header_key(header, provider, version, alg, secret)?;
        let packet = addr_of_mut!((*dst).packet);
        if let Err(e) = write_packet_key(packet, provider, version, alg, secret) {
            core::ptr::drop_in_place(addr_of_mut!((*dst).header));
            return Err(e);
        }
    }
    Ok(())
}

/// RFC 9001 §5.1: writes the header-protection key ("quic hp") derived from `secret` to
/// `dst`, straight from the provider. Out of line: the raw key is in this frame only.
#[inline(never)]
fn write_header_key<P: CryptoProvider>(
    dst: &mut MaybeUninit<P::HeaderKey>,
    provider: &P,
    version: Version,
    alg: AeadAlgorithm,
    secret: &[u8],
) -> Result<(), Error> {
    let params = version.params().ok_or(Error::Unsupported)?;
    let mut hp = Secret::zeroed(alg.key_len());
    expand_raw_key(provider, alg, secret, params.hp_label, &mut hp)?;
    provider.write_header_key(alg, hp.as_ref(), dst)?;
    Ok(())
}

/// RFC 9001 §5.1: HKDF-Expand-Label(secret, label, "", key length) into `out`, a raw key
/// (AEAD or header protection) in its caller's frame. Written there, not returned: a
/// returned `Secret` is moved out of the callee's frame, and the moved-from copy is never
/// wiped (its drop runs on the copy). `out` wipes itself on drop, where it lies.
fn expand_raw_key<P: CryptoProvider>(
    provider: &P,
    alg: AeadAlgorithm,
    secret: &[u8],
    label: &[u8],
    out: &mut Secret,
) -> Result<(), Error> {
    hkdf::expand_label(provider, alg.hash(), secret, label, &[], out.as_mut())
}

/// RFC 9001 §5.1, §6.1: writes the AEAD key ("quic key") and IV ("quic iv") derived from
/// `secret` to `dst`, the key straight from the provider: the payload half of
/// [`write_packet_keys`], and what a key update re-derives (the header-protection key is
/// not updated). One copy of the derivation for both (issue 8). On an error nothing is
/// left written.
///
/// # Safety
/// As [`write_packet_keys`], for `PacketKey<P>`.
#[inline(never)]
unsafe fn write_packet_key<P: CryptoProvider>(
    dst: *mut PacketKey<P>,
    provider: &P,
    version: Version,
    alg: AeadAlgorithm,
    secret: &[u8],
) -> Result<(), Error> {
    let params = version.params().ok_or(Error::Unsupported)?;
    let hash = alg.hash();
    // SAFETY: the caller's contract; field addresses only.
    unsafe {
        let key = &mut *addr_of_mut!((*dst).key).cast::<MaybeUninit<P::AeadKey>>();
        let mut raw = Secret::zeroed(alg.key_len());
        expand_raw_key(provider, alg, secret, params.key_label, &mut raw)
            .and_then(|()| provider.write_aead_key(alg, raw.as_ref(), key))?;
        // The IV is derived where it stays (zeroed first: no reference to uninitialized
        // memory), not in a local that would be copied in and left behind.
        let iv = addr_of_mut!((*dst).iv);
        iv.write([0; NONCE_LEN]);
        if let Err(e) = hkdf::expand_label(provider, hash, secret, params.iv_label, &[], &mut *iv) {
            core::ptr::drop_in_place(addr_of_mut!((*dst).key));
            return Err(e);
        }
    }
    Ok(())
}

/// Writes both directions' keys to `dst`; on an error nothing is left written.
///
/// # Safety
/// As [`write_packet_keys`], for `DirKeys<P>`.
unsafe fn write_dir_keys<P: CryptoProvider>(
    dst: *mut DirKeys<P>,
    provider: &P,
    version: Version,
    alg: AeadAlgorithm,
    tx: &[u8],
    rx: &[u8],
) -> Result<(), Error> {
    // SAFETY: the caller's contract, for each field.
    unsafe {
        let tx_keys = addr_of_mut!((*dst).tx);
        write_packet_keys(tx_keys, provider, version, alg, tx)?;
        if let Err(e) = write_packet_keys(addr_of_mut!((*dst).rx), provider, version, alg, rx) {
            // Erase the send keys already written.
            core::ptr::drop_in_place(tx_keys);
            return Err(e);
        }
    }
    Ok(())
}

#[cfg(feature = "resumption")]
impl<P: CryptoProvider> KeySlot<PacketKeys<P>> {
    /// Replaces the keys with those derived from `secret` (RFC 9001 §5.1), in place.
    #[inline(never)]
    pub(crate) fn derive(
        &mut self,
        provider: &P,
        version: Version,
        alg: AeadAlgorithm,
        secret: &[u8],
    ) -> Result<(), Error> {
        self.clear();
        // SAFETY: the slot is empty and `as_mut_ptr` is valid for the write; `live` is set
        // only after it succeeded.
        unsafe { write_packet_keys(self.keys.as_mut_ptr(), provider, version, alg, secret)? };
        self.live = true;
        Ok(())
    }
}

impl<P: CryptoProvider> KeySlot<PacketKey<P>> {
    /// Replaces the key with the AEAD key and IV derived from `secret` (RFC 9001 §5.1, §6:
    /// a key phase's receive key), in place. On an error the slot is left empty.
    pub(crate) fn derive(
        &mut self,
        provider: &P,
        version: Version,
        alg: AeadAlgorithm,
        secret: &[u8],
    ) -> Result<(), Error> {
        self.clear();
        // SAFETY: the slot is empty and `as_mut_ptr` is valid for the write; `live` is set
        // only after it succeeded.
        unsafe { write_packet_key(self.keys.as_mut_ptr(), provider, version, alg, secret)? };
        self.live = true;
        Ok(())
    }
}

impl<P: CryptoProvider> KeySlot<DirKeys<P>> {
    /// Replaces the keys with those of the (send, receive) secrets `tx`, `rx`, in place.
    #[inline(never)]
    pub(crate) fn derive(
        &mut self,
        provider: &P,
        version: Version,
        alg: AeadAlgorithm,
        tx: &[u8],
        rx: &[u8],
    ) -> Result<(), Error> {
        self.clear();
        // SAFETY: as in `KeySlot<PacketKeys>::derive`.
        unsafe { write_dir_keys(self.keys.as_mut_ptr(), provider, version, alg, tx, rx)? };
        self.live = true;
        Ok(())
    }
}

impl<P: CryptoProvider> KeySlot<OneRttKeys<P>> {
    /// RFC 9001 §5.1, §6: the 1-RTT keys of the secrets `tx`, `rx` and what key updates
    /// derive from them (the secrets, Key Phase 0), in place.
    #[inline(never)]
    pub(crate) fn derive(
        &mut self,
        provider: &P,
        version: Version,
        suite: AeadAlgorithm,
        tx: &Secret,
        rx: &Secret,
    ) -> Result<(), Error> {
        self.clear();
        let p = self.keys.as_mut_ptr();
        // SAFETY: the slot is empty and `p` valid for writes; every field of `OneRttKeys`
        // is written (the keys first: on their error nothing is left written) before
        // `live` is set.
        unsafe {
            let keys = addr_of_mut!((*p).keys);
            write_dir_keys(keys, provider, version, suite, tx.as_ref(), rx.as_ref())?;
            addr_of_mut!((*p).suite).write(suite);
            addr_of_mut!((*p).tx_phase).write(false);
            addr_of_mut!((*p).rx_phase).write(false);
            addr_of_mut!((*p).tx_ahead).write(false);
            addr_of_mut!((*p).tx_secret).write(tx.clone());
            addr_of_mut!((*p).rx_secret).write(rx.clone());
            addr_of_mut!((*p).updates).write(0);
            addr_of_mut!((*p).prev_rx).write(KeySlot::empty());
            addr_of_mut!((*p).prev_rx_until).write(Instant::ZERO);
            // RFC 9001 §6.3: derived once the first 1-RTT packet is opened
            // (`open_one_rtt`).
            addr_of_mut!((*p).next_rx).write(KeySlot::empty());
            addr_of_mut!((*p).next_rx_ready).write(false);
            addr_of_mut!((*p).rx_phase_start_pn).write(0);
            addr_of_mut!((*p).tx_phase_start_pn).write(super::tls::PN_NONE);
            addr_of_mut!((*p).update_after).write(super::tls::UPDATE_NEVER);
            addr_of_mut!((*p).tx_packets).write(0);
        }
        self.live = true;
        Ok(())
    }
}

impl<P: CryptoProvider> KeySlot<OneRttKeys<P>> {
    /// RFC 9001 §6.1: replaces the send key's AEAD key and IV with those of `secret`, over
    /// the old ones (the header-protection key stays), derived where it stays. The caller
    /// derives `secret` (the fallible step) before the old key goes; should the key's own
    /// derivation or the provider still fail (a provider fault: HKDF-Expand-Label of a
    /// suite's key or IV length cannot fail otherwise), every 1-RTT key is erased and the
    /// slot left empty (no packet is protected with a missing key).
    pub(crate) fn replace_tx_key(
        &mut self,
        provider: &P,
        version: Version,
        alg: AeadAlgorithm,
        secret: &[u8],
    ) -> Result<(), Error> {
        if !self.live {
            return Err(Error::Unsupported);
        }
        let p = self.keys.as_mut_ptr();
        // SAFETY: the slot is live, so every field is initialized; the old key is dropped
        // once and then either rewritten, or the slot is marked empty and every other field
        // dropped (never the missing key).
        unsafe {
            let tx = addr_of_mut!((*p).keys.tx.packet);
            core::ptr::drop_in_place(addr_of_mut!((*tx).key));
            if let Err(e) = write_packet_key(tx, provider, version, alg, secret) {
                self.live = false;
                core::ptr::drop_in_place(addr_of_mut!((*p).keys.tx.header));
                core::ptr::drop_in_place(addr_of_mut!((*p).keys.rx));
                core::ptr::drop_in_place(addr_of_mut!((*p).prev_rx));
                core::ptr::drop_in_place(addr_of_mut!((*p).next_rx));
                core::ptr::drop_in_place(addr_of_mut!((*p).tx_secret));
                core::ptr::drop_in_place(addr_of_mut!((*p).rx_secret));
                return Err(e);
            }
        }
        Ok(())
    }
}

/// Names every field of [`OneRttKeys`] (an exhaustive pattern, never called): a new field
/// fails to build until `KeySlot<OneRttKeys>::derive` writes it (and
/// `KeySlot<OneRttKeys>::replace_tx_key` erases it on a provider fault).
#[allow(dead_code)]
fn one_rtt_fields<P: CryptoProvider>(k: &OneRttKeys<P>) {
    let OneRttKeys {
        keys: _,
        suite: _,
        tx_phase: _,
        rx_phase: _,
        tx_ahead: _,
        tx_secret: _,
        rx_secret: _,
        updates: _,
        prev_rx: _,
        prev_rx_until: _,
        next_rx: _,
        next_rx_ready: _,
        rx_phase_start_pn: _,
        tx_phase_start_pn: _,
        update_after: _,
        tx_packets: _,
    } = k;
}

#[cfg(test)]
mod tests {
    use mote_crypto::rustcrypto::RustCrypto;
    use mote_crypto::HeaderProtectionKey as _;

    use super::*;
    use crate::connection::tls::UPDATE_NEVER;
    use crate::error::WireError;

    /// RFC 9001 §A.1: the client's Initial secret for DCID 0x8394c8f03e515708.
    pub(super) const CLIENT_IN: [u8; 32] =
        hex_literal::hex!("c00cf151ca5be075ed0ebfb5c80323c42d6b7db67881289af4008f1f6c357aea");
    /// RFC 9001 §A.1: the server's Initial secret.
    pub(super) const SERVER_IN: [u8; 32] =
        hex_literal::hex!("3c199828fd139efd216c155ad844cc81fb82fa8d7446fa7d78be803acdda951b");

    /// Seals a fixed packet and masks a fixed sample: equal outputs mean equal keys.
    fn fingerprint(k: &PacketKeys<RustCrypto>) -> ([u8; 48], [u8; 5]) {
        let mut packet = [0u8; 48];
        packet[..8].copy_from_slice(b"header!!");
        k.packet.seal_in_place(2, &mut packet, 8).unwrap();
        (packet, k.header.mask(&[7; 16]).unwrap())
    }

    #[test]
    fn derived_in_place_like_from_secret() {
        let (p, v, alg) = (RustCrypto, Version::V1, AeadAlgorithm::Aes128Gcm);
        let mut slot = KeySlot::<DirKeys<RustCrypto>>::empty();
        assert!(slot.is_none() && slot.as_ref().is_none());
        slot.derive(&p, v, alg, &CLIENT_IN, &SERVER_IN).unwrap();
        let keys = slot.as_ref().unwrap();
        let tx = PacketKeys::from_secret(&p, v, alg, &CLIENT_IN).unwrap();
        let rx = PacketKeys::from_secret(&p, v, alg, &SERVER_IN).unwrap();
        assert_eq!(fingerprint(&keys.tx), fingerprint(&tx));
        assert_eq!(fingerprint(&keys.rx), fingerprint(&rx));
        // RFC 9001 §A.1: client key, IV and hp.
        assert_eq!(keys.tx.packet.iv, hex_literal::hex!("fa044b2f42a3fd3b46fb255c"));
        // Derived again (the other way round), in the same place.
        slot.derive(&p, v, alg, &SERVER_IN, &CLIENT_IN).unwrap();
        assert_eq!(fingerprint(&slot.as_ref().unwrap().tx), fingerprint(&rx));
        assert!(slot.clear());
        assert!(!slot.clear() && slot.as_mut().is_none());
        // A failed derivation (a version without key labels) leaves the slot empty.
        slot.derive(&p, v, alg, &CLIENT_IN, &SERVER_IN).unwrap();
        let unknown = Version(0x0a0a_0a0a);
        assert_eq!(slot.derive(&p, unknown, alg, &CLIENT_IN, &SERVER_IN), Err(Error::Unsupported));
        assert!(slot.is_none());
    }

    /// RFC 9001 §4.9, §6.5: a discarded key is erased (the AES key schedule, the IV), not
    /// only marked gone.
    #[test]
    fn cleared_key_is_erased() {
        let (p, v, alg) = (RustCrypto, Version::V1, AeadAlgorithm::Aes128Gcm);
        let mut slot = KeySlot::<PacketKey<RustCrypto>>::empty();
        // Zeroed first, so that padding reads as zero too.
        slot.keys = MaybeUninit::zeroed();
        let bytes = |slot: &KeySlot<PacketKey<RustCrypto>>| {
            let len = core::mem::size_of::<PacketKey<RustCrypto>>();
            // SAFETY: the slot's bytes were zeroed, then written by the key (or erased).
            unsafe { core::slice::from_raw_parts(slot.keys.as_ptr().cast::<u8>(), len) }.to_vec()
        };
        let nonzero = |b: &[u8]| b.iter().filter(|&&b| b != 0).count();
        slot.derive(&p, v, alg, &CLIENT_IN).unwrap();
        let written = bytes(&slot);
        let iv = core::mem::offset_of!(PacketKey<RustCrypto>, iv);
        // RFC 9001 §A.1: the client's Initial IV.
        assert_eq!(written[iv..iv + 12], hex_literal::hex!("fa044b2f42a3fd3b46fb255c"));
        assert!(slot.clear());
        let erased = bytes(&slot);
        assert_eq!(erased[iv..iv + 12], [0; 12]);
        // The AES key schedule (176 bytes of round keys, mostly non-zero) is gone too. (Not
        // every byte: a provider's key type may be a union whose unused part a move filled
        // with whatever was on the stack, which is not this key's.)
        let (before, after) = (nonzero(&written), nonzero(&erased));
        assert!(before >= after + 140, "{before} non-zero bytes before, {after} after");
    }

    #[test]
    fn one_rtt_keys_start_at_phase_zero() {
        let (p, v, alg) = (RustCrypto, Version::V1, AeadAlgorithm::Aes128Gcm);
        let (tx, rx) = (Secret::new(&CLIENT_IN), Secret::new(&SERVER_IN));
        let mut slot = KeySlot::<OneRttKeys<RustCrypto>>::empty();
        slot.derive(&p, v, alg, &tx, &rx).unwrap();
        let k = slot.as_ref().unwrap();
        assert!(!k.tx_phase && !k.rx_phase && !k.tx_ahead && k.prev_rx.is_none());
        assert_eq!((k.tx_secret.as_ref(), k.rx_secret.as_ref()), (&CLIENT_IN[..], &SERVER_IN[..]));
        assert_eq!(
            fingerprint(&k.keys.rx),
            fingerprint(&PacketKeys::from_secret(&p, v, alg, &SERVER_IN).unwrap())
        );
    }

    /// Seals `payload` as a packet `pn` with `key` (an 8-byte header), for `open_one_rtt`.
    fn sealed(key: &PacketKey<RustCrypto>, pn: u64, payload: &[u8]) -> std::vec::Vec<u8> {
        let mut pkt = std::vec![0u8; 8 + payload.len() + mote_crypto::TAG_LEN];
        pkt[..8].copy_from_slice(b"header!!");
        pkt[8..8 + payload.len()].copy_from_slice(payload);
        key.seal_in_place(pn, &mut pkt, 8).unwrap();
        pkt
    }

    #[test]
    fn key_update_built_in_place_keeps_previous_key_on_forgery() {
        let (p, v, alg) = (RustCrypto, Version::V1, AeadAlgorithm::Aes128Gcm);
        let (tx, rx) = (Secret::new(&CLIENT_IN), Secret::new(&SERVER_IN));
        let mut slot = KeySlot::<OneRttKeys<RustCrypto>>::empty();
        slot.derive(&p, v, alg, &tx, &rx).unwrap();
        let (now, until) = (Instant(1_000), Instant(2_000));
        let next_secret = |s: &[u8]| crate::packet::next_secret(&p, v, alg.hash(), s).unwrap();
        let rx1 = next_secret(&SERVER_IN);
        let rx2 = next_secret(rx1.as_ref());
        let rx0_key = PacketKey::from_secret(&p, v, alg, &SERVER_IN).unwrap();
        let rx1_key = PacketKey::from_secret(&p, v, alg, rx1.as_ref()).unwrap();
        let rx2_key = PacketKey::from_secret(&p, v, alg, rx2.as_ref()).unwrap();
        // RFC 9001 §6.3: the first authenticated packet has the next phase's key derived.
        assert!(slot.as_ref().unwrap().next_rx.is_none());
        let mut first = sealed(&rx0_key, 1, b"first");
        assert_eq!(slot.open_one_rtt(&p, v, 1, false, &mut first, 8, now, until), Ok(5));
        assert!(slot.as_ref().unwrap().next_rx.is_some());
        // A packet with it is opened and followed.
        let mut pkt = sealed(&rx1_key, 10, b"next phase");
        assert_eq!(slot.open_one_rtt(&p, v, 10, true, &mut pkt, 8, now, until), Ok(10));
        assert_eq!(&pkt[8..18], b"next phase");
        let k = slot.as_ref().unwrap();
        assert!(k.rx_phase && k.tx_phase && k.updates == 1 && k.rx_phase_start_pn == 10);
        assert!(k.prev_rx.is_some() && k.prev_rx_until == until);
        // §9.5: the key after is derived right after the swap, for this authentic packet.
        assert!(k.next_rx_ready && k.next_rx.is_some());
        assert_eq!(k.rx_secret.as_ref(), rx2.as_ref());
        // RFC 9001 §6.2: the send key followed (in place), the header key stayed.
        let tx1_key = PacketKey::from_secret(&p, v, alg, next_secret(&CLIENT_IN).as_ref());
        let mut a = sealed(&k.keys.tx.packet, 3, b"x");
        assert!(tx1_key.unwrap().open_in_place(3, &mut a, 8).is_ok());
        let mut b = sealed(&rx1_key, 11, b"current");
        assert!(k.keys.rx.packet.open_in_place(11, &mut b, 8).is_ok());
        // A forgery of the other phase leaves the keys as they are.
        let mut forged = sealed(&rx1_key, 12, b"forged");
        let r = slot.open_one_rtt(&p, v, 12, false, &mut forged, 8, now, until);
        assert_eq!(r, Err(WireError::DecryptFailed));
        let k = slot.as_ref().unwrap();
        assert_eq!((k.updates, k.rx_phase_start_pn), (1, 10));
        // RFC 9001 §6.5: a late packet of the previous phase opens until the deadline.
        let mut late = sealed(&rx0_key, 9, b"late");
        assert_eq!(slot.open_one_rtt(&p, v, 9, false, &mut late, 8, now, until), Ok(4));
        let mut late = sealed(&rx0_key, 8, b"late");
        assert!(slot.open_one_rtt(&p, v, 8, false, &mut late, 8, until, until).is_err());
        // RFC 9001 §6.5: the first authenticated packet past the deadline erases the key.
        assert!(slot.as_ref().unwrap().prev_rx.is_some());
        let mut cur = sealed(&rx1_key, 13, b"current");
        assert_eq!(slot.open_one_rtt(&p, v, 13, true, &mut cur, 8, until, until), Ok(7));
        assert!(slot.as_ref().unwrap().prev_rx.is_none());
        // RFC 9001 §6.4: the next key opening a packet below the current phase's first is
        // KEY_UPDATE_ERROR.
        let mut early = sealed(&rx2_key, 5, b"early");
        let r = slot.open_one_rtt(&p, v, 5, false, &mut early, 8, until, until);
        assert_eq!(r, Err(WireError::KeyUpdate));
        // The peer's second update, right after the first (within three PTOs).
        let mut pkt = sealed(&rx2_key, 30, b"second");
        assert_eq!(slot.open_one_rtt(&p, v, 30, false, &mut pkt, 8, now, until), Ok(6));
        let k = slot.as_ref().unwrap();
        assert!(!k.rx_phase && !k.tx_phase && k.updates == 2 && k.rx_phase_start_pn == 30);
        let mut c = sealed(&rx1_key, 29, b"late");
        assert!(k.prev_rx.as_ref().unwrap().open_in_place(29, &mut c, 8).is_ok());
    }

    /// Loss recovery as the key-update timing sees it: (largest acknowledged, PTO).
    impl crate::connection::tls::AckedState for (Option<u64>, crate::time::Duration) {
        fn largest_acked_1rtt(&self) -> Option<u64> {
            self.0
        }
        fn pto(&self) -> crate::time::Duration {
            self.1
        }
    }

    /// RFC 9001 §6.1, §6.5: a key update needs an acknowledged packet of the current send
    /// phase; after an update (ours or the peer's), also three PTOs from the acknowledgment
    /// that confirmed it. Later ACKs do not move the deadline.
    #[test]
    fn next_update_waits_three_ptos_after_the_confirming_ack() {
        use crate::time::Duration;
        let (p, v, alg) = (RustCrypto, Version::V1, AeadAlgorithm::Aes128Gcm);
        let (tx, rx) = (Secret::new(&CLIENT_IN), Secret::new(&SERVER_IN));
        let mut slot = KeySlot::<OneRttKeys<RustCrypto>>::empty();
        slot.derive(&p, v, alg, &tx, &rx).unwrap();
        let pto = Duration::from_millis(100);
        let t = |ms: u64| Instant::from_micros(ms * 1_000);
        let sent = |slot: &mut KeySlot<OneRttKeys<RustCrypto>>, pn| {
            slot.as_mut().unwrap().on_sent(pn);
        };
        // Phase 0: nothing sent and acknowledged yet (§6.1).
        assert!(!slot.initiate(&p, v, t(1)));
        sent(&mut slot, 3);
        slot.on_ack(&(Some(2), pto), t(2));
        assert!(!slot.initiate(&p, v, t(3)), "no packet of the phase acknowledged");
        // The first update has no previous one to wait for: at once.
        slot.on_ack(&(Some(3), pto), t(4));
        assert!(slot.initiate(&p, v, t(4)));
        assert!(!slot.initiate(&p, v, t(5_000)), "unanswered");
        // The peer acknowledges our first phase-1 packet (it has the new keys) ...
        sent(&mut slot, 10);
        slot.on_ack(&(Some(10), pto), t(100));
        // ... and answers (RFC 9001 §6.2): its packet of the new phase opens.
        let rx1 = crate::packet::next_secret(&p, v, alg.hash(), &SERVER_IN).unwrap();
        let rx0_key = PacketKey::from_secret(&p, v, alg, &SERVER_IN).unwrap();
        let rx1_key = PacketKey::from_secret(&p, v, alg, rx1.as_ref()).unwrap();
        let mut first = sealed(&rx0_key, 1, b"phase 0");
        assert!(slot.open_one_rtt(&p, v, 1, false, &mut first, 8, t(50), t(350)).is_ok());
        let mut pkt = sealed(&rx1_key, 20, b"phase 1");
        assert!(slot.open_one_rtt(&p, v, 20, true, &mut pkt, 8, t(110), t(410)).is_ok());
        assert_eq!(slot.as_ref().unwrap().updates, 1);
        // §6.5: three PTOs from the confirming ACK (t = 100 ms); a later ACK changes
        // nothing.
        slot.on_ack(&(Some(12), pto), t(200));
        assert!(!slot.initiate(&p, v, t(110)));
        assert!(!slot.initiate(&p, v, t(399)), "before three PTOs");
        assert_eq!(slot.as_ref().unwrap().update_after, t(400));
        assert!(slot.initiate(&p, v, t(400)), "three PTOs after the confirming ACK");
        let k = slot.as_ref().unwrap();
        assert!(k.tx_ahead && !k.tx_phase && k.update_after == UPDATE_NEVER);
        // The peer answers phase 2; then it starts phase 3 itself, which we follow.
        let rx2 = crate::packet::next_secret(&p, v, alg.hash(), rx1.as_ref()).unwrap();
        let rx3 = crate::packet::next_secret(&p, v, alg.hash(), rx2.as_ref()).unwrap();
        let rx2_key = PacketKey::from_secret(&p, v, alg, rx2.as_ref()).unwrap();
        let rx3_key = PacketKey::from_secret(&p, v, alg, rx3.as_ref()).unwrap();
        sent(&mut slot, 30);
        let mut pkt = sealed(&rx2_key, 40, b"phase 2");
        assert!(slot.open_one_rtt(&p, v, 40, false, &mut pkt, 8, t(450), t(750)).is_ok());
        slot.on_ack(&(Some(30), pto), t(460));
        assert_eq!(slot.as_ref().unwrap().update_after, t(760));
        let mut pkt = sealed(&rx3_key, 50, b"phase 3");
        assert!(slot.open_one_rtt(&p, v, 50, true, &mut pkt, 8, t(470), t(770)).is_ok());
        let k = slot.as_ref().unwrap();
        assert!(k.updates == 3 && k.tx_phase && !k.tx_ahead);
        // The peer's update: §6.1 (an acknowledged packet of phase 3), then §6.5 (three
        // PTOs after that acknowledgment).
        assert!(!slot.initiate(&p, v, t(5_000)));
        sent(&mut slot, 60);
        slot.on_ack(&(Some(60), pto), t(500));
        assert!(!slot.initiate(&p, v, t(799)), "before three PTOs");
        assert!(slot.initiate(&p, v, t(800)));
    }

    /// RFC 9001 §6.4, §6.5: a packet of the current phase reordered below the one that
    /// completed the update lowers the phase's first packet number, so an old-phase packet
    /// above it is never opened with the previous key ("Packets with higher packet numbers
    /// MUST be protected with either the same or newer packet protection keys").
    #[test]
    fn reordered_current_phase_packet_lowers_phase_start() {
        let (p, v, alg) = (RustCrypto, Version::V1, AeadAlgorithm::Aes128Gcm);
        let (tx, rx) = (Secret::new(&CLIENT_IN), Secret::new(&SERVER_IN));
        let mut slot = KeySlot::<OneRttKeys<RustCrypto>>::empty();
        slot.derive(&p, v, alg, &tx, &rx).unwrap();
        let (now, until) = (Instant(1_000), Instant(2_000));
        let rx1 = crate::packet::next_secret(&p, v, alg.hash(), &SERVER_IN).unwrap();
        let rx0_key = PacketKey::from_secret(&p, v, alg, &SERVER_IN).unwrap();
        let rx1_key = PacketKey::from_secret(&p, v, alg, rx1.as_ref()).unwrap();
        let mut first = sealed(&rx0_key, 50, b"phase 0");
        assert_eq!(slot.open_one_rtt(&p, v, 50, false, &mut first, 8, now, until), Ok(7));
        // The peer's phase 1 starts at 100; 105 arrives first and completes the update.
        let mut pkt = sealed(&rx1_key, 105, b"phase 1");
        assert_eq!(slot.open_one_rtt(&p, v, 105, true, &mut pkt, 8, now, until), Ok(7));
        assert_eq!(slot.as_ref().unwrap().rx_phase_start_pn, 105);
        // 100, of the current phase, arrives late: the phase starts at 100.
        let mut pkt = sealed(&rx1_key, 100, b"phase 1");
        assert_eq!(slot.open_one_rtt(&p, v, 100, true, &mut pkt, 8, now, until), Ok(7));
        assert_eq!(slot.as_ref().unwrap().rx_phase_start_pn, 100);
        // A phase-0 packet 102: newer keys protected 100, so the previous key is not tried
        // (it would open it); it is dropped, and nothing changes.
        let mut old = sealed(&rx0_key, 102, b"phase 0");
        let r = slot.open_one_rtt(&p, v, 102, false, &mut old, 8, now, until);
        assert_eq!(r, Err(WireError::DecryptFailed));
        let k = slot.as_ref().unwrap();
        assert!(k.rx_phase && k.updates == 1 && k.rx_phase_start_pn == 100);
        // Below 100 the previous key still opens (§6.5).
        let mut late = sealed(&rx0_key, 99, b"phase 0");
        assert_eq!(slot.open_one_rtt(&p, v, 99, false, &mut late, 8, now, until), Ok(7));
        assert_eq!(slot.as_ref().unwrap().rx_phase_start_pn, 100);
    }
}

/// RFC 9001 §6.3, §9.5: a packet of the other Key Phase costs no key derivation, forged or
/// real, so its timing does not tell the Key Phase; the keys are derived ahead.
#[cfg(test)]
mod timing_tests {
    use core::cell::Cell;

    use mote_crypto::rustcrypto::RustCrypto;
    use mote_crypto::{CryptoRng, HashAlgorithm, NamedGroup, SignatureScheme};

    use super::*;
    use crate::error::WireError;

    std::thread_local! {
        /// AEAD keys and HMACs (each HKDF step runs one) set up on this thread (each test
        /// runs on its own thread).
        static WORK: Cell<u32> = const { Cell::new(0) };
        /// Every HMAC fails (a provider fault).
        static FAIL_HMAC: Cell<bool> = const { Cell::new(false) };
    }

    /// RustCrypto, counting the AEAD keys and HMACs (HKDF) it sets up: all the work of a
    /// key derivation.
    #[derive(Clone, Copy)]
    struct Counting;

    impl CryptoProvider for Counting {
        type AeadKey = <RustCrypto as CryptoProvider>::AeadKey;
        type HeaderKey = <RustCrypto as CryptoProvider>::HeaderKey;
        type Hash = <RustCrypto as CryptoProvider>::Hash;
        type Hmac = <RustCrypto as CryptoProvider>::Hmac;
        type KeyExchange = <RustCrypto as CryptoProvider>::KeyExchange;
        type SigningKey = <RustCrypto as CryptoProvider>::SigningKey;

        fn aead_algorithms(&self) -> &'static [AeadAlgorithm] {
            RustCrypto.aead_algorithms()
        }
        fn groups(&self) -> &'static [NamedGroup] {
            RustCrypto.groups()
        }
        fn verify_schemes(&self) -> &'static [SignatureScheme] {
            RustCrypto.verify_schemes()
        }
        fn aead_key(&self, alg: AeadAlgorithm, key: &[u8]) -> Result<Self::AeadKey, Error> {
            WORK.with(|c| c.set(c.get() + 1));
            RustCrypto.aead_key(alg, key)
        }
        fn write_aead_key<'d>(
            &self,
            alg: AeadAlgorithm,
            key: &[u8],
            dst: &'d mut MaybeUninit<Self::AeadKey>,
        ) -> Result<&'d mut Self::AeadKey, Error> {
            WORK.with(|c| c.set(c.get() + 1));
            RustCrypto.write_aead_key(alg, key, dst)
        }
        fn header_key(&self, alg: AeadAlgorithm, key: &[u8]) -> Result<Self::HeaderKey, Error> {
            RustCrypto.header_key(alg, key)
        }
        fn hash(&self, alg: HashAlgorithm) -> Result<Self::Hash, Error> {
            RustCrypto.hash(alg)
        }
        fn hmac(&self, alg: HashAlgorithm, key: &[u8]) -> Result<Self::Hmac, Error> {
            WORK.with(|c| c.set(c.get() + 1));
            if FAIL_HMAC.with(Cell::get) {
                return Err(Error::Unsupported);
            }
            RustCrypto.hmac(alg, key)
        }
        fn start_key_exchange(
            &self,
            group: NamedGroup,
            rng: &mut dyn CryptoRng,
        ) -> Result<Self::KeyExchange, Error> {
            RustCrypto.start_key_exchange(group, rng)
        }
        fn verify(
            &self,
            scheme: SignatureScheme,
            public_key: &[u8],
            message: &[u8],
            signature: &[u8],
        ) -> Result<(), Error> {
            RustCrypto.verify(scheme, public_key, message, signature)
        }
        fn signing_key(
            &self,
            scheme: SignatureScheme,
            der: &[u8],
        ) -> Result<Self::SigningKey, Error> {
            RustCrypto.signing_key(scheme, der)
        }
    }

    fn derivations() -> u32 {
        WORK.with(Cell::get)
    }

    const CLIENT_IN: [u8; 32] = super::tests::CLIENT_IN;
    const SERVER_IN: [u8; 32] = super::tests::SERVER_IN;

    /// Seals `payload` as packet `pn` with the key of `secret`, with Key Phase `phase` in
    /// the (8-byte) header: the header is the associated data.
    fn sealed(secret: &[u8], phase: bool, pn: u64, payload: &[u8]) -> std::vec::Vec<u8> {
        let key = PacketKey::from_secret(&RustCrypto, Version::V1, ALG, secret).unwrap();
        let mut pkt = std::vec![0u8; 8 + payload.len() + mote_crypto::TAG_LEN];
        pkt[..8].copy_from_slice(b"header!!");
        pkt[0] = u8::from(phase);
        pkt[8..8 + payload.len()].copy_from_slice(payload);
        key.seal_in_place(pn, &mut pkt, 8).unwrap();
        pkt
    }

    const ALG: AeadAlgorithm = AeadAlgorithm::Aes128Gcm;

    /// What the receive path does with a 1-RTT packet (`unprotect`, header protection
    /// aside), its Key Phase bit in the first byte.
    fn receive(
        slot: &mut KeySlot<OneRttKeys<Counting>>,
        pn: u64,
        pkt: &mut [u8],
        now: Instant,
    ) -> Result<usize, WireError> {
        let keep_until = now + crate::time::Duration::from_millis(300);
        slot.open_one_rtt(&Counting, Version::V1, pn, pkt[0] == 1, pkt, 8, now, keep_until)
    }

    #[test]
    fn forged_other_phase_packets_cost_no_derivation() {
        let (p, v) = (Counting, Version::V1);
        let next = |s: &[u8]| crate::packet::next_secret(&RustCrypto, v, ALG.hash(), s).unwrap();
        let (tx, rx) = (Secret::new(&CLIENT_IN), Secret::new(&SERVER_IN));
        let mut slot = KeySlot::<OneRttKeys<Counting>>::empty();
        slot.derive(&p, v, ALG, &tx, &rx).unwrap();
        let now = Instant(1_000);
        let forge = |slot: &mut KeySlot<OneRttKeys<Counting>>, pn| {
            // RFC 9001 §6.3, §9.5: forged packets of either phase (a flipped Key Phase bit, or
            // a key that does not exist) derive nothing and change nothing.
            for (secret, phase) in [(&SERVER_IN, true), (&CLIENT_IN, true), (&CLIENT_IN, false)] {
                let mut forged = sealed(secret, phase, pn, b"forged");
                assert_eq!(receive(slot, pn, &mut forged, now), Err(WireError::DecryptFailed));
            }
        };
        // Before any authentic packet: nothing is derived ahead yet, and no forgery makes it.
        let start = derivations();
        for pn in 0..4 {
            forge(&mut slot, pn);
        }
        assert_eq!(derivations(), start, "no HKDF or AEAD key set up for a forged packet");
        assert!(!slot.as_ref().unwrap().next_rx_ready);
        // The first authentic packet (of the current phase) opens; the next phase's key is
        // derived after it.
        let mut pkt = sealed(&SERVER_IN, false, 5, b"first");
        assert_eq!(receive(&mut slot, 5, &mut pkt, now), Ok(5));
        assert!(derivations() > start && slot.as_ref().unwrap().next_rx.is_some());
        let before = derivations();
        for pn in 6..16 {
            forge(&mut slot, pn);
        }
        assert_eq!(derivations(), before, "no HKDF or AEAD key set up for a forged packet");
        let k = slot.as_ref().unwrap();
        assert!(!k.rx_phase && !k.tx_phase && k.updates == 0);
        // The peer's real update opens with the key derived ahead; then the send key
        // (RFC 9001 §6.2: the answer) and the key after are derived, for it.
        let rx1 = next(&SERVER_IN);
        let mut real = sealed(rx1.as_ref(), true, 20, b"update");
        assert_eq!(receive(&mut slot, 20, &mut real, now), Ok(6));
        assert!(derivations() > before);
        let k = slot.as_ref().unwrap();
        assert!(k.next_rx_ready && k.next_rx.is_some());
        let before = derivations();
        for pn in 21..31 {
            forge(&mut slot, pn);
        }
        assert_eq!(derivations(), before, "no HKDF or AEAD key set up for a forged packet");
        let k = slot.as_ref().unwrap();
        assert!(k.rx_phase && k.tx_phase && k.updates == 1);
    }

    /// A provider fault deriving the send key that answers the peer's (authentic) update
    /// is the endpoint's failure: INTERNAL_ERROR, not a packet dropped as undecryptable
    /// (which would count against the integrity limit with the 1-RTT keys gone).
    #[test]
    fn provider_fault_answering_an_update_is_internal_error() {
        let (p, v) = (Counting, Version::V1);
        let next = |s: &[u8]| crate::packet::next_secret(&RustCrypto, v, ALG.hash(), s).unwrap();
        let (tx, rx) = (Secret::new(&CLIENT_IN), Secret::new(&SERVER_IN));
        let mut slot = KeySlot::<OneRttKeys<Counting>>::empty();
        slot.derive(&p, v, ALG, &tx, &rx).unwrap();
        let now = Instant(1_000);
        let mut pkt = sealed(&SERVER_IN, false, 1, b"first");
        assert_eq!(receive(&mut slot, 1, &mut pkt, now), Ok(5));
        FAIL_HMAC.with(|f| f.set(true));
        let mut real = sealed(next(&SERVER_IN).as_ref(), true, 2, b"update");
        let r = receive(&mut slot, 2, &mut real, now);
        FAIL_HMAC.with(|f| f.set(false));
        assert_eq!(r, Err(WireError::Internal));
        assert_eq!(WireError::Internal.code(), crate::error::TransportErrorCode::INTERNAL_ERROR);
        // The send key did not move (the next secret failed before the old key went); the
        // connection closes.
        assert!(!slot.as_ref().unwrap().tx_phase);
    }
}
