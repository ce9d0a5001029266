//! A client's random identifiers at construction, drawn in one DRBG request: both client
//! constructors (the general connection's `init_client` and the device connection's) call
//! this, so they leave the DRBG in the same state and write the same ClientHello for the
//! same seed (`device::tests::first_initial_is_the_general_connections`).
//!
//! Why one request (issue 8): each HMAC_DRBG generate ends with an update of two HMACs
//! (SP 800-90A §10.1.2.5 step 6), so three requests of 8, 8 and 16 bytes cost 9 HMACs;
//! one request of 32 bytes, split into the pieces, costs 3.

use mote_crypto::{CryptoProvider, CryptoRng as _};

use super::rng::Drbg;
use super::ConnectError;
use crate::cid::{ConnectionId, MAX_CID_LEN};
use crate::transport_params::ResetToken;

/// Length of the client's first Destination Connection ID: RFC 9000 §7.2 asks for at
/// least 8 unpredictable bytes.
const ORIGINAL_DCID_LEN: usize = 8;

/// What a client draws when it is created.
pub(crate) struct ClientDraw {
    /// RFC 9000 §7.2: the first Destination Connection ID (the Initial keys' salt input).
    pub original_dcid: ConnectionId,
    /// RFC 9000 §5.1: our handshake connection ID, `local_cid_len` bytes.
    pub local: ConnectionId,
    /// RFC 9000 §10.3: a stateless reset token for `local`. A client never sends it
    /// (RFC 9000 §18.2 forbids stateless_reset_token from a client); the general
    /// connection stores it with sequence number 0, the device connection drops it.
    pub token: ResetToken,
}

/// Bytes of the request before the local connection ID: the original DCID and the token.
const FIXED_LEN: usize = ORIGINAL_DCID_LEN + 16;

/// One DRBG request of `8 + 16 + local_len` bytes split into the original DCID, the token
/// and the local connection ID (in that order: the fixed-size pieces at fixed offsets).
/// [`ConnectError::Config`] if `local_len` exceeds [`MAX_CID_LEN`] (RFC 9000 §17.2).
pub(crate) fn client_draw<P: CryptoProvider>(
    drbg: &mut Drbg<P>,
    local_len: usize,
) -> Result<ClientDraw, ConnectError> {
    let mut b = [0u8; FIXED_LEN + MAX_CID_LEN];
    let bytes = b.get_mut(..FIXED_LEN + local_len).ok_or(ConnectError::Config)?;
    drbg.fill(bytes).map_err(ConnectError::Crypto)?;
    let (fixed, local) = bytes.split_first_chunk::<FIXED_LEN>().ok_or(ConnectError::Config)?;
    let (dcid, token) = fixed.split_at(ORIGINAL_DCID_LEN);
    match (ConnectionId::new(dcid), ConnectionId::new(local), ResetToken::try_from(token)) {
        (Some(original_dcid), Some(local), Ok(token)) => {
            Ok(ClientDraw { original_dcid, local, token })
        }
        _ => Err(ConnectError::Config),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connection::rng::SEED_LEN;
    use mote_crypto::rustcrypto::RustCrypto;

    /// The pieces are consecutive slices of one generate: the same bytes a single fill of
    /// the total length returns, and the DRBG ends in the same state.
    #[test]
    fn one_request_split_into_the_pieces() {
        for local_len in [0, 8, MAX_CID_LEN] {
            let mut a = Drbg::new(RustCrypto, &[3; SEED_LEN]).unwrap();
            let mut b = Drbg::new(RustCrypto, &[3; SEED_LEN]).unwrap();
            let d = client_draw(&mut a, local_len).unwrap();
            let mut whole = [0u8; 8 + 16 + MAX_CID_LEN];
            let n = 8 + 16 + local_len;
            b.fill(&mut whole[..n]).unwrap();
            assert_eq!(d.original_dcid.as_ref(), &whole[..8]);
            assert_eq!(d.token[..], whole[8..24]);
            assert_eq!(d.local.as_ref(), &whole[24..n]);
            let (mut x, mut y) = ([0u8; 32], [0u8; 32]);
            a.fill(&mut x).unwrap();
            b.fill(&mut y).unwrap();
            assert_eq!(x, y);
        }
    }

    #[test]
    fn a_local_id_longer_than_20_bytes_is_refused() {
        let mut d = Drbg::new(RustCrypto, &[3; SEED_LEN]).unwrap();
        assert!(matches!(client_draw(&mut d, MAX_CID_LEN + 1), Err(ConnectError::Config)));
    }
}
