//! Plain-text helpers: whitespace, word counts, normalized text and its hash.
//!
//! Word counting feeds the licence quota, so it must be stable across releases:
//! a word is a maximal run of letters, digits, marks and inner apostrophes or
//! hyphens; in scripts written without spaces (Han, Hiragana, Katakana) every
//! character counts as one word, which is how translators quote such texts.

use sha2::{Digest, Sha256};
use unicode_normalization::UnicodeNormalization;

use crate::model::Passage;

/// True for the XML whitespace characters (space, tab, CR, LF).
pub fn is_xml_ws(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

/// Appends `s` to `out` with every run of XML whitespace turned into one space.
/// `pending_space` carries a run across calls so that text split by markup
/// collapses the same way as text in one piece.
pub fn push_collapsed(out: &mut String, s: &str) {
    for c in s.chars() {
        if is_xml_ws(c) {
            if !out.ends_with(' ') {
                out.push(' ');
            }
        } else {
            out.push(c);
        }
    }
}

/// Collapses whitespace runs to single spaces and trims the ends.
pub fn collapse_ws(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    push_collapsed(&mut out, s);
    out.trim_matches(' ').to_string()
}

fn is_unspaced_script(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF // Hiragana, Katakana
        | 0x3400..=0x4DBF // CJK ext A
        | 0x4E00..=0x9FFF // CJK unified
        | 0xF900..=0xFAFF
        | 0x20000..=0x2FA1F)
}

/// Counts words in plain text (see the module documentation for the rule).
pub fn count_words(s: &str) -> u64 {
    let mut words = 0u64;
    let mut in_word = false;
    let mut prev_joiner = false;
    for c in s.chars() {
        if is_unspaced_script(c) {
            words += 1;
            in_word = false;
            prev_joiner = false;
        } else if c.is_alphanumeric() {
            if !in_word {
                words += 1;
                in_word = true;
            }
            prev_joiner = false;
        } else if in_word && !prev_joiner && matches!(c, '\'' | '\u{2019}' | '-' | '\u{2010}') {
            // An apostrophe or hyphen inside a word joins it ("don't", "well-known").
            prev_joiner = true;
        } else if in_word && is_combining(c) {
            prev_joiner = false;
        } else {
            in_word = false;
            prev_joiner = false;
        }
    }
    words
}

fn is_combining(c: char) -> bool {
    matches!(c as u32, 0x0300..=0x036F | 0x0591..=0x05C7 | 0x064B..=0x065F | 0x0670 | 0x0900..=0x0903 | 0x093A..=0x094F)
}

/// The normalized source text of a chapter: each passage's plain text with
/// whitespace collapsed, NFC, joined by one blank line, LF line ends.
pub fn normalized_text<'a>(passages: impl IntoIterator<Item = &'a Passage>) -> String {
    let mut out = String::new();
    for p in passages {
        let plain = p.plain_text();
        let lines: Vec<String> = plain
            .split('\n')
            .map(collapse_ws)
            .filter(|l| !l.is_empty())
            .collect();
        if lines.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str(&lines.join("\n"));
    }
    out.nfc().collect()
}

/// Lowercase hex SHA-256 of bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut s = String::with_capacity(64);
    for b in digest {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// Words and hash of a chapter's passages.
pub fn chapter_stats(passages: &[Passage]) -> (u64, String) {
    let text = normalized_text(passages);
    (count_words(&text), sha256_hex(text.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_counted_per_script() {
        assert_eq!(count_words("Don't stop — the well-known end."), 5);
        assert_eq!(count_words("L'été arrive, 12 fois."), 4);
        assert_eq!(count_words("草枕を読む"), 5);
        assert_eq!(count_words("Привет, мир"), 2);
        assert_eq!(count_words(""), 0);
    }

    #[test]
    fn whitespace_collapses() {
        assert_eq!(collapse_ws("  a \n\t b  "), "a b");
        assert_eq!(collapse_ws("a\u{a0}b"), "a\u{a0}b");
    }

    #[test]
    fn hash_is_sha256() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
