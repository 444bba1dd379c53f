//! Text helpers the checks share: reading around placeholders, counting
//! letters and words, matching whole words, language subtags and clipping
//! messages.

use dragoman_book::placeholder::{self, Token};

/// The longest a signal's message gets, in characters.
pub(super) const MESSAGE_CHARS: usize = 200;

/// The text runs of `text` between its placeholders. Text whose
/// placeholders cannot be read is one run, as it is: a check then sees the
/// brackets as punctuation, which no check relies on.
pub(super) fn segments(text: &str) -> Vec<&str> {
    match placeholder::tokenize(text) {
        Ok(tokens) => tokens
            .into_iter()
            .filter_map(|t| match t {
                Token::Text(s) => Some(s),
                _ => None,
            })
            .collect(),
        Err(_) => vec![text],
    }
}

/// `text` without its placeholders, the runs joined as they stand (so
/// `⟦1⟧cœur⟦/1⟧ de` reads `cœur de`).
pub(super) fn plain(text: &str) -> String {
    segments(text).concat()
}

/// Characters of `text`, trimmed.
pub(super) fn chars(text: &str) -> usize {
    text.trim().chars().count()
}

/// How many letters `text` has.
pub(super) fn letters(text: &str) -> usize {
    text.chars().filter(|c| c.is_alphabetic()).count()
}

/// How many whitespace-separated words of `text` hold a letter.
pub(super) fn words_with_letters(text: &str) -> usize {
    text.split_whitespace()
        .filter(|w| w.chars().any(char::is_alphabetic))
        .count()
}

/// `text` trimmed, its whitespace runs collapsed to one space, lower-cased.
pub(super) fn normalized(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// The primary subtag of a BCP 47 tag, lower-cased (`fr-CA` → `fr`).
pub(super) fn primary(tag: &str) -> String {
    tag.trim()
        .split(['-', '_'])
        .next()
        .unwrap_or("")
        .to_ascii_lowercase()
}

/// Scripts written without spaces between words: there a name or a term
/// is not set off by word boundaries, so none is required.
pub(super) fn unspaced(c: char) -> bool {
    matches!(c,
        '\u{0E00}'..='\u{0EFF}'      // Thai, Lao
        | '\u{1000}'..='\u{109F}'    // Myanmar
        | '\u{1780}'..='\u{17FF}'    // Khmer
        | '\u{3040}'..='\u{30FF}'    // Hiragana, Katakana
        | '\u{3400}'..='\u{4DBF}'    // CJK extension A
        | '\u{4E00}'..='\u{9FFF}'    // CJK unified ideographs
        | '\u{F900}'..='\u{FAFF}'    // CJK compatibility ideographs
        | '\u{FF66}'..='\u{FF9F}'    // half-width Katakana
        | '\u{20000}'..='\u{2FFFF}') // CJK extensions B and later
}

/// A character that continues a word in a spaced script.
fn word_char(c: char) -> bool {
    c.is_alphanumeric() && !unspaced(c)
}

/// False when a word character of the match touches a word character
/// outside it: the match would be part of a longer word.
fn boundary(outside: Option<char>, edge: Option<char>) -> bool {
    !(outside.is_some_and(word_char) && edge.is_some_and(word_char))
}

/// How `needle` must sit in the text to count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Fit {
    /// A word or words of their own.
    Whole,
    /// Starting a word, perhaps followed by more letters (an inflected
    /// name: `Alicias`, `Алисы`).
    Start,
}

/// The byte offset of the first occurrence of `needle` in `haystack` as
/// `fit` asks, compared as they are. An empty needle never occurs.
pub(super) fn find_word(haystack: &str, needle: &str, fit: Fit) -> Option<usize> {
    if needle.is_empty() {
        return None;
    }
    haystack
        .match_indices(needle)
        .find(|(i, m)| {
            let before = haystack[..*i].chars().next_back();
            let after = haystack[i + m.len()..].chars().next();
            boundary(before, needle.chars().next())
                && (fit == Fit::Start || boundary(after, needle.chars().next_back()))
        })
        .map(|(i, _)| i)
}

/// Whether `needle` occurs in `haystack` as `fit` asks.
pub(super) fn has_word(haystack: &str, needle: &str, fit: Fit) -> bool {
    find_word(haystack, needle, fit).is_some()
}

/// `text` cut to [`MESSAGE_CHARS`] characters, with `…` when cut.
pub(super) fn clip(text: &str) -> String {
    if text.chars().count() <= MESSAGE_CHARS {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(MESSAGE_CHARS - 1).collect();
    out.push('…');
    out
}

/// A list of found items for a message: `"a", "b"` and how many more.
pub(super) fn listing(items: &[String]) -> String {
    const SHOWN: usize = 3;
    let mut out = items
        .iter()
        .take(SHOWN)
        .map(|s| format!("\"{s}\""))
        .collect::<Vec<_>>()
        .join(", ");
    if items.len() > SHOWN {
        out.push_str(&format!(" and {} more", items.len() - SHOWN));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_read_around() {
        assert_eq!(segments("a ⟦1⟧b⟦/1⟧ c⟦2/⟧"), vec!["a ", "b", " c"]);
        assert_eq!(plain("⟦1⟧cœur⟦/1⟧ de"), "cœur de");
        assert_eq!(plain("⟦1 broken"), "⟦1 broken");
    }

    #[test]
    fn counts_and_forms() {
        assert_eq!(letters("ab 12 ç!"), 3);
        assert_eq!(words_with_letters("*** 12. Alice went"), 2);
        assert_eq!(normalized("  Hello\n\tWorld  "), "hello world");
        assert_eq!(primary("fr-CA"), "fr");
        assert_eq!(primary("zh_Hans"), "zh");
        assert_eq!(primary(""), "");
    }

    #[test]
    fn whole_words_and_word_starts() {
        let cases = [
            ("the warp core hums", "warp core", Fit::Whole, true),
            ("the warp cores hum", "warp core", Fit::Whole, false),
            ("l'Alicia", "Alicia", Fit::Whole, true),
            ("Alicias Buch", "Alicia", Fit::Whole, false),
            ("Alicias Buch", "Alicia", Fit::Start, true),
            ("MAlicia", "Alicia", Fit::Start, false),
            ("爱丽丝说", "爱丽丝", Fit::Whole, true),
            ("anything", "", Fit::Whole, false),
        ];
        for (hay, needle, fit, want) in cases {
            assert_eq!(has_word(hay, needle, fit), want, "{needle:?} in {hay:?}");
        }
        assert!(has_word(
            &"Le CŒUR de distorsion".to_lowercase(),
            "cœur de distorsion",
            Fit::Whole
        ));
        assert!(!has_word("ALICE", "Alice", Fit::Start));
    }

    #[test]
    fn messages_are_clipped() {
        let long = "x".repeat(500);
        assert_eq!(clip(&long).chars().count(), MESSAGE_CHARS);
        assert_eq!(clip("short"), "short");
        let items: Vec<String> = ["a", "b", "c", "d", "e"].map(String::from).to_vec();
        assert_eq!(listing(&items), "\"a\", \"b\", \"c\" and 2 more");
    }
}
