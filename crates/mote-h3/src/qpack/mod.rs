//! QPACK field compression (RFC 9204).
//!
//! - [`encoder`]: static-table references and literals (the device side never uses the
//!   dynamic table, so it sends no encoder stream and never blocks the peer).
//! - [`decoder`]: static references and literals always; with the `dynamic-table` feature,
//!   `DynamicTable` adds dynamic and post-base references, encoder-stream instructions
//!   and decoder-stream feedback.
//! - [`huffman`], [`prefix`], [`static_table`], [`instructions`]: the primitives.
//!
//! Decoded fields go into a caller buffer ([`FieldSection`]) and the decoded size is
//! checked against the caller's limit field by field while decoding.

pub mod decoder;
pub mod encoder;
pub mod fields;
pub mod huffman;
pub mod instructions;
pub mod prefix;
#[cfg(not(any(feature = "server", feature = "quic")))]
mod static_device;
pub mod static_table;
#[cfg(feature = "dynamic-table")]
pub mod table;

pub use decoder::{decode_field_section, DecodeError, Decoded};
pub use encoder::{encode_field_section, FieldEncoder};
pub use fields::{Field, FieldSection, Fields, FIELD_OVERHEAD};
pub use instructions::{DecoderInstruction, EncoderInstruction, InvalidInstruction};
#[cfg(feature = "dynamic-table")]
pub use table::{DynamicTable, EntryRef, TableEntry};
