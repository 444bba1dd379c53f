//! The Memory service: glossaries, narrative memory and the context of
//! translation batches.
//!
//! * [`backend`]: the memory operations as a trait, and the backend that
//!   keeps the memory in the database.
//! * [`service`]: the gRPC adapter over a backend.
//! * [`normalize`]: keys of terms, names, passages and the translation
//!   memory.
//! * [`glossary`]: which terms are in force for a volume (spec 2.9).
//! * [`analysis`], [`reconcile`]: storing analyses and merging them into
//!   the book's memory.
//! * [`translation_memory`], [`context`]: what a translation batch recalls
//!   and receives.
//! * [`series_memory`]: what a closed volume gives its series.
//! * [`consistency`]: where the volumes of a series disagree.
//! * [`person_edits`]: a person's edit or validation of a passage.
//! * [`terms`]: a person's term decisions; [`term_edit`]: terms added,
//!   changed and deleted by their owner; [`propagate`]: a new rendering
//!   carried into stored translations, with a history version per change.
//! * [`shared_glossary`]: shared glossaries, their export and import, and
//!   the glossary a series follows.
//! * [`bundle`]: the read-only narrative context: books list, book and
//!   series bundles, fingerprints.
//! * [`external`]: the external semantic memory on Chroma: mirror, sync
//!   loop, retrieval and maintenance.
//! * [`domain`]: the operations' own types; [`entities`]: alias sets and
//!   observations of named things; [`error`]: the crate's one error type.
pub mod analysis;
pub mod backend;
pub mod bundle;
pub mod consistency;
pub mod context;
pub mod domain;
pub mod entities;
pub mod error;
pub mod external;
pub mod glossary;
pub mod library;
pub mod normalize;
pub mod person_edits;
pub mod propagate;
pub mod reader_notes;
pub mod reconcile;
pub mod series_memory;
pub mod service;
pub mod shared_glossary;
mod store;
pub mod term_edit;
pub mod terms;
#[cfg(test)]
mod testing;
pub mod translation_memory;

pub use backend::{InternalBackend, MemoryBackend, MemorySettings};
pub use error::MemoryError;
pub use service::MemoryService;
