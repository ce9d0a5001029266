//! Algorithm identifiers and their fixed parameters.
//!
//! These enums always list every algorithm mote knows, whatever the build: they are names
//! (wire codepoints and sizes), not implementations. Whether one is implemented is a
//! question for the [`crate::CryptoProvider`].

/// An AEAD algorithm, as used by a TLS 1.3 cipher suite.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AeadAlgorithm {
    /// AES-128-GCM (TLS_AES_128_GCM_SHA256, 0x1301). Mandatory.
    Aes128Gcm,
    /// AES-256-GCM (TLS_AES_256_GCM_SHA384, 0x1302). Feature `aes256`.
    Aes256Gcm,
    /// ChaCha20-Poly1305 (TLS_CHACHA20_POLY1305_SHA256, 0x1303). Feature `chacha20`.
    ChaCha20Poly1305,
}

impl AeadAlgorithm {
    /// Key length in bytes (also the header-protection key length, RFC 9001 §5.4).
    pub const fn key_len(self) -> usize {
        match self {
            Self::Aes128Gcm => 16,
            Self::Aes256Gcm | Self::ChaCha20Poly1305 => 32,
        }
    }

    /// The TLS 1.3 cipher suite codepoint (RFC 8446 §B.4).
    pub const fn cipher_suite(self) -> u16 {
        match self {
            Self::Aes128Gcm => 0x1301,
            Self::Aes256Gcm => 0x1302,
            Self::ChaCha20Poly1305 => 0x1303,
        }
    }

    /// The suite's hash (RFC 8446 §B.4).
    pub const fn hash(self) -> HashAlgorithm {
        match self {
            Self::Aes128Gcm | Self::ChaCha20Poly1305 => HashAlgorithm::Sha256,
            Self::Aes256Gcm => HashAlgorithm::Sha384,
        }
    }

    /// The algorithm of a TLS 1.3 cipher suite codepoint.
    pub const fn from_cipher_suite(suite: u16) -> Option<Self> {
        match suite {
            0x1301 => Some(Self::Aes128Gcm),
            0x1302 => Some(Self::Aes256Gcm),
            0x1303 => Some(Self::ChaCha20Poly1305),
            _ => None,
        }
    }

    /// RFC 9001 §6.6: packets that may be protected with one key before it must be updated
    /// (the confidentiality limit). 2^23 for AES-GCM; ChaCha20-Poly1305's limit exceeds the
    /// packet-number space, so it is given as 2^62.
    pub const fn confidentiality_limit(self) -> u64 {
        match self {
            Self::Aes128Gcm | Self::Aes256Gcm => 1 << 23,
            Self::ChaCha20Poly1305 => 1 << 62,
        }
    }

    /// RFC 9001 §6.6: packets that may fail authentication under one key before the
    /// connection must close (the integrity limit). 2^52 for AES-GCM, 2^36 for
    /// ChaCha20-Poly1305.
    pub const fn integrity_limit(self) -> u64 {
        match self {
            Self::Aes128Gcm | Self::Aes256Gcm => 1 << 52,
            Self::ChaCha20Poly1305 => 1 << 36,
        }
    }
}

/// A hash algorithm used by TLS 1.3 (transcript, HMAC, HKDF).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HashAlgorithm {
    /// SHA-256. Mandatory.
    Sha256,
    /// SHA-384. Feature `aes256`.
    Sha384,
}

impl HashAlgorithm {
    /// Output length in bytes.
    pub const fn output_len(self) -> usize {
        match self {
            Self::Sha256 => 32,
            Self::Sha384 => 48,
        }
    }
}

/// A key-exchange group (RFC 8446 §4.2.7).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum NamedGroup {
    /// secp256r1 (0x0017). Feature `p256`.
    Secp256r1,
    /// x25519 (0x001d). Mandatory in mote.
    X25519,
}

impl NamedGroup {
    /// The wire codepoint.
    pub const fn codepoint(self) -> u16 {
        match self {
            Self::Secp256r1 => 0x0017,
            Self::X25519 => 0x001d,
        }
    }

    /// The group of a codepoint.
    pub const fn from_codepoint(codepoint: u16) -> Option<Self> {
        match codepoint {
            0x0017 => Some(Self::Secp256r1),
            0x001d => Some(Self::X25519),
            _ => None,
        }
    }

    /// Length of a public key share on the wire.
    pub const fn public_key_len(self) -> usize {
        match self {
            Self::Secp256r1 => 65,
            Self::X25519 => 32,
        }
    }
}

/// A TLS 1.3 signature scheme (RFC 8446 §4.2.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SignatureScheme {
    /// ecdsa_secp256r1_sha256 (0x0403). Feature `ecdsa-p256`.
    EcdsaSecp256r1Sha256,
    /// ed25519 (0x0807). Feature `ed25519`.
    Ed25519,
}

impl SignatureScheme {
    /// The wire codepoint.
    pub const fn codepoint(self) -> u16 {
        match self {
            Self::EcdsaSecp256r1Sha256 => 0x0403,
            Self::Ed25519 => 0x0807,
        }
    }

    /// The scheme of a codepoint.
    pub const fn from_codepoint(codepoint: u16) -> Option<Self> {
        match codepoint {
            0x0403 => Some(Self::EcdsaSecp256r1Sha256),
            0x0807 => Some(Self::Ed25519),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codepoints_round_trip() {
        for alg in
            [AeadAlgorithm::Aes128Gcm, AeadAlgorithm::Aes256Gcm, AeadAlgorithm::ChaCha20Poly1305]
        {
            assert_eq!(AeadAlgorithm::from_cipher_suite(alg.cipher_suite()), Some(alg));
        }
        for g in [NamedGroup::Secp256r1, NamedGroup::X25519] {
            assert_eq!(NamedGroup::from_codepoint(g.codepoint()), Some(g));
        }
        for s in [SignatureScheme::EcdsaSecp256r1Sha256, SignatureScheme::Ed25519] {
            assert_eq!(SignatureScheme::from_codepoint(s.codepoint()), Some(s));
        }
        assert_eq!(AeadAlgorithm::from_cipher_suite(0x1304), None);
    }
}
