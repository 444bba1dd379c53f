//! Validation and repair of the delivered EPUB.
//!
//! The delivered EPUB is rebuilt from the original with every translated
//! passage ([`deliver_epub`]). When an EPUB validator is installed
//! ([`Epubcheck::find`]) and rejects the rebuilt book, the files its errors
//! name go back to source text and the book is rebuilt and validated again,
//! at most `DELIVERY_REPAIR_ATTEMPTS` times (the caller's `max_repairs`).
//! Errors the original already had are inherited: listed, never blocking,
//! since no translation can fix them and refusing the book for them would
//! refuse every slightly broken upload.
//!
//! A validator that cannot finish (crash, timeout, unreadable report) does not
//! lose the book: the rebuilt book is delivered unvalidated, with
//! `validation {available: true, valid: null}` and the failure in
//! `validator_error`. The translation is paid for and the book was rebuilt
//! from a readable original; withholding it because a helper tool misbehaved
//! would punish the user for the server's problem.
//!
//! [`RejectFiles`] is a stand-in validator for tests in this and other crates.

mod epubcheck;
mod repair;
mod stand_in;
mod validator;

pub use epubcheck::{
    DEFAULT_CONCURRENCY, DEFAULT_MAX_HEAP, DEFAULT_TIMEOUT, EPUBCHECK_PATH_ENV, Epubcheck,
};
pub use repair::{
    DeliveredEpub, DeliveryReport, EpubDeliveryFailed, Repair, Validation, deliver_epub,
};
pub use stand_in::RejectFiles;
pub use validator::{EpubValidator, ErrorKey, ValidationError, ValidatorFailure};
