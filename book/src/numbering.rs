//! Chapter-number detection: headings, titles and file names.
//!
//! Numbers may be digits, roman numerals or words (English and French cardinals
//! and ordinals: `Twelve`, `Twenty-One`, `the First`, `douze`, `quatre-vingt-dix`,
//! `premier`, `troisième`). Every detection carries a confidence and a reason a
//! person can check, because a wrong split is costly to notice later.

use std::sync::LazyLock;

use regex::Regex;
use unicode_normalization::UnicodeNormalization;

use crate::model::ChapterKind;

/// What a heading, title or file name says about a chapter.
#[derive(Debug, Clone, PartialEq)]
pub struct Detected {
    pub kind: ChapterKind,
    pub number: Option<u32>,
    pub part: Option<u32>,
    pub part_count: Option<u32>,
    /// Text after the label (`Chapter 3: The Storm` → `The Storm`).
    pub title: Option<String>,
    /// A heading of a part of the book (`Part Two`, `Livre I`), not a chapter.
    pub book_part: bool,
    pub confidence: f32,
    pub reason: String,
}

/// Lowercase and without accents, for keyword matching.
pub fn fold(s: &str) -> String {
    s.nfd()
        .filter(|c| !matches!(*c as u32, 0x0300..=0x036F))
        .flat_map(char::to_lowercase)
        .collect()
}

static ROMAN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^m{0,4}(cm|cd|d?c{0,3})(xc|xl|l?x{0,3})(ix|iv|v?i{0,3})$")
        .unwrap_or_else(|_| unreachable!())
});

/// Parses a canonical roman numeral (case-insensitive), 1 to 4999.
pub fn parse_roman(s: &str) -> Option<u32> {
    if s.is_empty() || !ROMAN.is_match(s) {
        return None;
    }
    let value = |c: char| match c.to_ascii_lowercase() {
        'i' => 1,
        'v' => 5,
        'x' => 10,
        'l' => 50,
        'c' => 100,
        'd' => 500,
        'm' => 1000,
        _ => 0,
    };
    let chars: Vec<i64> = s.chars().map(value).collect();
    let mut total = 0i64;
    for (i, v) in chars.iter().enumerate() {
        if chars.get(i + 1).is_some_and(|next| next > v) {
            total -= v;
        } else {
            total += v;
        }
    }
    u32::try_from(total).ok().filter(|t| *t > 0)
}

fn word_value(w: &str) -> Option<u32> {
    let v = match w {
        "zero" => 0,
        "one" | "first" | "un" | "une" | "premier" | "premiere" => 1,
        "two" | "second" | "deux" | "seconde" => 2,
        "three" | "third" | "trois" => 3,
        "four" | "fourth" | "quatre" => 4,
        "five" | "fifth" | "cinq" => 5,
        "six" | "sixth" => 6,
        "seven" | "seventh" | "sept" => 7,
        "eight" | "eighth" | "huit" => 8,
        "nine" | "ninth" | "neuf" => 9,
        "ten" | "tenth" | "dix" => 10,
        "eleven" | "eleventh" | "onze" => 11,
        "twelve" | "twelfth" | "douze" => 12,
        "thirteen" | "thirteenth" | "treize" => 13,
        "fourteen" | "fourteenth" | "quatorze" => 14,
        "fifteen" | "fifteenth" | "quinze" => 15,
        "sixteen" | "sixteenth" | "seize" => 16,
        "seventeen" | "seventeenth" => 17,
        "eighteen" | "eighteenth" => 18,
        "nineteen" | "nineteenth" => 19,
        "twenty" | "twentieth" | "vingt" | "vingts" => 20,
        "thirty" | "thirtieth" | "trente" => 30,
        "forty" | "fortieth" | "quarante" => 40,
        "fifty" | "fiftieth" | "cinquante" => 50,
        "sixty" | "sixtieth" | "soixante" => 60,
        "seventy" | "seventieth" => 70,
        "eighty" | "eightieth" => 80,
        "ninety" | "ninetieth" => 90,
        "hundred" | "hundredth" | "cent" | "cents" => 100,
        "thousand" | "mille" => 1000,
        _ => return french_ordinal(w),
    };
    Some(v)
}

fn french_ordinal(w: &str) -> Option<u32> {
    let stem = w.strip_suffix("ieme")?;
    let cardinal = match stem {
        "cinqu" => "cinq",
        "neuv" => "neuf",
        "quatr" => "quatre",
        "onz" => "onze",
        "douz" => "douze",
        "treiz" => "treize",
        "quatorz" => "quatorze",
        "quinz" => "quinze",
        "seiz" => "seize",
        "trent" => "trente",
        "quarant" => "quarante",
        "cinquant" => "cinquante",
        "soixant" => "soixante",
        "mill" => "mille",
        "un" => "un",
        other => other,
    };
    if cardinal.ends_with("ieme") {
        return None;
    }
    word_value(cardinal)
}

/// Parses a number written in English or French words (`Twenty-One`, `dix-sept`,
/// `quatre-vingt-dix`, `the First`, `vingt et unième`).
pub fn parse_number_words(s: &str) -> Option<u32> {
    let folded = fold(s);
    let tokens: Vec<&str> = folded
        .split(|c: char| c.is_whitespace() || c == '-')
        .filter(|t| !t.is_empty() && !matches!(*t, "and" | "et" | "the"))
        .collect();
    if tokens.is_empty() || tokens.len() > 6 {
        return None;
    }
    let mut total = 0u32;
    let mut current = 0u32;
    for t in tokens {
        let v = word_value(t)?;
        match v {
            100 => current = current.max(1) * 100,
            1000 => {
                total += current.max(1) * 1000;
                current = 0;
            }
            // "quatre-vingt" is 4 × 20.
            20 if current == 4 => current = 80,
            _ => current += v,
        }
    }
    let n = total + current;
    (n > 0).then_some(n)
}

/// Parses digits, a roman numeral or number words.
pub fn parse_number(s: &str) -> Option<u32> {
    let s = s.trim().trim_end_matches(['.', ':']);
    if !s.is_empty() && s.len() <= 5 && s.bytes().all(|b| b.is_ascii_digit()) {
        return s.parse().ok();
    }
    parse_roman(s).or_else(|| parse_number_words(s))
}

static CHAPTER_KW: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^\s*(chapter|chapitre|chap\.|chap|ch\.|capítulo|capitulo|capitolo|kapitel|hoofdstuk)\s+")
        .unwrap_or_else(|_| unreachable!())
});
static BOOK_PART_KW: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^\s*(part|partie|book|livre|volume|tome|teil)\s+")
        .unwrap_or_else(|_| unreachable!())
});
static PART_SUFFIX: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)^\s*(?:\(\s*(?:part|partie|pt\.?|teil)\s+([\p{L}\d]+)(?:\s*(?:of|sur|de|von|/)\s*([\p{L}\d]+))?\s*\)|[,\-–—:]?\s*(?:part|partie|pt\.|teil)\s+([\p{L}\d]+)(?:\s*(?:of|sur|de|von|/)\s*([\p{L}\d]+))?)",
    )
    .unwrap_or_else(|_| unreachable!())
});
static SPECIAL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)^\s*(table of contents|table des matières|title page|page de titre|about the author|à propos de l'auteur|notes de fin|prologue|prolog|prólogo|interlude|intermède|intermezzo|epilogue|épilogue|epilog|epílogo|afterword|postface|nachwort|foreword|avant-propos|preface|préface|vorwort|introduction|einleitung|appendix|appendices|annexe|annexes|appendice|anhang|endnotes|footnotes|notes|acknowledgements|acknowledgments|remerciements|dedication|dédicace|contents|sommaire|copyright|glossary|glossaire|bibliography|bibliographie|index|colophon|cover|couverture)\b",
    )
    .unwrap_or_else(|_| unreachable!())
});

/// The kind named by a special keyword (already matched by [`SPECIAL`]).
pub fn special_kind(keyword: &str) -> Option<ChapterKind> {
    use ChapterKind::*;
    let k = fold(keyword);
    Some(match k.as_str() {
        "prologue" | "prolog" | "prologo" => Prologue,
        "interlude" | "intermede" | "intermezzo" => Interlude,
        "epilogue" | "epilog" | "epilogo" => Epilogue,
        "afterword" | "postface" | "nachwort" => Afterword,
        "foreword" | "avant-propos" => Foreword,
        "preface" | "vorwort" => Preface,
        "introduction" | "einleitung" => Introduction,
        "appendix" | "appendices" | "annexe" | "annexes" | "appendice" | "anhang" => Appendix,
        "notes" | "endnotes" | "footnotes" | "notes de fin" => Notes,
        "acknowledgements" | "acknowledgments" | "remerciements" => Acknowledgements,
        "dedication" | "dedicace" => Dedication,
        "contents" | "table of contents" | "table des matieres" | "sommaire" => Toc,
        "copyright" => Copyright,
        "glossary" | "glossaire" => Glossary,
        "bibliography" | "bibliographie" => Bibliography,
        "index" => Index,
        "colophon" => Colophon,
        "title page" | "page de titre" => TitlePage,
        "cover" | "couverture" => Cover,
        "about the author" | "a propos de l'auteur" => BackMatter,
        _ => return None,
    })
}

fn strip_separators(s: &str) -> &str {
    s.trim_start_matches(|c: char| {
        c.is_whitespace() || matches!(c, '.' | ':' | '-' | '–' | '—' | ',' | '|')
    })
    .trim_end()
}

/// Reads a number at the start of `s`: digits, a roman numeral, or up to six
/// number words (longest match wins). Returns the number, how it was written,
/// and the rest.
fn leading_number(s: &str) -> Option<(u32, &'static str, &str)> {
    let s = s.trim_start();
    let digits: usize = s.bytes().take_while(u8::is_ascii_digit).count();
    if digits > 0 && digits <= 5 {
        let n = s[..digits].parse().ok()?;
        return Some((n, "digits", &s[digits..]));
    }
    let word_end = |t: &str| t.find(|c: char| !c.is_alphabetic()).unwrap_or(t.len());
    let first = word_end(s);
    if first > 0
        && let Some(n) = parse_roman(&s[..first])
    {
        return Some((n, "roman numeral", &s[first..]));
    }
    // Collect up to six words (separated by spaces or hyphens) and try the longest prefix.
    let mut ends = Vec::new();
    let mut pos = 0;
    for _ in 0..6 {
        let rest = &s[pos..];
        let w = word_end(rest);
        if w == 0 {
            break;
        }
        pos += w;
        ends.push(pos);
        let after = &s[pos..];
        let sep = after
            .find(|c: char| !(c == ' ' || c == '-'))
            .unwrap_or(after.len());
        if sep == 0 || sep > 2 {
            break;
        }
        pos += sep;
    }
    for end in ends.into_iter().rev() {
        if let Some(n) = parse_number_words(&s[..end]) {
            return Some((n, "number words", &s[end..]));
        }
    }
    None
}

fn part_suffix(rest: &str) -> (Option<u32>, Option<u32>, &str) {
    if let Some(c) = PART_SUFFIX.captures(rest) {
        let part = c.get(1).or(c.get(3)).and_then(|m| parse_number(m.as_str()));
        let of = c.get(2).or(c.get(4)).and_then(|m| parse_number(m.as_str()));
        if part.is_some() {
            let end = c.get(0).map_or(0, |m| m.end());
            return (part, of, &rest[end..]);
        }
    }
    (None, None, rest)
}

/// Recognises a chapter heading, a special's heading or a book-part heading in
/// one line of text. Lines longer than 120 characters are never headings.
pub fn detect_heading(line: &str) -> Option<Detected> {
    let line = line.trim();
    if line.is_empty() || line.chars().count() > 120 {
        return None;
    }
    let quoted = || format!("\"{}\"", line.chars().take(60).collect::<String>());
    if let Some(m) = CHAPTER_KW.find(line) {
        let after = &line[m.end()..];
        let after = after
            .strip_prefix("the ")
            .or_else(|| after.strip_prefix("The "))
            .unwrap_or(after);
        let (n, how, rest) = leading_number(after)?;
        let (part, part_count, rest) = part_suffix(rest);
        let had_separator = rest
            .trim_start()
            .starts_with(['.', ':', '-', '–', '—', ',', '|'])
            || rest.trim().is_empty();
        let title = Some(strip_separators(rest))
            .filter(|t| !t.is_empty())
            .map(str::to_string);
        let confidence = if had_separator { 0.95 } else { 0.75 };
        return Some(Detected {
            kind: ChapterKind::Chapter,
            number: Some(n),
            part,
            part_count,
            title,
            book_part: false,
            confidence,
            reason: format!("heading {} names chapter {n} in {how}", quoted()),
        });
    }
    if let Some(m) = BOOK_PART_KW.find(line)
        && let Some((n, how, rest)) = leading_number(&line[m.end()..])
    {
        let rest_ok =
            rest.trim().is_empty() || rest.trim_start().starts_with(['.', ':', '-', '–', '—']);
        if rest_ok {
            return Some(Detected {
                kind: ChapterKind::Chapter,
                number: Some(n),
                part: None,
                part_count: None,
                title: Some(strip_separators(rest))
                    .filter(|t| !t.is_empty())
                    .map(str::to_string),
                book_part: true,
                confidence: 0.8,
                reason: format!("heading {} names part {n} of the book in {how}", quoted()),
            });
        }
    }
    if let Some(c) = SPECIAL.captures(line) {
        let kw = c.get(1).map_or("", |m| m.as_str());
        let kind = special_kind(kw)?;
        let rest = &line[c.get(0).map_or(0, |m| m.end())..];
        let (part, part_count, rest) = part_suffix(rest);
        let trimmed = rest.trim();
        let separator = trimmed.is_empty()
            || trimmed.starts_with(['.', ':', '-', '–', '—', ',', '|'])
            || leading_number(trimmed).is_some_and(|(_, _, r)| r.trim().is_empty());
        if !separator || line.chars().count() > 80 {
            return None;
        }
        return Some(Detected {
            kind,
            number: None,
            part,
            part_count,
            title: Some(strip_separators(rest))
                .filter(|t| !t.is_empty())
                .map(str::to_string),
            book_part: false,
            confidence: 0.9,
            reason: format!("heading {} names a {}", quoted(), kind.key()),
        });
    }
    // A line that is only a number ("XII", "12.") is a heading in many books.
    let bare = line.trim_end_matches(['.', ':']);
    if bare.chars().count() <= 8 {
        let digits =
            !bare.is_empty() && bare.bytes().all(|b| b.is_ascii_digit()) && bare.len() <= 4;
        let roman = parse_roman(bare).filter(|_| bare.chars().all(|c| c.is_ascii_uppercase()));
        let n = if digits { bare.parse().ok() } else { roman };
        if let Some(n) = n {
            return Some(Detected {
                kind: ChapterKind::Chapter,
                number: Some(n),
                part: None,
                part_count: None,
                title: None,
                book_part: false,
                confidence: if digits { 0.7 } else { 0.65 },
                reason: format!("line {} is a bare chapter number", quoted()),
            });
        }
    }
    None
}

static NAME_CHAPTER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(?:^|[^\p{L}])(?:chapter|chapitre|chap|ch|kapitel|capitulo|c)[\s._\-]*(\d{1,4})(?:[^\d]|$)")
        .unwrap_or_else(|_| unreachable!())
});
static NAME_PART: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(?:^|[^\p{L}])(?:part|partie|pt|p)[\s._\-]*(\d{1,3})(?:\s*(?:of|sur|-)\s*(\d{1,3}))?(?:[^\d]|$)")
        .unwrap_or_else(|_| unreachable!())
});
static NAME_NUMBERS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\d{1,5}").unwrap_or_else(|_| unreachable!()));

/// Detects the chapter number (and part, or special kind) from an upload's file name.
pub fn detect_file_name(name: &str) -> Option<Detected> {
    let base = name.rsplit(['/', '\\']).next().unwrap_or(name);
    let stem = match base.rfind('.') {
        Some(i) if i > 0 => &base[..i],
        _ => base,
    };
    let spaced = stem.replace('_', " ");
    let quoted = format!("\"{base}\"");
    if let Some(mut d) = detect_heading(&spaced)
        .filter(|d| !d.book_part && (d.kind.is_special() || d.confidence >= 0.9))
    {
        d.reason = format!("file name {quoted}: {}", d.reason);
        return Some(d);
    }
    let (part, part_count) = NAME_PART
        .captures(&spaced)
        .map(|c| {
            (
                c.get(1).and_then(|m| m.as_str().parse().ok()),
                c.get(2).and_then(|m| m.as_str().parse().ok()),
            )
        })
        .unwrap_or((None, None));
    if let Some(c) = NAME_CHAPTER.captures(&spaced) {
        let n = c.get(1).and_then(|m| m.as_str().parse().ok())?;
        return Some(Detected {
            kind: ChapterKind::Chapter,
            number: Some(n),
            part,
            part_count,
            title: None,
            book_part: false,
            confidence: 0.9,
            reason: format!("file name {quoted} names chapter {n}"),
        });
    }
    let trimmed = spaced.trim();
    let lead = trimmed.bytes().take_while(u8::is_ascii_digit).count();
    if lead > 0 && lead <= 5 {
        let n: u32 = trimmed[..lead].parse().ok()?;
        let rest = strip_separators(&trimmed[lead..]);
        let title = (!rest.is_empty() && !rest.bytes().all(|b| b.is_ascii_digit()))
            .then(|| rest.to_string());
        return Some(Detected {
            kind: ChapterKind::Chapter,
            number: Some(n),
            part: part.filter(|_| title.is_some()),
            part_count,
            title,
            book_part: false,
            confidence: if rest.is_empty() { 0.9 } else { 0.8 },
            reason: format!("file name {quoted} starts with the number {n}"),
        });
    }
    if let Some(c) = SPECIAL.captures(trimmed)
        && let Some(kind) = c.get(1).and_then(|m| special_kind(m.as_str()))
    {
        return Some(Detected {
            kind,
            number: None,
            part,
            part_count,
            title: None,
            book_part: false,
            confidence: 0.8,
            reason: format!("file name {quoted} names a {}", kind.key()),
        });
    }
    let last = NAME_NUMBERS.find_iter(&spaced).last()?;
    let n: u32 = last.as_str().parse().ok()?;
    Some(Detected {
        kind: ChapterKind::Chapter,
        number: Some(n),
        part: None,
        part_count: None,
        title: None,
        book_part: false,
        confidence: 0.6,
        reason: format!("last number in the file name {quoted}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(line: &str) -> Detected {
        detect_heading(line).unwrap_or_else(|| panic!("no heading in {line:?}"))
    }

    #[test]
    fn roman_numerals() {
        assert_eq!(parse_roman("XII"), Some(12));
        assert_eq!(parse_roman("xlix"), Some(49));
        assert_eq!(parse_roman("MCMXCIV"), Some(1994));
        assert_eq!(parse_roman("IIII"), None);
        assert_eq!(parse_roman("VX"), None);
        assert_eq!(parse_roman(""), None);
    }

    #[test]
    fn number_words_in_english_and_french() {
        assert_eq!(parse_number_words("Twelve"), Some(12));
        assert_eq!(parse_number_words("Twenty-One"), Some(21));
        assert_eq!(parse_number_words("one hundred and five"), Some(105));
        assert_eq!(parse_number_words("the First"), Some(1));
        assert_eq!(parse_number_words("douze"), Some(12));
        assert_eq!(parse_number_words("dix-sept"), Some(17));
        assert_eq!(parse_number_words("vingt et un"), Some(21));
        assert_eq!(parse_number_words("soixante-dix"), Some(70));
        assert_eq!(parse_number_words("quatre-vingt-dix-neuf"), Some(99));
        assert_eq!(parse_number_words("Premier"), Some(1));
        assert_eq!(parse_number_words("troisième"), Some(3));
        assert_eq!(parse_number_words("cinquième"), Some(5));
        assert_eq!(parse_number_words("dix-neuvième"), Some(19));
        assert_eq!(parse_number_words("banana"), None);
    }

    #[test]
    fn chapter_headings() {
        let d = h("Chapter 12");
        assert_eq!(
            (d.kind, d.number, d.part, d.title.as_deref()),
            (ChapterKind::Chapter, Some(12), None, None)
        );
        assert_eq!(h("Chapitre XII").number, Some(12));
        assert_eq!(h("Chapter Twelve").number, Some(12));
        assert_eq!(h("CHAPTER the First").number, Some(1));
        assert_eq!(h("Chapitre premier").number, Some(1));
        let d = h("Chapter 12 (Part 2)");
        assert_eq!((d.number, d.part, d.part_count), (Some(12), Some(2), None));
        let d = h("Chapter 3 (Part 1 of 2): The Storm");
        assert_eq!(
            (d.number, d.part, d.part_count, d.title.as_deref()),
            (Some(3), Some(1), Some(2), Some("The Storm"))
        );
        let d = h("CHAPTER XIV: HOW MATTERS ARE MANAGED");
        assert_eq!(
            (d.number, d.title.as_deref()),
            (Some(14), Some("HOW MATTERS ARE MANAGED"))
        );
        assert!(d.reason.contains("roman numeral"), "{}", d.reason);
        assert_eq!(h("Chapitre vingt et un - Le retour").number, Some(21));
    }

    #[test]
    fn specials_have_no_number() {
        for (line, kind) in [
            ("Prologue", ChapterKind::Prologue),
            ("Interlude", ChapterKind::Interlude),
            ("Épilogue", ChapterKind::Epilogue),
            ("EPILOGUE", ChapterKind::Epilogue),
            ("Afterword", ChapterKind::Afterword),
            ("Postface", ChapterKind::Afterword),
            ("Appendix: Maps", ChapterKind::Appendix),
            ("Notes", ChapterKind::Notes),
        ] {
            let d = h(line);
            assert_eq!((d.kind, d.number), (kind, None), "{line}");
        }
        assert_eq!(h("Interlude 2").kind, ChapterKind::Interlude);
    }

    #[test]
    fn sentences_are_not_headings() {
        assert!(
            detect_heading("Chapter and verse were quoted at length by the old man.").is_none()
        );
        assert!(detect_heading("Introductions were made all round, and we sat.").is_none());
        assert!(detect_heading("I went home.").is_none());
        assert!(detect_heading("").is_none());
        assert!(detect_heading(&"Chapter 1 ".repeat(30)).is_none());
    }

    #[test]
    fn bare_numbers_and_book_parts() {
        assert_eq!(h("XII.").number, Some(12));
        assert_eq!(h("7").number, Some(7));
        assert!(h("Part Two").book_part);
        assert!(h("LIVRE I").book_part);
    }

    #[test]
    fn file_names() {
        let d = detect_file_name("chapter-012.txt").unwrap();
        assert_eq!(d.number, Some(12));
        assert!(d.confidence >= 0.9);
        assert_eq!(detect_file_name("012.txt").unwrap().number, Some(12));
        let d = detect_file_name("07 - The Return.docx").unwrap();
        assert_eq!(
            (d.number, d.title.as_deref()),
            (Some(7), Some("The Return"))
        );
        let d = detect_file_name("Chapter 12 (Part 2).txt").unwrap();
        assert_eq!((d.number, d.part), (Some(12), Some(2)));
        assert_eq!(detect_file_name("ch5_part2.txt").unwrap().part, Some(2));
        assert_eq!(
            detect_file_name("prologue.txt").unwrap().kind,
            ChapterKind::Prologue
        );
        let d = detect_file_name("my-book-v2-17.txt").unwrap();
        assert_eq!(d.number, Some(17));
        assert!(d.confidence < 0.7);
        assert!(detect_file_name("notes-on-text.md").is_some_and(|d| d.kind == ChapterKind::Notes));
        assert!(detect_file_name("readme.txt").is_none());
    }
}
