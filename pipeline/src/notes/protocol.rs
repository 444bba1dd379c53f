//! The reader-note protocol: the constant system prompt, the JSON user
//! message (the terms with passages where they occur) and the answer, read
//! into validated proposals.
//!
//! The message types live in `dragoman_model::llm_protocol`, shared with
//! the provider simulator, which reads the same structs to answer.

pub use dragoman_model::llm_protocol::{NOTES_TASK as TASK, NotesExample, NotesMessage, NotesTerm};
use dragoman_model::vocab::NotePlacement;
use serde::Deserialize;
use std::collections::HashSet;

use crate::analysis::Languages;

/// Longest note kept, in characters: a reader note is a short gloss, not
/// an essay. A longer one is dropped, never cut mid-sentence.
pub const MAX_NOTE_CHARS: usize = 2000;

/// The note writer's instructions; constant so that providers can cache it.
pub const NOTES_SYSTEM_PROMPT: &str = "You are a literary translator writing reader notes for a translated book. \
The user message is JSON: {\"task\":\"translator_notes\", \"source_language\", \"target_language\", \
\"terms\": [{\"id\", \"source\", \"translation\", \"category\", \"description\", \"examples\": [{\"source\", \"translation\"}]}]}. \
Each term is a glossary entry of the book (a name, a place, an object, a cultural reference, a word play) with passages where it occurs. \
For each term a reader of target_language would miss something in without help (the meaning of a name, a cultural or historical reference, \
a custom, a pun or word play the translation could not keep), write one short note in target_language that tells the reader what they need, \
without spoiling the plot. Leave out every term a reader understands without a note. \
A note is plain text: no markup, no placeholder, at most 2000 characters. \
Choose where it goes: first (at the term's first occurrence), each (at every occurrence, rarely useful) or never (kept for the translator, not shown). \
Answer with ONLY this JSON, without commentary or code fence: \
{\"notes\":[{\"term_id\":\"\u{2026}\",\"note\":\"\u{2026}\",\"placement\":\"first\"}]}.";

/// The user message for these terms.
pub fn notes_message(languages: Languages<'_>, terms: &[NotesTerm]) -> String {
    let message = NotesMessage {
        task: TASK.to_owned(),
        source_language: languages.source.to_owned(),
        target_language: languages.target.to_owned(),
        terms: terms.to_vec(),
    };
    // Serializing plain strings cannot fail; an empty message would only be
    // answered as malformed and retried.
    serde_json::to_string(&message).unwrap_or_default()
}

/// One note proposed for one term, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proposal {
    pub term_id: String,
    /// Plain text, trimmed, at most [`MAX_NOTE_CHARS`] characters.
    pub note: String,
    pub placement: NotePlacement,
}

/// The answer as the protocol defines it, loosely typed: one bad note must
/// not cost the others.
#[derive(Deserialize)]
struct Answer {
    notes: Vec<AnswerNote>,
}

#[derive(Deserialize)]
struct AnswerNote {
    /// A string as asked; a number is tolerated.
    #[serde(default)]
    term_id: serde_json::Value,
    #[serde(default)]
    note: serde_json::Value,
    #[serde(default)]
    placement: serde_json::Value,
}

/// Whether `note` is plain text a reader can be shown as it is: no markup
/// tag, no placeholder, no control character but line breaks and tabs.
fn plain(note: &str) -> bool {
    let tag = note.char_indices().any(|(at, c)| {
        c == '<'
            && note[at + 1..]
                .chars()
                .next()
                .is_some_and(|n| n.is_ascii_alphabetic() || n == '/' || n == '!')
    });
    let placeholder = note.contains('\u{27E6}') || note.contains('\u{27E7}');
    let control = note
        .chars()
        .any(|c| c.is_control() && c != '\n' && c != '\t');
    !(tag || placeholder || control)
}

/// Reads a reader-note answer into the proposals it makes for `terms`, in
/// the answer's order. Tolerates a code fence and text around the JSON
/// object. A note for no term of the batch, a second note for a term, an
/// empty note, one over [`MAX_NOTE_CHARS`] characters or one that is not
/// plain text is dropped; an unknown or missing placement reads as `first`.
pub fn parse_notes_answer(text: &str, terms: &[NotesTerm]) -> Result<Vec<Proposal>, String> {
    let body = crate::translate::json_body(text);
    let parsed = serde_json::from_str::<Answer>(body).or_else(|first| {
        match (body.find('{'), body.rfind('}')) {
            (Some(a), Some(b)) if a < b => serde_json::from_str::<Answer>(&body[a..=b]),
            _ => Err(first),
        }
    });
    let answer = parsed.map_err(|e| format!("answer is not the expected JSON: {e}"))?;
    let asked: HashSet<&str> = terms.iter().map(|t| t.id.as_str()).collect();
    let mut seen: HashSet<String> = HashSet::new();
    let mut proposals = Vec::new();
    for item in answer.notes {
        let term_id = match item.term_id {
            serde_json::Value::String(s) => s.trim().to_owned(),
            serde_json::Value::Number(n) => n.to_string(),
            _ => continue,
        };
        let note = item.note.as_str().map(str::trim).unwrap_or_default();
        if !asked.contains(term_id.as_str())
            || note.is_empty()
            || note.chars().count() > MAX_NOTE_CHARS
            || !plain(note)
            || !seen.insert(term_id.clone())
        {
            continue;
        }
        let placement = item
            .placement
            .as_str()
            .and_then(|p| p.trim().to_lowercase().parse().ok())
            .unwrap_or(NotePlacement::First);
        proposals.push(Proposal {
            term_id,
            note: note.to_owned(),
            placement,
        });
    }
    Ok(proposals)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const LANGUAGES: Languages<'static> = Languages {
        source: "en",
        target: "fr",
    };

    fn term(id: &str) -> NotesTerm {
        NotesTerm {
            id: id.into(),
            source: format!("source {id}"),
            translation: format!("traduction {id}"),
            category: "name".into(),
            description: String::new(),
            examples: vec![],
        }
    }

    #[test]
    fn the_message_carries_the_task_and_terms() {
        let mut one = term("t1");
        one.examples.push(NotesExample {
            source: "The source t1 rose.".into(),
            translation: "La traduction t1 se leva.".into(),
        });
        let message = notes_message(LANGUAGES, &[one]);
        let value: serde_json::Value = serde_json::from_str(&message).expect("json");
        assert_eq!(
            value,
            json!({
                "task": "translator_notes",
                "source_language": "en",
                "target_language": "fr",
                "terms": [{
                    "id": "t1", "source": "source t1", "translation": "traduction t1",
                    "category": "name", "description": "",
                    "examples": [{"source": "The source t1 rose.",
                        "translation": "La traduction t1 se leva."}],
                }],
            })
        );
        let back: NotesMessage = serde_json::from_str(&message).expect("the same struct");
        assert_eq!(back.task, TASK);
    }

    #[test]
    fn answers_are_read_with_or_without_fence() {
        let plain = r#"{"notes":[{"term_id":"a","note":" A pun on rain. ","placement":"each"},
            {"term_id":"b","note":"A town in Kent."}]}"#;
        let want = vec![
            Proposal {
                term_id: "a".into(),
                note: "A pun on rain.".into(),
                placement: NotePlacement::Each,
            },
            Proposal {
                term_id: "b".into(),
                note: "A town in Kent.".into(),
                placement: NotePlacement::First,
            },
        ];
        let terms = [term("a"), term("b")];
        assert_eq!(parse_notes_answer(plain, &terms), Ok(want.clone()));
        assert_eq!(
            parse_notes_answer(&format!("```json\n{plain}\n```"), &terms),
            Ok(want.clone())
        );
        assert_eq!(
            parse_notes_answer(&format!("Here are the notes:\n{plain}\nDone."), &terms),
            Ok(want)
        );
    }

    #[test]
    fn notes_off_the_rules_are_dropped() {
        let long = "x".repeat(MAX_NOTE_CHARS + 1);
        let longest = "y".repeat(MAX_NOTE_CHARS);
        let answer = json!({"notes": [
            {"term_id": "zzz", "note": "not a term of the batch"},
            {"term_id": "a", "note": "   "},
            {"term_id": "a", "note": long},
            {"term_id": "a", "note": "An <em>emphatic</em> note"},
            {"term_id": "a", "note": "A \u{27E6}1\u{27E7} placeholder"},
            {"term_id": "a", "note": "A bell\u{7}"},
            {"term_id": "a", "note": "Kept: 2 < 3, and a line\nbreak.", "placement": "NEVER"},
            {"term_id": "a", "note": "A second note for the same term"},
            {"term_id": "b", "note": longest, "placement": "somewhere"},
            {"term_id": 7, "note": "A number id is read"},
            {"note": "No term"},
        ]})
        .to_string();
        let terms = [term("a"), term("b"), term("7")];
        let read = parse_notes_answer(&answer, &terms).expect("read");
        let got: Vec<(&str, usize, NotePlacement)> = read
            .iter()
            .map(|p| (p.term_id.as_str(), p.note.chars().count(), p.placement))
            .collect();
        assert_eq!(
            got,
            [
                ("a", 30, NotePlacement::Never),
                ("b", MAX_NOTE_CHARS, NotePlacement::First),
                ("7", 19, NotePlacement::First),
            ]
        );
        assert_eq!(read[0].note, "Kept: 2 < 3, and a line\nbreak.");
    }

    #[test]
    fn answers_off_the_protocol_are_malformed() {
        for bad in [
            "",
            "No notes needed.",
            r#"{"notes":"x"}"#,
            r#"{"reviews":[]}"#,
        ] {
            let err = parse_notes_answer(bad, &[term("a")]).expect_err(bad);
            assert!(err.starts_with("answer is not the expected JSON"), "{err}");
        }
        assert_eq!(
            parse_notes_answer(r#"{"notes":[]}"#, &[term("a")]),
            Ok(vec![])
        );
    }
}
