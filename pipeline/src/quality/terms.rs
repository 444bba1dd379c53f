//! The glossary and names checks: `locked_term`, `glossary_term` and
//! `name_drift`.
//!
//! A term applies when its source occurs in the source text as a whole
//! word, ignoring case; the translation must then hold the term's
//! translation as a whole word, ignoring case. A character applies when
//! its name or one of its aliases occurs in the source as a whole word,
//! with its case (names are capitalised, and "Rose" the name is not "rose"
//! the flower); the translation must then hold the canonical rendering,
//! with its case, at the start of a word (so an inflected form such as
//! "Alicias" passes, an upper-cased "ALICE" does not). The source is read
//! run by run between its placeholders, so a phrase split by markup is
//! not looked for; the translation is read with its placeholders removed.

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

/// `folded_runs` are the source's runs lower-cased once for every term.
fn term_applies(folded_runs: &[String], term: &SheetTerm) -> bool {
    !term.source.trim().is_empty() && !term.translation.trim().is_empty() && {
        let needle = term.source.trim().to_lowercase();
        folded_runs
            .iter()
            .any(|run| text::has_word(run, &needle, Fit::Whole))
    }
}

/// The sheet's terms that apply to the source (`source_runs`, its text
/// between placeholders) and are missing from the plain translation. A
/// term listed twice counts once.
pub(super) fn missing_terms(
    source_runs: &[&str],
    translation: &str,
    sheet: &Sheet,
) -> MissingTerms {
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
        seen.insert(key);
        let rendering = term.translation.trim().to_lowercase();
        if text::has_word(&folded_translation, &rendering, Fit::Whole) {
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

/// For each character of the sheet named in the source whose rendering
/// the plain translation lacks: the name found and the rendering expected.
/// Characters with an empty rendering are skipped.
pub(super) fn drifted_names(
    source_runs: &[&str],
    translation: &str,
    sheet: &Sheet,
) -> Vec<(String, String)> {
    sheet
        .names
        .iter()
        .filter(|n| !n.rendering.trim().is_empty())
        .filter_map(|n| {
            let found = name_in_source(source_runs, n)?;
            let rendering = n.rendering.trim();
            (!text::has_word(translation, rendering, Fit::Start))
                .then(|| (found.to_owned(), rendering.to_owned()))
        })
        .collect()
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
        let m = missing_terms(&runs, &text::plain(translation), &sheet());
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
            missing_terms(&runs, "Le noyau vibre.", &sheet).locked.len(),
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
}
