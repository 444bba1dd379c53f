//! The simulator's answer in the analysis protocol of
//! `dragoman_pipeline::analysis`: a deterministic reading of each
//! passage's text, crude but enough for the memory service to have
//! something consistent to store.
//!
//! On the text with its placeholders removed:
//! - characters: every capitalised word (one capital, then lower-case
//!   letters) that does not start a sentence and is not in [`STOP`], once
//!   per passage, rendered by [`crate::pseudo::render`] (kept as it is in
//!   `--translator apertium` mode); `Alice (Ally)` gives
//!   `Alice` with the alias `Ally`, which is then no entity of its own;
//! - terms: every all-capitals word of three letters or more;
//! - style: `tense` past when a word ends in "ed", `register` literary when
//!   there is a `;` or a sentence of more than 25 words;
//! - summary: the first 12 words; events: the first sentence.

use dragoman_book::placeholder::{self, Token};

use dragoman_model::analysis::{ExtractedEntity, ExtractedTerm, Extraction, StyleNote};
use dragoman_model::llm_protocol::{AnalysisAnswer, AnalysisMessage, AnswerAnalysis};
use dragoman_model::vocab::{BibleAspect, EntityKind};

/// Capitalised words that are not names.
const STOP: [&str; 25] = [
    "I",
    "Mr",
    "Mrs",
    "Ms",
    "Miss",
    "Dr",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// Longest evidence of an entity or a term, in characters.
const EVIDENCE_CHARS: usize = 60;

/// Longest event, in characters.
const EVENT_CHARS: usize = 80;

/// Quotes skipped when looking for what precedes a word.
const QUOTES: [char; 11] = ['"', '\'', '“', '”', '‘', '’', '«', '»', '„', '‹', '›'];

/// How a name or a term reads in a target language.
pub(super) type Render = fn(&str, &str) -> String;

/// The answer to an analysis message: one analysis per passage, same ids,
/// same order; names and terms rendered by `render` ([`crate::pseudo::render`],
/// or kept as they are in `--translator apertium` mode).
pub(super) fn answer(message: &AnalysisMessage, render: Render) -> String {
    let answer = AnalysisAnswer {
        analyses: message
            .passages
            .iter()
            .map(|p| AnswerAnalysis {
                id: serde_json::Value::String(p.id.clone()),
                extraction: analyse(&p.text, &message.target_language, render),
            })
            .collect(),
    };
    // Plain strings always serialize; an empty answer would only be read as
    // malformed.
    serde_json::to_string(&answer).unwrap_or_default()
}

/// `text` without its placeholders; as it is when they cannot be read.
pub(super) fn strip_placeholders(text: &str) -> String {
    match placeholder::tokenize(text) {
        Ok(tokens) => tokens
            .iter()
            .filter_map(|t| match t {
                Token::Text(s) => Some(*s),
                _ => None,
            })
            .collect(),
        Err(_) => text.to_owned(),
    }
}

/// The analysis of one passage.
fn analyse(text: &str, target: &str, render: Render) -> Extraction {
    let text = strip_placeholders(text);
    let sentences = sentences(&text);
    let evidence = |at: usize| {
        let sentence = sentences
            .iter()
            .find(|(start, end)| (*start..*end).contains(&at))
            .map_or("", |(start, end)| &text[*start..*end]);
        clip(sentence.trim(), EVIDENCE_CHARS)
    };
    let entities = names(&text)
        .into_iter()
        .map(|name| ExtractedEntity {
            kind: EntityKind::Character,
            target_name: Some(render(&name.name, target)),
            description: "named in the text".into(),
            evidence: evidence(name.at),
            aliases: name.aliases,
            name: name.name,
            gender: None,
            address: None,
        })
        .collect();
    let mut terms: Vec<ExtractedTerm> = Vec::new();
    for (at, word) in words(&text) {
        let caps = word.chars().count() >= 3 && word.chars().all(char::is_uppercase);
        if caps && !terms.iter().any(|t| t.source == word) {
            terms.push(ExtractedTerm {
                source: word.to_owned(),
                translation: Some(render(word, target)),
                category: "term".into(),
                evidence: evidence(at),
            });
        }
    }
    let opening = first_words(&text, 8);
    let past = words(&text)
        .iter()
        .any(|(_, w)| w.chars().count() > 2 && w.to_lowercase().ends_with("ed"));
    let literary = text.contains(';')
        || sentences
            .iter()
            .any(|(start, end)| text[*start..*end].split_whitespace().count() > 25);
    let style = vec![
        StyleNote {
            aspect: BibleAspect::Tense,
            text: if past { "past" } else { "present" }.into(),
            evidence: opening.clone(),
        },
        StyleNote {
            aspect: BibleAspect::Register,
            text: if literary { "literary" } else { "plain" }.into(),
            evidence: opening,
        },
    ];
    let first_sentence = sentences
        .first()
        .map(|(start, end)| clip(text[*start..*end].trim(), EVENT_CHARS))
        .unwrap_or_default();
    Extraction {
        entities,
        terms,
        style,
        summary: first_words(&text, 12),
        events: if first_sentence.is_empty() {
            Vec::new()
        } else {
            vec![first_sentence]
        },
    }
}

/// A name found in a passage: where it is first found, and its aliases.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Name {
    pub name: String,
    pub at: usize,
    pub aliases: Vec<String>,
}

/// The names of `text` (placeholders already removed), in order of first
/// appearance off a sentence start.
pub(super) fn names(text: &str) -> Vec<Name> {
    let words = words(text);
    let is_name = |w: &str| capitalised(w) && !STOP.contains(&w);
    // `Name (Alias)` anywhere, sentence starts included: the alias belongs to
    // the name wherever the name is found.
    let mut pairs: Vec<(&str, &str)> = Vec::new();
    for (at, word) in &words {
        if let Some(alias) = alias_after(&text[at + word.len()..])
            && is_name(word)
            && !pairs.contains(&(*word, alias))
        {
            pairs.push((*word, alias));
        }
    }
    let mut found: Vec<Name> = Vec::new();
    for (at, word) in &words {
        let alias = pairs.iter().any(|(_, a)| a == word);
        if !is_name(word) || alias || sentence_start(text, *at) {
            continue;
        }
        if found.iter().any(|n| n.name == *word) {
            continue;
        }
        found.push(Name {
            name: (*word).to_owned(),
            at: *at,
            aliases: pairs
                .iter()
                .filter(|(n, _)| n == word)
                .map(|(_, a)| (*a).to_owned())
                .collect(),
        });
    }
    found
}

/// The capitalised word in parentheses at the start of `rest` (after
/// spaces), as in ` (Ally)`.
fn alias_after(rest: &str) -> Option<&str> {
    let inner = rest.trim_start().strip_prefix('(')?;
    let (alias, _) = inner.split_once(')')?;
    let alias = alias.trim();
    capitalised(alias).then_some(alias)
}

/// One upper-case letter followed by lower-case ones only.
fn capitalised(word: &str) -> bool {
    let mut chars = word.chars();
    chars.next().is_some_and(char::is_uppercase)
        && chars.clone().next().is_some()
        && chars.all(char::is_lowercase)
}

/// The runs of letters of `text`, with their byte offsets.
fn words(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        match (c.is_alphabetic(), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                out.push((s, &text[s..i]));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push((s, &text[s..]));
    }
    out
}

/// Whether the word at byte `at` starts a sentence: nothing but spaces and
/// quotes before it, back to the text's start or to `.`, `!`, `?` or `:`.
fn sentence_start(text: &str, at: usize) -> bool {
    text[..at]
        .chars()
        .rev()
        .find(|c| !c.is_whitespace() && !QUOTES.contains(c))
        .is_none_or(|c| matches!(c, '.' | '!' | '?' | ':'))
}

/// Byte spans of the sentences of `text`: each ends after its run of `.`,
/// `!` and `?`; the last may have none. Blank spans are left out.
fn sentences(text: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let ends = matches!(c, '.' | '!' | '?')
            && !chars
                .peek()
                .is_some_and(|(_, n)| matches!(n, '.' | '!' | '?'));
        if ends {
            let end = i + c.len_utf8();
            spans.push((start, end));
            start = end;
        }
    }
    spans.push((start, text.len()));
    spans.retain(|(s, e)| !text[*s..*e].trim().is_empty());
    spans
}

fn first_words(text: &str, n: usize) -> String {
    text.split_whitespace()
        .take(n)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The first `max` characters of `text`.
fn clip(text: &str, max: usize) -> String {
    text.chars().take(max).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pseudo;
    use dragoman_model::llm_protocol::PassageIn;

    fn message(texts: &[(&str, &str)]) -> AnalysisMessage {
        AnalysisMessage {
            task: dragoman_pipeline::analysis::TASK.into(),
            source_language: "en".into(),
            target_language: "fr".into(),
            passages: texts
                .iter()
                .map(|(id, text)| PassageIn {
                    id: (*id).into(),
                    text: (*text).into(),
                })
                .collect(),
        }
    }

    #[test]
    fn a_sample_passage_is_analysed() {
        let text = "Bob met Alice (Ally) on Monday near the ⟦1⟧WARPCORE⟦/1⟧. \
            \"Carol\" waved: Dana smiled. Then Mr Evans called Alice again and Ally listened.";
        let answer = answer(&message(&[("p1", text), ("p2", "short")]), pseudo::render);
        let items =
            dragoman_pipeline::analysis::parse_analysis_answer(&answer).expect("protocol answer");
        assert_eq!(items.len(), 2);
        let (id, a) = &items[0];
        assert_eq!(id, "p1");
        let names: Vec<&str> = a.entities.iter().map(|e| e.name.as_str()).collect();
        // Bob, Carol, Dana and Then start sentences; Monday and Mr are stop
        // words; Ally is Alice's alias.
        assert_eq!(names, ["Alice", "Evans"]);
        let alice = &a.entities[0];
        assert_eq!(alice.aliases, ["Ally"]);
        assert_eq!(alice.target_name.as_deref(), Some("Álícé"));
        assert_eq!(alice.description, "named in the text");
        assert_eq!(
            alice.evidence,
            "Bob met Alice (Ally) on Monday near the WARPCORE."
        );
        assert_eq!(a.terms.len(), 1);
        assert_eq!(a.terms[0].source, "WARPCORE");
        assert_eq!(a.terms[0].translation.as_deref(), Some("WÁRPCÓRÉ"));
        assert_eq!(a.terms[0].category, "term");
        let style: Vec<(&str, &str)> = a
            .style
            .iter()
            .map(|s| (s.evidence.as_str(), s.text.as_str()))
            .collect();
        assert_eq!(
            style,
            [
                ("Bob met Alice (Ally) on Monday near the", "past"),
                ("Bob met Alice (Ally) on Monday near the", "plain"),
            ]
        );
        assert_eq!(
            a.summary,
            "Bob met Alice (Ally) on Monday near the WARPCORE. \"Carol\" waved: Dana"
        );
        assert_eq!(
            a.events,
            ["Bob met Alice (Ally) on Monday near the WARPCORE."]
        );
        let (_, b) = &items[1];
        assert!(b.entities.is_empty() && b.terms.is_empty());
        let style: Vec<&str> = b.style.iter().map(|s| s.text.as_str()).collect();
        assert_eq!(style, ["present", "plain"]);
    }

    #[test]
    fn long_sentences_and_semicolons_are_literary() {
        let long = vec!["word"; 26].join(" ");
        let a = analyse(&long, "fr", pseudo::render);
        assert_eq!(a.style[1].text, "literary");
        assert_eq!(
            analyse("one; two", "fr", pseudo::render).style[1].text,
            "literary"
        );
        assert_eq!(
            analyse(&vec!["w"; 25].join(" "), "fr", pseudo::render).style[1].text,
            "plain"
        );
        assert!(analyse("", "fr", pseudo::render).events.is_empty());
        assert_eq!(
            analyse("Hi there. Bye.", "fr", pseudo::render).events,
            ["Hi there."]
        );
    }

    #[test]
    fn names_skip_sentence_starts_and_quotes() {
        let found: Vec<String> =
            names("Alice said: Bob left! \u{201C}Carol,\u{201D} said Dan. Alice")
                .into_iter()
                .map(|n| n.name)
                .collect();
        assert_eq!(found, ["Dan"]);
    }
}
