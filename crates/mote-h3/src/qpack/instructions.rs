//! Encoder and decoder stream instructions (RFC 9204 §4.3, §4.4).
//!
//! Parsers take the unread bytes of the stream and return `Ok(None)` when the instruction
//! is not complete yet: nothing is consumed, and the caller presents the bytes again with
//! more appended. Declared string lengths are checked against a cap *before* waiting for
//! the bytes, so a huge declared length fails at once instead of stalling a buffer.

use crate::coding::Out;
use crate::error::BufferTooSmall;

use super::prefix::{
    declared_string_len, decode_int, decode_string, encode_int, PrefixError, RawString,
};

/// An instruction on the encoder stream (RFC 9204 §4.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EncoderInstruction<'a> {
    /// Set Dynamic Table Capacity (§4.3.1): `001` Capacity(5+).
    SetCapacity(u64),
    /// Insert with Name Reference (§4.3.2): `1` T NameIndex(6+), Value. `index` is a static
    /// index if `is_static`, else relative to the insert count.
    InsertWithNameRef {
        /// T bit: the name is in the static table.
        is_static: bool,
        /// Static index, or relative dynamic index.
        index: u64,
        /// The value literal.
        value: RawString<'a>,
    },
    /// Insert with Literal Name (§4.3.3): `01` H NameLen(5+), Name, Value.
    InsertWithLiteralName {
        /// The name literal.
        name: RawString<'a>,
        /// The value literal.
        value: RawString<'a>,
    },
    /// Duplicate (§4.3.4): `000` Index(5+), relative to the insert count.
    Duplicate(u64),
}

/// An instruction on the decoder stream (RFC 9204 §4.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecoderInstruction {
    /// Section Acknowledgment (§4.4.1): `1` StreamID(7+).
    SectionAck(u64),
    /// Stream Cancellation (§4.4.2): `01` StreamID(6+).
    StreamCancel(u64),
    /// Insert Count Increment (§4.4.3): `00` Increment(6+).
    InsertCountIncrement(u64),
}

/// An instruction that cannot be valid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InvalidInstruction;

fn complete<T>(r: Result<T, PrefixError>) -> Result<Option<T>, InvalidInstruction> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(PrefixError::Incomplete) => Ok(None),
        Err(PrefixError::Overflow) => Err(InvalidInstruction),
    }
}

/// Rejects a string whose declared (encoded) length exceeds `cap` even before its bytes
/// have arrived.
fn check_declared(buf: &[u8], n: u8, cap: u64) -> Result<(), InvalidInstruction> {
    match complete(declared_string_len(buf, n))? {
        Some((_, len)) if len > cap => Err(InvalidInstruction),
        _ => Ok(()),
    }
}

macro_rules! need {
    ($e:expr) => {
        match complete($e)? {
            Some(v) => v,
            None => return Ok(None),
        }
    };
}

/// Parses one encoder instruction from the front of `buf`. Strings whose declared encoded
/// length exceeds `max_string` fail at once (QPACK_ENCODER_STREAM_ERROR).
pub fn parse_encoder_instruction(
    buf: &[u8],
    max_string: u64,
) -> Result<Option<(EncoderInstruction<'_>, usize)>, InvalidInstruction> {
    let Some(&b) = buf.first() else { return Ok(None) };
    if b & 0x80 != 0 {
        let (index, n) = need!(decode_int(buf, 6));
        let rest = buf.get(n..).unwrap_or(&[]);
        check_declared(rest, 7, max_string)?;
        let (value, m) = need!(decode_string(rest, 7));
        Ok(Some((
            EncoderInstruction::InsertWithNameRef { is_static: b & 0x40 != 0, index, value },
            n + m,
        )))
    } else if b & 0x40 != 0 {
        check_declared(buf, 5, max_string)?;
        let (name, n) = need!(decode_string(buf, 5));
        let rest = buf.get(n..).unwrap_or(&[]);
        check_declared(rest, 7, max_string)?;
        let (value, m) = need!(decode_string(rest, 7));
        Ok(Some((EncoderInstruction::InsertWithLiteralName { name, value }, n + m)))
    } else if b & 0x20 != 0 {
        let (cap, n) = need!(decode_int(buf, 5));
        Ok(Some((EncoderInstruction::SetCapacity(cap), n)))
    } else {
        let (index, n) = need!(decode_int(buf, 5));
        Ok(Some((EncoderInstruction::Duplicate(index), n)))
    }
}

/// Appends an encoder instruction (strings Huffman-coded when shorter).
pub fn write_encoder_instruction(
    out: &mut Out<'_>,
    instr: &EncoderInstruction<'_>,
) -> Result<(), BufferTooSmall> {
    fn raw(out: &mut Out<'_>, s: &RawString<'_>, n: u8, flags: u8) -> Result<(), BufferTooSmall> {
        let h = if s.huffman { 1u8 << n } else { 0 };
        encode_int(s.bytes.len() as u64, n, flags | h, out)?;
        out.put_slice(s.bytes)
    }
    match instr {
        EncoderInstruction::SetCapacity(c) => encode_int(*c, 5, 0x20, out),
        EncoderInstruction::InsertWithNameRef { is_static, index, value } => {
            encode_int(*index, 6, if *is_static { 0xc0 } else { 0x80 }, out)?;
            raw(out, value, 7, 0)
        }
        EncoderInstruction::InsertWithLiteralName { name, value } => {
            raw(out, name, 5, 0x40)?;
            raw(out, value, 7, 0)
        }
        EncoderInstruction::Duplicate(i) => encode_int(*i, 5, 0, out),
    }
}

/// Parses one decoder instruction from the front of `buf`.
pub fn parse_decoder_instruction(
    buf: &[u8],
) -> Result<Option<(DecoderInstruction, usize)>, InvalidInstruction> {
    let Some(&b) = buf.first() else { return Ok(None) };
    if b & 0x80 != 0 {
        let (id, n) = need!(decode_int(buf, 7));
        Ok(Some((DecoderInstruction::SectionAck(id), n)))
    } else if b & 0x40 != 0 {
        let (id, n) = need!(decode_int(buf, 6));
        Ok(Some((DecoderInstruction::StreamCancel(id), n)))
    } else {
        let (inc, n) = need!(decode_int(buf, 6));
        Ok(Some((DecoderInstruction::InsertCountIncrement(inc), n)))
    }
}

/// Appends a decoder instruction.
pub fn write_decoder_instruction(
    out: &mut Out<'_>,
    instr: DecoderInstruction,
) -> Result<(), BufferTooSmall> {
    match instr {
        DecoderInstruction::SectionAck(id) => encode_int(id, 7, 0x80, out),
        DecoderInstruction::StreamCancel(id) => encode_int(id, 6, 0x40, out),
        DecoderInstruction::InsertCountIncrement(n) => encode_int(n, 6, 0x00, out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hex_literal::hex;
    use proptest::prelude::*;

    fn dec_bytes(instrs: &[DecoderInstruction]) -> Vec<u8> {
        let mut buf = [0u8; 64];
        let mut out = Out::new(&mut buf);
        for i in instrs {
            write_decoder_instruction(&mut out, *i).unwrap();
        }
        out.written().to_vec()
    }

    /// RFC 9204 B.2–B.5, decoder stream: the instructions the decoder emits, byte-exact.
    #[test]
    fn rfc9204_b_decoder_stream_instructions() {
        // B.2: Section Acknowledgment for stream 4.
        assert_eq!(dec_bytes(&[DecoderInstruction::SectionAck(4)]), hex!("84"));
        // B.3 and B.5: Insert Count Increment (1).
        assert_eq!(dec_bytes(&[DecoderInstruction::InsertCountIncrement(1)]), hex!("01"));
        // B.4: Stream Cancellation for stream 8.
        assert_eq!(dec_bytes(&[DecoderInstruction::StreamCancel(8)]), hex!("48"));
        for (bytes, instr) in [
            (&hex!("84")[..], DecoderInstruction::SectionAck(4)),
            (&hex!("01"), DecoderInstruction::InsertCountIncrement(1)),
            (&hex!("48"), DecoderInstruction::StreamCancel(8)),
        ] {
            assert_eq!(parse_decoder_instruction(bytes), Ok(Some((instr, 1))));
        }
    }

    /// RFC 9204 B.2–B.5, encoder stream: each instruction parses as the RFC annotates it.
    #[test]
    fn rfc9204_b_encoder_stream_instructions() {
        let b2 = hex!(
            "3fbd01"
            "c00f 7777 772e 6578 616d 706c 652e 636f 6d"
            "c10c 2f73 616d 706c 652f 7061 7468"
        );
        let (i, n) = parse_encoder_instruction(&b2, 1000).unwrap().unwrap();
        assert_eq!((i, n), (EncoderInstruction::SetCapacity(220), 3));
        let (i, m) = parse_encoder_instruction(&b2[n..], 1000).unwrap().unwrap();
        assert_eq!(
            i,
            EncoderInstruction::InsertWithNameRef {
                is_static: true,
                index: 0,
                value: RawString { huffman: false, bytes: b"www.example.com" }
            }
        );
        let (i, _) = parse_encoder_instruction(&b2[n + m..], 1000).unwrap().unwrap();
        assert_eq!(
            i,
            EncoderInstruction::InsertWithNameRef {
                is_static: true,
                index: 1,
                value: RawString { huffman: false, bytes: b"/sample/path" }
            }
        );
        let b3 = hex!("4a63 7573 746f 6d2d 6b65 790c 6375 7374 6f6d 2d76 616c 7565");
        assert_eq!(
            parse_encoder_instruction(&b3, 1000),
            Ok(Some((
                EncoderInstruction::InsertWithLiteralName {
                    name: RawString { huffman: false, bytes: b"custom-key" },
                    value: RawString { huffman: false, bytes: b"custom-value" },
                },
                b3.len()
            )))
        );
        assert_eq!(
            parse_encoder_instruction(&hex!("02"), 1000),
            Ok(Some((EncoderInstruction::Duplicate(2), 1)))
        );
        let b5 = hex!("810d 6375 7374 6f6d 2d76 616c 7565 32");
        let (i, n) = parse_encoder_instruction(&b5, 1000).unwrap().unwrap();
        assert_eq!(n, b5.len());
        assert_eq!(
            i,
            EncoderInstruction::InsertWithNameRef {
                is_static: false,
                index: 1,
                value: RawString { huffman: false, bytes: b"custom-value2" }
            }
        );
        // Writing them back gives the same bytes.
        let mut buf = [0u8; 64];
        let mut out = Out::new(&mut buf);
        write_encoder_instruction(&mut out, &i).unwrap();
        assert_eq!(out.written(), &b5);
    }

    #[test]
    fn incomplete_and_oversized() {
        let b3 = hex!("4a63 7573 746f 6d2d 6b65 790c 6375 7374 6f6d 2d76 616c 7565");
        for cut in 0..b3.len() {
            assert_eq!(parse_encoder_instruction(&b3[..cut], 1000), Ok(None), "cut {cut}");
        }
        // A declared length over the cap fails before the bytes arrive.
        assert_eq!(
            parse_encoder_instruction(&hex!("c0 7f ff ff 03"), 100),
            Err(InvalidInstruction)
        );
        assert_eq!(parse_encoder_instruction(&hex!("5f 80 01"), 100), Err(InvalidInstruction));
        assert_eq!(parse_decoder_instruction(&hex!("ff")), Ok(None));
        assert_eq!(
            parse_decoder_instruction(&hex!("ff ffffffffffffffffff7f")),
            Err(InvalidInstruction)
        );
    }

    proptest! {
        #[test]
        fn random_instructions_never_panic(b in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = parse_encoder_instruction(&b, 4096);
            let _ = parse_decoder_instruction(&b);
        }
    }
}
