//! Dragoman's book formats: bytes in, bytes out.
//!
//! Readers turn an EPUB, a DOCX or a TXT upload into a [`Book`] of [`Chapter`]s and
//! [`Passage`]s, and a chapter given as plain text (a JSON request) into a
//! [`Chapter`] of the same kind ([`read_plain_chapter`]); writers take the book
//! (or, for EPUB, the original bytes) plus [`Translations`] and produce the
//! delivered files. Nothing here does I/O, async or networking.
//!
//! Passages carry inline markup as numbered placeholders, `⟦n⟧…⟦/n⟧` and `⟦n/⟧`
//! (see [`placeholder`]); a translation that does not give back the same
//! placeholders is not used, and the passage keeps its source text and markup
//! (reported as [`ResidualReason::MarkupMismatch`]).

pub mod archive;
pub mod bilingual;
pub mod docx;
pub mod epub;
pub mod error;
pub mod export;
pub mod inspect;
pub mod labels;
pub mod model;
pub mod numbering;
pub mod placeholder;
pub mod plain;
pub mod text;
pub mod txt;

mod draft;
mod entities;
mod xhtml;
mod xml;

pub use bilingual::{BilingualOptions, Layout, write_bilingual_epub};
pub use docx::read_docx;
pub use epub::{EpubLayout, EpubWriteOptions, ReaderNote, epub_layout, read_epub, write_epub};
pub use error::{BookError, Result};
pub use export::{write_txt, write_txt_noted, write_txt_zip, write_txt_zip_noted};
pub use inspect::{InspectReport, inspect, read_any};
pub use model::*;
pub use plain::{PLAIN_SOURCE, PlainChapterIn, read_plain_chapter};
pub use txt::{Split, read_txt};
