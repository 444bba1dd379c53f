//! Per-passage quality: the signals found in a translation and the score
//! and status they give (spec 2.7). Pure: no I/O, no clock; the same
//! passage and sheet always give the same [`Assessment`].
//!
//! [`assess`] runs the checks on a [`Check`] against the volume's
//! [`Sheet`] (glossary and characters) and prices each signal found; a
//! passage's score is 100 less the sum of its penalties, clamped to
//! 0..=100. There is one [`Signal`] per code, with how many times it was
//! found and its total penalty:
//!
//! | signal | penalty | found when (module) |
//! |---|---|---|
//! | `untranslated` | 100 | no translation, or an empty one |
//! | `refusal` | 80 | the answer apologises or refuses instead (`refusal.rs`) |
//! | `unchanged` | 70 | the translation is the source (3 words or more, different languages) |
//! | `wrong_language` | 70 | whatlang reads another language (`language.rs`) |
//! | `markup_mismatch` | 60 | the placeholders differ ([`check_placeholders`]) |
//! | `truncated` | 50 | the translation stops before the source does (`length.rs`) |
//! | `locked_term` | 25 per term, at most 50 | a locked term of the source missing (`terms.rs`) |
//! | `glossary_term` | 10 per term, at most 20 | another glossary term missing (`terms.rs`) |
//! | `name_drift` | 15 per name, at most 30 | a character's rendering missing (`terms.rs`) |
//! | `length_ratio` | 20, 35 beyond twice outside the band | length outside half to twice the expected (`length.rs`) |
//! | `reviewer_flag` | minor 5, major 15, critical 30, summed, at most 45 | the review pass flagged it |
//!
//! A refusal, an unchanged translation or one in the wrong language is not
//! a translation, so it is not also measured, nor checked for terms and
//! names (the later checks are skipped); a truncated one is not also
//! given `length_ratio`. Markup and reviewer flags always count.
//!
//! Status: no translation → `source_retained` (score 0); a refusal →
//! `refused`; any other hard signal ([`SignalCode::is_hard`]) → `error`;
//! any other signal, or a score under the caller's `review_below` →
//! `check`; otherwise `ok`.
//!
//! [`SignalCode::is_hard`]: dragoman_model::vocab::SignalCode::is_hard
//! [`check_placeholders`]: crate::translate::check_placeholders

mod language;
mod length;
mod refusal;
#[cfg(test)]
mod samples;
mod signals;
mod terms;
#[cfg(test)]
mod tests;
mod text;
mod types;

pub use signals::assess;
pub use types::{Assessment, Check, Flag, Sheet, SheetName, SheetTerm, Signal};
