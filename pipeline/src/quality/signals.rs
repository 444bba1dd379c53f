//! [`assess`]: runs every check on a passage, prices the signals found
//! (the table in the module doc of [`crate::quality`]) and decides the
//! passage's score and status.

use dragoman_model::vocab::{PassageStatus, Severity, SignalCode};

use super::length::{self, Deviation};
use super::text;
use super::{
    Assessment, Check, Flag, Sheet, Signal, language, numbers, order, partial, refusal, sentences,
    symbols, terms,
};
use crate::translate::check_placeholders;

/// Penalties, in points off 100.
pub(super) mod penalty {
    pub const UNTRANSLATED: u32 = 100;
    pub const REFUSAL: u32 = 80;
    pub const UNCHANGED: u32 = 70;
    pub const WRONG_LANGUAGE: u32 = 70;
    pub const MARKUP_MISMATCH: u32 = 60;
    pub const TRUNCATED: u32 = 50;
    pub const LOCKED_TERM: u32 = 25;
    pub const LOCKED_TERM_MAX: u32 = 50;
    pub const GLOSSARY_TERM: u32 = 10;
    pub const GLOSSARY_TERM_MAX: u32 = 20;
    pub const NAME_DRIFT: u32 = 15;
    pub const NAME_DRIFT_MAX: u32 = 30;
    pub const LENGTH_RATIO: u32 = 20;
    pub const LENGTH_RATIO_FAR: u32 = 35;
    pub const FLAG_MINOR: u32 = 5;
    pub const FLAG_MAJOR: u32 = 15;
    pub const FLAG_CRITICAL: u32 = 30;
    pub const FLAGS_MAX: u32 = 45;
    pub const NUMBER: u32 = 15;
    pub const NUMBER_MAX: u32 = 30;
    pub const OMISSION: u32 = 20;
    pub const OMISSION_MAX: u32 = 40;
    pub const ADDITION: u32 = 15;
    pub const ADDITION_MAX: u32 = 30;
    pub const PARTIAL: u32 = 30;
    pub const PARTIAL_MAX: u32 = 50;
    pub const ORDER: u32 = 20;
    pub const ORDER_MAX: u32 = 40;
    pub const URL: u32 = 15;
    pub const URL_MAX: u32 = 30;
    pub const PUNCTUATION: u32 = 5;
    pub const PUNCTUATION_MAX: u32 = 10;
    pub const REPEATED_WORD: u32 = 5;
    pub const REPEATED_WORD_MAX: u32 = 10;
    pub const WHITESPACE: u32 = 2;
}

/// The fewest words with letters a source needs for an identical
/// translation to count as `unchanged`: a name, `***` or `12.` may well
/// stay as they are.
const UNCHANGED_MIN_WORDS: usize = 3;

fn signal(code: SignalCode, count: usize, penalty: u32, message: &str) -> Signal {
    Signal {
        code,
        count: u32::try_from(count).unwrap_or(u32::MAX),
        penalty,
        message: text::clip(message),
    }
}

/// `count` findings at `each` points, at most `max`.
fn capped(count: usize, each: u32, max: u32) -> u32 {
    u32::try_from(count)
        .unwrap_or(u32::MAX)
        .saturating_mul(each)
        .min(max)
}

/// Whether the translation is the source itself (see
/// [`UNCHANGED_MIN_WORDS`]), between different languages.
fn unchanged(check: &Check<'_>, source: &str, translation: &str) -> bool {
    text::primary(check.source_language) != text::primary(check.target_language)
        && text::words_with_letters(source) >= UNCHANGED_MIN_WORDS
        && text::normalized(source) == text::normalized(translation)
}

/// A signal for `found` items at `each` points (at most `max`), its
/// message `what` followed by the items; nothing when none was found.
fn listed(
    code: SignalCode,
    found: &[String],
    each: u32,
    max: u32,
    what: &str,
    out: &mut Vec<Signal>,
) {
    if !found.is_empty() {
        out.push(signal(
            code,
            found.len(),
            capped(found.len(), each, max),
            &format!("{what}: {}", text::listing(found)),
        ));
    }
}

/// The fidelity checks of a translation: numbers, sentences omitted,
/// added or left in the source language, links, punctuation and
/// whitespace. Returns whether a sentence was found omitted or added,
/// which explains a length outside the band.
fn fidelity_signals(
    check: &Check<'_>,
    source: &str,
    translation: &str,
    truncated: bool,
    out: &mut Vec<Signal>,
) -> bool {
    let (from, to) = (check.source_language, check.target_language);
    listed(
        SignalCode::NumberMismatch,
        &numbers::mismatches(source, translation, from, to),
        penalty::NUMBER,
        penalty::NUMBER_MAX,
        "numbers of the source missing or changed",
        out,
    );
    let partial = partial::untranslated_sentences(source, translation, from, to);
    listed(
        SignalCode::PartialTranslation,
        &partial,
        penalty::PARTIAL,
        penalty::PARTIAL_MAX,
        "sentences left in the source language",
        out,
    );
    let mut aligned = false;
    if !truncated {
        // A cut translation lacks its last sentences because of the cut.
        let alignment = sentences::align(source, translation, from, to);
        listed(
            SignalCode::Omission,
            &alignment.omitted,
            penalty::OMISSION,
            penalty::OMISSION_MAX,
            "source sentences missing from the translation",
            out,
        );
        // A sentence left in the source language is not also an addition.
        let added: Vec<String> = alignment
            .added
            .into_iter()
            .filter(|a| !partial.contains(a))
            .collect();
        listed(
            SignalCode::Addition,
            &added,
            penalty::ADDITION,
            penalty::ADDITION_MAX,
            "sentences the source does not have",
            out,
        );
        aligned = !alignment.omitted.is_empty() || !added.is_empty();
        let moved = if alignment.moved.is_empty() && !aligned {
            order::swapped(source, translation, from, to)
        } else {
            alignment.moved
        };
        listed(
            SignalCode::SentenceOrder,
            &moved,
            penalty::ORDER,
            penalty::ORDER_MAX,
            "sentences in each other's place",
            out,
        );
    }
    let found = symbols::check(source, translation, from, to);
    listed(
        SignalCode::UrlMismatch,
        &found.urls,
        penalty::URL,
        penalty::URL_MAX,
        "URLs or e-mail addresses missing or altered",
        out,
    );
    // A cut translation loses its final mark, closing quotes and
    // ellipses because of the cut.
    let punctuation = if truncated {
        &[][..]
    } else {
        &found.punctuation
    };
    listed(
        SignalCode::Punctuation,
        punctuation,
        penalty::PUNCTUATION,
        penalty::PUNCTUATION_MAX,
        "punctuation",
        out,
    );
    listed(
        SignalCode::RepeatedWord,
        &found.repeated,
        penalty::REPEATED_WORD,
        penalty::REPEATED_WORD_MAX,
        "words repeated",
        out,
    );
    listed(
        SignalCode::Whitespace,
        &found.whitespace,
        penalty::WHITESPACE,
        penalty::WHITESPACE,
        "whitespace",
        out,
    );
    aligned
}

fn flag_penalty(flag: &Flag) -> u32 {
    match flag.severity {
        Severity::Minor => penalty::FLAG_MINOR,
        Severity::Major => penalty::FLAG_MAJOR,
        Severity::Critical => penalty::FLAG_CRITICAL,
    }
}

fn reviewer_signal(flags: &[Flag]) -> Option<Signal> {
    let first = flags.first()?;
    let total = flags
        .iter()
        .map(flag_penalty)
        .fold(0u32, u32::saturating_add)
        .min(penalty::FLAGS_MAX);
    let mut message = format!(
        "reviewer ({}): {}: {}",
        first.severity, first.code, first.message
    );
    if flags.len() > 1 {
        message.push_str(&format!(" (and {} more)", flags.len() - 1));
    }
    Some(signal(
        SignalCode::ReviewerFlag,
        flags.len(),
        total,
        &message,
    ))
}

/// The content checks of a translation that is one (no refusal, not the
/// source, in the target language): length, truncation, terms, names.
fn content_signals(
    check: &Check<'_>,
    sheet: &Sheet,
    source: &str,
    translation: &str,
    out: &mut Vec<Signal>,
) {
    let (from, to) = (check.source_language, check.target_language);
    let truncated = length::truncated(source, translation, from, to);
    let aligned = fidelity_signals(check, source, translation, truncated, out);
    if truncated {
        let tail: String = {
            let rev: Vec<char> = translation.trim().chars().rev().take(40).collect();
            rev.into_iter().rev().collect()
        };
        out.push(signal(
            SignalCode::Truncated,
            1,
            penalty::TRUNCATED,
            &format!("the translation stops before the source does: \"…{tail}\""),
        ));
    } else if let Some((deviation, ratio, expected)) = length::check(source, translation, from, to)
        && !aligned
    {
        // Only when not truncated, nor a sentence found omitted or added:
        // those say why the length is off.
        let cost = match deviation {
            Deviation::Outside => penalty::LENGTH_RATIO,
            Deviation::Far => penalty::LENGTH_RATIO_FAR,
        };
        out.push(signal(
            SignalCode::LengthRatio,
            1,
            cost,
            &format!(
                "the translation is {ratio:.2} times the source's length where about {expected:.2} is expected"
            ),
        ));
    }

    let runs = text::segments(check.source);
    let missing = terms::missing_terms(
        &runs,
        translation,
        sheet,
        check.source_language,
        check.target_language,
    );
    if !missing.locked.is_empty() {
        out.push(signal(
            SignalCode::LockedTerm,
            missing.locked.len(),
            capped(
                missing.locked.len(),
                penalty::LOCKED_TERM,
                penalty::LOCKED_TERM_MAX,
            ),
            &format!(
                "locked terms not rendered as the glossary says: {}",
                text::listing(&missing.locked)
            ),
        ));
    }
    if !missing.glossary.is_empty() {
        out.push(signal(
            SignalCode::GlossaryTerm,
            missing.glossary.len(),
            capped(
                missing.glossary.len(),
                penalty::GLOSSARY_TERM,
                penalty::GLOSSARY_TERM_MAX,
            ),
            &format!(
                "glossary terms not rendered as the glossary says: {}",
                text::listing(&missing.glossary)
            ),
        ));
    }
    let drifted = terms::drifted_names(&runs, translation, sheet);
    if !drifted.is_empty() {
        let listed: Vec<String> = drifted
            .iter()
            .map(|(name, rendering)| format!("{name} → {rendering}"))
            .collect();
        out.push(signal(
            SignalCode::NameDrift,
            drifted.len(),
            capped(drifted.len(), penalty::NAME_DRIFT, penalty::NAME_DRIFT_MAX),
            &format!(
                "names not rendered as the memory says: {}",
                text::listing(&listed)
            ),
        ));
    }
}

/// The signals of a passage with a translation.
fn translated_signals(check: &Check<'_>, translation: &str, sheet: &Sheet) -> Vec<Signal> {
    let mut out = Vec::new();
    let source = text::plain(check.source);
    let plain = text::plain(translation);
    if plain.trim().is_empty() && !source.trim().is_empty() {
        out.push(signal(
            SignalCode::Untranslated,
            1,
            penalty::UNTRANSLATED,
            "the translation is empty",
        ));
        return out;
    }
    if let Err(e) = check_placeholders(check.source, translation) {
        out.push(signal(
            SignalCode::MarkupMismatch,
            1,
            penalty::MARKUP_MISMATCH,
            &format!("the placeholders differ from the source's: {e}"),
        ));
    }
    // A refusal, the source sent back or another language is not a
    // translation: its length, terms and names say nothing more.
    if let Some(message) = refusal::check(&source, &plain) {
        out.push(signal(SignalCode::Refusal, 1, penalty::REFUSAL, &message));
    } else if unchanged(check, &source, &plain) {
        out.push(signal(
            SignalCode::Unchanged,
            1,
            penalty::UNCHANGED,
            "the translation is the source text unchanged",
        ));
    } else if let Some(message) = language::check(
        &source,
        &plain,
        check.source_language,
        check.target_language,
    ) {
        out.push(signal(
            SignalCode::WrongLanguage,
            1,
            penalty::WRONG_LANGUAGE,
            &message,
        ));
    } else {
        content_signals(check, sheet, &source, &plain, &mut out);
    }
    out
}

/// The status the signals and the score give: a minor signal alone (a
/// stray space, a lost final stop) costs points but asks nobody to look.
fn status_of(signals: &[Signal], score: i32, review_below: i32) -> PassageStatus {
    if signals.iter().any(|s| s.code == SignalCode::Refusal) {
        PassageStatus::Refused
    } else if signals.iter().any(|s| s.code.is_hard()) {
        PassageStatus::Error
    } else if signals.iter().any(Signal::serious) || score < review_below {
        PassageStatus::Check
    } else {
        PassageStatus::Ok
    }
}

/// Assesses one passage: its signals, its score (100 less the penalties,
/// from 0 to 100) and its status. A passage without a translation is
/// `untranslated`, scores 0 and keeps its source text
/// ([`PassageStatus::SourceRetained`]); otherwise a refusal makes it
/// `refused`, another hard signal `error`, a major signal or a score
/// under `review_below` `check`, and it is `ok` otherwise.
pub fn assess(check: &Check<'_>, sheet: &Sheet, review_below: i32) -> Assessment {
    let Some(translation) = check.translation else {
        return Assessment {
            signals: vec![signal(
                SignalCode::Untranslated,
                1,
                penalty::UNTRANSLATED,
                "the passage has no translation",
            )],
            score: 0,
            status: PassageStatus::SourceRetained,
        };
    };
    let mut signals = translated_signals(check, translation, sheet);
    signals.extend(reviewer_signal(check.flags));
    let penalties = signals.iter().map(|s| i64::from(s.penalty)).sum::<i64>();
    let score = i32::try_from((100 - penalties).clamp(0, 100)).unwrap_or(0);
    let status = status_of(&signals, score, review_below);
    Assessment {
        signals,
        score,
        status,
    }
}
