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

use std::collections::HashMap;

use super::text;

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

/// The words for 0 to 12 (cardinals, and ordinals where a translation
/// writes `1st` as a word), lower-case.
fn number_words(language: &str) -> Option<[&'static [&'static str]; 13]> {
    Some(match language {
        "en" => [
            &["zero", "nought", "nil"],
            &["one", "first", "once"],
            &["two", "second", "twice"],
            &["three", "third", "thrice"],
            &["four", "fourth"],
            &["five", "fifth"],
            &["six", "sixth"],
            &["seven", "seventh"],
            &["eight", "eighth"],
            &["nine", "ninth"],
            &["ten", "tenth"],
            &["eleven", "eleventh"],
            &["twelve", "twelfth", "dozen"],
        ],
        "fr" => [
            &["zéro"],
            &["un", "une", "premier", "première", "premiers", "premières"],
            &["deux", "deuxième", "second", "seconde"],
            &["trois", "troisième"],
            &["quatre", "quatrième"],
            &["cinq", "cinquième"],
            &["six", "sixième"],
            &["sept", "septième"],
            &["huit", "huitième"],
            &["neuf", "neuvième"],
            &["dix", "dixième"],
            &["onze", "onzième"],
            &["douze", "douzième", "douzaine"],
        ],
        "de" => [
            &["null"],
            &[
                "ein", "eine", "einen", "einem", "einer", "eines", "eins", "erste", "ersten",
                "erster", "erstes", "erstem", "einmal",
            ],
            &[
                "zwei", "zweite", "zweiten", "zweiter", "zweites", "zweitem", "zweimal",
            ],
            &[
                "drei", "dritte", "dritten", "dritter", "drittes", "drittem", "dreimal",
            ],
            &["vier", "vierte", "vierten", "vierter", "viertes", "viertem"],
            &["fünf", "fünfte", "fünften", "fünfter", "fünftes", "fünftem"],
            &["sechs", "sechste", "sechsten", "sechster", "sechstes"],
            &["sieben", "siebte", "siebten", "siebter", "siebtes"],
            &["acht", "achte", "achten", "achter", "achtes"],
            &["neun", "neunte", "neunten", "neunter", "neuntes"],
            &["zehn", "zehnte", "zehnten", "zehnter", "zehntes"],
            &["elf", "elfte", "elften", "elfter", "elftes"],
            &["zwölf", "zwölfte", "zwölften", "zwölfter", "dutzend"],
        ],
        "es" => [
            &["cero"],
            &["uno", "una", "un", "primero", "primera", "primer"],
            &["dos", "segundo", "segunda"],
            &["tres", "tercero", "tercera", "tercer"],
            &["cuatro", "cuarto", "cuarta"],
            &["cinco", "quinto", "quinta"],
            &["seis", "sexto", "sexta"],
            &["siete", "séptimo", "séptima"],
            &["ocho", "octavo", "octava"],
            &["nueve", "noveno", "novena"],
            &["diez", "décimo", "décima"],
            &["once", "undécimo", "undécima"],
            &["doce", "duodécimo", "duodécima", "docena"],
        ],
        "it" => [
            &["zero"],
            &["uno", "una", "un", "primo", "prima"],
            &["due", "secondo", "seconda"],
            &["tre", "terzo", "terza"],
            &["quattro", "quarto", "quarta"],
            &["cinque", "quinto", "quinta"],
            &["sei", "sesto", "sesta"],
            &["sette", "settimo", "settima"],
            &["otto", "ottavo", "ottava"],
            &["nove", "nono", "nona"],
            &["dieci", "decimo", "decima"],
            &["undici", "undicesimo", "undicesima"],
            &["dodici", "dodicesimo", "dodicesima", "dozzina"],
        ],
        "pt" => [
            &["zero"],
            &["um", "uma", "primeiro", "primeira"],
            &["dois", "duas", "segundo", "segunda"],
            &["três", "terceiro", "terceira"],
            &["quatro", "quarto", "quarta"],
            &["cinco", "quinto", "quinta"],
            &["seis", "sexto", "sexta"],
            &["sete", "sétimo", "sétima"],
            &["oito", "oitavo", "oitava"],
            &["nove", "nono", "nona"],
            &["dez", "décimo", "décima"],
            &["onze"],
            &["doze", "dúzia"],
        ],
        "nl" => [
            &["nul"],
            &["een", "één", "eerste"],
            &["twee", "tweede"],
            &["drie", "derde"],
            &["vier", "vierde"],
            &["vijf", "vijfde"],
            &["zes", "zesde"],
            &["zeven", "zevende"],
            &["acht", "achtste"],
            &["negen", "negende"],
            &["tien", "tiende"],
            &["elf", "elfde"],
            &["twaalf", "twaalfde"],
        ],
        "ru" => [
            &["ноль", "нуль"],
            &[
                "один",
                "одна",
                "одно",
                "одного",
                "одной",
                "одному",
                "одним",
                "первый",
                "первая",
                "первое",
                "первого",
                "первой",
            ],
            &[
                "два",
                "две",
                "двух",
                "двум",
                "второй",
                "вторая",
                "второе",
                "второго",
            ],
            &[
                "три",
                "трёх",
                "трех",
                "трём",
                "тремя",
                "третий",
                "третья",
                "третье",
            ],
            &["четыре", "четырёх", "четырех", "четвёртый", "четвертый"],
            &["пять", "пяти", "пятый", "пятая"],
            &["шесть", "шести", "шестой", "шестая"],
            &["семь", "семи", "седьмой", "седьмая"],
            &["восемь", "восьми", "восьмой", "восьмая"],
            &["девять", "девяти", "девятый", "девятая"],
            &["десять", "десяти", "десятый", "десятая"],
            &["одиннадцать", "одиннадцати"],
            &["двенадцать", "двенадцати"],
        ],
        "zh" | "ja" => [
            &["零", "〇"],
            &["一", "壹"],
            &["二", "两", "兩", "貳"],
            &["三", "叁"],
            &["四"],
            &["五"],
            &["六"],
            &["七"],
            &["八"],
            &["九"],
            &["十"],
            &["十一"],
            &["十二"],
        ],
        _ => return None,
    })
}

/// The words for the round numbers a writer spells out (`a hundred`
/// → `100`), lower-case: the tens, a hundred, a thousand.
fn round_words(language: &str) -> &'static [(u32, &'static [&'static str])] {
    match language {
        "en" => &[
            (20, &["twenty"]),
            (30, &["thirty"]),
            (40, &["forty"]),
            (50, &["fifty"]),
            (60, &["sixty"]),
            (70, &["seventy"]),
            (80, &["eighty"]),
            (90, &["ninety"]),
            (100, &["hundred"]),
            (1000, &["thousand"]),
        ],
        "fr" => &[
            (20, &["vingt"]),
            (30, &["trente"]),
            (40, &["quarante"]),
            (50, &["cinquante"]),
            (60, &["soixante"]),
            (70, &["septante", "soixante"]),
            (80, &["vingts", "huitante", "octante"]),
            (90, &["nonante", "vingt"]),
            (100, &["cent", "cents"]),
            (1000, &["mille"]),
        ],
        "de" => &[
            (20, &["zwanzig"]),
            (30, &["dreißig"]),
            (40, &["vierzig"]),
            (50, &["fünfzig"]),
            (60, &["sechzig"]),
            (70, &["siebzig"]),
            (80, &["achtzig"]),
            (90, &["neunzig"]),
            (100, &["hundert", "einhundert"]),
            (1000, &["tausend", "eintausend"]),
        ],
        "es" => &[
            (20, &["veinte"]),
            (30, &["treinta"]),
            (40, &["cuarenta"]),
            (50, &["cincuenta"]),
            (60, &["sesenta"]),
            (70, &["setenta"]),
            (80, &["ochenta"]),
            (90, &["noventa"]),
            (100, &["cien", "ciento"]),
            (1000, &["mil"]),
        ],
        "it" => &[
            (20, &["venti"]),
            (30, &["trenta"]),
            (40, &["quaranta"]),
            (50, &["cinquanta"]),
            (60, &["sessanta"]),
            (70, &["settanta"]),
            (80, &["ottanta"]),
            (90, &["novanta"]),
            (100, &["cento"]),
            (1000, &["mille"]),
        ],
        "pt" => &[
            (20, &["vinte"]),
            (30, &["trinta"]),
            (40, &["quarenta"]),
            (50, &["cinquenta"]),
            (60, &["sessenta"]),
            (70, &["setenta"]),
            (80, &["oitenta"]),
            (90, &["noventa"]),
            (100, &["cem", "cento"]),
            (1000, &["mil"]),
        ],
        "nl" => &[
            (20, &["twintig"]),
            (30, &["dertig"]),
            (40, &["veertig"]),
            (50, &["vijftig"]),
            (60, &["zestig"]),
            (70, &["zeventig"]),
            (80, &["tachtig"]),
            (90, &["negentig"]),
            (100, &["honderd"]),
            (1000, &["duizend"]),
        ],
        "ru" => &[
            (20, &["двадцать"]),
            (30, &["тридцать"]),
            (40, &["сорок"]),
            (50, &["пятьдесят"]),
            (60, &["шестьдесят"]),
            (70, &["семьдесят"]),
            (80, &["восемьдесят"]),
            (90, &["девяносто"]),
            (100, &["сто"]),
            (1000, &["тысяча", "тысячи", "тысяч"]),
        ],
        "zh" | "ja" => &[(100, &["百"]), (1000, &["千"])],
        _ => &[],
    }
}

/// The words `language` may write `n` as.
fn words_for(language: &str, n: u32) -> &'static [&'static str] {
    let small = usize::try_from(n)
        .ok()
        .and_then(|n| number_words(language)?.get(n).copied());
    small.unwrap_or_else(|| {
        round_words(language)
            .iter()
            .find(|(value, _)| *value == n)
            .map(|(_, words)| *words)
            .unwrap_or(&[])
    })
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

/// The source's numbers missing or changed in the translation, and the
/// translation's the source lacks, each described for a message (`"3.5"`,
/// `"1890 → 1891"`, `"added 8"`); empty when they agree.
pub(super) fn mismatches(
    source: &str,
    translation: &str,
    source_language: &str,
    target_language: &str,
) -> Vec<String> {
    let source_chars = normalize(source);
    let translation_chars = normalize(translation);
    if !source_chars.iter().any(char::is_ascii_digit)
        && !translation_chars.iter().any(char::is_ascii_digit)
    {
        return Vec::new();
    }
    // An ordinary space may group thousands (`3 500`) or part two numbers:
    // each side is read both ways and the closest reading kept.
    let source_readings = [scan(&source_chars, false), scan(&source_chars, true)];
    let translation_readings = [
        scan(&translation_chars, false),
        scan(&translation_chars, true),
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
mod tests {
    use super::*;

    fn check(source: &str, translation: &str, to: &str) -> Vec<String> {
        mismatches(source, translation, "en", to)
    }

    #[test]
    fn clean_translations_are_not_flagged() {
        let cases = [
            (
                "He paid $3,500.25 on 12 May 1890 at 10:30.",
                "Il a payé 3 500,25 $ le 12 mai 1890 à 10 h 30.",
                "fr",
            ),
            (
                "He paid $3,500.25 on 12 May 1890 at 10:30.",
                "Il a payé 3\u{202F}500,25 $ le 12 mai 1890 à 10h30.",
                "fr",
            ),
            (
                "He paid $3,500.25 on 12 May 1890 at 10:30.",
                "Il a payé 3\u{A0}500,25 $ le 12 mai 1890 à 10:30.",
                "fr",
            ),
            (
                "He paid $3,500.25 on 12 May 1890 at 10:30.",
                "Er zahlte am 12. Mai 1890 um 10.30 Uhr 3.500,25 Dollar.",
                "de",
            ),
            (
                "He paid $3,500.25 on 12 May 1890 at 10:30.",
                "Pagó 3.500,25 dólares el 12 de mayo de 1890 a las 10:30.",
                "es",
            ),
            (
                "He paid $3,500.25 on 12 May 1890 at 10:30.",
                "Pagó 3 500,25 dólares el 12 de mayo de 1890 a las 10:30.",
                "es",
            ),
            // Apertium keeps the source's format.
            (
                "He paid 3,500 dollars on 12 May 1890 at 10:30.",
                "Pagó 3,500 dólares el 12 de mayo de 1890 en 10:30.",
                "es",
            ),
            (
                "The price rose by 50% to -5.5 degrees.",
                "Le prix a augmenté de 50 % jusqu'à −5,5 degrés.",
                "fr",
            ),
            (
                "It happened on 12/05/1890.",
                "Es geschah am 12.05.1890.",
                "de",
            ),
            (
                "It happened on 5/12/1890.",
                "C'est arrivé le 12/05/1890.",
                "fr",
            ),
            (
                "It happened on 12/05/1890.",
                "C'est arrivé le 12 mai 1890.",
                "fr",
            ),
            (
                "It happened on May 12, 1890.",
                "C'est arrivé le 12/05/1890.",
                "fr",
            ),
            (
                "It was the 1st of the 2nd month.",
                "C'était le 1er du 2e mois.",
                "fr",
            ),
            ("It was the 1st time.", "Era el 1.º tiempo.", "es"),
            ("It was the 1st time.", "Es war das 1. Mal.", "de"),
            ("He had 3 sons.", "Il avait trois fils.", "fr"),
            (
                "He had 3 sons and 2 dogs.",
                "Er hatte drei Söhne und zwei Hunde.",
                "de",
            ),
            ("He had 3 sons.", "Tenía tres hijos.", "es"),
            ("He had 3 sons.", "Aveva tre figli.", "it"),
            ("He had 3 sons.", "Tinha três filhos.", "pt"),
            ("He had three sons.", "Il avait 3 fils.", "fr"),
            ("He had three sons.", "Il avait trois fils.", "fr"),
            ("In the 19th century.", "Au XIXe siècle.", "fr"),
            ("In the 19th century.", "En el siglo XIX.", "es"),
            ("At 3:30 in the afternoon.", "À 15 h 30.", "fr"),
            ("At 10:00 sharp.", "À 10 heures précises.", "fr"),
            ("At 10:30 sharp.", "Um 10 Uhr 30 genau.", "de"),
            (
                "He counted 1,000,000 stars.",
                "Il compta 1 000 000 étoiles.",
                "fr",
            ),
            (
                "He counted 1,000,000 stars.",
                "Er zählte 1.000.000 Sterne.",
                "de",
            ),
            ("It cost 3.5 francs.", "Es kostete 3,5 Franken.", "de"),
            (
                "In 1890 300 people came.",
                "En 1890, 300 personnes sont venues.",
                "fr",
            ),
            ("Rooms 12 500 and 7.", "Les chambres 12 500 et 7.", "fr"),
            ("He sold 12,500 books.", "Il vendit 12 500 livres.", "fr"),
            ("Il y avait 3 chats.", "There were 3 cats.", "en"),
            ("He was born in 1890.", "他出生于1890年。", "zh"),
            ("He was born in 1890.", "彼は１８９０年に生まれた。", "ja"),
            ("He was born in 1890.", "وُلد في عام ١٨٩٠.", "ar"),
            ("He was born in 1890.", "उनका जन्म १८९० में हुआ था।", "hi"),
            ("He had 3 sons.", "他有三个儿子。", "zh"),
            ("A hundred men came.", "100 hommes vinrent.", "fr"),
            (
                "He had 100 men and 1000 horses.",
                "Tenía cien hombres y mil caballos.",
                "es",
            ),
            ("Chapter 4", "Chapitre IV", "fr"),
            ("No numbers here.", "Pas de nombres ici.", "fr"),
            (
                "Pages 10-12 and 1890–1891.",
                "Pages 10 à 12 et 1890-1891.",
                "fr",
            ),
            ("", "", "fr"),
        ];
        for (source, translation, to) in cases {
            assert_eq!(
                check(source, translation, to),
                Vec::<String>::new(),
                "{source:?} → {translation:?}"
            );
        }
    }

    #[test]
    fn faults_are_flagged() {
        let cases = [
            (
                "He was born in 1890.",
                "Il est né en 1891.",
                "fr",
                vec!["1890 → 1891"],
            ),
            (
                "He paid 7 francs and 12 sous.",
                "Il paya 7 francs.",
                "fr",
                vec!["12"],
            ),
            (
                "He paid 7 francs.",
                "Il paya 7 francs et 12 sous.",
                "fr",
                vec!["added 12"],
            ),
            (
                "It cost 3.5 francs.",
                "Il coûtait 35 francs.",
                "fr",
                vec!["3.5 → 35"],
            ),
            (
                "It cost 3.5 francs.",
                "Es kostete 35 Franken.",
                "de",
                vec!["3.5 → 35"],
            ),
            (
                "He sold 3,500 books.",
                "Il vendit 3,5 livres.",
                "fr",
                vec!["3,500 → 3,5"],
            ),
            (
                "It was -5 degrees.",
                "Il faisait 5 degrés.",
                "fr",
                vec!["-5 → 5"],
            ),
            (
                "At 10:30 sharp.",
                "À 11 h 30 précises.",
                "fr",
                vec!["10:30 → 11 h 30"],
            ),
            (
                "It happened on 12/05/1890.",
                "C'est arrivé le 12/05/1891.",
                "fr",
                vec!["12/05/1890 → 12/05/1891"],
            ),
            (
                "It happened on 12/05/1890.",
                "C'est arrivé le 12 mai.",
                "fr",
                vec!["12/05/1890 → 12"],
            ),
            ("He had 3 sons.", "Il avait quatre fils.", "fr", vec!["3"]),
            ("He had 3 sons.", "Il avait des fils.", "fr", vec!["3"]),
            (
                "He had 31 sons.",
                "Il avait trente et un fils.",
                "fr",
                vec!["31"],
            ),
            (
                "He had 100 men.",
                "Il avait mille hommes.",
                "fr",
                vec!["100"],
            ),
            (
                "He had 3 sons.",
                "Il avait 3 fils et 3 filles.",
                "fr",
                vec!["added 3"],
            ),
            (
                "He had 3 sons and 3 daughters.",
                "Il avait 3 fils et des filles.",
                "fr",
                vec!["3"],
            ),
            ("Page 7.", "Page 8.", "fr", vec!["7 → 8"]),
            (
                "He had 1 son.",
                "Il avait un fils, le 2e.",
                "fr",
                vec!["1 → 2"],
            ),
            (
                "He had 3 sons.",
                "Il avait trois fils, nés en 1890.",
                "fr",
                vec!["added 1890"],
            ),
            (
                "He had 3 sons in 1890.",
                "Il avait trois fils en 1891.",
                "fr",
                vec!["1890 → 1891"],
            ),
            (
                "He was born in 1890.",
                "他出生于1891年。",
                "zh",
                vec!["1890 → 1891"],
            ),
            (
                "He was born in 1890.",
                "وُلد في عام ١٨٩١.",
                "ar",
                vec!["1890 → 1891"],
            ),
        ];
        for (source, translation, to, want) in cases {
            assert_eq!(
                check(source, translation, to),
                want,
                "{source:?} → {translation:?}"
            );
        }
    }

    #[test]
    fn numbers_are_read_as_written() {
        let read = |text: &str| -> Vec<Kind> {
            scan(&normalize(text), false)
                .into_iter()
                .map(|t| t.kind)
                .collect()
        };
        let number = |v: &[&str]| Kind::Number(v.iter().map(|s| (*s).to_owned()).collect());
        assert_eq!(read("3,500"), vec![number(&["3500", "3.500"])]);
        assert_eq!(read("3.500,25"), vec![number(&["3500.25"])]);
        assert_eq!(
            read("1,2,3"),
            vec![number(&["1"]), number(&["2"]), number(&["3"])]
        );
        assert_eq!(read("COVID-19"), vec![number(&["19"])]);
        assert_eq!(read("(-19)"), vec![number(&["-19"])]);
        assert_eq!(read("10h30 10 h 30 10:30"), vec![Kind::Time(10, 30); 3]);
        assert_eq!(read("5 hours"), vec![number(&["5"])]);
        assert_eq!(
            read("1890-05-12"),
            vec![Kind::Date(vec!["5".into(), "12".into(), "1890".into()])]
        );
        assert_eq!(read("٣٫٥"), vec![number(&["3.5"])]);
        assert_eq!(read("０７"), vec![number(&["7"])]);
    }
}
