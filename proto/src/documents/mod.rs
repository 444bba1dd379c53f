//! Conversions between the typed documents of `dragoman_model::documents`
//! and the protobuf messages that carry them between processes, written
//! once per document. A message field that holds no value of its enum, or a
//! nested message that must be there and is not, is a [`WireError`] naming
//! the field.
//!
//! [`WireError`]: crate::wire::WireError

use crate::wire::WireError;

pub mod book_settings;
pub mod books;
pub mod external_memory;
pub mod glossary_import;
pub mod job_list;
pub mod narrative;
pub mod propagation;
pub mod publication;

pub mod admin_settings;
pub mod licence_status;
pub mod mail_settings;
pub mod report;
pub mod request;
pub mod settings_change;

/// A nested message that must be there.
pub(crate) fn required<T>(value: Option<T>, field: &'static str) -> Result<T, WireError> {
    value.ok_or(WireError { field })
}
