//! The checks of punctuation and symbols: URLs and e-mail addresses kept
//! as they are (`url_mismatch`), quotes and brackets balanced, ellipses
//! and final punctuation kept (`punctuation`), words repeated
//! (`repeated_word`), stray whitespace (`whitespace`).
//!
//! They judge the translation against its source, so that what the
//! source does itself (a quotation left open for the next paragraph,
//! double spaces after full stops, "no no") is not held against it, and
//! they accept the target's conventions: French spaces before `; : ! ?`
//! and inside `« »`, Spanish `¿ ¡`, full-width CJK marks, a closing
//! quote after the final mark.

use std::sync::LazyLock;

use regex::Regex;

use super::text;

/// What the symbol checks found, each item described for a message.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Symbols {
    pub urls: Vec<String>,
    pub punctuation: Vec<String>,
    pub repeated: Vec<String>,
    pub whitespace: Vec<String>,
}

static URL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)\b(?:https?://|www\.)[^\s<>"«»“”‘’「」]+"#).unwrap_or_else(|_| unreachable!())
});

static EMAIL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
        .unwrap_or_else(|_| unreachable!())
});

/// A URL without the sentence punctuation after it; a closing
/// parenthesis stays when the URL opened it (`…/Foo_(bar)`).
fn trim_url(url: &str) -> &str {
    let mut url = url;
    while let Some(last) = url.chars().next_back() {
        let strip = match last {
            ')' => url.matches('(').count() < url.matches(')').count(),
            ']' => url.matches('[').count() < url.matches(']').count(),
            '.' | ',' | ';' | ':' | '!' | '?' | '…' | '\'' | '}' | '>' | '*' => true,
            _ => false,
        };
        if !strip {
            break;
        }
        url = &url[..url.len() - last.len_utf8()];
    }
    url
}

/// The URLs and e-mail addresses of `text`, in order.
fn links(text: &str) -> Vec<&str> {
    let urls: Vec<(usize, usize, &str)> = URL
        .find_iter(text)
        .map(|m| (m.start(), m.end(), trim_url(m.as_str())))
        .collect();
    let mut out: Vec<(usize, &str)> = urls.iter().map(|&(s, _, u)| (s, u)).collect();
    for m in EMAIL.find_iter(text) {
        // An address inside a URL (`http://user@host`) is the URL's.
        if !urls.iter().any(|&(s, e, _)| m.start() < e && s < m.end()) {
            out.push((m.start(), m.as_str()));
        }
    }
    out.sort_by_key(|&(s, _)| s);
    out.into_iter()
        .map(|(_, l)| l)
        .filter(|l| !l.is_empty())
        .collect()
}

/// The source's links the translation does not have as they are.
fn missing_links(source: &str, translation: &str) -> Vec<String> {
    let mut kept = links(translation);
    let mut out = Vec::new();
    for link in links(source) {
        match kept.iter().position(|k| *k == link) {
            Some(i) => {
                kept.remove(i);
            }
            None => out.push(link.to_owned()),
        }
    }
    out
}

/// Marks that come in pairs. A family with the same characters for
/// both ends is balanced when it has an even count of them, another
/// when it opens as often as it closes.
struct Family {
    name: &'static str,
    open: &'static [char],
    close: &'static [char],
}

impl Family {
    fn balanced(&self, text: &str) -> bool {
        let count = |set: &[char]| text.chars().filter(|c| set.contains(c)).count();
        if self.open == self.close {
            count(self.open) % 2 == 0
        } else {
            count(self.open) == count(self.close)
        }
    }
}

/// Quotation marks. English `“ ”`, German `„ “` and Swedish `” ”` are
/// one family counted even; single curly quotes are left out, `’`
/// being mostly an apostrophe.
const QUOTES: [Family; 6] = [
    Family {
        name: "«»",
        open: &['«'],
        close: &['»'],
    },
    Family {
        name: "‹›",
        open: &['‹'],
        close: &['›'],
    },
    Family {
        name: "“”",
        open: &['“', '”', '„', '‟'],
        close: &['“', '”', '„', '‟'],
    },
    Family {
        name: "\"\"",
        open: &['"', '＂'],
        close: &['"', '＂'],
    },
    Family {
        name: "「」",
        open: &['「'],
        close: &['」'],
    },
    Family {
        name: "『』",
        open: &['『'],
        close: &['』'],
    },
];

/// Brackets, their full-width forms with them.
const BRACKETS: [Family; 7] = [
    Family {
        name: "()",
        open: &['(', '（'],
        close: &[')', '）'],
    },
    Family {
        name: "[]",
        open: &['[', '［'],
        close: &[']', '］'],
    },
    Family {
        name: "{}",
        open: &['{', '｛'],
        close: &['}', '｝'],
    },
    Family {
        name: "【】",
        open: &['【'],
        close: &['】'],
    },
    Family {
        name: "〔〕",
        open: &['〔'],
        close: &['〕'],
    },
    Family {
        name: "《》",
        open: &['《'],
        close: &['》'],
    },
    Family {
        name: "〈〉",
        open: &['〈'],
        close: &['〉'],
    },
];

/// Families balanced in the source and not in the translation. The
/// families of a group are judged together: a source with a quotation
/// left open (continued in the next paragraph) may have it rendered
/// in another family of quotes.
fn unbalanced(families: &[Family], source: &str, translation: &str, out: &mut Vec<String>) {
    if families.iter().all(|f| f.balanced(source)) {
        out.extend(
            families
                .iter()
                .filter(|f| !f.balanced(translation))
                .map(|f| format!("unbalanced {}", f.name)),
        );
    }
}

fn has_ellipsis(text: &str) -> bool {
    text.contains(['…', '⋯', '︙']) || text.contains("...") || text.contains(". . .")
}

/// Marks that end a sentence.
fn terminal(c: char) -> bool {
    matches!(
        c,
        '.' | '!'
            | '?'
            | '…'
            | ':'
            | '⋯'
            | '‽'
            | '‼'
            | '⁇'
            | '⁈'
            | '⁉'
            | '。'
            | '！'
            | '？'
            | '．'
            | '：'
            | '｡'
            | '؟'
            | '۔'
            | '।'
            | '॥'
            | '።'
            | '։'
            | '။'
            | '។'
            | '།'
    )
}

/// Marks that may end a passage or not, either way: a pause (`; , —`)
/// after which a translation may well end a sentence.
fn neutral(c: char) -> bool {
    matches!(
        c,
        ';' | ',' | '—' | '–' | '―' | '-' | '；' | '，' | '、' | '،' | '؛' | '~' | '·'
    )
}

/// Closing quotes and brackets, and emphasis marks, that may follow the
/// final mark (`end.»`, `end.”`, `_end._`).
fn closer(c: char) -> bool {
    matches!(
        c,
        '»' | '«'
            | '”'
            | '“'
            | '’'
            | '‘'
            | '"'
            | '\''
            | '›'
            | '‹'
            | ')'
            | ']'
            | '}'
            | '」'
            | '』'
            | '）'
            | '］'
            | '｝'
            | '】'
            | '〕'
            | '》'
            | '〉'
            | '＂'
            | '_'
            | '*'
    )
}

/// How a passage ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    /// With a mark that ends a sentence.
    Terminal,
    /// With a word, a number or a symbol: no final punctuation.
    Open,
    /// Nothing to judge by: a pause mark, a CJK quotation closed without
    /// a mark before it (`「こんにちは」`), nothing at all.
    Unknown,
}

/// Languages that close a quotation without a final mark inside it.
fn cjk(language: &str) -> bool {
    matches!(language, "zh" | "ja" | "ko")
}

/// CJK closing brackets, after which no final mark is needed.
fn cjk_closer(c: char) -> bool {
    matches!(c, '」' | '』' | '）' | '】' | '〕' | '》' | '〉')
}

fn ending(text: &str, language: &str) -> Ending {
    let mut cjk_closed = false;
    for c in text.chars().rev() {
        if c.is_whitespace() {
            continue;
        }
        if closer(c) {
            cjk_closed |= cjk(language) || cjk_closer(c);
            continue;
        }
        return if terminal(c) {
            Ending::Terminal
        } else if neutral(c) || cjk_closed {
            Ending::Unknown
        } else {
            Ending::Open
        };
    }
    Ending::Unknown
}

/// Languages written without final punctuation.
fn unpunctuated(language: &str) -> bool {
    matches!(language, "th" | "lo")
}

fn punctuation(source: &str, translation: &str, from: &str, to: &str) -> Vec<String> {
    let mut out = Vec::new();
    unbalanced(&QUOTES, source, translation, &mut out);
    unbalanced(&BRACKETS, source, translation, &mut out);
    if has_ellipsis(source) && !has_ellipsis(translation) {
        out.push("ellipsis lost".to_owned());
    }
    if !unpunctuated(to) {
        match (ending(source, from), ending(translation, to)) {
            (Ending::Terminal, Ending::Open) => out.push("final punctuation lost".to_owned()),
            (Ending::Open, Ending::Terminal) => out.push("final punctuation added".to_owned()),
            _ => {}
        }
    }
    out
}

/// A character that belongs to a word: a letter, a combining mark or a
/// joiner.
fn letter(c: char) -> bool {
    c.is_alphabetic()
        || matches!(c,
            '\u{0300}'..='\u{036F}'
            | '\u{0483}'..='\u{0489}'
            | '\u{0591}'..='\u{05C7}'
            | '\u{0610}'..='\u{061A}'
            | '\u{064B}'..='\u{065F}'
            | '\u{0670}'
            | '\u{06D6}'..='\u{06ED}'
            | '\u{0900}'..='\u{0903}'
            | '\u{093A}'..='\u{094F}'
            | '\u{1AB0}'..='\u{1AFF}'
            | '\u{1DC0}'..='\u{1DFF}'
            | '\u{200C}'..='\u{200D}'
            | '\u{20D0}'..='\u{20FF}'
            | '\u{FE20}'..='\u{FE2F}')
}

/// Words a language legitimately writes twice in a row: French
/// reflexives (`nous nous`), German and Dutch pronouns side by side
/// (`die die`, `sie sie`), English `had had`, `that that`, Portuguese
/// `se se`, Italian reduplication (`piano piano`).
fn doubled_words(language: &str) -> &'static [&'static str] {
    match language {
        "fr" => &["nous", "vous"],
        "de" => &["die", "das", "der", "den", "dem", "des", "sie", "ihr", "es"],
        "nl" => &["die", "dat"],
        "pt" => &["se"],
        "it" => &["piano", "zitto", "zitta", "passo", "via"],
        "en" => &["had", "that", "is"],
        _ => &[],
    }
}

/// Two equal words side by side.
struct Pair<'a> {
    /// As written: `The the`.
    text: &'a str,
    /// The word, lower-case.
    word: String,
    /// Only whitespace between them (`the the`), not punctuation.
    spaced: bool,
    /// Only whitespace, commas, dashes or an ellipsis between them: a
    /// figure (`very, very`, `no… no`) when written on purpose; not a
    /// full stop (`said I. I think`).
    figure: bool,
}

/// The equal words side by side in `text`, in order, case-insensitive.
fn pairs(text: &str) -> Vec<Pair<'_>> {
    // Words as byte ranges: runs of letters with at least one alphabetic.
    let mut words: Vec<(usize, usize)> = Vec::new();
    let mut start: Option<usize> = None;
    for (i, c) in text.char_indices().chain([(text.len(), ' ')]) {
        match (letter(c) && i < text.len(), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                if text[s..i].chars().any(char::is_alphabetic) {
                    words.push((s, i));
                }
                start = None;
            }
            _ => {}
        }
    }
    words
        .windows(2)
        .filter_map(|w| {
            let ((a, b), (c, d)) = (w[0], w[1]);
            let word = text[a..b].to_lowercase();
            if word != text[c..d].to_lowercase() {
                return None;
            }
            let between = &text[b..c];
            let marks: String = between.chars().filter(|c| !c.is_whitespace()).collect();
            let spaced = marks.is_empty();
            let figure = spaced
                || marks == "..."
                || marks
                    .chars()
                    .all(|c| matches!(c, ',' | '-' | '–' | '—' | '…'));
            Some(Pair {
                text: &text[a..d],
                word,
                spaced,
                figure,
            })
        })
        .collect()
}

/// Words written twice in a row with only whitespace between. The
/// source's own figures of repetition (`no, no`) excuse as many, less
/// those the translation keeps with their punctuation.
fn repeated(source: &str, translation: &str, from: &str, to: &str) -> Vec<String> {
    let (source_allowed, allowed) = (doubled_words(from), doubled_words(to));
    let figures = pairs(source)
        .iter()
        .filter(|p| p.figure && !source_allowed.contains(&p.word.as_str()))
        .count();
    let found: Vec<Pair<'_>> = pairs(translation)
        .into_iter()
        .filter(|p| !allowed.contains(&p.word.as_str()))
        .collect();
    let kept = found.iter().filter(|p| p.figure && !p.spaced).count();
    found
        .iter()
        .filter(|p| p.spaced)
        .skip(figures.saturating_sub(kept))
        .map(|p| p.text.to_owned())
        .collect()
}

/// Whitespace other than a line break.
fn blank(c: char) -> bool {
    c.is_whitespace() && !matches!(c, '\n' | '\r' | '\u{2028}' | '\u{2029}')
}

/// Runs of two blanks or more inside the text; indentation after a line
/// break and blanks before one are layout, and two spaces after a
/// sentence are the typewriter's convention, not doubled spaces.
fn doubled_spaces(text: &str) -> usize {
    let chars: Vec<char> = text.trim().chars().collect();
    let mut count = 0;
    let mut i = 0;
    while i < chars.len() {
        if !blank(chars[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() && blank(chars[i]) {
            i += 1;
        }
        let at_break = start
            .checked_sub(1)
            .is_some_and(|p| chars[p].is_whitespace())
            || chars.get(i).is_some_and(|c| c.is_whitespace());
        let after_sentence = chars[..start]
            .iter()
            .rev()
            .find(|c| !closer(**c))
            .is_some_and(|c| terminal(*c));
        if i - start >= 2 && !at_break && !after_sentence {
            count += 1;
        }
    }
    count
}

/// Punctuation that takes no space before it, and the target languages
/// that do space it.
const UNSPACED: [(char, bool); 6] = [
    (',', false),
    ('.', false),
    (';', true),
    (':', true),
    ('!', true),
    ('?', true),
];

/// How many times `mark` follows a blank within a line, where it ends a
/// clause (what comes after is no word: not `.NET`, `.45`, nor a spaced
/// ellipsis `. . .`).
fn spaced(text: &str, mark: char) -> usize {
    let chars: Vec<char> = text.chars().collect();
    (1..chars.len())
        .filter(|&i| {
            if chars[i] != mark || !blank(chars[i - 1]) {
                return false;
            }
            let before = chars[..i - 1].iter().rev().find(|c| !blank(**c));
            let after = chars.get(i + 1);
            let starts_line = before.is_none_or(|c| c.is_whitespace());
            let ellipsis = mark == '.'
                && (before == Some(&'.')
                    || after == Some(&'.')
                    || (after.is_some_and(|c| blank(*c)) && chars.get(i + 2) == Some(&'.')));
            let clause_end = after.is_none_or(|c| !c.is_alphanumeric() && *c != mark);
            !starts_line && !ellipsis && clause_end
        })
        .count()
}

fn whitespace(source: &str, translation: &str, target: &str) -> Vec<String> {
    let mut out = Vec::new();
    let doubled = doubled_spaces(translation);
    if doubled > doubled_spaces(source) {
        out.push(if doubled == 1 {
            "doubled space".to_owned()
        } else {
            format!("doubled spaces ({doubled})")
        });
    }
    let starts = |t: &str| t.chars().next().is_some_and(char::is_whitespace);
    let ends = |t: &str| t.chars().next_back().is_some_and(char::is_whitespace);
    if starts(translation) && !starts(source) {
        out.push("leading whitespace".to_owned());
    }
    if ends(translation) && !ends(source) {
        out.push("trailing whitespace".to_owned());
    }
    let french = target == "fr";
    for (mark, french_spaces) in UNSPACED {
        if french && french_spaces {
            continue;
        }
        if spaced(translation, mark) > spaced(source, mark) {
            out.push(format!("space before '{mark}'"));
        }
    }
    out
}

/// Runs the symbol checks on a translation of `source`.
pub(super) fn check(
    source: &str,
    translation: &str,
    source_language: &str,
    target_language: &str,
) -> Symbols {
    let (from, to) = (
        text::primary(source_language),
        text::primary(target_language),
    );
    Symbols {
        urls: missing_links(source, translation),
        punctuation: punctuation(source, translation, &from, &to),
        repeated: repeated(source, translation, &from, &to),
        whitespace: whitespace(source, translation, &to),
    }
}

#[cfg(test)]
mod tests;
