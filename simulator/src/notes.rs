//! The simulator's answer in the reader-note protocol of
//! `dragoman_pipeline::notes` (`"task": "translator_notes"`): one note per
//! term, built from the term alone, so tests can tell exactly what a pass
//! proposes. The note of a term is
//! `“<translation>” renders the <source_language> “<source>” (<category>).`
//! (without the parenthesis when the term has no category), placed
//! `first`.

use dragoman_model::llm_protocol::{NotesMessage, NotesTerm};
use serde_json::json;

/// The note the simulator proposes for `term` of `message`.
pub(super) fn note(message: &NotesMessage, term: &NotesTerm) -> String {
    let category = term.category.trim();
    let kind = if category.is_empty() {
        String::new()
    } else {
        format!(" ({category})")
    };
    format!(
        "\u{201C}{}\u{201D} renders the {} \u{201C}{}\u{201D}{kind}.",
        term.translation, message.source_language, term.source
    )
}

/// The answer to a reader-note message: one note per term, in its order.
pub(super) fn answer(message: &NotesMessage) -> String {
    let notes: Vec<serde_json::Value> = message
        .terms
        .iter()
        .map(|t| json!({"term_id": t.id, "note": note(message, t), "placement": "first"}))
        .collect();
    json!({ "notes": notes }).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use dragoman_model::llm_protocol::NOTES_TASK;

    #[test]
    fn every_term_gets_a_note_built_from_it() {
        let term = |id: &str, category: &str| NotesTerm {
            id: id.into(),
            source: "Hogmanay".into(),
            translation: "la Saint-Sylvestre".into(),
            category: category.into(),
            description: String::new(),
            examples: vec![],
        };
        let message = NotesMessage {
            task: NOTES_TASK.into(),
            source_language: "en".into(),
            target_language: "fr".into(),
            terms: vec![term("t1", "custom"), term("t2", " ")],
        };
        let answer: serde_json::Value = serde_json::from_str(&answer(&message)).expect("json");
        assert_eq!(
            answer,
            json!({"notes": [
                {"term_id": "t1", "placement": "first",
                 "note": "\u{201C}la Saint-Sylvestre\u{201D} renders the en \u{201C}Hogmanay\u{201D} (custom)."},
                {"term_id": "t2", "placement": "first",
                 "note": "\u{201C}la Saint-Sylvestre\u{201D} renders the en \u{201C}Hogmanay\u{201D}."},
            ]})
        );
    }
}
