//! The `number_mismatch` check: the numbers of the source (digits,
//! numerals with their separators, dates and times) must be in the
//! translation, written as the target language writes them.
//!
//! Each side is read into numbers ([`Kind`]), then the two are matched as
//! multisets. A numeral is read every way its separators allow (`3,500`
//! is 3500 in English and 3.5 in French; `3 500,25`, `3.500,25` and
//! `3,500.25` are one number), so a translation may write it its own way
//! or keep the source's. Dates compare their parts in any order (day and
//! month swap between locales) and may lose the month to a word
//! (`12/05/1890` → `12 mai 1890`); times compare hours on a twelve-hour
//! clock (`3:30` → `15 h 30`). A small or round number may be written in
//! words on the other side (`3` → `trois`, `a hundred` → `100`), a century
//! or a chapter in Roman numerals (`19th` → `XIXe`), unless a small number
//! is left over on the other side as well (`1 → 2`: changed, though the
//! text says `un`). Non-Latin decimal digits count as theirs.
//!
//! Numbers written in words are matched too, by value, numerals standing
//! for theirs: a plain number word of the source left without
//! counterpart while one of the translation has a value the source lacks
//! is a number changed (`two` → `siete`). `one` and its articles (`un`,
//! `ein`), words that are as often something else (`second`, `cuarto`)
//! and the parts of hyphenated numbers (`twenty-five`, `quatre-vingts`)
//! only stand for a number, never count as one changed; a number word left over on one
//! side alone is taken for a rewording (`both` → `los dos`).

use std::collections::{HashMap, HashSet};

use super::text;

mod words;

use words::{number_words_in, words_for};

/// Spaces that group thousands (no-break, narrow no-break, thin): never
/// between two separate numbers.
const GROUP_SPACES: [char; 3] = ['\u{A0}', '\u{202F}', '\u{2009}'];

/// Past this many comparisons the matching stays greedy: a table of
/// numbers would otherwise cost quadratic time per augmenting path.
const AUGMENT_LIMIT: usize = 40_000;

/// A number read from the text.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    /// Its values, canonical (`3500`, `3.5`, `-12`): more than one when
    /// its separators read both ways (`3,500`: 3500 or 3.500).
    Number(Vec<String>),
    /// A time of day: hours and minutes.
    Time(u32, u32),
    /// A date in digits: its parts, canonical, sorted.
    Date(Vec<String>),
}

/// A number and how the text writes it.
#[derive(Debug, Clone)]
struct Token {
    text: String,
    kind: Kind,
}

impl Token {
    /// The whole number it is, when it is one alone (`7`, not `3,500`).
    fn integer(&self) -> Option<u32> {
        match &self.kind {
            Kind::Number(values) if values.len() == 1 => {
                let v = &values[0];
                if v.len() <= 4 && v.bytes().all(|b| b.is_ascii_digit()) {
                    v.parse().ok()
                } else {
                    None
                }
            }
            _ => None,
        }
    }

    /// Whether it holds `part` (canonical digits) among its values.
    fn has_value(&self, part: &str) -> bool {
        matches!(&self.kind, Kind::Number(values) if values.iter().any(|v| v == part))
    }
}

/// The ASCII digit a decimal digit of any script stands for.
fn digit_value(c: char) -> Option<u32> {
    const ZEROS: [u32; 22] = [
        0x0030, 0x0660, 0x06F0, 0x07C0, 0x0966, 0x09E6, 0x0A66, 0x0AE6, 0x0B66, 0x0BE6, 0x0C66,
        0x0CE6, 0x0D66, 0x0DE6, 0x0E50, 0x0ED0, 0x0F20, 0x1040, 0x1090, 0x17E0, 0x1810, 0xFF10,
    ];
    let code = u32::from(c);
    ZEROS
        .iter()
        .find(|&&zero| (zero..zero + 10).contains(&code))
        .map(|zero| code - zero)
}

/// `text` with every decimal digit made ASCII, and the full-width and
/// Arabic separators that sit between digits made their ASCII selves.
fn normalize(text: &str) -> Vec<char> {
    text.chars()
        .map(|c| match c {
            '\u{FF0E}' | '\u{066B}' => '.',
            '\u{066C}' => ',',
            '\u{FF1A}' => ':',
            '\u{FF0F}' => '/',
            c => match digit_value(c).and_then(|d| char::from_digit(d, 10)) {
                Some(d) => d,
                None => c,
            },
        })
        .collect()
}

fn digit_at(chars: &[char], i: usize) -> bool {
    chars.get(i).is_some_and(char::is_ascii_digit)
}

/// The end of the run of digits starting at `i`.
fn digits_end(chars: &[char], mut i: usize) -> usize {
    while digit_at(chars, i) {
        i += 1;
    }
    i
}

/// `digits` without its leading zeros (`0` stays).
fn canonical(digits: &str) -> String {
    let trimmed = digits.trim_start_matches('0');
    if trimmed.is_empty() {
        "0".to_owned()
    } else {
        trimmed.to_owned()
    }
}

fn text_of(chars: &[char], from: usize, to: usize) -> String {
    chars.get(from..to).unwrap_or_default().iter().collect()
}

/// Whether the digit at `i` has a minus sign: a dash right before it,
/// itself at the start or after a space or an opening bracket (so not
/// `COVID-19`, `1890-1891` or `--1952`).
fn negative(chars: &[char], i: usize) -> bool {
    let Some(before) = i.checked_sub(1) else {
        return false;
    };
    matches!(chars[before], '-' | '\u{2212}' | '\u{2013}')
        && before.checked_sub(1).is_none_or(|b| {
            chars[b].is_whitespace() || matches!(chars[b], '(' | '[' | '"' | '«' | '“' | '„')
        })
}

fn space_like(c: Option<&char>) -> bool {
    c.is_some_and(|&c| c == ' ' || GROUP_SPACES.contains(&c))
}

/// A time at `i`: `10:30`, `10h30`, `10 h 30`. Its end and kind.
fn time_at(chars: &[char], i: usize) -> Option<(usize, Kind)> {
    let j = digits_end(chars, i);
    if j - i > 2 {
        return None;
    }
    let hours: u32 = text_of(chars, i, j).parse().ok()?;
    let minutes_at = if chars.get(j) == Some(&':') {
        j + 1
    } else {
        let k = if space_like(chars.get(j)) { j + 1 } else { j };
        if chars.get(k) != Some(&'h') || chars.get(k + 1).is_some_and(|c| c.is_alphabetic()) {
            return None;
        }
        if space_like(chars.get(k + 1)) {
            k + 2
        } else {
            k + 1
        }
    };
    let end = minutes_at + 2;
    if !(digit_at(chars, minutes_at) && digit_at(chars, minutes_at + 1)) || digit_at(chars, end) {
        return None;
    }
    let minutes: u32 = text_of(chars, minutes_at, end).parse().ok()?;
    (hours <= 24 && minutes < 60).then_some((end, Kind::Time(hours, minutes)))
}

/// Separators that group thousands.
fn groups_thousands(c: char) -> bool {
    matches!(c, '.' | ',' | '\'' | '’' | ' ') || GROUP_SPACES.contains(&c)
}

/// Groups of digits as a thousands-grouped whole: the first of one to
/// three digits, the others of three, one separator throughout.
fn grouped(groups: &[String], seps: &[char]) -> Option<String> {
    let first = seps.first()?;
    let fits = groups_thousands(*first)
        && seps.iter().all(|s| s == first)
        && (1..=3).contains(&groups.first()?.len())
        && groups.iter().skip(1).all(|g| g.len() == 3);
    fits.then(|| canonical(&groups.concat()))
}

/// The values a chain of digit groups reads as: one group; thousands
/// grouped; a decimal mark last, after thousands grouped otherwise.
/// `None` when the separators fit none (`1,2,3`: a list).
fn values(groups: &[String], seps: &[char]) -> Option<Vec<String>> {
    let Some((&last, head_seps)) = seps.split_last() else {
        return groups.first().map(|g| vec![canonical(g)]);
    };
    let mut out = Vec::new();
    out.extend(grouped(groups, seps));
    let (fraction, head) = groups.split_last()?;
    if matches!(last, '.' | ',') {
        let whole = if head_seps.is_empty() {
            head.first().map(|g| canonical(g))
        } else if head_seps.iter().all(|&s| s != last) {
            grouped(head, head_seps)
        } else {
            None
        };
        if let Some(whole) = whole {
            out.push(format!("{whole}.{fraction}"));
        }
    }
    (!out.is_empty()).then_some(out)
}

/// Reads the text into numbers; `join_spaces` takes an ordinary space
/// between groups of three digits as a thousands separator (`3 500`),
/// which two numbers side by side may also be.
fn scan(chars: &[char], join_spaces: bool) -> Vec<Token> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if !chars[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        let minus = negative(chars, i);
        let start = if minus { i - 1 } else { i };
        if let Some((end, kind)) = time_at(chars, i) {
            out.push(Token {
                text: text_of(chars, i, end),
                kind,
            });
            i = end;
            continue;
        }
        i = chain(chars, i, start, minus, join_spaces, &mut out);
    }
    out
}

/// Reads the chain of digit groups at `i` (`3,500.25`, `12/05/1890`,
/// `1-2`) into `out`; returns its end.
fn chain(
    chars: &[char],
    i: usize,
    start: usize,
    minus: bool,
    join_spaces: bool,
    out: &mut Vec<Token>,
) -> usize {
    // Each group: its start and end.
    let mut spans = vec![(i, digits_end(chars, i))];
    let mut seps = Vec::new();
    let mut j = spans[0].1;
    while let Some(&c) = chars.get(j) {
        let joins = matches!(c, '.' | ',' | '\'' | '’' | '/' | '-')
            || GROUP_SPACES.contains(&c)
            || (join_spaces && c == ' ');
        if !joins || !digit_at(chars, j + 1) {
            break;
        }
        let end = digits_end(chars, j + 1);
        spans.push((j + 1, end));
        seps.push(c);
        j = end;
    }
    let groups: Vec<String> = spans.iter().map(|&(a, b)| text_of(chars, a, b)).collect();
    let date = groups.len() == 3
        && seps[0] == seps[1]
        && matches!(seps[0], '.' | '/' | '-')
        && grouped(&groups, &seps).is_none();
    if date {
        let mut parts: Vec<String> = groups.iter().map(|g| canonical(g)).collect();
        parts.sort_by(|a, b| (a.len(), a).cmp(&(b.len(), b)));
        out.push(Token {
            text: text_of(chars, i, j),
            kind: Kind::Date(parts),
        });
        return j;
    }
    // Slashes and hyphens part numbers (`24/7`, `1890-1891`).
    let mut from = 0;
    for to in 1..=groups.len() {
        if to < groups.len() && !matches!(seps[to - 1], '/' | '-') {
            continue;
        }
        let signed = minus && from == 0;
        let begin = if signed { start } else { spans[from].0 };
        let sub_groups = &groups[from..to];
        let sub_seps = &seps[from..to - 1];
        let sign = if signed { "-" } else { "" };
        match values(sub_groups, sub_seps) {
            Some(mut values) => {
                if sub_groups.len() == 1 && leading_point(chars, spans[from].0) {
                    values.push(format!("0.{}", sub_groups[0]));
                }
                out.push(Token {
                    text: text_of(chars, begin, spans[to - 1].1),
                    kind: Kind::Number(values.into_iter().map(|v| format!("{sign}{v}")).collect()),
                });
            }
            None => {
                for (k, group) in sub_groups.iter().enumerate() {
                    let sign = if k == 0 { sign } else { "" };
                    let begin = if k == 0 { begin } else { spans[from + k].0 };
                    out.push(Token {
                        text: text_of(chars, begin, spans[from + k].1),
                        kind: Kind::Number(vec![format!("{sign}{}", canonical(group))]),
                    });
                }
            }
        }
        from = to;
    }
    j
}

/// Whether the digits at `i` follow a bare decimal mark (`.45`).
fn leading_point(chars: &[char], i: usize) -> bool {
    i.checked_sub(1)
        .is_some_and(|p| matches!(chars[p], '.' | ','))
        && i.checked_sub(2)
            .is_none_or(|b| chars[b].is_whitespace() || chars[b] == '(')
}

/// Whether two numbers are the same, however written.
fn fits(a: &Token, b: &Token) -> bool {
    match (&a.kind, &b.kind) {
        (Kind::Number(x), Kind::Number(y)) => x.iter().any(|v| y.contains(v)),
        (Kind::Time(h, m), Kind::Time(h2, m2)) => m == m2 && h % 12 == h2 % 12,
        (Kind::Time(h, m), Kind::Number(values)) | (Kind::Number(values), Kind::Time(h, m)) => {
            // `10.30` is a time in German and Danish.
            values.iter().any(|v| {
                v.split_once('.').is_some_and(|(hh, mm)| {
                    mm.len() == 2
                        && mm.parse::<u32>().is_ok_and(|mm| mm == *m)
                        && hh.parse::<u32>().is_ok_and(|hh| hh % 12 == h % 12)
                })
            })
        }
        (Kind::Date(x), Kind::Date(y)) => x == y,
        _ => false,
    }
}

/// Tries to find a partner for source `s` along an augmenting path
/// (Kuhn's algorithm).
fn augment(
    s: usize,
    edges: &[Vec<usize>],
    seen: &mut [bool],
    partner_of_target: &mut [Option<usize>],
) -> bool {
    for &t in &edges[s] {
        if seen[t] {
            continue;
        }
        seen[t] = true;
        let free = match partner_of_target[t] {
            None => true,
            Some(other) => augment(other, edges, seen, partner_of_target),
        };
        if free {
            partner_of_target[t] = Some(s);
            return true;
        }
    }
    false
}

/// The most pairs of numbers that are the same: which source and which
/// translation numbers are left unmatched.
fn matching(source: &[Token], translation: &[Token]) -> (Vec<bool>, Vec<bool>) {
    let mut source_done = vec![false; source.len()];
    let mut target_done = vec![false; translation.len()];
    let mut partner_of_target: Vec<Option<usize>> = vec![None; translation.len()];
    // Greedy first: in text order almost every number finds its own.
    for (s, token) in source.iter().enumerate() {
        if let Some(t) = (0..translation.len())
            .find(|&t| partner_of_target[t].is_none() && fits(token, &translation[t]))
        {
            partner_of_target[t] = Some(s);
            source_done[s] = true;
        }
    }
    let open = source_done.iter().filter(|d| !**d).count();
    if open > 0 && source.len().saturating_mul(translation.len()) <= AUGMENT_LIMIT {
        let edges: Vec<Vec<usize>> = source
            .iter()
            .map(|a| {
                (0..translation.len())
                    .filter(|&t| fits(a, &translation[t]))
                    .collect()
            })
            .collect();
        for (s, done) in source_done.iter_mut().enumerate() {
            if !*done {
                let mut seen = vec![false; translation.len()];
                *done = augment(s, &edges, &mut seen, &mut partner_of_target);
            }
        }
    }
    for (t, partner) in partner_of_target.iter().enumerate() {
        target_done[t] = partner.is_some();
    }
    (source_done, target_done)
}

/// Lets an unmatched date or time be written as loose numbers on the
/// other side: `12/05/1890` as `12 mai 1890` (one part, the month, may
/// be a word), `10:30` as `10 heures 30` (the minutes may go when they are
/// `00`). Marks what it matched done.
fn cover_composites(
    composites: &[Token],
    composite_done: &mut [bool],
    loose: &[Token],
    loose_done: &mut [bool],
) {
    for (c, token) in composites.iter().enumerate() {
        if composite_done[c] {
            continue;
        }
        // Each part: the values it may take, and whether it may be missing.
        let parts: Vec<(Vec<String>, bool)> = match &token.kind {
            Kind::Time(h, m) => vec![
                (vec![h.to_string(), ((h + 12) % 24).to_string()], false),
                (vec![m.to_string()], *m == 0),
            ],
            Kind::Date(parts) => parts
                .iter()
                .map(|p| {
                    let month =
                        p.len() <= 2 && p.parse::<u32>().is_ok_and(|n| (1..=12).contains(&n));
                    (vec![p.clone()], month)
                })
                .collect(),
            Kind::Number(_) => continue,
        };
        let mut taken: Vec<usize> = Vec::new();
        let mut missing = Vec::new();
        for (values, optional) in &parts {
            let found = (0..loose.len()).find(|&l| {
                !loose_done[l]
                    && !taken.contains(&l)
                    && values.iter().any(|v| loose[l].has_value(v))
            });
            match found {
                Some(l) => taken.push(l),
                None => missing.push(*optional),
            }
        }
        if !taken.is_empty() && missing.len() <= 1 && missing.iter().all(|m| *m) {
            composite_done[c] = true;
            for l in taken {
                loose_done[l] = true;
            }
        }
    }
}

/// Lets an unmatched small or round number be written in words on the
/// other side (`3` → `trois`, `100` → `cent`), each word standing for one
/// number.
fn cover_words(
    tokens: &[Token],
    done: &mut [bool],
    other: &str,
    other_language: &str,
    budget: &mut usize,
) {
    let language = text::primary(other_language);
    let wanted: Vec<(usize, &[&str])> = tokens
        .iter()
        .enumerate()
        .filter(|(k, _)| !done[*k])
        .filter_map(|(k, t)| Some((k, words_for(&language, t.integer()?))))
        .filter(|(_, words)| !words.is_empty())
        .collect();
    if wanted.is_empty() {
        return;
    }
    let lower = other.to_lowercase();
    let mut counts: HashMap<&str, usize> = HashMap::new();
    if matches!(language.as_str(), "zh" | "ja") {
        for word in wanted.iter().flat_map(|(_, words)| words.iter().copied()) {
            counts.insert(word, lower.matches(word).count());
        }
    } else {
        for word in lower.split(|c: char| !c.is_alphanumeric()) {
            let known = wanted
                .iter()
                .flat_map(|(_, words)| words.iter().copied())
                .find(|w| *w == word);
            if let Some(word) = known {
                *counts.entry(word).or_default() += 1;
            }
        }
    }
    for (k, words) in wanted {
        if *budget == 0 {
            return;
        }
        let hit = words
            .iter()
            .find(|w| counts.get(*w).is_some_and(|c| *c > 0));
        if let Some(count) = hit.and_then(|w| counts.get_mut(w)) {
            *count -= 1;
            done[k] = true;
            *budget -= 1;
        }
    }
}

/// `n` in Roman numerals, for 1 to 39.
fn roman(n: u32) -> String {
    let tens = "X".repeat(usize::try_from(n / 10).unwrap_or(0));
    let units = ["", "I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX"];
    let unit = usize::try_from(n % 10)
        .ok()
        .and_then(|u| units.get(u))
        .copied()
        .unwrap_or("");
    format!("{tens}{unit}")
}

/// Lets an unmatched number from 2 to 39 be written in Roman numerals on
/// the other side, with an ordinal ending or none (`19th` → `XIXe`,
/// `siglo XIX`; `Chapter 4` → `Chapitre IV`).
fn cover_roman(tokens: &[Token], done: &mut [bool], other: &str, budget: &mut usize) {
    const ENDINGS: [&str; 14] = [
        "", "e", "er", "re", "ème", "ᵉ", "ᵉʳ", "ʳᵉ", "th", "st", "nd", "rd", "º", "ª",
    ];
    let words: Vec<&str> = other
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.starts_with(['I', 'V', 'X']))
        .collect();
    let mut used = vec![false; words.len()];
    for (k, token) in tokens.iter().enumerate() {
        if *budget == 0 {
            return;
        }
        let Some(n) = token.integer().filter(|n| !done[k] && (2..=39).contains(n)) else {
            continue;
        };
        let numeral = roman(n);
        let found = words.iter().enumerate().position(|(w, word)| {
            !used[w]
                && word
                    .strip_prefix(numeral.as_str())
                    .is_some_and(|ending| ENDINGS.contains(&ending))
        });
        if let Some(w) = found {
            used[w] = true;
            done[k] = true;
            *budget -= 1;
        }
    }
}

/// The findings for the numbers left unmatched, in text order: a pair
/// as `7 → 8`, a source number alone as itself, a translation number
/// alone as `added 8`.
fn describe(missing: Vec<&Token>, added: Vec<&Token>) -> Vec<String> {
    let mut out = Vec::new();
    let mut added = added.into_iter();
    for m in missing {
        match added.next() {
            Some(a) => out.push(format!("{} → {}", m.text, a.text)),
            None => out.push(m.text.clone()),
        }
    }
    out.extend(added.map(|a| format!("added {}", a.text)));
    out
}

/// The mismatches of one reading of both sides.
fn compare(
    source: &[Token],
    translation: &[Token],
    source_text: &str,
    translation_text: &str,
    source_language: &str,
    target_language: &str,
) -> Vec<String> {
    let (mut source_done, mut target_done) = matching(source, translation);
    if source_done.iter().all(|d| *d) && target_done.iter().all(|d| *d) {
        return Vec::new();
    }
    cover_composites(source, &mut source_done, translation, &mut target_done);
    cover_composites(translation, &mut target_done, source, &mut source_done);
    // A number in words or Roman numerals stands for a number left over
    // on one side; with a small number left on the other side too, the
    // two are one number changed (`1 → 2`), whatever `un` or `second`
    // the text also has.
    let open =
        |tokens: &[Token], done: &[bool]| tokens.iter().zip(done).filter(|(_, d)| !**d).count();
    let small = |tokens: &[Token], done: &[bool]| {
        tokens
            .iter()
            .zip(done)
            .filter(|(t, d)| !**d && t.integer().is_some_and(|n| n <= 100))
            .count()
    };
    let mut source_budget =
        open(source, &source_done).saturating_sub(small(translation, &target_done));
    let mut target_budget =
        open(translation, &target_done).saturating_sub(small(source, &source_done));
    cover_words(
        source,
        &mut source_done,
        translation_text,
        target_language,
        &mut source_budget,
    );
    cover_words(
        translation,
        &mut target_done,
        source_text,
        source_language,
        &mut target_budget,
    );
    cover_roman(
        source,
        &mut source_done,
        translation_text,
        &mut source_budget,
    );
    cover_roman(
        translation,
        &mut target_done,
        source_text,
        &mut target_budget,
    );
    let missing = source
        .iter()
        .zip(&source_done)
        .filter(|(_, d)| !**d)
        .map(|(t, _)| t)
        .collect();
    let added = translation
        .iter()
        .zip(&target_done)
        .filter(|(_, d)| !**d)
        .map(|(t, _)| t)
        .collect();
    describe(missing, added)
}

/// A number of one side for [`changed_words`]: a number word, or the
/// whole numbers a numeral may stand for.
struct Counted {
    text: String,
    values: Vec<u32>,
    /// A plain number word, which may count as changed.
    plain: bool,
}

/// The whole numbers a numeral, a time or a date stands for.
fn whole_values(kind: &Kind) -> Vec<u32> {
    match kind {
        Kind::Number(values) | Kind::Date(values) => {
            values.iter().filter_map(|v| v.parse().ok()).collect()
        }
        Kind::Time(h, m) => vec![*h, h % 12, *m],
    }
}

/// The numbers of one side: its number words, then its numerals.
fn counted(
    text: &str,
    chars: &[char],
    languages: (&str, &str),
    other_words: &HashSet<String>,
) -> Vec<Counted> {
    let words = number_words_in(
        text,
        &text::primary(languages.0),
        other_words,
        &text::primary(languages.1),
    );
    let mut out: Vec<Counted> = words
        .into_iter()
        .map(|w| Counted {
            text: w.text,
            values: w.values,
            plain: w.plain,
        })
        .collect();
    if !out.is_empty() {
        out.extend(scan(chars, false).into_iter().map(|t| Counted {
            values: whole_values(&t.kind),
            text: t.text,
            plain: false,
        }));
    }
    out
}

/// Numbers written in words and changed (`two` → `siete`): a plain
/// number word of the translation whose value the source lacks while a
/// plain number word of the source has no counterpart. A numeral on
/// either side stands for its value. Only such pairs count: a number word
/// left over on one side alone is more often a rewording (`both` → `los
/// dos`, `twenty-five` → `veinticinco`) than a fault, and a numeral left
/// over is the numerals' own finding.
fn changed_words(
    source: &str,
    translation: &str,
    source_chars: &[char],
    translation_chars: &[char],
    source_language: &str,
    target_language: &str,
) -> Vec<String> {
    let source_words = words::lower_words(source);
    let translation_words = words::lower_words(translation);
    let languages = (source_language, target_language);
    let from = counted(source, source_chars, languages, &translation_words);
    if !from.iter().any(|c| c.plain) {
        return Vec::new();
    }
    let to = counted(
        translation,
        translation_chars,
        (target_language, source_language),
        &source_words,
    );
    if !to.iter().any(|c| c.plain) || from.len().saturating_mul(to.len()) > AUGMENT_LIMIT {
        return Vec::new();
    }
    // Like pairs with like first: a plain word with a plain word, an
    // ambiguous word or a numeral with its kind (`second` with `segundo`,
    // not with the `dos` that stands for `two`), then any two that agree.
    let mut partner_of_target: Vec<Option<usize>> = vec![None; to.len()];
    let mut source_done = vec![false; from.len()];
    for alike in [true, false] {
        let edges: Vec<Vec<usize>> = from
            .iter()
            .map(|a| {
                (0..to.len())
                    .filter(|&t| {
                        (!alike || a.plain == to[t].plain)
                            && a.values.iter().any(|v| to[t].values.contains(v))
                    })
                    .collect()
            })
            .collect();
        for (s, done) in source_done.iter_mut().enumerate() {
            if !*done {
                let mut seen = vec![false; to.len()];
                *done = augment(s, &edges, &mut seen, &mut partner_of_target);
            }
        }
    }
    let missing = from
        .iter()
        .zip(&source_done)
        .filter(|(c, done)| c.plain && !**done);
    let added = to
        .iter()
        .zip(&partner_of_target)
        .filter(|(c, partner)| c.plain && partner.is_none());
    missing
        .zip(added)
        .map(|((m, _), (a, _))| format!("{} → {}", m.text, a.text))
        .collect()
}

/// The source's numbers missing or changed in the translation, and the
/// translation's the source lacks, each described for a message (`"3.5"`,
/// `"1890 → 1891"`, `"added 8"`, `"two → siete"`); empty when they agree.
pub(super) fn mismatches(
    source: &str,
    translation: &str,
    source_language: &str,
    target_language: &str,
) -> Vec<String> {
    let source_chars = normalize(source);
    let translation_chars = normalize(translation);
    let mut found = numeral_mismatches(
        source,
        translation,
        &source_chars,
        &translation_chars,
        source_language,
        target_language,
    );
    found.extend(changed_words(
        source,
        translation,
        &source_chars,
        &translation_chars,
        source_language,
        target_language,
    ));
    found
}

/// The numerals' mismatches: the numerals of each side matched with the
/// other's numerals, or its numbers in words.
fn numeral_mismatches(
    source: &str,
    translation: &str,
    source_chars: &[char],
    translation_chars: &[char],
    source_language: &str,
    target_language: &str,
) -> Vec<String> {
    if !source_chars.iter().any(char::is_ascii_digit)
        && !translation_chars.iter().any(char::is_ascii_digit)
    {
        return Vec::new();
    }
    // An ordinary space may group thousands (`3 500`) or part two numbers:
    // each side is read both ways and the closest reading kept.
    let source_readings = [scan(source_chars, false), scan(source_chars, true)];
    let translation_readings = [
        scan(translation_chars, false),
        scan(translation_chars, true),
    ];
    let mut best: Option<Vec<String>> = None;
    for s in &source_readings {
        for t in &translation_readings {
            let found = compare(s, t, source, translation, source_language, target_language);
            if best.as_ref().is_none_or(|b| found.len() < b.len()) {
                best = Some(found);
            }
            if best.as_ref().is_some_and(Vec::is_empty) {
                return Vec::new();
            }
        }
    }
    best.unwrap_or_default()
}

#[cfg(test)]
mod tests;
