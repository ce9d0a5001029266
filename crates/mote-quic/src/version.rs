//! QUIC versions and the constants that differ between them: v1 (RFC 9000/9001) and v2
//! (RFC 9369, feature `v2`).

use crate::packet::LongType;

/// A QUIC version number as carried in long headers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Version(pub u32);

/// Per-version constants for Initial keys, key labels and Retry integrity.
#[derive(Debug)]
pub struct VersionParams {
    /// RFC 9001 §5.2 / RFC 9369 §3.3.1: salt for HKDF-Extract of the Initial secret.
    pub initial_salt: [u8; 20],
    /// Label deriving packet-protection keys ("quic key" / "quicv2 key").
    pub key_label: &'static [u8],
    /// Label deriving IVs ("quic iv" / "quicv2 iv").
    pub iv_label: &'static [u8],
    /// Label deriving header-protection keys ("quic hp" / "quicv2 hp").
    pub hp_label: &'static [u8],
    /// Label deriving the next key-phase secret ("quic ku" / "quicv2 ku").
    pub ku_label: &'static [u8],
    /// RFC 9001 §5.8 / RFC 9369 §3.3.3: fixed AES-128-GCM key of the Retry integrity tag.
    pub retry_key: [u8; 16],
    /// The matching fixed nonce.
    pub retry_nonce: [u8; 12],
}

// RFC 9001 §5.2 (salt), §5.1 (labels), §5.8 (Retry key and nonce).
static V1_PARAMS: VersionParams = VersionParams {
    initial_salt: [
        0x38, 0x76, 0x2c, 0xf7, 0xf5, 0x59, 0x34, 0xb3, 0x4d, 0x17, 0x9a, 0xe6, 0xa4, 0xc8, 0x0c,
        0xad, 0xcc, 0xbb, 0x7f, 0x0a,
    ],
    key_label: b"quic key",
    iv_label: b"quic iv",
    hp_label: b"quic hp",
    ku_label: b"quic ku",
    retry_key: [
        0xbe, 0x0c, 0x69, 0x0b, 0x9f, 0x66, 0x57, 0x5a, 0x1d, 0x76, 0x6b, 0x54, 0xe3, 0x68, 0xc8,
        0x4e,
    ],
    retry_nonce: [0x46, 0x15, 0x99, 0xd3, 0x5d, 0x63, 0x2b, 0xf2, 0x23, 0x98, 0x25, 0xbb],
};

// RFC 9369 §3.3.1 (salt), §3.3.2 (labels), §3.3.3 (Retry key and nonce).
#[cfg(feature = "v2")]
static V2_PARAMS: VersionParams = VersionParams {
    initial_salt: [
        0x0d, 0xed, 0xe3, 0xde, 0xf7, 0x00, 0xa6, 0xdb, 0x81, 0x93, 0x81, 0xbe, 0x6e, 0x26, 0x9d,
        0xcb, 0xf9, 0xbd, 0x2e, 0xd9,
    ],
    key_label: b"quicv2 key",
    iv_label: b"quicv2 iv",
    hp_label: b"quicv2 hp",
    ku_label: b"quicv2 ku",
    retry_key: [
        0x8f, 0xb4, 0xb0, 0x1b, 0x56, 0xac, 0x48, 0xe2, 0x60, 0xfb, 0xcb, 0xce, 0xad, 0x7c, 0xcc,
        0x92,
    ],
    retry_nonce: [0xd8, 0x69, 0x69, 0xbc, 0x2d, 0x7c, 0x6d, 0x99, 0x90, 0xef, 0xb0, 0x4a],
};

impl Version {
    /// QUIC version 1 (RFC 9000).
    pub const V1: Version = Version(0x0000_0001);
    /// QUIC version 2 (RFC 9369 §3.1).
    pub const V2: Version = Version(0x6b33_43cf);
    /// The value a Version Negotiation packet carries in its version field (RFC 9000 §17.2.1).
    pub const NEGOTIATION: Version = Version(0);

    /// Versions this build speaks, in order of preference.
    pub const SUPPORTED: &'static [Version] = &[
        Version::V1,
        #[cfg(feature = "v2")]
        Version::V2,
    ];

    /// RFC 9000 §15: versions of the form 0x?a?a?a?a are reserved to exercise version
    /// negotiation (greasing); no endpoint may treat one as supported.
    pub const fn is_reserved(self) -> bool {
        self.0 & 0x0f0f_0f0f == 0x0a0a_0a0a
    }

    /// True if this build implements the version.
    pub fn is_supported(self) -> bool {
        self.params().is_some()
    }

    /// The version's key-derivation constants, if this build implements it.
    pub fn params(self) -> Option<&'static VersionParams> {
        match self {
            Version::V1 => Some(&V1_PARAMS),
            #[cfg(feature = "v2")]
            Version::V2 => Some(&V2_PARAMS),
            _ => None,
        }
    }

    /// RFC 9000 §17.2 / RFC 9369 §3.2: the two Long Packet Type bits for `ty` in this
    /// version. v2 rotates them so middleboxes cannot ossify on v1's assignment.
    pub const fn long_type_bits(self, ty: LongType) -> u8 {
        let v1 = match ty {
            LongType::Initial => 0b00,
            LongType::ZeroRtt => 0b01,
            LongType::Handshake => 0b10,
            LongType::Retry => 0b11,
        };
        if self.0 == Self::V2.0 {
            // v2: Initial 0b01, 0-RTT 0b10, Handshake 0b11, Retry 0b00.
            (v1 + 1) & 0b11
        } else {
            v1
        }
    }

    /// The inverse of [`Version::long_type_bits`].
    pub const fn long_type(self, bits: u8) -> LongType {
        let v1 = if self.0 == Self::V2.0 { bits.wrapping_sub(1) & 0b11 } else { bits & 0b11 };
        match v1 {
            0b00 => LongType::Initial,
            0b01 => LongType::ZeroRtt,
            0b10 => LongType::Handshake,
            _ => LongType::Retry,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_type_bits_per_version() {
        use LongType::*;
        for ty in [Initial, ZeroRtt, Handshake, Retry] {
            for v in [Version::V1, Version::V2] {
                assert_eq!(v.long_type(v.long_type_bits(ty)), ty);
            }
        }
        // RFC 9369 §3.2
        assert_eq!(Version::V2.long_type_bits(Initial), 0b01);
        assert_eq!(Version::V2.long_type_bits(ZeroRtt), 0b10);
        assert_eq!(Version::V2.long_type_bits(Handshake), 0b11);
        assert_eq!(Version::V2.long_type_bits(Retry), 0b00);
    }

    #[test]
    fn reserved_versions() {
        assert!(Version(0x1a2a3a4a).is_reserved());
        assert!(Version(0xfafafafa).is_reserved());
        assert!(!Version::V1.is_reserved());
        assert!(!Version(0x1a2a3a4a).is_supported());
    }
}
