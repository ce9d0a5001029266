//! The QPACK dynamic table on the decoding side (RFC 9204 §3.2), in caller-provided
//! storage: a ring of bytes holding each entry's name and value back to back, and a ring
//! of entry records (start offset and lengths). Both are bounded by the table capacity we
//! advertise, so a hostile encoder cannot make it grow.

use super::decoder::{decode_with, DecodeError, Decoded, TableView};
use super::fields::{Src, FIELD_OVERHEAD};
use super::huffman;
use super::instructions::{parse_encoder_instruction, EncoderInstruction, InvalidInstruction};
use super::prefix::RawString;
use super::static_table;

/// One entry record of the table. Create storage with `[TableEntry::EMPTY; N]`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TableEntry {
    start: u32,
    name_len: u32,
    value_len: u32,
}

impl TableEntry {
    /// An unused record.
    pub const EMPTY: Self = Self { start: 0, name_len: 0, value_len: 0 };
}

/// A borrowed table entry; name and value may each wrap around the ring (two parts).
#[derive(Clone, Copy, Debug)]
pub struct EntryRef<'a> {
    /// The name, in up to two parts.
    pub name: (&'a [u8], &'a [u8]),
    /// The value, in up to two parts.
    pub value: (&'a [u8], &'a [u8]),
}

impl EntryRef<'_> {
    /// True if the name equals `s`.
    pub fn name_eq(&self, s: &[u8]) -> bool {
        parts_eq(self.name, s)
    }
    /// True if the value equals `s`.
    pub fn value_eq(&self, s: &[u8]) -> bool {
        parts_eq(self.value, s)
    }
}

fn parts_eq((a, b): (&[u8], &[u8]), s: &[u8]) -> bool {
    a.len() + b.len() == s.len() && s.starts_with(a) && s.ends_with(b)
}

/// Where the bytes of a new entry's name or value come from.
#[derive(Clone, Copy)]
enum Source<'a> {
    Bytes(&'a [u8]),
    Huffman(&'a [u8]),
    /// Bytes already in the ring (a dynamic name reference or a Duplicate).
    Ring {
        start: usize,
        len: usize,
    },
}

impl Source<'_> {
    fn len(&self) -> Result<usize, InvalidInstruction> {
        match self {
            Source::Bytes(b) => Ok(b.len()),
            Source::Huffman(h) => huffman::decoded_len(h).map_err(|_| InvalidInstruction),
            Source::Ring { len, .. } => Ok(*len),
        }
    }
}

fn literal(s: RawString<'_>) -> Source<'_> {
    if s.huffman {
        Source::Huffman(s.bytes)
    } else {
        Source::Bytes(s.bytes)
    }
}

/// A QPACK decoder's dynamic table in caller-owned storage.
#[derive(Debug)]
pub struct DynamicTable<'t> {
    bytes: &'t mut [u8],
    slots: &'t mut [TableEntry],
    max_capacity: u64,
    capacity: u64,
    size: u64,
    /// Slot of the oldest entry.
    first: usize,
    count: usize,
    /// Ring offset where the next entry's bytes go.
    head: usize,
    inserted: u64,
    /// `inserted` modulo `2 * max_entries`, kept incrementally so decoding the Required
    /// Insert Count needs no 64-bit division.
    inserted_mod: u64,
    max_entries: u64,
    /// Known Received Count as the encoder sees it: what we acknowledged so far.
    acknowledged: u64,
}

impl<'t> DynamicTable<'t> {
    /// A table whose maximum capacity (the SETTINGS_QPACK_MAX_TABLE_CAPACITY to advertise)
    /// is `max_capacity`, reduced to what the storage can hold: `bytes.len()` bytes of
    /// names and values and `32 * slots.len()` (every entry costs at least 32).
    pub fn new(bytes: &'t mut [u8], slots: &'t mut [TableEntry], max_capacity: u64) -> Self {
        let max_capacity = max_capacity
            .min(bytes.len().min(u32::MAX as usize) as u64)
            .min((slots.len() as u64).saturating_mul(32));
        Self {
            bytes,
            slots,
            max_capacity,
            capacity: 0,
            size: 0,
            first: 0,
            count: 0,
            head: 0,
            inserted: 0,
            inserted_mod: 0,
            // RFC 9204 §4.5.1.1: MaxEntries = floor(MaxTableCapacity / 32).
            max_entries: max_capacity >> 5,
            acknowledged: 0,
        }
    }

    /// The maximum capacity: advertise this as SETTINGS_QPACK_MAX_TABLE_CAPACITY.
    pub const fn max_capacity(&self) -> u64 {
        self.max_capacity
    }

    /// The capacity the encoder set.
    pub const fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Current size (name + value + 32 per entry).
    pub const fn size(&self) -> u64 {
        self.size
    }

    /// Entries inserted since the connection began (the Insert Count).
    pub const fn insert_count(&self) -> u64 {
        self.inserted
    }

    /// Entries currently in the table.
    pub const fn len(&self) -> usize {
        self.count
    }

    /// True if the table holds no entry.
    pub const fn is_empty(&self) -> bool {
        self.count == 0
    }

    fn ring(&self) -> usize {
        self.bytes.len()
    }

    fn wrap(&self, at: usize) -> usize {
        let r = self.ring();
        if at >= r {
            at - r
        } else {
            at
        }
    }

    fn slot(&self, i: usize) -> Option<&TableEntry> {
        let n = self.slots.len();
        let at = self.first.checked_add(i)?;
        let at = if at >= n { at - n } else { at };
        self.slots.get(at)
    }

    /// The bytes `[start, start + len)` of the ring, in up to two parts.
    fn parts(&self, start: usize, len: usize) -> (&[u8], &[u8]) {
        let r = self.ring();
        let first_len = len.min(r.saturating_sub(start));
        let a = self.bytes.get(start..start + first_len).unwrap_or(&[]);
        let b = self.bytes.get(..len - first_len).unwrap_or(&[]);
        (a, b)
    }

    /// The entry with absolute index `abs`, if it is still in the table.
    pub fn get(&self, abs: u64) -> Option<EntryRef<'_>> {
        let dropped = self.inserted - self.count as u64;
        if abs < dropped || abs >= self.inserted {
            return None;
        }
        let e = *self.slot(usize::try_from(abs - dropped).ok()?)?;
        let start = e.start as usize;
        let name = self.parts(start, e.name_len as usize);
        let value = self.parts(self.wrap(start + e.name_len as usize), e.value_len as usize);
        Some(EntryRef { name, value })
    }

    fn evict_oldest(&mut self) -> bool {
        if self.count == 0 {
            return false;
        }
        let Some(e) = self.slot(0).copied() else { return false };
        self.size -= u64::from(e.name_len) + u64::from(e.value_len) + FIELD_OVERHEAD;
        self.count -= 1;
        self.first += 1;
        if self.first >= self.slots.len() {
            self.first = 0;
        }
        true
    }

    /// Set Dynamic Table Capacity (RFC 9204 §3.2.3, §4.3.1): more than the maximum we
    /// advertised is QPACK_ENCODER_STREAM_ERROR; a smaller capacity evicts.
    pub fn set_capacity(&mut self, capacity: u64) -> Result<(), InvalidInstruction> {
        if capacity > self.max_capacity {
            return Err(InvalidInstruction);
        }
        while self.size > capacity {
            if !self.evict_oldest() {
                return Err(InvalidInstruction);
            }
        }
        self.capacity = capacity;
        Ok(())
    }

    fn put(&mut self, b: u8) {
        if let Some(slot) = self.bytes.get_mut(self.head) {
            *slot = b;
        }
        self.head = self.wrap(self.head + 1);
    }

    fn write(&mut self, src: Source<'_>) -> Result<(), InvalidInstruction> {
        match src {
            Source::Bytes(b) => b.iter().for_each(|&x| self.put(x)),
            Source::Huffman(h) => {
                huffman::decode_with(h, |x| {
                    self.put(x);
                    Ok(())
                })
                .map_err(|_| InvalidInstruction)?;
            }
            // Forward copy inside the ring. If the source entry was just evicted, the new
            // bytes may land on it, but only on bytes already copied: the distance from
            // source to destination is constant and less than the ring size.
            //
            // A one-byte Duplicate (or a short name-reference insert) makes us copy a whole
            // entry, up to the table capacity, so the encoder stream buys `capacity` bytes of
            // copying per byte it sends: copy in runs that wrap neither source nor
            // destination (at most three), not byte by byte. Each run is a `copy_within`
            // (memmove), and runs go in stream order, so the argument above still holds.
            Source::Ring { start, len } => {
                let ring = self.ring();
                let (mut at, mut left) = (start, len);
                while left > 0 && at < ring && self.head < ring {
                    let run = left.min(ring - at).min(ring - self.head);
                    self.bytes.copy_within(at..at + run, self.head);
                    at = self.wrap(at + run);
                    self.head = self.wrap(self.head + run);
                    left -= run;
                }
            }
        }
        Ok(())
    }

    fn insert(&mut self, name: Source<'_>, value: Source<'_>) -> Result<(), InvalidInstruction> {
        let name_len = name.len()?;
        let value_len = value.len()?;
        let entry_size = (name_len as u64) + (value_len as u64) + FIELD_OVERHEAD;
        // RFC 9204 §3.2.2: an entry larger than the capacity is an encoder stream error.
        if entry_size > self.capacity {
            return Err(InvalidInstruction);
        }
        while self.size + entry_size > self.capacity {
            if !self.evict_oldest() {
                return Err(InvalidInstruction);
            }
        }
        if self.count >= self.slots.len() {
            return Err(InvalidInstruction);
        }
        let start = self.head;
        self.write(name)?;
        self.write(value)?;
        let n = self.slots.len();
        let at = self.first + self.count;
        let at = if at >= n { at - n } else { at };
        let slot = self.slots.get_mut(at).ok_or(InvalidInstruction)?;
        *slot = TableEntry {
            start: u32::try_from(start).map_err(|_| InvalidInstruction)?,
            name_len: u32::try_from(name_len).map_err(|_| InvalidInstruction)?,
            value_len: u32::try_from(value_len).map_err(|_| InvalidInstruction)?,
        };
        self.count += 1;
        self.size += entry_size;
        self.inserted += 1;
        self.inserted_mod += 1;
        if self.inserted_mod >= 2 * self.max_entries {
            self.inserted_mod = 0;
        }
        Ok(())
    }

    /// The record of an entry by relative index on the encoder stream (RFC 9204 §3.2.5:
    /// 0 is the most recent insertion).
    fn relative(&self, rel: u64) -> Result<TableEntry, InvalidInstruction> {
        let abs = self
            .inserted
            .checked_sub(rel)
            .and_then(|a| a.checked_sub(1))
            .ok_or(InvalidInstruction)?;
        let dropped = self.inserted - self.count as u64;
        let i = abs.checked_sub(dropped).ok_or(InvalidInstruction)?;
        self.slot(usize::try_from(i).map_err(|_| InvalidInstruction)?)
            .copied()
            .ok_or(InvalidInstruction)
    }

    /// Applies one encoder instruction.
    pub fn apply(&mut self, instr: &EncoderInstruction<'_>) -> Result<(), InvalidInstruction> {
        match *instr {
            EncoderInstruction::SetCapacity(c) => self.set_capacity(c),
            EncoderInstruction::InsertWithNameRef { is_static: true, index, value } => {
                let (name, _) = static_table::get(index).ok_or(InvalidInstruction)?;
                self.insert(Source::Bytes(name), literal(value))
            }
            EncoderInstruction::InsertWithNameRef { is_static: false, index, value } => {
                let e = self.relative(index)?;
                self.insert(
                    Source::Ring { start: e.start as usize, len: e.name_len as usize },
                    literal(value),
                )
            }
            EncoderInstruction::InsertWithLiteralName { name, value } => {
                self.insert(literal(name), literal(value))
            }
            EncoderInstruction::Duplicate(index) => {
                let e = self.relative(index)?;
                let start = e.start as usize;
                let name = Source::Ring { start, len: e.name_len as usize };
                let value = Source::Ring {
                    start: self.wrap(start + e.name_len as usize),
                    len: e.value_len as usize,
                };
                self.insert(name, value)
            }
        }
    }

    /// Processes the complete instructions at the front of `input` (bytes read from the
    /// peer's encoder stream) and returns how many bytes they took; an incomplete
    /// instruction at the end is left for the caller to present again with more bytes.
    /// Any error is QPACK_ENCODER_STREAM_ERROR.
    pub fn process_encoder_stream(&mut self, input: &[u8]) -> Result<usize, InvalidInstruction> {
        // An entry's encoded strings cannot be longer than ~3.75 times the capacity even
        // if Huffman-coded: refuse longer declared lengths before waiting for them.
        let max_string = self.max_capacity.saturating_mul(4);
        let mut pos = 0;
        while let Some(rest) = input.get(pos..) {
            match parse_encoder_instruction(rest, max_string)? {
                Some((instr, n)) => {
                    self.apply(&instr)?;
                    pos += n;
                }
                None => break,
            }
        }
        Ok(pos)
    }

    /// Decodes an encoded field section that may reference this table. See
    /// [`crate::qpack::decode_field_section`]; in addition this may return
    /// [`DecodeError::Blocked`].
    pub fn decode_field_section<'o>(
        &self,
        block: &[u8],
        limit: u64,
        out: &'o mut [u8],
    ) -> Result<Decoded<'o>, DecodeError> {
        decode_with(self, block, limit, out)
    }

    /// Records that a Section Acknowledgment for a section with this Required Insert Count
    /// was sent: the encoder's Known Received Count rises to it (RFC 9204 §2.1.4).
    pub fn section_acknowledged(&mut self, required_insert_count: u64) {
        self.acknowledged = self.acknowledged.max(required_insert_count);
    }

    /// The Insert Count Increment to send so the encoder knows about every insertion
    /// (RFC 9204 §4.4.3), or `None` if it already does. Marks them acknowledged.
    pub fn take_insert_count_increment(&mut self) -> Option<u64> {
        let inc = self.inserted.saturating_sub(self.acknowledged);
        self.acknowledged = self.inserted;
        (inc > 0).then_some(inc)
    }
}

impl TableView for DynamicTable<'_> {
    fn insert_count(&self) -> u64 {
        self.inserted
    }

    fn decode_required_insert_count(&self, encoded: u64) -> Option<u64> {
        // RFC 9204 §4.5.1.1, without division: `inserted_mod` tracks TotalNumberOfInserts
        // modulo FullRange.
        if encoded == 0 {
            return Some(0);
        }
        let full_range = 2 * self.max_entries;
        if encoded > full_range {
            return None;
        }
        let max_value = self.inserted + self.max_entries;
        let mut max_value_mod = self.inserted_mod + self.max_entries;
        if max_value_mod >= full_range {
            max_value_mod -= full_range;
        }
        let max_wrapped = max_value - max_value_mod;
        let mut ric = max_wrapped + encoded - 1;
        if ric > max_value {
            if ric <= full_range {
                return None;
            }
            ric -= full_range;
        }
        (ric != 0).then_some(ric)
    }

    fn entry(&self, abs: u64) -> Option<(Src<'_>, Src<'_>)> {
        let e = self.get(abs)?;
        Some((Src::Plain(e.name.0, e.name.1), Src::Plain(e.value.0, e.value.1)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coding::Out;
    use crate::qpack::instructions::{
        write_decoder_instruction, write_encoder_instruction, DecoderInstruction,
    };
    use hex_literal::hex;
    use proptest::prelude::*;

    fn entry(t: &DynamicTable<'_>, abs: u64) -> (Vec<u8>, Vec<u8>) {
        let e = t.get(abs).unwrap();
        ([e.name.0, e.name.1].concat(), [e.value.0, e.value.1].concat())
    }

    fn fields(d: &Decoded<'_>) -> Vec<(Vec<u8>, Vec<u8>)> {
        d.fields.iter().map(|f| (f.name.to_vec(), f.value.to_vec())).collect()
    }

    fn instr(i: DecoderInstruction) -> Vec<u8> {
        let mut buf = [0u8; 16];
        let mut out = Out::new(&mut buf);
        write_decoder_instruction(&mut out, i).unwrap();
        out.written().to_vec()
    }

    fn pairs(p: &[(&str, &str)]) -> Vec<(Vec<u8>, Vec<u8>)> {
        p.iter().map(|(n, v)| (n.as_bytes().to_vec(), v.as_bytes().to_vec())).collect()
    }

    const B2_ENCODER: [u8; 34] = hex!(
        "3fbd01"
        "c00f 7777 772e 6578 616d 706c 652e 636f 6d"
        "c10c 2f73 616d 706c 652f 7061 7468"
    );
    const B2_STREAM4: [u8; 4] = hex!("0381 10 11");
    const B3_ENCODER: [u8; 24] =
        hex!("4a63 7573 746f 6d2d 6b65 790c 6375 7374 6f6d 2d76 616c 7565");
    const B4_ENCODER: [u8; 1] = hex!("02");
    const B4_STREAM8: [u8; 5] = hex!("0500 80 c1 81");
    const B5_ENCODER: [u8; 15] = hex!("810d 6375 7374 6f6d 2d76 616c 7565 32");

    /// Runs RFC 9204 Appendix B up to and including section `upto` (2..=5) on `t`,
    /// checking every step against the RFC: encoder stream in, field sections decoded,
    /// decoder stream out (byte-exact), table state as the RFC's tables show it.
    fn run_appendix_b(t: &mut DynamicTable<'_>, upto: u8) {
        let mut out = [0u8; 512];
        // B.2: the encoder stream, then stream 4 with two post-base references.
        assert_eq!(
            t.decode_field_section(&B2_STREAM4, 4096, &mut out),
            Err(DecodeError::Blocked { required_insert_count: 2 }),
            "before the encoder stream arrives, stream 4 is blocked"
        );
        assert_eq!(t.process_encoder_stream(&B2_ENCODER), Ok(B2_ENCODER.len()));
        assert_eq!((t.capacity(), t.size(), t.insert_count()), (220, 106, 2));
        assert_eq!(entry(t, 0), (b":authority".to_vec(), b"www.example.com".to_vec()));
        assert_eq!(entry(t, 1), (b":path".to_vec(), b"/sample/path".to_vec()));
        let d = t.decode_field_section(&B2_STREAM4, 4096, &mut out).unwrap();
        assert_eq!(
            fields(&d),
            pairs(&[(":authority", "www.example.com"), (":path", "/sample/path")])
        );
        assert_eq!(d.required_insert_count, 2);
        assert_eq!(instr(DecoderInstruction::SectionAck(4)), hex!("84"));
        t.section_acknowledged(d.required_insert_count);
        // The acknowledgment covered both insertions: no Insert Count Increment.
        assert_eq!(t.take_insert_count_increment(), None);
        if upto == 2 {
            return;
        }

        // B.3: speculative insert, acknowledged with Insert Count Increment (1).
        assert_eq!(t.process_encoder_stream(&B3_ENCODER), Ok(B3_ENCODER.len()));
        assert_eq!((t.size(), t.insert_count()), (160, 3));
        assert_eq!(entry(t, 2), (b"custom-key".to_vec(), b"custom-value".to_vec()));
        let inc = t.take_insert_count_increment().unwrap();
        assert_eq!(instr(DecoderInstruction::InsertCountIncrement(inc)), hex!("01"));
        if upto == 3 {
            return;
        }

        // B.4: the Duplicate is delayed, so stream 8 blocks; the decoder cancels it.
        assert_eq!(
            t.decode_field_section(&B4_STREAM8, 4096, &mut out),
            Err(DecodeError::Blocked { required_insert_count: 4 })
        );
        assert_eq!(instr(DecoderInstruction::StreamCancel(8)), hex!("48"));
        assert_eq!(t.process_encoder_stream(&B4_ENCODER), Ok(1));
        assert_eq!((t.size(), t.insert_count()), (217, 4));
        assert_eq!(entry(t, 3), (b":authority".to_vec(), b"www.example.com".to_vec()));
        // Had it not been cancelled, stream 8 would now decode as the RFC annotates it.
        let d = t.decode_field_section(&B4_STREAM8, 4096, &mut out).unwrap();
        assert_eq!(
            fields(&d),
            pairs(&[
                (":authority", "www.example.com"),
                (":path", "/"),
                ("custom-key", "custom-value")
            ])
        );
        assert_eq!(d.required_insert_count, 4);
        if upto == 4 {
            return;
        }

        // B.5: an insert with a dynamic name reference evicts the oldest entry.
        assert_eq!(t.process_encoder_stream(&B5_ENCODER), Ok(B5_ENCODER.len()));
        assert_eq!((t.size(), t.insert_count(), t.len()), (215, 5, 4));
        assert!(t.get(0).is_none());
        assert_eq!(entry(t, 1), (b":path".to_vec(), b"/sample/path".to_vec()));
        assert_eq!(entry(t, 2), (b"custom-key".to_vec(), b"custom-value".to_vec()));
        assert_eq!(entry(t, 3), (b":authority".to_vec(), b"www.example.com".to_vec()));
        assert_eq!(entry(t, 4), (b"custom-key".to_vec(), b"custom-value2".to_vec()));
        // The RFC's table still shows Known Received Count 3 here: two insertions are
        // not acknowledged yet.
        assert_eq!(t.take_insert_count_increment(), Some(2));
        // A reference to the evicted entry now fails.
        assert_eq!(
            t.decode_field_section(&hex!("0200 81"), 4096, &mut out),
            Err(DecodeError::Failed)
        );
    }

    fn appendix_b(upto: u8) {
        let mut bytes = [0u8; 220];
        let mut slots = [TableEntry::EMPTY; 8];
        let mut t = DynamicTable::new(&mut bytes, &mut slots, 220);
        // B.1 first, on the same decoder: static-only, no table state involved.
        let mut out = [0u8; 64];
        let d = t
            .decode_field_section(&hex!("0000 510b 2f69 6e64 6578 2e68 746d 6c"), 4096, &mut out)
            .unwrap();
        assert_eq!(fields(&d), pairs(&[(":path", "/index.html")]));
        assert_eq!(d.required_insert_count, 0);
        run_appendix_b(&mut t, upto);
    }

    #[test]
    fn rfc9204_b2_dynamic_table() {
        appendix_b(2);
    }

    #[test]
    fn rfc9204_b3_speculative_insert() {
        appendix_b(3);
    }

    #[test]
    fn rfc9204_b4_duplicate_instruction_stream_cancellation() {
        appendix_b(4);
    }

    #[test]
    fn rfc9204_b5_dynamic_table_insert_eviction() {
        appendix_b(5);
    }

    #[test]
    fn capacity_limits() {
        let mut bytes = [0u8; 100];
        let mut slots = [TableEntry::EMPTY; 4];
        let mut t = DynamicTable::new(&mut bytes, &mut slots, 4096);
        // Reduced to the storage: 100 bytes, 4 slots = 128.
        assert_eq!(t.max_capacity(), 100);
        // Above our maximum: QPACK_ENCODER_STREAM_ERROR.
        assert_eq!(t.process_encoder_stream(&hex!("3f 46")), Err(InvalidInstruction)); // 101
        assert_eq!(t.process_encoder_stream(&hex!("3f 45")), Ok(2)); // 100
                                                                     // An entry larger than the capacity.
        let mut big = vec![0x4a];
        big.extend_from_slice(b"nnnnnnnnnn");
        big.push(0x50);
        big.extend(std::iter::repeat_n(b'a', 80));
        assert_eq!(t.process_encoder_stream(&big), Err(InvalidInstruction));
        // Inserting without capacity, references to missing entries.
        let mut bytes = [0u8; 100];
        let mut slots = [TableEntry::EMPTY; 4];
        let mut t = DynamicTable::new(&mut bytes, &mut slots, 100);
        assert_eq!(t.process_encoder_stream(&hex!("c1 01 61")), Err(InvalidInstruction));
        assert_eq!(t.process_encoder_stream(&hex!("3f 45 80 01 61")), Err(InvalidInstruction));
        assert_eq!(t.process_encoder_stream(&hex!("00")), Err(InvalidInstruction));
        assert_eq!(t.process_encoder_stream(&hex!("c0 01")), Ok(0)); // incomplete
    }

    /// Many inserts through a small ring: entries wrap around the end of the byte ring and
    /// the slot ring, and a Duplicate of an entry that its own insertion evicts still
    /// copies the right bytes.
    #[test]
    fn ring_wraps_and_self_evicting_duplicate() {
        let mut bytes = [0u8; 90];
        let mut slots = [TableEntry::EMPTY; 3];
        let mut t = DynamicTable::new(&mut bytes, &mut slots, 90);
        assert_eq!(t.process_encoder_stream(&hex!("3f 3b")), Ok(2)); // capacity 90
        let mut model: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        for i in 0..50u8 {
            let name = vec![b'a' + i % 26; (i % 7) as usize + 1];
            let value = vec![b'0' + i % 10; (i % 13) as usize];
            let mut buf = [0u8; 64];
            let mut o = Out::new(&mut buf);
            write_encoder_instruction_literal(&mut o, &name, &value);
            let n = o.position();
            assert_eq!(t.process_encoder_stream(&buf[..n]), Ok(n));
            model.push((name, value));
            if i % 5 == 0 {
                // Duplicate the oldest live entry.
                let rel = t.len() as u64 - 1;
                let abs = t.insert_count() - rel - 1;
                let dup = entry(&t, abs);
                let mut b = [0u8; 8];
                let mut o = Out::new(&mut b);
                crate::qpack::instructions::write_encoder_instruction(
                    &mut o,
                    &EncoderInstruction::Duplicate(rel),
                )
                .unwrap();
                let n = o.position();
                assert_eq!(t.process_encoder_stream(&b[..n]), Ok(n));
                model.push(dup);
            }
            let ic = t.insert_count();
            for k in 0..t.len() as u64 {
                let abs = ic - 1 - k;
                assert_eq!(entry(&t, abs), model[abs as usize], "abs {abs}");
            }
            assert!(t.size() <= 90);
        }
    }

    /// Review finding: each one-byte Duplicate of a near-capacity entry copies the whole
    /// entry, so an encoder stream of Duplicates buys ~capacity bytes of copying per byte.
    /// The copy used to go byte by byte (1 MiB of Duplicates of a 4 KB entry: ~12 s of CPU
    /// in release); it now moves whole runs (~0.15 s). The entries must stay exact through
    /// every wrap position of source and destination, with a ring larger than the capacity
    /// and one equal to it.
    #[test]
    fn attack_qpack_duplicate_amplification() {
        for ring in [4096usize, 4099] {
            let mut bytes = vec![0u8; ring];
            let mut slots = [TableEntry::EMPTY; 128];
            let mut t = DynamicTable::new(&mut bytes, &mut slots, 4096);
            let mut b = [0u8; 8];
            let mut o = Out::new(&mut b);
            write_encoder_instruction(&mut o, &EncoderInstruction::SetCapacity(4096)).unwrap();
            let n = o.position();
            assert_eq!(t.process_encoder_stream(&b[..n]), Ok(n));
            let name = b"big".to_vec();
            let value: Vec<u8> = (0..3997u32).map(|i| (i * 7 + i / 251) as u8).collect();
            let mut buf = vec![0u8; 4100];
            let mut o = Out::new(&mut buf);
            write_encoder_instruction_literal(&mut o, &name, &value);
            let n = o.position();
            assert_eq!(t.process_encoder_stream(&buf[..n]), Ok(n));
            // 5000 Duplicate(0): each evicts the only entry and copies it (4032 bytes).
            let dups = vec![0x00u8; 5000];
            assert_eq!(t.process_encoder_stream(&dups), Ok(dups.len()));
            assert_eq!((t.len(), t.insert_count()), (1, 5001));
            assert_eq!(entry(&t, 5000), (name.clone(), value.clone()));
            // Half-size entries, two live at once: Duplicate(1) copies the older one, which
            // its own insertion evicts; Duplicate(0) copies the newer one and evicts the
            // other.
            let a = value.get(..1900).unwrap().to_vec();
            let b = value.get(2000..3900).unwrap().to_vec();
            let mut model = std::collections::VecDeque::new();
            for v in [&a, &b] {
                let mut o = Out::new(&mut buf);
                write_encoder_instruction_literal(&mut o, &name, v);
                let n = o.position();
                assert_eq!(t.process_encoder_stream(&buf[..n]), Ok(n));
                model.push_back((name.clone(), v.clone()));
            }
            for k in 0..3000u64 {
                let rel = k % 3 % 2;
                assert_eq!(t.process_encoder_stream(&[rel as u8]), Ok(1), "{k}");
                let copied = model[1 - rel as usize].clone();
                model.pop_front();
                model.push_back(copied);
                assert_eq!(t.len(), 2);
                let ic = t.insert_count();
                assert_eq!(entry(&t, ic - 2), model[0], "{k}");
                assert_eq!(entry(&t, ic - 1), model[1], "{k}");
            }
        }
    }

    fn write_encoder_instruction_literal(o: &mut Out<'_>, name: &[u8], value: &[u8]) {
        crate::qpack::instructions::write_encoder_instruction(
            o,
            &EncoderInstruction::InsertWithLiteralName {
                name: RawString { huffman: false, bytes: name },
                value: RawString { huffman: false, bytes: value },
            },
        )
        .unwrap();
    }

    /// RFC 9204 §4.5.1.1 with wrap-around: the encoded Required Insert Count is taken
    /// modulo 2 * MaxEntries, and the decoder recovers it from its own insert count.
    #[test]
    fn required_insert_count_wraps() {
        let mut bytes = [0u8; 64];
        let mut slots = [TableEntry::EMPTY; 2];
        let mut t = DynamicTable::new(&mut bytes, &mut slots, 64); // MaxEntries 2, FullRange 4
        assert_eq!(t.process_encoder_stream(&hex!("3f 21")), Ok(2));
        for i in 1..=20u64 {
            let mut buf = [0u8; 16];
            let mut o = Out::new(&mut buf);
            write_encoder_instruction_literal(&mut o, b"k", &[b'a' + (i % 26) as u8]);
            let n = o.position();
            assert_eq!(t.process_encoder_stream(&buf[..n]), Ok(n));
            // Encoder side: RIC = i, encoded = i mod 4 + 1; one indexed reference to it.
            let enc = (i % 4) + 1;
            let block = [enc as u8, 0x00, 0x80];
            let mut out = [0u8; 64];
            let d = t.decode_field_section(&block, 4096, &mut out).unwrap();
            assert_eq!(d.required_insert_count, i);
            assert_eq!(d.fields.get(b"k"), Some(&[b'a' + (i % 26) as u8][..]));
            // A value the encoder could not have produced (ahead of the table by more
            // than MaxEntries) is blocked or invalid, never wrongly decoded.
            assert!(t.decode_field_section(&[0x05, 0x00, 0x80], 4096, &mut out).is_err());
        }
        assert_eq!(t.decode_required_insert_count(0), Some(0));
    }

    #[derive(Clone, Debug)]
    enum Op {
        Capacity(u64),
        Literal(Vec<u8>, Vec<u8>, bool),
        StaticName(u64, Vec<u8>),
        DynamicName(u64, Vec<u8>),
        Duplicate(u64),
    }

    fn op() -> impl Strategy<Value = Op> {
        let bytes = |n| proptest::collection::vec(any::<u8>(), 0..n);
        prop_oneof![
            (0u64..=160).prop_map(Op::Capacity),
            (bytes(12), bytes(40), any::<bool>()).prop_map(|(n, v, h)| Op::Literal(n, v, h)),
            (0u64..100, bytes(30)).prop_map(|(i, v)| Op::StaticName(i, v)),
            (0u64..5, bytes(30)).prop_map(|(i, v)| Op::DynamicName(i, v)),
            (0u64..5).prop_map(Op::Duplicate),
        ]
    }

    fn raw(b: &[u8], huffman: bool) -> (Vec<u8>, bool) {
        if huffman {
            let mut buf = vec![0u8; b.len() * 4 + 1];
            let mut o = Out::new(&mut buf);
            huffman::encode(b, &mut o).unwrap();
            let n = o.position();
            buf.truncate(n);
            (buf, true)
        } else {
            (b.to_vec(), false)
        }
    }

    proptest::proptest! {
        /// Random encoder instructions against a plain model of RFC 9204 §3.2: same
        /// entries, sizes and errors, through ring wrap-around and self-evicting references.
        #[test]
        fn table_matches_model(ops in proptest::collection::vec(op(), 1..60)) {
            let mut bytes = [0u8; 160];
            let mut slots = [TableEntry::EMPTY; 5];
            let mut t = DynamicTable::new(&mut bytes, &mut slots, 160);
            let mut model: std::collections::VecDeque<(Vec<u8>, Vec<u8>)> = Default::default();
            let (mut cap, mut inserted) = (0u64, 0u64);
            let size = |m: &std::collections::VecDeque<(Vec<u8>, Vec<u8>)>| -> u64 {
                m.iter().map(|(n, v)| (n.len() + v.len() + 32) as u64).sum()
            };
            for op in ops {
                let mut buf = [0u8; 256];
                let mut o = Out::new(&mut buf);
                let (name, value, instr_ok) = match &op {
                    Op::Capacity(c) => {
                        write_encoder_instruction(&mut o, &EncoderInstruction::SetCapacity(*c)).unwrap();
                        (None, None, true)
                    }
                    Op::Literal(n, v, h) => {
                        let (nb, nh) = raw(n, *h);
                        let (vb, vh) = raw(v, !*h);
                        write_encoder_instruction(&mut o, &EncoderInstruction::InsertWithLiteralName {
                            name: RawString { huffman: nh, bytes: &nb },
                            value: RawString { huffman: vh, bytes: &vb },
                        }).unwrap();
                        (Some(n.clone()), Some(v.clone()), true)
                    }
                    Op::StaticName(i, v) => {
                        write_encoder_instruction(&mut o, &EncoderInstruction::InsertWithNameRef {
                            is_static: true, index: *i, value: RawString { huffman: false, bytes: v },
                        }).unwrap();
                        let name = static_table::get(*i).map(|(n, _)| n.to_vec());
                        let ok = name.is_some();
                        (name, Some(v.clone()), ok)
                    }
                    Op::DynamicName(i, v) => {
                        write_encoder_instruction(&mut o, &EncoderInstruction::InsertWithNameRef {
                            is_static: false, index: *i, value: RawString { huffman: false, bytes: v },
                        }).unwrap();
                        let idx = (model.len() as u64).checked_sub(1 + *i);
                        let name = idx.map(|k| model[k as usize].0.clone());
                        let ok = name.is_some();
                        (name, Some(v.clone()), ok)
                    }
                    Op::Duplicate(i) => {
                        write_encoder_instruction(&mut o, &EncoderInstruction::Duplicate(*i)).unwrap();
                        let idx = (model.len() as u64).checked_sub(1 + *i);
                        let e = idx.map(|k| model[k as usize].clone());
                        let ok = e.is_some();
                        (e.as_ref().map(|e| e.0.clone()), e.map(|e| e.1), ok)
                    }
                };
                let n = o.position();
                let got = t.process_encoder_stream(&buf[..n]);
                // The model's verdict.
                let expect_ok = match &op {
                    Op::Capacity(c) => *c <= 160,
                    _ => instr_ok && {
                        let es = (name.as_ref().unwrap().len() + value.as_ref().unwrap().len() + 32) as u64;
                        es <= cap
                    },
                };
                prop_assert_eq!(got.is_ok(), expect_ok, "{:?}", op);
                if !expect_ok {
                    return Ok(());
                }
                match op {
                    Op::Capacity(c) => {
                        cap = c;
                        while size(&model) > cap {
                            model.pop_front();
                        }
                    }
                    _ => {
                        let (n, v) = (name.unwrap(), value.unwrap());
                        let es = (n.len() + v.len() + 32) as u64;
                        while size(&model) + es > cap {
                            model.pop_front();
                        }
                        model.push_back((n, v));
                        inserted += 1;
                    }
                }
                prop_assert_eq!(t.insert_count(), inserted);
                prop_assert_eq!(t.len(), model.len());
                prop_assert_eq!(t.size(), size(&model));
                for (k, e) in model.iter().enumerate() {
                    let abs = inserted - model.len() as u64 + k as u64;
                    prop_assert_eq!(&entry(&t, abs), e);
                }
            }
        }
    }

    #[test]
    fn invalid_dynamic_references() {
        let mut bytes = [0u8; 220];
        let mut slots = [TableEntry::EMPTY; 8];
        let mut t = DynamicTable::new(&mut bytes, &mut slots, 220);
        let enc = hex!("3fbd01 c00f 7777 772e 6578 616d 706c 652e 636f 6d");
        assert_eq!(t.process_encoder_stream(&enc), Ok(enc.len()));
        let mut out = [0u8; 256];
        // RIC 1 (encoded 2), Base 1: relative 0 is abs 0, fine; relative 1 is negative.
        assert!(t.decode_field_section(&hex!("0200 80"), 4096, &mut out).is_ok());
        assert_eq!(
            t.decode_field_section(&hex!("0200 81"), 4096, &mut out),
            Err(DecodeError::Failed)
        );
        // Post-base index at or beyond RIC.
        assert_eq!(
            t.decode_field_section(&hex!("0281 10"), 4096, &mut out),
            Err(DecodeError::Failed)
        );
        // Encoded RIC beyond FullRange (2 * 6 = 12).
        assert_eq!(t.decode_field_section(&hex!("0d00"), 4096, &mut out), Err(DecodeError::Failed));
        // Decoded-size limit applies to dynamic references too.
        let mut block = vec![0x02, 0x00];
        block.extend(std::iter::repeat_n(0x80, 100));
        assert_eq!(t.decode_field_section(&block, 500, &mut out), Err(DecodeError::TooLarge));
    }
}
