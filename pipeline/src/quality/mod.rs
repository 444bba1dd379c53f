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
//! | `truncated` | 50 | the translation stops before the source does: mid-sentence where the source ends one, short of its expected length or its last sentence (`length.rs`) |
//! | `locked_term` | 25 per term, at most 50 | a locked term of the source missing: neither its rendering nor, as often as the source has the term, its plural or inflected forms (`terms.rs`) |
//! | `glossary_term` | 10 per term, at most 20 | another glossary term missing (`terms.rs`) |
//! | `name_drift` | 15 per name, at most 30 | a character's rendering missing, or misspelt beside right mentions (`terms.rs`) |
//! | `partial_translation` | 30 per sentence, at most 50 | a sentence still in the source language (`partial.rs`) |
//! | `omission` | 20 per sentence, at most 40 | a source sentence of two words or more without counterpart (`sentences/`) |
//! | `addition` | 15 per sentence, at most 30 | a sentence of two words or more the source does not have (`sentences/`) |
//! | `sentence_order` | 20 per pair, at most 40 | two sentences in each other's place: they match crossed far better than in order (`sentences/`), or, nothing else found, two neighbours' lengths, names or questions fit crossed (`order.rs`) |
//! | `number_mismatch` | 15 per number, at most 30 | a number, date or time missing or changed, or a number in words changed to another (`numbers/`) |
//! | `url_mismatch` | 15 per link, at most 30 | a URL or e-mail address missing or altered (`symbols.rs`) |
//! | `length_ratio` | 20, 35 beyond twice outside the band | length outside half to twice the expected, no sentence omitted or added (`length.rs`) |
//! | `punctuation` | 5 per finding, at most 10 | quotes or brackets unbalanced, ellipsis or final punctuation lost (`symbols.rs`) |
//! | `repeated_word` | 5 per word, at most 10 | a word twice in a row the source does not repeat (`symbols.rs`) |
//! | `whitespace` | 2 | doubled spaces, a space before punctuation the target does not space (`symbols.rs`) |
//! | `reviewer_flag` | minor 5, major 15, critical 30, summed, at most 45 | the review pass flagged it |
//!
//! A refusal, an unchanged translation or one in the wrong language is not
//! a translation, so it is not also measured, nor checked for terms and
//! names (the later checks are skipped); a truncated one is not also
//! given `length_ratio`, nor checked for omitted sentences. Markup and
//! reviewer flags always count.
//!
//! Severity ([`SignalCode::severity`]): the hard signals are critical;
//! faults of meaning (terms, names, numbers, sentences omitted, added or
//! left untranslated, links) major; form (punctuation, repeated words,
//! whitespace) minor; `length_ratio` and `reviewer_flag` major from 15
//! points. The autopilot takes up every passage with a major or critical
//! signal, whatever its score.
//!
//! Status: no translation → `source_retained` (score 0); a refusal →
//! `refused`; any other hard signal ([`SignalCode::is_hard`]) → `error`;
//! a major signal, or a score under the caller's `review_below` →
//! `check`; otherwise (nothing found, or only minor signals) `ok`.
//!
//! [`SignalCode::is_hard`]: dragoman_model::vocab::SignalCode::is_hard
//! [`SignalCode::severity`]: dragoman_model::vocab::SignalCode::severity
//! [`check_placeholders`]: crate::translate::check_placeholders

mod language;
mod length;
mod numbers;
mod order;
mod partial;
#[cfg(test)]
mod properties;
mod refusal;
#[cfg(test)]
mod samples;
mod sentences;
mod signals;
mod symbols;
mod terms;
#[cfg(test)]
mod tests;
mod text;
mod types;

pub use signals::assess;
pub use types::{Assessment, Check, Flag, Sheet, SheetName, SheetTerm, Signal};
