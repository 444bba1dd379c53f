//! The review pass's model side: a second model call that reads translated
//! passages against their sources and the book's sheet, and answers with a
//! correction where one is needed and flags on what it found.
//!
//! Protocol ([`REVIEW_SYSTEM_PROMPT`], [`review_message`],
//! [`parse_review_answer`]). The system prompt is constant (so providers can
//! cache it); the user message is JSON
//! `{"task": "review", "source_language", "target_language",
//! "glossary": [{"source", "translation", "locked"}],
//! "characters": [{"name", "aliases", "rendering"}],
//! "passages": [{"id", "source", "translation"}]}` and the expected answer is
//! `{"reviews": [{"id", "correction": string | null, "flags": [{"severity",
//! "code", "message"}]}]}`, tolerated inside a code fence. `severity` is
//! `minor`, `major` or `critical`.
//!
//! Run ([`review`]): the whole batch with retries on retryable failures; an
//! answer cut at `max_tokens` splits the batch in halves; each passage the
//! answer left out is then asked for alone; a passage that still has no
//! review comes back as an error, which the caller treats as "not reviewed"
//! (no flag, the translation kept as it is). Every HTTP attempt is reported
//! through `on_call` as a [`CallRecord`](crate::translate::CallRecord).
//!
//! What a review becomes (a correction applied or not, a flag turned into a
//! signal) is the caller's business: a correction is the model's text as it
//! came, its placeholders unchecked.

mod protocol;
mod run;

/// The languages of a batch, the same as the analysis stage's.
pub use crate::analysis::Languages;
pub use protocol::{
    MAX_FLAGS, MAX_MESSAGE_CHARS, REVIEW_SYSTEM_PROMPT, ReviewFlag, ReviewItem, ReviewMessage,
    ReviewName, ReviewPassage, ReviewTerm, TASK, parse_review_answer, review_message,
};
pub use run::{ReviewOutcome, match_items, max_tokens_for, review, settled};
