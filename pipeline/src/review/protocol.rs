//! The review protocol: the constant system prompt, the JSON user message
//! (the passages with their translations, the glossary and the character
//! sheet) and the answer, read into typed reviews.
//!
//! The message types live in `dragoman_model::llm_protocol`, shared with
//! the provider simulator, which reads the same structs to answer.

pub use dragoman_model::llm_protocol::{
    REVIEW_TASK as TASK, ReviewMessage, ReviewName, ReviewPassage, ReviewTerm,
};
use dragoman_model::vocab::Severity;
use serde::{Deserialize, Serialize};

use super::Languages;

/// Flags kept per passage; a model that lists more is rambling.
pub const MAX_FLAGS: usize = 10;

/// Longest flag message kept, in characters (the cut included).
pub const MAX_MESSAGE_CHARS: usize = 300;

/// Longest flag code kept, in characters: a code is a short word.
const MAX_CODE_CHARS: usize = 40;

/// The code of a flag that gave none.
const NO_CODE: &str = "unspecified";

/// The reviewer's instructions; constant so that providers can cache it.
pub const REVIEW_SYSTEM_PROMPT: &str = "You are a reviewer of literary translation working on a book. \
The user message is JSON: {\"task\":\"review\", \"source_language\", \"target_language\", \
\"glossary\": [{\"source\", \"translation\", \"locked\"}], \"characters\": [{\"name\", \"aliases\", \"rendering\"}], \
\"passages\": [{\"id\", \"source\", \"translation\"}]}. \
Check every passage's translation against its source: meaning, omissions, additions, tone and register, and the language (it must be target_language). \
Check it against the glossary: a locked term must be translated exactly as given, the others as given unless the sentence truly requires otherwise. \
Check it against the characters: every name and alias must be written as its rendering. \
Return a corrected translation only when the translation needs one; otherwise correction is null. \
A correction is the whole passage's translation, and it keeps every placeholder \u{27E6}n\u{27E7} \u{27E6}/n\u{27E7} \u{27E6}n/\u{27E7} exactly as written and exactly once. \
For every problem found, add a flag with a severity (minor: worth a look; major: likely wrong; critical: unusable as it is), \
a short code (such as mistranslation, omission, addition, glossary, name, language, style, markup) and a one-sentence message. \
Answer with ONLY this JSON, without commentary or code fence: \
{\"reviews\":[{\"id\":\"\u{2026}\",\"correction\":null,\"flags\":[{\"severity\":\"major\",\"code\":\"\u{2026}\",\"message\":\"\u{2026}\"}]}]}, \
one entry per passage, same ids, same order.";

/// The user message for these passages with the sheet they are checked
/// against.
pub fn review_message(
    languages: Languages<'_>,
    sheet_terms: &[ReviewTerm],
    sheet_names: &[ReviewName],
    passages: &[ReviewPassage],
) -> String {
    let message = ReviewMessage {
        task: TASK.to_owned(),
        source_language: languages.source.to_owned(),
        target_language: languages.target.to_owned(),
        glossary: sheet_terms.to_vec(),
        characters: sheet_names.to_vec(),
        passages: passages.to_vec(),
    };
    // Serializing plain strings cannot fail; an empty message would only be
    // answered as malformed and retried.
    serde_json::to_string(&message).unwrap_or_default()
}

/// One passage's review, as read from an answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewItem {
    pub id: String,
    /// The reviewer's whole translation of the passage, when it gave one
    /// (never blank). Its placeholders are not checked here.
    pub correction: Option<String>,
    /// At most [`MAX_FLAGS`].
    pub flags: Vec<ReviewFlag>,
}

/// One problem the reviewer found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewFlag {
    /// An unknown or missing severity reads as `major`.
    pub severity: Severity,
    /// Short, lower-case; `unspecified` when the model gave none.
    pub code: String,
    /// At most [`MAX_MESSAGE_CHARS`] characters.
    pub message: String,
}

/// The answer as the protocol defines it, loosely typed: a model's slips in
/// one field must not cost the whole review.
#[derive(Deserialize)]
struct Answer {
    reviews: Vec<AnswerReview>,
}

#[derive(Deserialize)]
struct AnswerReview {
    /// A string as asked; a number is tolerated.
    id: serde_json::Value,
    /// A string or null as asked; anything else reads as no correction.
    #[serde(default)]
    correction: serde_json::Value,
    #[serde(default)]
    flags: Vec<AnswerFlag>,
}

#[derive(Deserialize)]
struct AnswerFlag {
    #[serde(default)]
    severity: serde_json::Value,
    #[serde(default)]
    code: serde_json::Value,
    #[serde(default)]
    message: serde_json::Value,
}

/// A string field's text, trimmed; empty when it is not a string.
fn text_of(value: &serde_json::Value) -> &str {
    value.as_str().map_or("", str::trim)
}

/// `text` within `max` characters, an ellipsis marking the cut.
fn cut(text: &str, max: usize) -> String {
    if text.chars().count() > max {
        crate::llm::clip(text, max.saturating_sub(1))
    } else {
        text.to_owned()
    }
}

/// Reads a review answer into one item per review, in the answer's order.
/// Tolerates a code fence and text around the JSON object, like the
/// translation protocol. A blank correction reads as none; a flag with
/// neither code nor message is dropped.
pub fn parse_review_answer(text: &str) -> Result<Vec<ReviewItem>, String> {
    let body = crate::translate::json_body(text);
    let parsed = serde_json::from_str::<Answer>(body).or_else(|first| {
        match (body.find('{'), body.rfind('}')) {
            (Some(a), Some(b)) if a < b => serde_json::from_str::<Answer>(&body[a..=b]),
            _ => Err(first),
        }
    });
    let answer = parsed.map_err(|e| format!("answer is not the expected JSON: {e}"))?;
    Ok(answer.reviews.into_iter().map(typed).collect())
}

fn typed(review: AnswerReview) -> ReviewItem {
    let id = match review.id {
        serde_json::Value::String(s) => s,
        other => other.to_string(),
    };
    let correction = review
        .correction
        .as_str()
        .filter(|c| !c.trim().is_empty())
        .map(str::to_owned);
    let flags = review
        .flags
        .iter()
        .filter_map(|flag| {
            let code = text_of(&flag.code);
            let message = text_of(&flag.message);
            if code.is_empty() && message.is_empty() {
                return None;
            }
            let severity = text_of(&flag.severity)
                .to_lowercase()
                .parse()
                .unwrap_or(Severity::Major);
            let code = if code.is_empty() {
                NO_CODE.to_owned()
            } else {
                cut(&code.to_lowercase(), MAX_CODE_CHARS)
            };
            Some(ReviewFlag {
                severity,
                code,
                message: cut(message, MAX_MESSAGE_CHARS),
            })
        })
        .take(MAX_FLAGS)
        .collect();
    ReviewItem {
        id,
        correction,
        flags,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const LANGUAGES: Languages<'static> = Languages {
        source: "en",
        target: "fr",
    };

    #[test]
    fn the_message_carries_the_task_sheet_and_passages() {
        let message = review_message(
            LANGUAGES,
            &[ReviewTerm {
                source: "warp core".into(),
                translation: "cœur de distorsion".into(),
                locked: true,
            }],
            &[ReviewName {
                name: "Alice".into(),
                aliases: vec!["Ally".into()],
                rendering: "Alicia".into(),
            }],
            &[ReviewPassage {
                id: "c1.p1".into(),
                source: "Ally ⟦1/⟧ran.".into(),
                translation: "Alicia ⟦1/⟧courut.".into(),
            }],
        );
        let value: serde_json::Value = serde_json::from_str(&message).expect("json");
        assert_eq!(
            value,
            json!({
                "task": "review",
                "source_language": "en",
                "target_language": "fr",
                "glossary": [{"source": "warp core", "translation": "cœur de distorsion", "locked": true}],
                "characters": [{"name": "Alice", "aliases": ["Ally"], "rendering": "Alicia"}],
                "passages": [{"id": "c1.p1", "source": "Ally ⟦1/⟧ran.", "translation": "Alicia ⟦1/⟧courut."}],
            })
        );
        let back: ReviewMessage = serde_json::from_str(&message).expect("the same struct");
        assert_eq!(back.task, TASK);
        assert_eq!(back.passages[0].id, "c1.p1");
    }

    #[test]
    fn answers_are_read_with_or_without_fence() {
        let plain = r#"{"reviews":[{"id":"a","correction":null,"flags":[]},
            {"id":2,"correction":"Alicia ⟦1/⟧courut.","flags":[{"severity":"critical","code":"Name","message":" wrong name "}]}]}"#;
        let want = vec![
            ReviewItem {
                id: "a".into(),
                correction: None,
                flags: vec![],
            },
            ReviewItem {
                id: "2".into(),
                correction: Some("Alicia ⟦1/⟧courut.".into()),
                flags: vec![ReviewFlag {
                    severity: Severity::Critical,
                    code: "name".into(),
                    message: "wrong name".into(),
                }],
            },
        ];
        assert_eq!(parse_review_answer(plain), Ok(want.clone()));
        assert_eq!(
            parse_review_answer(&format!("```json\n{plain}\n```")),
            Ok(want.clone())
        );
        assert_eq!(
            parse_review_answer(&format!("Here is my review:\n{plain}\nDone.")),
            Ok(want)
        );
    }

    #[test]
    fn loose_fields_are_read_leniently() {
        let long = "x".repeat(500);
        let flags: Vec<serde_json::Value> = (0..15)
            .map(|i| json!({"severity": "minor", "code": format!("c{i}"), "message": "m"}))
            .collect();
        let answer = json!({"reviews": [
            {"id": "a", "correction": "  ", "flags": [
                {"severity": "catastrophic", "code": "omission", "message": long},
                {"severity": 3, "message": "no code"},
                {"severity": "MINOR", "code": "style"},
                {"severity": "minor"},
            ]},
            {"id": "b", "correction": false},
            {"id": "c", "flags": flags},
        ]})
        .to_string();
        let items = parse_review_answer(&answer).expect("read");
        assert_eq!(items.len(), 3);
        let a = &items[0];
        assert_eq!(a.correction, None, "a blank correction is none");
        let read: Vec<(Severity, &str)> = a
            .flags
            .iter()
            .map(|f| (f.severity, f.code.as_str()))
            .collect();
        assert_eq!(
            read,
            [
                (Severity::Major, "omission"),
                (Severity::Major, "unspecified"),
                (Severity::Minor, "style"),
            ],
            "unknown severities read as major, an empty flag is dropped"
        );
        assert_eq!(a.flags[0].message.chars().count(), MAX_MESSAGE_CHARS);
        assert!(a.flags[0].message.ends_with('…'));
        assert_eq!(items[1].correction, None);
        assert!(items[1].flags.is_empty());
        assert_eq!(items[2].flags.len(), MAX_FLAGS);
        assert_eq!(items[2].flags[9].code, "c9");
    }

    #[test]
    fn answers_off_the_protocol_are_malformed() {
        for bad in [
            "",
            "Looks good to me.",
            r#"{"reviews":"x"}"#,
            r#"{"reviews":[{"correction":null}]}"#,
            r#"{"translations":[{"id":"a","text":"x"}]}"#,
            r#"{"reviews":[{"id":"a","correction":nu"#,
        ] {
            let err = parse_review_answer(bad).expect_err(bad);
            assert!(err.starts_with("answer is not the expected JSON"), "{err}");
        }
        assert_eq!(parse_review_answer(r#"{"reviews":[]}"#), Ok(vec![]));
    }
}
