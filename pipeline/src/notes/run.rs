//! Asking for the notes of a batch of terms: the whole batch with retries
//! on retryable failures; an answer cut at `max_tokens` splits the batch
//! in halves (the same request would only be cut again). A term the answer
//! leaves out simply gets no note: the model is asked to leave out the
//! terms a reader understands alone, so nothing is asked again for it.

use std::time::Instant;

use super::protocol::{
    NOTES_SYSTEM_PROMPT, NotesTerm, Proposal, notes_message, parse_notes_answer,
};
use crate::analysis::Languages;
use crate::llm::{LlmClient, clip};
use crate::translate::{CallRecord, MAX_COMPLETION_TOKENS, RetryPolicy};

/// Completion tokens allowed per term: a short note and the JSON around
/// it.
const ROOM_PER_TERM: u32 = 400;

/// What the calls for one batch gave.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NotesOutcome {
    /// The notes proposed, in the answers' order.
    pub proposals: Vec<Proposal>,
    /// Why some terms could not be asked about (no readable answer after
    /// the retries); empty when every term was.
    pub errors: Vec<String>,
    /// The provider refuses every request (a fatal error): asking about
    /// other batches would be refused the same way.
    pub fatal: bool,
}

/// `max_tokens` of an answer about `terms`.
pub fn max_tokens_for(terms: &[NotesTerm]) -> u32 {
    u32::try_from(terms.len())
        .unwrap_or(u32::MAX)
        .saturating_mul(ROOM_PER_TERM)
        .clamp(ROOM_PER_TERM, MAX_COMPLETION_TOKENS)
}

/// What one request with its retries gave.
enum Answered {
    Read(Vec<Proposal>),
    Failed {
        error: String,
        fatal: bool,
    },
    /// The answer was cut at `max_tokens`: the batch asks for too much.
    Cut,
}

async fn request(
    client: &LlmClient,
    languages: Languages<'_>,
    terms: &[NotesTerm],
    policy: &RetryPolicy,
    on_call: &mut (dyn FnMut(CallRecord) + Send),
) -> Answered {
    let user = notes_message(languages, terms);
    let max_tokens = max_tokens_for(terms);
    let mut backoff = policy.backoff();
    let attempts = policy.max_attempts.max(1);
    let mut last_error = String::new();
    for attempt in 1..=attempts {
        let started = Instant::now();
        let result = client
            .complete(NOTES_SYSTEM_PROMPT, &user, max_tokens)
            .await;
        let mut record = CallRecord::attempt(
            client,
            terms.len(),
            u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        );
        let (retry, retry_after) = match result {
            Err(e) => {
                record.outcome = e.outcome().into();
                record.error = e.to_string();
                if e.is_fatal() {
                    on_call(record);
                    return Answered::Failed {
                        error: e.to_string(),
                        fatal: true,
                    };
                }
                (e.is_retryable(), e.retry_after())
            }
            Ok(completion) => {
                record.take_usage(client, &completion);
                if completion.refusal {
                    record.outcome = "refused".into();
                    record.error = format!("refused: {}", clip(&completion.text, 300));
                    (false, None)
                } else {
                    match parse_notes_answer(&completion.text, terms) {
                        Err(e) if completion.truncated => {
                            record.outcome = "malformed".into();
                            record.error = format!("answer cut at max_tokens: {e}");
                            if terms.len() > 1 {
                                on_call(record);
                                return Answered::Cut;
                            }
                            (false, None)
                        }
                        Err(e) => {
                            record.outcome = "malformed".into();
                            record.error = e;
                            (true, None)
                        }
                        Ok(proposals) => {
                            record.outcome = "ok".into();
                            on_call(record);
                            return Answered::Read(proposals);
                        }
                    }
                }
            }
        };
        last_error.clone_from(&record.error);
        on_call(record);
        if !retry || attempt == attempts {
            break;
        }
        tokio::time::sleep(policy.delay(&mut backoff, retry_after)).await;
    }
    Answered::Failed {
        error: last_error,
        fatal: false,
    }
}

/// Asks for the notes of one batch of terms (ids unique within it).
pub async fn propose(
    client: &LlmClient,
    languages: Languages<'_>,
    terms: &[NotesTerm],
    policy: &RetryPolicy,
    on_call: &mut (dyn FnMut(CallRecord) + Send),
) -> NotesOutcome {
    let mut outcome = NotesOutcome::default();
    // Slices still to ask for; a cut answer puts back its two halves.
    let mut todo: Vec<&[NotesTerm]> = if terms.is_empty() {
        Vec::new()
    } else {
        vec![terms]
    };
    while let Some(part) = todo.pop() {
        match request(client, languages, part, policy, &mut *on_call).await {
            Answered::Read(proposals) => outcome.proposals.extend(proposals),
            Answered::Cut => {
                let (first, second) = part.split_at(part.len() / 2);
                todo.push(second);
                todo.push(first);
            }
            Answered::Failed { error, fatal } => {
                outcome.errors.push(error);
                if fatal {
                    outcome.fatal = true;
                    break;
                }
            }
        }
    }
    outcome
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use dragoman_model::vocab::NotePlacement;

    use super::*;
    use crate::llm::{ProviderConfig, ProviderKind};
    use dragoman_simulator::{RunningSimulator, SimulatorConfig};

    const LANGUAGES: Languages<'static> = Languages {
        source: "en",
        target: "fr",
    };

    fn client(base_url: String) -> LlmClient {
        LlmClient::new(ProviderConfig {
            kind: ProviderKind::OpenAi,
            base_url,
            model: "m".into(),
            api_key: None,
            ids: Default::default(),
            timeout: Duration::from_secs(5),
            price_input: None,
            price_output: None,
            price_cached_input: None,
        })
        .expect("client")
    }

    fn quick(max_attempts: u32) -> RetryPolicy {
        RetryPolicy {
            max_attempts,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(1),
        }
    }

    fn term(id: &str, source: &str, translation: &str, category: &str) -> NotesTerm {
        NotesTerm {
            id: id.into(),
            source: source.into(),
            translation: translation.into(),
            category: category.into(),
            description: String::new(),
            examples: vec![],
        }
    }

    #[test]
    fn max_tokens_grow_with_the_terms_and_are_capped() {
        let one = term("a", "x", "y", "");
        assert_eq!(max_tokens_for(std::slice::from_ref(&one)), ROOM_PER_TERM);
        assert_eq!(
            max_tokens_for(&[one.clone(), one.clone()]),
            2 * ROOM_PER_TERM
        );
        assert_eq!(max_tokens_for(&vec![one; 1000]), MAX_COMPLETION_TOKENS);
    }

    #[tokio::test]
    async fn the_simulator_proposes_a_note_per_term() {
        let sim = RunningSimulator::start(SimulatorConfig::default())
            .await
            .expect("simulator");
        let terms = [
            term("t1", "Hogmanay", "la Saint-Sylvestre", "custom"),
            term("t2", "Alice", "Alicia", ""),
        ];
        let mut calls = Vec::new();
        let outcome = propose(
            &client(sim.openai_base_url()),
            LANGUAGES,
            &terms,
            &quick(2),
            &mut |record| calls.push(record),
        )
        .await;
        assert!(outcome.errors.is_empty(), "{outcome:?}");
        let got: Vec<(&str, &str, NotePlacement)> = outcome
            .proposals
            .iter()
            .map(|p| (p.term_id.as_str(), p.note.as_str(), p.placement))
            .collect();
        assert_eq!(
            got,
            [
                (
                    "t1",
                    "\u{201C}la Saint-Sylvestre\u{201D} renders the en \u{201C}Hogmanay\u{201D} (custom).",
                    NotePlacement::First
                ),
                (
                    "t2",
                    "\u{201C}Alicia\u{201D} renders the en \u{201C}Alice\u{201D}.",
                    NotePlacement::First
                ),
            ]
        );
        assert_eq!(calls.len(), 1, "{calls:?}");
        assert_eq!((calls[0].outcome.as_str(), calls[0].passages), ("ok", 2));
        sim.stop().await.expect("stop");
    }

    #[tokio::test]
    async fn a_failing_provider_is_retried_then_reported() {
        let sim = RunningSimulator::start(SimulatorConfig {
            rate_500: 1.0,
            ..SimulatorConfig::default()
        })
        .await
        .expect("simulator");
        let mut calls = Vec::new();
        let outcome = propose(
            &client(sim.openai_base_url()),
            LANGUAGES,
            &[term("t1", "Hogmanay", "la Saint-Sylvestre", "custom")],
            &quick(2),
            &mut |record| calls.push(record),
        )
        .await;
        assert_eq!(calls.len(), 2, "{calls:?}");
        assert!(
            calls.iter().all(|c| c.outcome == "server_error"),
            "{calls:?}"
        );
        assert!(outcome.proposals.is_empty());
        assert_eq!(outcome.errors.len(), 1);
        assert!(!outcome.fatal);
        sim.stop().await.expect("stop");
    }
}
