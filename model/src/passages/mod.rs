//! The only writer of `passages`: every insert, update and delete of a
//! passage row outside tests goes through a function here, one per kind of
//! write, named by what it means.
//!
//! Why one writer: a passage's columns move together (a translation comes
//! with its status, error and memory key; a score with its signals and,
//! unless a person edited or validated the passage, its status), and the
//! scheduler, the worker, the memory service and delivery all change them.
//! Kept in one place, what a passage's columns may become is read here
//! rather than pieced together from four crates.
//!
//! * [`intake`]: a book's new passages, the passages of a replaced chapter
//!   dropped, the markup of the book sent again.
//! * [`translation`]: the text delivered: a translation, a passage left in
//!   source text, a recall from memory, a term's new rendering carried in,
//!   a passage sent back to source when its EPUB markup could not be kept.
//! * [`quality`]: a score, a review's outcome, the autopilot's rounds and
//!   verdicts.
//! * [`person`]: a person's edit or validation, checked against the
//!   version they read; the guard that keeps jobs off a person's work.
//!
//! Each function takes any [`sea_orm::ConnectionTrait`], so the caller's
//! transaction holds, and returns [`sea_orm::DbErr`]. Updates of a stored
//! passage take the row as read and write only the columns they change,
//! by primary key; guarded updates say whether they changed the row.

pub mod intake;
pub mod person;
pub mod quality;
pub mod translation;

pub use intake::{
    NewPassage, PassageWork, adopt_new_markup, delete_chapter_passages, insert_chapter_passages,
};
pub use person::{PersonEdit, PersonTranslation, record_person_edit, version_of};
pub use quality::{
    AutopilotAttempt, AutopilotVerdict, Retranslation, ReviewOutcome, Scored,
    record_autopilot_attempt, record_autopilot_verdict, record_review, record_score,
};
pub use translation::{
    propagate_rendering, record_recall, record_translation, record_untranslated,
    return_to_source_after_epub_repair,
};

#[cfg(test)]
mod tests;
