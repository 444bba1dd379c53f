//! The reader-note pass's model side (`translator_notes`, spec 4.9): a
//! model call that reads glossary terms of a translated book with passages
//! where they occur, and proposes a note for each term a reader of the
//! target language would miss (a name's meaning, a cultural reference, a
//! pun lost in translation).
//!
//! Protocol ([`NOTES_SYSTEM_PROMPT`], [`notes_message`],
//! [`parse_notes_answer`]). The system prompt is constant (so providers can
//! cache it); the user message is JSON
//! `{"task": "translator_notes", "source_language", "target_language",
//! "terms": [{"id", "source", "translation", "category", "description",
//! "examples": [{"source", "translation"}]}]}` and the expected answer is
//! `{"notes": [{"term_id", "note", "placement"}]}`, tolerated inside a code
//! fence; a term that needs no note is left out. `placement` is `first`,
//! `each` or `never`.
//!
//! Validation: a note is plain text (no markup, no placeholder), trimmed,
//! at most [`MAX_NOTE_CHARS`] characters, for a term of the batch, once
//! (the first note of a term wins); anything else is dropped, not cut.
//!
//! Run ([`propose`]): the whole batch with retries on retryable failures;
//! an answer cut at `max_tokens` splits the batch in halves. Every HTTP
//! attempt is reported through `on_call` as a
//! [`CallRecord`](crate::translate::CallRecord).

mod protocol;
mod run;

pub use protocol::{
    MAX_NOTE_CHARS, NOTES_SYSTEM_PROMPT, NotesExample, NotesMessage, NotesTerm, Proposal, TASK,
    notes_message, parse_notes_answer,
};
pub use run::{NotesOutcome, max_tokens_for, propose};
