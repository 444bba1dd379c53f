//! Keys and matching: how a term, a name or a passage is recognised again.
//!
//! * [`match_key`]: NFC, lowercase, whitespace runs collapsed, trimmed; the
//!   `source_key` of terms and the `name_key` of entities.
//! * [`source_key`]: the key of a passage's text for its owner's earlier
//!   analyses (language and normalized text, case kept).
//! * [`memory_key`]: the translation-memory key (language pair, normalized
//!   text, and the fingerprint of the terms in force it used).
//! * [`occurs`]: whether a term or name appears in a text, on word
//!   boundaries (plain substring for scripts written without spaces).

use sha2::{Digest, Sha256};
use unicode_normalization::UnicodeNormalization;

/// NFC with every whitespace run made one space, trimmed; case kept.
pub fn normalize_text(text: &str) -> String {
    let nfc: String = text.nfc().collect();
    nfc.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The key a term or name is matched by: [`normalize_text`], lowercased.
pub fn match_key(text: &str) -> String {
    normalize_text(text).to_lowercase()
}

fn sha256_hex(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// The key of a passage's text among its owner's analyses.
pub fn source_key(source_language: &str, text: &str) -> String {
    sha256_hex(&format!("{source_language}\n{}", normalize_text(text)))
}

/// The translation-memory key: equal keys may share a translation.
/// `normalized_source` is [`normalize_text`] of the passage; `fingerprint`
/// comes from [`fingerprint`].
pub fn memory_key(
    source_language: &str,
    target_language: &str,
    normalized_source: &str,
    fingerprint: &str,
) -> String {
    sha256_hex(&format!(
        "tm1\n{source_language}\n{target_language}\n{normalized_source}\n{fingerprint}"
    ))
}

/// One term as the fingerprint sees it.
pub struct FingerprintTerm<'a> {
    pub source_key: &'a str,
    pub translation: &'a str,
    pub locked: bool,
}

/// The terms a translation used: sorted by source key, each
/// `source_key=translation` (with `!` when locked), one per line.
pub fn fingerprint(terms: &mut [FingerprintTerm<'_>]) -> String {
    terms.sort_by(|a, b| a.source_key.cmp(b.source_key));
    terms
        .iter()
        .map(|t| {
            format!(
                "{}={}{}",
                t.source_key,
                t.translation,
                if t.locked { "!" } else { "" }
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Characters of scripts written without spaces between words: a term
/// written in them is found as a plain substring.
fn unspaced(c: char) -> bool {
    matches!(u32::from(c),
        0x0E00..=0x0EFF      // Thai, Lao
        | 0x1000..=0x109F    // Myanmar
        | 0x1100..=0x11FF    // Hangul Jamo
        | 0x1780..=0x17FF    // Khmer
        | 0x3040..=0x30FF    // Hiragana, Katakana
        | 0x3130..=0x318F    // Hangul compatibility Jamo
        | 0x31F0..=0x31FF    // Katakana extension
        | 0x3400..=0x4DBF    // CJK extension A
        | 0x4E00..=0x9FFF    // CJK unified
        | 0xAC00..=0xD7AF    // Hangul syllables
        | 0xF900..=0xFAFF    // CJK compatibility
        | 0xFF66..=0xFF9F    // Half-width Katakana
        | 0x20000..=0x2FA1F  // CJK extensions B and beyond
    )
}

fn word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Joins the texts of [`Haystack::of_all`].
const TEXT_SEPARATOR: &str = "\u{1F}";

/// A text prepared once for many [`occurs_in`] checks.
pub struct Haystack {
    text: String,
    case_sensitive: bool,
}

impl Haystack {
    pub fn new(text: &str, case_sensitive: bool) -> Self {
        Self {
            text: if case_sensitive {
                normalize_text(text)
            } else {
                match_key(text)
            },
            case_sensitive,
        }
    }

    /// Several texts searched as one: a word or phrase occurs when it
    /// occurs in one of them (the separator is neither a space nor a word
    /// character, so no phrase spans two texts and boundaries hold).
    pub fn of_all<'a>(texts: impl IntoIterator<Item = &'a str>, case_sensitive: bool) -> Self {
        let normal: Vec<String> = texts
            .into_iter()
            .map(|t| {
                if case_sensitive {
                    normalize_text(t)
                } else {
                    match_key(t)
                }
            })
            .collect();
        Self {
            text: normal.join(TEXT_SEPARATOR),
            case_sensitive,
        }
    }

    /// Whether a needle already in this haystack's form (a [`match_key`]
    /// for a case-insensitive haystack) appears as a word or phrase: the
    /// form of a term's `source_key`, without normalizing it again for
    /// every text.
    pub fn contains_normalized(&self, needle: &str) -> bool {
        occurs_in(&self.text, needle)
    }

    /// Whether `needle` appears in the text as a word or phrase.
    pub fn contains(&self, needle: &str) -> bool {
        let needle = if self.case_sensitive {
            normalize_text(needle)
        } else {
            match_key(needle)
        };
        occurs_in(&self.text, &needle)
    }
}

/// Whether `needle` appears in `text` (both already normalized the same
/// way) with no word character glued to either end; an end written in a
/// script without spaces needs no boundary.
fn occurs_in(text: &str, needle: &str) -> bool {
    let (Some(first), Some(last)) = (needle.chars().next(), needle.chars().next_back()) else {
        return false;
    };
    let check_start = !unspaced(first) && word_char(first);
    let check_end = !unspaced(last) && word_char(last);
    let mut from = 0;
    while let Some(found) = text.get(from..).and_then(|rest| rest.find(needle)) {
        let start = from + found;
        let end = start + needle.len();
        let before = text.get(..start).and_then(|s| s.chars().next_back());
        let after = text.get(end..).and_then(|s| s.chars().next());
        let start_ok = !check_start || !before.is_some_and(word_char);
        let end_ok = !check_end || !after.is_some_and(word_char);
        if start_ok && end_ok {
            return true;
        }
        // Next char boundary after `start`.
        from = start + first.len_utf8();
    }
    false
}

/// Whether `needle` occurs in `text`, case-insensitively or not.
#[cfg(test)]
pub fn occurs(text: &str, needle: &str, case_sensitive: bool) -> bool {
    Haystack::new(text, case_sensitive).contains(needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn match_keys_fold_case_spaces_and_composition() {
        assert_eq!(match_key("  Dark\t\n  LORD "), "dark lord");
        // "é" composed and decomposed give one key.
        assert_eq!(match_key("Café"), match_key("Cafe\u{301}"));
        assert_ne!(match_key("Dark Lord"), match_key("DarkLord"));
    }

    #[test]
    fn source_keys_keep_case_and_the_language() {
        assert_eq!(source_key("en", "A  b "), source_key("en", "A b"));
        assert_ne!(source_key("en", "A b"), source_key("en", "a b"));
        assert_ne!(source_key("en", "A b"), source_key("fr", "A b"));
        assert_eq!(source_key("en", "x").len(), 64);
    }

    #[test]
    fn fingerprints_sort_and_mark_locked_terms() {
        let mut terms = vec![
            FingerprintTerm {
                source_key: "b",
                translation: "B",
                locked: true,
            },
            FingerprintTerm {
                source_key: "a",
                translation: "A",
                locked: false,
            },
        ];
        assert_eq!(fingerprint(&mut terms), "a=A\nb=B!");
        assert_eq!(fingerprint(&mut []), "");
        let plain = memory_key("en", "fr", "Hello", "");
        assert_ne!(plain, memory_key("en", "fr", "Hello", "a=A"));
        assert_ne!(plain, memory_key("en", "de", "Hello", ""));
    }

    #[test]
    fn terms_occur_on_word_boundaries() {
        assert!(occurs("The Dark Lord came.", "dark lord", false));
        assert!(occurs("The dark\nlord came.", "Dark Lord", false));
        assert!(!occurs("The Darklord came.", "dark lord", false));
        assert!(!occurs("Mana flows.", "man", false));
        assert!(occurs("A man, a mana.", "mana", false));
        assert!(occurs("(Mana)", "mana", false));
        assert!(!occurs("Bob met Ann.", "bob", true));
        assert!(occurs("Bob met Ann.", "Bob", true));
    }

    #[test]
    fn unspaced_scripts_match_as_substrings() {
        assert!(occurs("魔王が来た。", "魔王", false));
        assert!(occurs("彼は勇者だ", "勇者", false));
        assert!(!occurs("", "x", false));
        assert!(!occurs("text", "", false));
    }
}
