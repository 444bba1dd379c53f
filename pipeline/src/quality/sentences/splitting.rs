//! Splitting a passage into sentences: Unicode's sentence boundaries
//! (UAX #29), less those after an abbreviation or an initial or before a
//! lower-case word, plus those after an ellipsis before a capital.

use super::soft_end;
use unicode_segmentation::UnicodeSegmentation;

/// Words that end in a full stop without ending a sentence (compared
/// lower-cased, without the stop): titles and Latin abbreviations of
/// English, French, Spanish and German.
const ABBREVIATIONS: &[&str] = &[
    "mr", "mrs", "ms", "messrs", "dr", "st", "prof", "jr", "sr", "sra", "srta", "dña", "ud", "uds",
    "mme", "mlle", "mm", "hr", "frl", "gen", "capt", "col", "lt", "sgt", "rev", "hon", "mt", "vs",
    "cf", "e.g", "i.e", "z.b", "d.h", "u.a", "bzw", "vgl", "ca", "nr", "p.ej", "lbs", "oz",
];

/// Whether `body` (a sentence candidate, trimmed) ends in an abbreviation
/// or an initial (`J.` of `J. R. Hartley`) rather than a sentence.
fn abbreviated(body: &str) -> bool {
    let Some(stem) = body.strip_suffix('.') else {
        return false;
    };
    let word = stem
        .rsplit(|c: char| c.is_whitespace() || matches!(c, '(' | '"' | '«' | '“' | '‘' | '\''))
        .next()
        .unwrap_or("");
    let lower = word.to_lowercase();
    if ABBREVIATIONS.contains(&lower.as_str()) {
        return true;
    }
    // A Roman numeral numbers a list item or a chapter (`II. The whale`),
    // which translations start with a capital or not.
    if word.chars().count() >= 2
        && word
            .chars()
            .all(|c| matches!(c, 'I' | 'V' | 'X' | 'L' | 'C'))
    {
        return true;
    }
    // A lone capital is an initial; "I." ends many an English sentence.
    let mut chars = word.chars();
    matches!((chars.next(), chars.next()), (Some(c), None) if c.is_uppercase() && c != 'I')
}

/// Whether `next` carries on the sentence: its first letter, past quotes,
/// dashes and spaces, is lower-case (`"Stop!" she cried.`,
/// `¿Vienes? —preguntó.`).
pub(super) fn continues(next: &str) -> bool {
    next.chars()
        .find(|c| c.is_alphanumeric())
        .is_some_and(char::is_lowercase)
}

/// Byte offsets inside `piece` after which a sentence ends though UAX #29
/// does not say so: an ellipsis character followed by a space and a
/// capital (`Wait… Then`), as three full stops are.
fn ellipsis_breaks(piece: &str) -> Vec<usize> {
    let mut out = Vec::new();
    for (i, _) in piece.match_indices('…') {
        let after = &piece[i + '…'.len_utf8()..];
        let rest = after.trim_start();
        if rest.len() < after.len() && rest.chars().next().is_some_and(char::is_uppercase) {
            out.push(i + '…'.len_utf8() + (after.len() - rest.len()));
        }
    }
    out
}

/// The sentences of `text`, trimmed, in order: the sentence boundaries of
/// Unicode's UAX #29 (which keep decimals, `e.g. this` and closing quotes
/// together and end at `。`, `؟`, `।` and line breaks), less those after
/// an abbreviation or an initial, or before a lower-case word.
pub(in crate::quality) fn split(text: &str) -> Vec<&str> {
    split_at(text, false)
}

/// [`split`], and with `soft` also at a question or exclamation mark or
/// an ellipsis before a lower-case word (`"Is it?" | said he`): the
/// pieces the alignment works on, as a translation may well put a capital
/// there (`"¿Es?" Dijo él`), or leave a question out of a sentence that
/// goes on.
pub(in crate::quality) fn split_at(text: &str, soft: bool) -> Vec<&str> {
    // Candidate pieces as byte ranges, ellipsis breaks included.
    let mut pieces: Vec<(usize, usize)> = Vec::new();
    for (start, piece) in text.split_sentence_bound_indices() {
        let mut from = start;
        for cut in ellipsis_breaks(piece) {
            pieces.push((from, start + cut));
            from = start + cut;
        }
        pieces.push((from, start + piece.len()));
    }
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    let mut open: Option<usize> = None;
    for (k, &(start, end)) in pieces.iter().enumerate() {
        let begin = *open.get_or_insert(start);
        let piece = &text[start..end];
        let body = text[begin..end].trim();
        let line_ends = piece.trim_end_matches([' ', '\t']).ends_with(['\n', '\r']);
        let carry_on = match pieces.get(k + 1) {
            None => false,
            Some(_) if line_ends => false,
            Some(&(ns, ne)) => {
                !body.chars().any(char::is_alphanumeric)
                    || abbreviated(body)
                    || (continues(&text[ns..ne]) && !(soft && soft_end(body)))
            }
        };
        if !carry_on {
            ranges.push((begin, end));
            open = None;
        }
    }
    // A piece without a letter or digit (a stray quote, a lone ellipsis)
    // belongs to the sentence before it.
    let mut merged: Vec<(usize, usize)> = Vec::new();
    for (start, end) in ranges {
        let alone = !text[start..end].chars().any(char::is_alphanumeric);
        match merged.last_mut() {
            Some(last) if alone => last.1 = end,
            _ => merged.push((start, end)),
        }
    }
    merged
        .into_iter()
        .map(|(s, e)| text[s..e].trim())
        .filter(|s| !s.is_empty())
        .collect()
}
