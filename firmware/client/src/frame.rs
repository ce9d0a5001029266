//! The serial "radio" link: datagrams framed with SLIP (RFC 1055) and a CRC-16, as a
//! cellular modem's AT data mode or a UART to a Wi-Fi co-processor would carry them.
//!
//! A frame on the wire is `END, escaped(type, payload, crc16), END`, where the CRC is
//! CRC-16/CCITT-FALSE (poly 0x1021, init 0xffff) over type and payload, big-endian. The
//! decoder is bounded by its buffer: an overlong or corrupted frame is dropped and counted,
//! never grown.

/// Frame types.
pub mod kind {
    /// A UDP payload to or from the server.
    pub const DATAGRAM: u8 = 0;
    /// A measurement report (tag, u64 little-endian) pairs, device to host.
    pub const REPORT: u8 = 1;
    /// The device is done; payload: one status byte (0 = success).
    pub const DONE: u8 = 2;
    /// Host to device, first: link profile (0 WLAN, 1 NB-IoT) and a 32-byte nonce.
    pub const CONFIG: u8 = 3;
}

const END: u8 = 0xc0;
const ESC: u8 = 0xdb;
const ESC_END: u8 = 0xdc;
const ESC_ESC: u8 = 0xdd;

/// CRC-16/CCITT-FALSE of `data`, continuing from `crc`.
pub fn crc16(mut crc: u16, data: &[u8]) -> u16 {
    for &b in data {
        crc ^= u16::from(b) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 { (crc << 1) ^ 0x1021 } else { crc << 1 };
        }
    }
    crc
}

/// Writes one frame of `kind` with `payload` through `put` (one byte at a time).
pub fn encode(kind: u8, payload: &[u8], mut put: impl FnMut(u8)) {
    // A leading END flushes line noise received before the frame (RFC 1055).
    put(END);
    // Type, payload and the CRC (big-endian) through one escaping loop, the CRC computed
    // on the way: one copy of the loop and of `put`, no pass over the payload before it.
    let mut crc: u16 = 0xffff;
    for i in 0..payload.len() + 3 {
        let b = match i.checked_sub(1) {
            None => kind,
            Some(j) => match payload.get(j) {
                Some(&b) => b,
                // The CRC's high byte, then (shifted up) its low byte.
                None => {
                    let [hi, _] = crc.to_be_bytes();
                    crc <<= 8;
                    hi
                }
            },
        };
        if i <= payload.len() {
            crc = crc16(crc, &[b]);
        }
        let escaped = match b {
            END => ESC_END,
            ESC => ESC_ESC,
            b => b,
        };
        if escaped != b {
            put(ESC);
        }
        put(escaped);
    }
    put(END);
}

/// Incremental decoder over a caller buffer of `N` bytes (type + payload + CRC).
#[derive(Debug)]
pub struct Decoder<const N: usize> {
    buf: [u8; N],
    /// Bytes of the frame so far; `usize::MAX` once the frame is bad (too long, or a bad
    /// escape): it is then dropped at its END.
    len: usize,
    escaped: bool,
    /// Frames dropped: CRC mismatch, too long, or a bad escape.
    pub dropped: u32,
}

impl<const N: usize> Default for Decoder<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> Decoder<N> {
    /// An empty decoder.
    pub const fn new() -> Self {
        Self { buf: [0; N], len: 0, escaped: false, dropped: 0 }
    }

    /// The last complete frame (type byte first), valid until the next [`Decoder::push`].
    pub fn frame(&mut self, len: usize) -> &mut [u8] {
        self.buf.get_mut(..len).unwrap_or(&mut [])
    }

    /// Feeds one byte; returns `Some(len)` when a frame of `len` bytes (type + payload, CRC
    /// checked and removed) is complete in [`Decoder::frame`].
    pub fn push(&mut self, b: u8) -> Option<usize> {
        if b == END {
            let len = core::mem::replace(&mut self.len, 0);
            let escaped = core::mem::replace(&mut self.escaped, false);
            if len == 0 {
                return None;
            }
            // The CRC over type, payload and the CRC itself (big-endian) is 0 for an intact
            // frame (CRC-16/CCITT-FALSE has no final XOR).
            return match self.buf.get(..len) {
                Some(f) if !escaped && len >= 3 && crc16(0xffff, f) == 0 => Some(len - 2),
                _ => {
                    self.dropped += 1;
                    None
                }
            };
        }
        let b = if self.escaped {
            self.escaped = false;
            match b {
                ESC_END => END,
                ESC_ESC => ESC,
                _ => {
                    self.len = usize::MAX;
                    return None;
                }
            }
        } else if b == ESC {
            self.escaped = true;
            return None;
        } else {
            b
        };
        match self.buf.get_mut(self.len) {
            Some(slot) => {
                *slot = b;
                self.len += 1;
            }
            None => self.len = usize::MAX,
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(kind: u8, payload: &[u8]) -> Option<(u8, Vec<u8>)> {
        let mut wire = Vec::new();
        encode(kind, payload, |b| wire.push(b));
        let mut d = Decoder::<1600>::new();
        let mut out = None;
        for b in wire {
            if let Some(n) = d.push(b) {
                let f = d.frame(n);
                out = Some((f[0], f[1..].to_vec()));
            }
        }
        out
    }

    #[test]
    fn frames_round_trip_with_escapes() {
        let payload = [0xc0, 0xdb, 0x00, 0xdc, 0xdd, 0xc0];
        assert_eq!(roundtrip(kind::DATAGRAM, &payload), Some((0, payload.to_vec())));
        assert_eq!(roundtrip(kind::DONE, &[]), Some((2, vec![])));
    }

    #[test]
    fn frame_ends_with_the_crc_of_type_and_payload() {
        // No byte here needs escaping: the wire is END, type, payload, CRC (big-endian), END.
        for payload in [&b""[..], b"hello", &[7; 300]] {
            let mut wire = Vec::new();
            encode(kind::REPORT, payload, |b| wire.push(b));
            let mut want = vec![END, kind::REPORT];
            want.extend_from_slice(payload);
            want.extend_from_slice(&crc16(crc16(0xffff, &[kind::REPORT]), payload).to_be_bytes());
            want.push(END);
            if want[2..want.len() - 1].iter().all(|&b| b != END && b != ESC) {
                assert_eq!(wire, want);
            }
        }
    }

    #[test]
    fn crc_check_value() {
        // CRC-16/CCITT-FALSE check value over "123456789".
        assert_eq!(crc16(0xffff, b"123456789"), 0x29b1);
        // The residue the decoder checks: data followed by its CRC gives 0.
        assert_eq!(crc16(0xffff, b"123456789\x29\xb1"), 0);
        assert_ne!(crc16(0xffff, b"123456789\xb1\x29"), 0);
    }

    #[test]
    fn corrupt_and_overlong_frames_are_dropped() {
        let mut wire = Vec::new();
        encode(kind::DATAGRAM, b"hello", |b| wire.push(b));
        wire[3] ^= 1;
        let mut d = Decoder::<16>::new();
        assert!(wire.iter().all(|&b| d.push(b).is_none()));
        assert_eq!(d.dropped, 1);
        let mut wire = Vec::new();
        encode(kind::DATAGRAM, &[7; 40], |b| wire.push(b));
        assert!(wire.iter().all(|&b| d.push(b).is_none()));
        assert_eq!(d.dropped, 2);
        // A bad escape (ESC not followed by ESC_END or ESC_ESC) drops the frame.
        let mut wire = Vec::new();
        encode(kind::DATAGRAM, b"ok", |b| wire.push(b));
        wire.insert(2, ESC);
        assert!(wire.iter().all(|&b| d.push(b).is_none()));
        assert_eq!(d.dropped, 3);
        // An escape pending at END drops the frame.
        assert!([END, 1, 2, 3, ESC, END].iter().all(|&b| d.push(b).is_none()));
        assert_eq!(d.dropped, 4);
        // The decoder recovers for the next frame.
        let mut wire = Vec::new();
        encode(kind::DATAGRAM, b"ok", |b| wire.push(b));
        let got: Vec<usize> = wire.iter().filter_map(|&b| d.push(b)).collect();
        assert_eq!(got, vec![3]);
    }
}
