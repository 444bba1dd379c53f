//! [`assess`]: runs every check on a passage, prices the signals found
//! (the table in the module doc of [`crate::quality`]) and decides the
//! passage's score and status.

use dragoman_model::vocab::{PassageStatus, Severity, SignalCode};

use super::length::{self, Deviation};
use super::text;
use super::{Assessment, Check, Flag, Sheet, Signal, language, refusal, terms};
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
    if length::truncated(source, translation, from, to) {
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
    {
        // Only when not truncated: a cut translation is short because of it.
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
    let missing = terms::missing_terms(&runs, translation, sheet);
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

/// The status the signals and the score give.
fn status_of(signals: &[Signal], score: i32, review_below: i32) -> PassageStatus {
    if signals.iter().any(|s| s.code == SignalCode::Refusal) {
        PassageStatus::Refused
    } else if signals.iter().any(|s| s.code.is_hard()) {
        PassageStatus::Error
    } else if !signals.is_empty() || score < review_below {
        PassageStatus::Check
    } else {
        PassageStatus::Ok
    }
}

/// Assesses one passage: its signals, its score (100 less the penalties,
/// from 0 to 100) and its status. A passage without a translation is
/// `untranslated`, scores 0 and keeps its source text
/// ([`PassageStatus::SourceRetained`]); otherwise a refusal makes it
/// `refused`, another hard signal `error`, any other signal or a score
/// under `review_below` `check`, and it is `ok` when nothing was found.
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
