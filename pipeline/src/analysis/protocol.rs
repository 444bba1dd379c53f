//! The analysis protocol: the constant system prompt, the JSON user
//! message and the answer, read into the typed analyses the memory service
//! stores.
//!
//! User message:
//! `{"task": "analysis", "source_language", "target_language", "passages": [{"id", "text"}]}`.
//! Expected answer:
//! `{"analyses": [{"id", "entities": [{"kind", "name", "aliases", "target_name",
//! "gender", "address", "description", "evidence"}], "terms": [{"source",
//! "translation", "category", "evidence"}], "style": [{"aspect", "text",
//! "evidence"}], "summary", "events": []}]}`, tolerated inside a code fence.
//! `kind` is `character`, `place`, `organisation` or `object`; `aspect` is
//! `register`, `tone`, `tense`, `address` or `style`. Unknown kinds and
//! aspects are dropped, not fatal: a model that invents one still gives the
//! rest of its analysis.

use dragoman_model::analysis::{ExtractedEntity, ExtractedTerm, Extraction, StyleNote};
pub use dragoman_model::llm_protocol::{
    ANALYSIS_TASK as TASK, AnalysisAnswer, AnalysisMessage, AnswerAnalysis,
};

use crate::translate::PassageIn;

/// The analyst's instructions; constant so that providers can cache it.
pub const ANALYSIS_SYSTEM_PROMPT: &str = "You are a literary analyst preparing the translation of a book. \
The user message is JSON: {\"task\":\"analysis\", \"source_language\", \"target_language\", \"passages\": [{\"id\", \"text\"}]}. \
For every passage, list what a translator must keep consistent across the book: \
entities named in it (kind character, place, organisation or object; name as written; other names used for the same one as aliases; \
a suggested rendering of the name in target_language as target_name; for characters gender and forms of address when the text shows them; \
a short description), term candidates (recurring invented or technical words with a suggested translation and a category), \
style notes (aspect register, tone, tense, address or style), a one-sentence summary of what happens, and the events. \
Every entity, term and style note carries evidence: the exact words of the passage it rests on. \
Inline markup appears as placeholders such as \u{27E6}1\u{27E7}; ignore them. \
Answer with ONLY this JSON, without commentary or code fence: \
{\"analyses\":[{\"id\":\"\u{2026}\",\"entities\":[{\"kind\":\"character\",\"name\":\"\u{2026}\",\"aliases\":[],\"target_name\":\"\u{2026}\",\"gender\":null,\"address\":null,\"description\":\"\u{2026}\",\"evidence\":\"\u{2026}\"}],\
\"terms\":[{\"source\":\"\u{2026}\",\"translation\":\"\u{2026}\",\"category\":\"\u{2026}\",\"evidence\":\"\u{2026}\"}],\
\"style\":[{\"aspect\":\"register\",\"text\":\"\u{2026}\",\"evidence\":\"\u{2026}\"}],\"summary\":\"\u{2026}\",\"events\":[\"\u{2026}\"]}]}, \
one entry per passage, same ids, same order.";

/// The user message for these passages.
pub fn analysis_message(
    source_language: &str,
    target_language: &str,
    passages: &[PassageIn],
) -> String {
    let message = AnalysisMessage {
        task: TASK.to_owned(),
        source_language: source_language.to_owned(),
        target_language: target_language.to_owned(),
        passages: passages.to_vec(),
    };
    // Serializing plain strings cannot fail; an empty message would only be
    // answered as malformed and retried.
    serde_json::to_string(&message).unwrap_or_default()
}

/// Longest name, term or note kept from an answer, in characters: a model
/// that rambles must not fill the memory.
const MAX_FIELD: usize = 300;

fn clip(text: &str) -> String {
    crate::llm::clip(text.trim(), MAX_FIELD)
}

fn clip_opt(text: Option<String>) -> Option<String> {
    text.map(|t| clip(&t)).filter(|t| !t.is_empty())
}

/// Reads an analysis answer into (id, analysis) pairs. Tolerates a code
/// fence and text around the JSON object, like the translation protocol.
pub fn parse_analysis_answer(text: &str) -> Result<Vec<(String, Extraction)>, String> {
    let body = crate::translate::json_body(text);
    let parsed = serde_json::from_str::<AnalysisAnswer>(body).or_else(|first| {
        match (body.find('{'), body.rfind('}')) {
            (Some(a), Some(b)) if a < b => serde_json::from_str::<AnalysisAnswer>(&body[a..=b]),
            _ => Err(first),
        }
    });
    let answer = parsed.map_err(|e| format!("answer is not the expected JSON: {e}"))?;
    Ok(answer
        .analyses
        .into_iter()
        .map(|item| {
            let id = match &item.id {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            (id, trimmed(item.extraction))
        })
        .collect())
}

/// An analysis with every text trimmed and clipped; what has no name, no
/// source or no text is dropped.
fn trimmed(found: Extraction) -> Extraction {
    let entities = found
        .entities
        .into_iter()
        .filter_map(|e| {
            let name = clip(&e.name);
            (!name.is_empty()).then(|| ExtractedEntity {
                kind: e.kind,
                name,
                aliases: e
                    .aliases
                    .iter()
                    .map(|a| clip(a))
                    .filter(|a| !a.is_empty())
                    .collect(),
                target_name: clip_opt(e.target_name),
                gender: clip_opt(e.gender),
                address: clip_opt(e.address),
                description: clip(&e.description),
                evidence: clip(&e.evidence),
            })
        })
        .collect();
    let terms = found
        .terms
        .into_iter()
        .filter_map(|t| {
            let source = clip(&t.source);
            (!source.is_empty()).then(|| ExtractedTerm {
                source,
                translation: clip_opt(t.translation),
                category: clip(&t.category),
                evidence: clip(&t.evidence),
            })
        })
        .collect();
    let style = found
        .style
        .into_iter()
        .filter_map(|s| {
            let text = clip(&s.text);
            (!text.is_empty()).then(|| StyleNote {
                aspect: s.aspect,
                text,
                evidence: clip(&s.evidence),
            })
        })
        .collect();
    Extraction {
        entities,
        terms,
        style,
        summary: clip(&found.summary),
        events: found
            .events
            .iter()
            .map(|e| clip(e))
            .filter(|e| !e.is_empty())
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_read_into_typed_analyses() {
        let answer = r#"```json
{"analyses":[{"id":"p1","entities":[
  {"kind":"character","name":"Alice","aliases":["Ally",""],"target_name":"Alicia","gender":"female","address":null,"description":"a girl","evidence":"Alice ran"},
  {"kind":"dragon","name":"Smaug"},
  {"kind":"place","name":"  "}],
 "terms":[{"source":"warp core","translation":"cœur","category":"tech","evidence":"the warp core"},{"source":""}],
 "style":[{"aspect":"tense","text":"past","evidence":"ran"},{"aspect":"mood","text":"x"}],
 "summary":"Alice runs.","events":["Alice runs",""]},
 {"id":2}]}
```"#;
        let items = parse_analysis_answer(answer).expect("read");
        assert_eq!(items.len(), 2);
        let (id, a) = &items[0];
        assert_eq!(id, "p1");
        assert_eq!(a.entities.len(), 1, "unknown kind and blank name dropped");
        assert_eq!(a.entities[0].name, "Alice");
        assert_eq!(a.entities[0].aliases, ["Ally"]);
        assert_eq!(a.entities[0].target_name.as_deref(), Some("Alicia"));
        assert_eq!(a.entities[0].address, None);
        assert_eq!(a.terms.len(), 1);
        assert_eq!(a.style.len(), 1);
        assert_eq!(a.events, ["Alice runs"]);
        assert_eq!(items[1].0, "2");
        assert!(items[1].1.entities.is_empty());
    }

    #[test]
    fn answers_off_the_protocol_are_malformed() {
        for bad in [
            "",
            "Bonjour",
            r#"{"analyses":"x"}"#,
            r#"{"translations":[]}"#,
        ] {
            assert!(parse_analysis_answer(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_message_names_its_task_and_passages() {
        let message = analysis_message(
            "en",
            "fr",
            &[PassageIn {
                id: "a".into(),
                text: "Alice".into(),
            }],
        );
        let value: serde_json::Value = serde_json::from_str(&message).expect("json");
        assert_eq!(value["task"], "analysis");
        assert_eq!(value["passages"][0]["id"], "a");
        assert_eq!(value["target_language"], "fr");
    }
}
