//! The glossary and names checks: `locked_term`, `glossary_term` and
//! `name_drift`.
//!
//! A term applies when its source occurs in the source text as a whole
//! word, ignoring case, and not joined by a hyphen to another word
//! (`to-day` is not `day`); the translation must then hold the term's
//! translation as a whole word, ignoring case, or its regular plural or
//! inflected form in the target language (`día` → `días`, `Tag` →
//! `Tage`). A character applies when its name or one of its aliases
//! occurs in the source as a whole word, with its case (names are
//! capitalised, and "Rose" the name is not "rose" the flower); the
//! translation must then hold the canonical rendering, with its case, at
//! the start of a word (so an inflected form such as "Alicias" passes, an
//! upper-cased "ALICE" does not), and no misspelling of it: a capitalised
//! word one letter from the rendering (two in a long one), with its
//! initial, that is no word of the source nor another character's name
//! (`Hammonnd` beside `Hammond`). The source is read run by run between
//! its placeholders, so a phrase split by markup is not looked for; the
//! translation is read with its placeholders removed.

use unicode_normalization::UnicodeNormalization;
use unicode_segmentation::UnicodeSegmentation;

use super::text::{self, Fit};
use super::{Sheet, SheetName, SheetTerm};

/// What the term checks found missing: the terms' source phrases.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct MissingTerms {
    pub locked: Vec<String>,
    pub glossary: Vec<String>,
}

/// Whether `phrase` occurs in one of the source's runs as `matches` says.
fn in_source(runs: &[&str], matches: impl Fn(&str) -> bool) -> bool {
    runs.iter().any(|run| matches(run))
}

/// How many times `needle` is a whole word of `haystack`: all told, and
/// those no hyphen joins to a neighbouring word (`to-day` and `day-dream`
/// count only as `day` all told, whose sense the compound need not keep).
fn count_standalone(haystack: &str, needle: &str) -> (usize, usize) {
    let letter = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
    let (mut all, mut alone) = (0, 0);
    let mut from = 0;
    while let Some(at) = haystack
        .get(from..)
        .and_then(|rest| text::find_word(rest, needle, Fit::Whole))
    {
        let start = from + at;
        let end = start + needle.len();
        let mut before = haystack[..start].chars().rev();
        let mut after = haystack[end..].chars();
        let joined_before = before.next() == Some('-') && letter(before.next());
        let joined_after = after.next() == Some('-') && letter(after.next());
        all += 1;
        alone += usize::from(!joined_before && !joined_after);
        from = end.max(start + 1);
    }
    (all, alone)
}

/// `folded_runs` are the source's runs lower-cased once for every term.
fn term_applies(folded_runs: &[String], term: &SheetTerm) -> bool {
    !term.source.trim().is_empty() && !term.translation.trim().is_empty() && {
        let needle = term.source.trim().to_lowercase();
        folded_runs
            .iter()
            .any(|run| text::has_word(run, &needle, Fit::Whole))
    }
}

/// Whether a term that applies is rendered: the rendering itself is in
/// the translation, or its forms (`días`) are there as many times as the
/// term's forms (`day`, `days`) stand alone in the source — so `every
/// day` may read `todos los días`, but a `día` replaced is not made up
/// for by the `días` that stood for `days`, and `to-day` alone asks for
/// nothing unless the term is left in the translation untranslated.
fn rendered(
    term: &str,
    rendering: &str,
    folded_runs: &[String],
    folded_translation: &str,
    languages: (&str, &str),
) -> bool {
    if text::has_word(folded_translation, rendering, Fit::Whole) {
        return true;
    }
    let mut source_forms = rendering_forms(term, languages.0);
    source_forms.sort_unstable();
    source_forms.dedup();
    let mut target_forms = rendering_forms(rendering, languages.1);
    target_forms.sort_unstable();
    target_forms.dedup();
    let (all, alone) = source_forms
        .iter()
        .flat_map(|form| folded_runs.iter().map(|run| count_standalone(run, form)))
        .fold((0, 0), |(a, b), (x, y)| (a + x, b + y));
    let found: usize = target_forms
        .iter()
        .map(|form| count_words(folded_translation, form, Fit::Whole))
        .sum();
    let left_in = languages.0 != languages.1
        && term != rendering
        && source_forms
            .iter()
            .any(|form| text::has_word(folded_translation, form, Fit::Whole));
    found >= alone && !(left_in && found < all)
}

/// The regular plural and inflected forms of a (lower-case) word in
/// `language`, itself first. Languages not listed get the word alone.
fn inflections(word: &str, language: &str) -> Vec<String> {
    let mut out = vec![word.to_owned()];
    let suffixed = |endings: &[&str]| endings.iter().map(|e| format!("{word}{e}")).collect();
    // The word with its last letter or letters replaced.
    let swap = |from: &str, to: &[&str]| -> Vec<String> {
        word.strip_suffix(from)
            .map(|stem| to.iter().map(|t| format!("{stem}{t}")).collect())
            .unwrap_or_default()
    };
    let more: Vec<String> = match language {
        "es" => [
            suffixed(&["s", "es"]),
            swap("z", &["ces"]),
            // An accent on the last syllable goes with `-es`: `razón` →
            // `razones`.
            swap("ón", &["ones"]),
            swap("án", &["anes"]),
            swap("én", &["enes"]),
            swap("ín", &["ines"]),
            swap("és", &["eses"]),
        ]
        .concat(),
        "pt" => [
            suffixed(&["s", "es"]),
            swap("ão", &["ões", "ães", "ãos"]),
            swap("m", &["ns"]),
            swap("l", &["is"]),
        ]
        .concat(),
        "fr" => [suffixed(&["s", "x"]), swap("al", &["aux"])].concat(),
        "it" => [
            swap("o", &["i"]),
            swap("a", &["e"]),
            swap("e", &["i"]),
            swap("co", &["chi"]),
            swap("ca", &["che"]),
            swap("go", &["ghi"]),
            swap("ga", &["ghe"]),
        ]
        .concat(),
        "de" => suffixed(&["e", "en", "n", "s", "es", "er", "ern"]),
        "nl" => suffixed(&["en", "s", "n"]),
        "en" => [
            suffixed(&["s", "es"]),
            swap("y", &["ies"]),
            swap("f", &["ves"]),
            swap("fe", &["ves"]),
            // `man` → `men`, `woman` → `women`, `fisherman` → `fishermen`.
            swap("man", &["men"]),
            swap("child", &["children"]),
            swap("foot", &["feet"]),
            swap("tooth", &["teeth"]),
            swap("mouse", &["mice"]),
            swap("goose", &["geese"]),
        ]
        .concat(),
        _ => Vec::new(),
    };
    out.extend(more);
    out
}

/// The forms of a (lower-case) rendering that count as it: its head word
/// inflected, the first word in the Romance languages (`cœurs de
/// distorsion`), the last elsewhere (`warp cores`).
fn rendering_forms(rendering: &str, language: &str) -> Vec<String> {
    let words: Vec<&str> = rendering.split(' ').collect();
    let head = if matches!(language, "es" | "pt" | "fr" | "it") {
        0
    } else {
        words.len().saturating_sub(1)
    };
    let Some(word) = words.get(head) else {
        return vec![rendering.to_owned()];
    };
    inflections(word, language)
        .into_iter()
        .map(|form| {
            let mut parts = words.clone();
            parts[head] = &form;
            parts.join(" ")
        })
        .collect()
}

/// The sheet's terms that apply to the source (`source_runs`, its text
/// between placeholders) and are missing from the plain translation, in
/// `target_language` (BCP 47). A term listed twice counts once.
pub(super) fn missing_terms(
    source_runs: &[&str],
    translation: &str,
    sheet: &Sheet,
    source_language: &str,
    target_language: &str,
) -> MissingTerms {
    let from = text::primary(source_language);
    let to = text::primary(target_language);
    let mut missing = MissingTerms::default();
    // A volume's glossary has hundreds of terms: the texts are folded once.
    let folded_runs: Vec<String> = source_runs.iter().map(|r| r.to_lowercase()).collect();
    let folded_translation = translation.to_lowercase();
    let mut seen: std::collections::HashSet<String> = std::collections::HashSet::new();
    for term in &sheet.terms {
        let key = term.source.trim().to_lowercase();
        if seen.contains(&key) || !term_applies(&folded_runs, term) {
            continue;
        }
        seen.insert(key.clone());
        let rendering = term.translation.trim().to_lowercase();
        if rendered(
            &key,
            &rendering,
            &folded_runs,
            &folded_translation,
            (&from, &to),
        ) {
            continue;
        }
        let found = term.source.trim().to_owned();
        if term.locked {
            missing.locked.push(found);
        } else {
            missing.glossary.push(found);
        }
    }
    missing
}

/// The first of a character's names found in the source, if any.
fn name_in_source<'a>(runs: &[&str], name: &'a SheetName) -> Option<&'a str> {
    name.names
        .iter()
        .map(|n| n.trim())
        .filter(|n| !n.is_empty())
        .find(|n| in_source(runs, |run| text::has_word(run, n, Fit::Whole)))
}

/// Whether the word at byte `at` of `text` opens a sentence: nothing but
/// spaces and opening punctuation between it and the text's start or a
/// stop. There a capital says nothing of a name (`Claro` beside `Clara`).
fn opens_sentence(text: &str, at: usize) -> bool {
    text[..at]
        .chars()
        .rev()
        .find(|c| !c.is_whitespace() && !"\"'“‘«¿¡([—–-".contains(*c))
        .is_none_or(|c| ".!?…:;".contains(c))
}

/// The words of `text` (Unicode word boundaries), with their byte
/// offsets.
fn words_at(text: &str) -> Vec<(usize, &str)> {
    text.unicode_word_indices().collect()
}

/// A letter without its accent (`Á` → `A`): the first of its canonical
/// decomposition.
fn unaccented(c: char) -> char {
    c.nfd().next().unwrap_or(c)
}

/// A word of the translation that looks like `rendering` misspelt: a
/// capitalised word with its initial (accented or not), one edit from it
/// (two when it has eight letters or more), not an inflection of it (the
/// rendering with letters added, or its last letter changed: `Alicias`,
/// `Алисы`), among `words`; `known` holds the source's words and the
/// sheet's names, never misspellings.
fn misspelt<'a>(
    rendering: &str,
    words: &[(usize, &'a str)],
    known: &[&str],
) -> Vec<(usize, &'a str)> {
    let wanted: Vec<char> = rendering.chars().collect();
    let Some(&initial) = wanted.first() else {
        return Vec::new();
    };
    if wanted.len() < 4 || !initial.is_uppercase() {
        return Vec::new();
    }
    let limit = if wanted.len() >= 8 { 2 } else { 1 };
    let stem: String = wanted[..wanted.len() - 1].iter().collect();
    let last = wanted[wanted.len() - 1];
    let inflected = |word: &str| {
        // An ending added, but not the last letter doubled (`Stubbb`).
        word.strip_prefix(rendering)
            .is_some_and(|ending| ending.chars().any(|c| c != last))
            || (word.starts_with(stem.as_str())
                && !word.ends_with(last)
                && word.chars().count() <= wanted.len() + 2)
    };
    words
        .iter()
        .filter(|(_, word)| {
            word.chars()
                .next()
                .is_some_and(|c| c.is_uppercase() && unaccented(c) == unaccented(initial))
                && *word != rendering
                && !inflected(word)
                && known.binary_search(word).is_err()
        })
        .filter(|(_, word)| {
            word.chars().count().abs_diff(wanted.len()) <= limit
                && strsim::osa_distance(word, rendering) <= limit
        })
        .copied()
        .collect()
}

/// For each character of the sheet named in the source whose rendering
/// the plain translation lacks: the name found and the rendering
/// expected; for each whose rendering is misspelt in it: the misspelling
/// and the rendering. A misspelling that opens a sentence counts only
/// when the rendering is there fewer times than the source names the
/// character: there a capitalised word of the language may look like
/// the name. Characters with an empty rendering are skipped.
pub(super) fn drifted_names(
    source_runs: &[&str],
    translation: &str,
    sheet: &Sheet,
) -> Vec<(String, String)> {
    let words = words_at(translation);
    let mut known: Vec<&str> = source_runs
        .iter()
        .flat_map(|run| words_at(run).into_iter().map(|(_, w)| w))
        .collect();
    for name in &sheet.names {
        for n in name.names.iter().chain([&name.rendering]) {
            known.extend(n.split_whitespace());
        }
    }
    known.sort_unstable();
    known.dedup();
    sheet
        .names
        .iter()
        .filter(|n| !n.rendering.trim().is_empty())
        .filter_map(|n| {
            let found = name_in_source(source_runs, n)?;
            let rendering = n.rendering.trim();
            if !text::has_word(translation, rendering, Fit::Start) {
                return Some((found.to_owned(), rendering.to_owned()));
            }
            let mentions: usize = n
                .names
                .iter()
                .map(|name| name.trim())
                .filter(|name| !name.is_empty())
                .map(|name| {
                    source_runs
                        .iter()
                        .map(|run| count_words(run, name, Fit::Whole))
                        .sum::<usize>()
                })
                .sum();
            let short = count_words(translation, rendering, Fit::Start) < mentions;
            let misspelling = rendering.split_whitespace().find_map(|part| {
                misspelt(part, &words, &known)
                    .into_iter()
                    .find(|(at, _)| short || !opens_sentence(translation, *at))
            });
            misspelling.map(|(_, word)| (word.to_owned(), rendering.to_owned()))
        })
        .collect()
}

/// How many times `needle` fits a word of `haystack` as `fit` says.
fn count_words(haystack: &str, needle: &str, fit: Fit) -> usize {
    let mut count = 0;
    let mut from = 0;
    while let Some(at) = haystack
        .get(from..)
        .and_then(|rest| text::find_word(rest, needle, fit))
    {
        count += 1;
        from += at + needle.len().max(1);
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sheet() -> Sheet {
        Sheet {
            terms: vec![
                SheetTerm {
                    source: "warp core".into(),
                    translation: "cœur de distorsion".into(),
                    locked: true,
                },
                SheetTerm {
                    source: "Guild".into(),
                    translation: "Guilde".into(),
                    locked: false,
                },
                SheetTerm {
                    source: "tea".into(),
                    translation: "tea".into(),
                    locked: false,
                },
            ],
            names: vec![
                SheetName {
                    names: vec!["Alice".into(), "Ally".into()],
                    rendering: "Alicia".into(),
                },
                SheetName {
                    names: vec!["Rose".into()],
                    rendering: "Rose".into(),
                },
                SheetName {
                    names: vec!["Bob".into()],
                    rendering: String::new(),
                },
            ],
        }
    }

    fn terms(source: &str, translation: &str) -> (usize, usize) {
        let runs = text::segments(source);
        let m = missing_terms(&runs, &text::plain(translation), &sheet(), "en", "fr");
        (m.locked.len(), m.glossary.len())
    }

    #[test]
    fn term_table() {
        let cases = [
            // Kept, whatever the case, inside markup too.
            (
                "The Warp Core hums.",
                "Le cœur de distorsion vibre.",
                (0, 0),
            ),
            (
                "The warp core hums.",
                "Le ⟦1⟧CŒUR DE DISTORSION⟦/1⟧ vibre.",
                (0, 0),
            ),
            // Missing or altered.
            ("The warp core hums.", "Le noyau vibre.", (1, 0)),
            (
                "The warp core hums.",
                "Le cœur de distorsions vibre.",
                (1, 0),
            ),
            ("The guild met.", "La corporation s'est réunie.", (0, 1)),
            (
                "The guild met over the warp core.",
                "Ils se sont réunis.",
                (1, 1),
            ),
            // A term whose translation is its source is still checked.
            ("Some tea?", "Un peu de thé ?", (0, 1)),
            ("Some tea?", "Un peu de tea ?", (0, 0)),
            // Not in the source as a whole word, or split by markup.
            ("The warp cores hum.", "Les noyaux vibrent.", (0, 0)),
            ("Guildhall and teapot.", "Maison et théière.", (0, 0)),
            ("The warp⟦1/⟧ core hums.", "Le noyau vibre.", (0, 0)),
        ];
        for (source, translation, want) in cases {
            assert_eq!(
                terms(source, translation),
                want,
                "{source:?} → {translation:?}"
            );
        }
    }

    #[test]
    fn a_term_listed_twice_counts_once() {
        let mut sheet = sheet();
        sheet.terms.push(sheet.terms[0].clone());
        let runs = text::segments("The warp core hums.");
        assert_eq!(
            missing_terms(&runs, "Le noyau vibre.", &sheet, "en", "fr")
                .locked
                .len(),
            1
        );
    }

    #[test]
    fn name_table() {
        let cases = [
            ("Alice smiled.", "Alicia sourit.", 0),
            ("Ally smiled.", "Alicia sourit.", 0),
            ("Alice's book.", "Le livre d'⟦1⟧Alicia⟦/1⟧.", 0),
            ("Alice smiled.", "Alicias Lächeln.", 0),
            // Drift: another spelling, upper- or lower-cased.
            ("Alice smiled.", "Alice sourit.", 1),
            ("Alice smiled.", "ALICE sourit.", 1),
            ("Rose smiled.", "ROSE sourit.", 1),
            ("Rose smiled.", "rose sourit.", 1),
            ("Alice met Rose.", "ALICE a vu ROSE.", 2),
            // Not a name here: case-sensitive, whole words.
            ("A rose bloomed.", "Une rose fleurit.", 0),
            ("Alicent smiled.", "Alicent sourit.", 0),
            // No rendering to check.
            ("Bob smiled.", "BOB sourit.", 0),
        ];
        for (source, translation, want) in cases {
            let runs = text::segments(source);
            let found = drifted_names(&runs, &text::plain(translation), &sheet());
            assert_eq!(found.len(), want, "{source:?} → {translation:?}");
        }
    }

    fn term_sheet(source: &str, translation: &str) -> Sheet {
        Sheet {
            terms: vec![SheetTerm {
                source: source.into(),
                translation: translation.into(),
                locked: true,
            }],
            names: Vec::new(),
        }
    }

    #[test]
    fn inflected_renderings_count_and_replaced_ones_do_not() {
        let cases = [
            // Plural and inflected forms of the rendering.
            (
                "day",
                "día",
                "Every day he came.",
                "Todos los días vino.",
                "es",
                0,
            ),
            ("day", "tag", "Every day.", "Alle Tage.", "de", 0),
            ("nation", "razón", "A nation.", "Las razones.", "es", 0),
            ("day", "giorno", "Every day.", "Tutti i giorni.", "it", 0),
            // A hyphenated compound is not the word.
            ("day", "día", "He came to-day.", "Vino hoy.", "es", 0),
            // A synonym, or the term left in English.
            (
                "river",
                "río",
                "The river was wide.",
                "El cauce era ancho.",
                "es",
                1,
            ),
            (
                "river",
                "río",
                "The river ran.",
                "El river corría.",
                "es",
                1,
            ),
            (
                "river",
                "río",
                "We went up-river.",
                "Fuimos arriba-river.",
                "es",
                1,
            ),
            // A singular replaced is not made up for by the plural that
            // stands for the source's plural (`men` → `hombres`).
            (
                "day",
                "día",
                "The day and the days.",
                "La jornada y los días.",
                "es",
                1,
            ),
            (
                "man",
                "hombre",
                "The men came; a man stayed.",
                "Los hombres vinieron; un varón se quedó.",
                "es",
                1,
            ),
            (
                "man",
                "hombre",
                "The men came; a man stayed.",
                "Los hombres vinieron; un hombre se quedó.",
                "es",
                0,
            ),
        ];
        for (term, rendering, source, translation, to, want) in cases {
            let runs = text::segments(source);
            let found = missing_terms(&runs, translation, &term_sheet(term, rendering), "en", to);
            assert_eq!(
                found.locked.len(),
                want,
                "{source:?} → {translation:?} ({to})"
            );
        }
    }

    #[test]
    fn a_misspelt_mention_is_drift_beside_right_ones() {
        let mut sheet = sheet();
        sheet.names.push(SheetName {
            names: vec!["Clara".into()],
            rendering: "Clara".into(),
        });
        sheet.names.push(SheetName {
            names: vec!["Stubb".into()],
            rendering: "Stubb".into(),
        });
        sheet.names.push(SheetName {
            names: vec!["Lisa".into()],
            rendering: "Алиса".into(),
        });
        let cases = [
            (
                "Alice spoke and Alice left.",
                "Alicia habló y Alicai se fue.",
                vec!["Alicai"],
            ),
            (
                "Alice spoke and Alice left.",
                "Alicia habló y Alícia se fue.",
                vec!["Alícia"],
            ),
            (
                "Alice spoke and Alice left.",
                "Alicia habló y Aliccia se fue.",
                vec!["Aliccia"],
            ),
            (
                "Clara sang and Clara laughed.",
                "Clara cantó y Clarra rió.",
                vec!["Clarra"],
            ),
            (
                "Stubb spoke and Stubb left.",
                "Stubb habló y Stubbb se fue.",
                vec!["Stubbb"],
            ),
            ("Stubb's boat.", "El bote de Stubbs.", vec![]),
            // Opening a sentence, with the rendering there less often
            // than the source names her.
            (
                "Clara sang. Clara laughed.",
                "Clara cantó. Clarra rió.",
                vec!["Clarra"],
            ),
            // A word of the language opening a sentence, every mention
            // rendered.
            ("Clara laughed. Of course.", "Clara rió. Claro.", vec![]),
            (
                "Alice spoke. Ally left.",
                "Alicia habló. Alicia se fue.",
                vec![],
            ),
            // Another name of the source, an inflection.
            ("Alice met Alicja.", "Alicia conoció a Alicja.", vec![]),
            ("Lisa and Lisa's book.", "Алиса и книга Алисы.", vec![]),
        ];
        for (source, translation, want) in cases {
            let runs = text::segments(source);
            let found: Vec<String> = drifted_names(&runs, translation, &sheet)
                .into_iter()
                .map(|(found, _)| found)
                .collect();
            assert_eq!(found, want, "{source:?} → {translation:?}");
        }
    }
}
