//! What is sent to the model: the constant system prompt, the JSON user
//! message and the answer's token allowance.

use serde::Serialize;

use super::batches::passage_tokens;
use super::job::{PassageIn, TranslateJob};

/// Upper bound on `max_tokens` asked for one answer: what current models of
/// both providers accept.
pub const MAX_COMPLETION_TOKENS: u32 = 8192;

/// The translator's instructions, constant so that providers can cache it;
/// the batching sizes every call's fixed part from it, so it lives beside it.
pub use dragoman_model::batching::TRANSLATION_SYSTEM_PROMPT as SYSTEM_PROMPT;

#[derive(Serialize)]
struct UserMessage<'a> {
    source_language: &'a str,
    target_language: &'a str,
    context: Option<&'a str>,
    passages: Vec<&'a PassageIn>,
}

/// The user message for some of a job's passages.
pub fn user_message(job: &TranslateJob, passages: &[&PassageIn]) -> String {
    let message = UserMessage {
        source_language: &job.source_language,
        target_language: &job.target_language,
        context: job.context.as_deref(),
        passages: passages.to_vec(),
    };
    // Serializing plain strings cannot fail; an empty message would only be
    // answered as malformed and retried.
    serde_json::to_string(&message).unwrap_or_default()
}

/// `max_tokens` for the answer to these passages: four times their estimate
/// (translations run longer than sources, and real tokenizers split some
/// scripts finer than the estimate) plus room for the JSON, capped.
pub(super) fn max_tokens_for(passages: &[&PassageIn]) -> u32 {
    let tokens: usize = passages.iter().map(|p| passage_tokens(p)).sum();
    u32::try_from(tokens.saturating_mul(4).saturating_add(256))
        .unwrap_or(MAX_COMPLETION_TOKENS)
        .min(MAX_COMPLETION_TOKENS)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn p(id: &str, text: &str) -> PassageIn {
        PassageIn {
            id: id.into(),
            text: text.into(),
        }
    }

    #[test]
    fn user_message_carries_the_languages_context_and_only_the_given_passages() {
        let job = TranslateJob {
            source_language: "en".into(),
            target_language: "fr".into(),
            passages: vec![p("a", "one"), p("b", "two \"⟦1/⟧\"")],
            context: Some("Alice: a girl".into()),
        };
        let message: serde_json::Value =
            serde_json::from_str(&user_message(&job, &[&job.passages[1]])).unwrap();
        assert_eq!(
            message,
            json!({
                "source_language": "en",
                "target_language": "fr",
                "context": "Alice: a girl",
                "passages": [{"id": "b", "text": "two \"⟦1/⟧\""}],
            })
        );

        let bare = TranslateJob {
            context: None,
            ..job
        };
        let message: serde_json::Value = serde_json::from_str(&user_message(&bare, &[])).unwrap();
        assert_eq!(message["context"], serde_json::Value::Null);
        assert_eq!(message["passages"], json!([]));
    }

    #[test]
    fn max_tokens_grow_with_the_batch_and_are_capped() {
        let small = p("a", "hello");
        // 1 + 2 + 8 estimated tokens, four times, plus room for the JSON.
        assert_eq!(max_tokens_for(&[&small]), 11 * 4 + 256);
        assert_eq!(max_tokens_for(&[&small, &small]), 22 * 4 + 256);
        let big = p("b", &"x".repeat(100_000));
        assert_eq!(max_tokens_for(&[&big]), MAX_COMPLETION_TOKENS);
    }
}
