//! QPACK (RFC 9204): field sections decode without panicking into a fixed output buffer and
//! never exceed the decoded-size limit (RFC 9114 §4.2.2), with the static-only device
//! decoder and with a dynamic table first loaded from the same input's encoder stream.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mote_h3::qpack::decode_field_section;
use mote_h3::qpack::table::{DynamicTable, TableEntry};

const LIMIT: u64 = 1024;

fn check_size(fields: mote_h3::FieldSection<'_>) {
    // RFC 9114 §4.2.2: name + value + 32 per field.
    let size: u64 = fields.iter().map(|f| (f.name.len() + f.value.len() + 32) as u64).sum();
    assert!(size <= LIMIT);
}

fuzz_target!(|data: &[u8]| {
    let mut out = [0u8; 2048];
    if let Ok(d) = decode_field_section(data, LIMIT, &mut out) {
        check_size(d.fields);
    }
    // First byte splits the rest into an encoder-stream prefix and a field section.
    let Some((&split, rest)) = data.split_first() else { return };
    let (encoder, section) = rest.split_at(usize::from(split).min(rest.len()));
    let mut bytes = [0u8; 512];
    let mut slots = [TableEntry::EMPTY; 32];
    let mut table = DynamicTable::new(&mut bytes, &mut slots, 512);
    if table.process_encoder_stream(encoder).is_ok() {
        if let Ok(d) = table.decode_field_section(section, LIMIT, &mut out) {
            check_size(d.fields);
        }
    }
});
