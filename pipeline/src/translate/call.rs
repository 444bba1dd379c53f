//! One HTTP attempt: the request, how its answer is judged, and the
//! [`CallRecord`] every attempt leaves for the usage records.

use std::time::{Duration, Instant};

use super::answer::{match_answer, parse_answer};
use super::job::{PassageIn, TranslateJob};
use super::outcome::{Failure, reason};
use super::prompt::{SYSTEM_PROMPT, max_tokens_for, user_message};
use crate::llm::{Completion, LlmClient, LlmError, clip};

/// One HTTP attempt, as the usage records need it.
#[derive(Debug, Clone, PartialEq)]
pub struct CallRecord {
    /// Passages sent in the request.
    pub passages: usize,
    /// 0 when the call failed without usage.
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// A passage served from the translation memory, or a call whose prompt
    /// the provider partly served from its prompt cache.
    pub cached: bool,
    /// Prompt tokens read from the provider's prompt cache.
    pub cached_prompt_tokens: u64,
    /// Prompt tokens written to the provider's prompt cache.
    pub cache_write_tokens: u64,
    /// `None` when the provider has no price.
    pub cost: Option<f64>,
    pub duration_ms: u64,
    /// `ok` (every passage usable), `incomplete` (answered, some passages
    /// missing or with mismatched placeholders), `malformed` (bad body, or an
    /// answer that is not the protocol JSON, cut ones included), `refused`,
    /// `rate_limited`, `server_error`, `timeout`, `network_error`,
    /// `client_error`.
    pub outcome: String,
    /// Empty for `ok`.
    pub error: String,
}

impl CallRecord {
    /// A record of an attempt that has no answer yet: no tokens, the cost of
    /// nothing at the client's prices (`None` when it has none).
    pub fn attempt(client: &LlmClient, passages: usize, duration_ms: u64) -> CallRecord {
        CallRecord {
            passages,
            prompt_tokens: 0,
            completion_tokens: 0,
            cached: false,
            cached_prompt_tokens: 0,
            cache_write_tokens: 0,
            cost: client.cost(0, 0),
            duration_ms,
            outcome: String::new(),
            error: String::new(),
        }
    }

    /// Takes the usage of an answer and its cost, cached prompt tokens at
    /// the cached prices.
    pub fn take_usage(&mut self, client: &LlmClient, completion: &Completion) {
        self.prompt_tokens = completion.prompt_tokens;
        self.completion_tokens = completion.completion_tokens;
        self.cached = completion.cached();
        self.cached_prompt_tokens = completion.cached_prompt_tokens;
        self.cache_write_tokens = completion.cache_write_tokens;
        self.cost = client.completion_cost(completion);
    }
}

/// What one attempt gave, for the retry decisions.
pub(super) enum CallResult {
    /// A readable answer: each requested passage's translation or why not.
    Answered(Vec<(usize, Result<String, Failure>)>),
    /// The call as a whole gave nothing usable.
    Failed {
        failure: Failure,
        retryable: bool,
        fatal: bool,
        retry_after: Option<Duration>,
    },
}

/// Where each finished attempt is reported.
pub(super) type OnCall<'a> = &'a mut (dyn FnMut(CallRecord) + Send);

/// An attempt judged: the record's `outcome` and `error`, and the result.
struct Verdict {
    outcome: &'static str,
    error: String,
    result: CallResult,
}

/// One HTTP attempt for the passages at `indices`, recorded.
pub(super) async fn call(
    client: &LlmClient,
    job: &TranslateJob,
    indices: &[usize],
    on_call: OnCall<'_>,
) -> CallResult {
    let passages: Vec<&PassageIn> = indices.iter().map(|&i| &job.passages[i]).collect();
    let user = user_message(job, &passages);
    let started = Instant::now();
    let result = client
        .complete(SYSTEM_PROMPT, &user, max_tokens_for(&passages))
        .await;
    let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let mut record = CallRecord::attempt(client, passages.len(), duration_ms);
    let verdict = match result {
        Err(e) => judge_error(&e),
        Ok(completion) => {
            record.take_usage(client, &completion);
            judge_completion(job, indices, &completion)
        }
    };
    record.outcome = verdict.outcome.into();
    record.error = verdict.error;
    on_call(record);
    verdict.result
}

/// A call that gave no completion: the provider's own refusal is the
/// passages' reason, anything else a provider error.
fn judge_error(e: &LlmError) -> Verdict {
    Verdict {
        outcome: e.outcome(),
        error: e.to_string(),
        result: CallResult::Failed {
            failure: Failure {
                reason: if matches!(e, LlmError::Refused(_)) {
                    reason::REFUSED
                } else {
                    reason::PROVIDER_ERROR
                },
                error: e.to_string(),
            },
            retryable: e.is_retryable(),
            fatal: e.is_fatal(),
            retry_after: e.retry_after(),
        },
    }
}

/// A completion for the passages at `indices`: refused (final), unreadable
/// (retryable), or answered with each passage checked.
fn judge_completion(job: &TranslateJob, indices: &[usize], completion: &Completion) -> Verdict {
    if completion.refusal {
        let error = format!("refused: {}", clip(&completion.text, 300));
        let failure = Failure {
            reason: reason::REFUSED,
            error: error.clone(),
        };
        return Verdict {
            outcome: "refused",
            error,
            result: CallResult::Failed {
                failure,
                retryable: false,
                fatal: false,
                retry_after: None,
            },
        };
    }
    match parse_answer(&completion.text) {
        Err(e) => {
            let error = if completion.truncated {
                format!("answer cut at max_tokens: {e}")
            } else {
                e
            };
            Verdict {
                outcome: "malformed",
                error: error.clone(),
                result: CallResult::Failed {
                    failure: Failure {
                        reason: reason::PROVIDER_ERROR,
                        error,
                    },
                    retryable: true,
                    fatal: false,
                    retry_after: None,
                },
            }
        }
        Ok(items) => {
            let passages: Vec<&PassageIn> = indices.iter().map(|&i| &job.passages[i]).collect();
            let results = match_answer(&passages, indices, items);
            let problems: Vec<String> = results
                .iter()
                .filter_map(|(i, r)| {
                    r.as_ref()
                        .err()
                        .map(|f| format!("{}: {}", job.passages[*i].id, f.error))
                })
                .collect();
            Verdict {
                outcome: if problems.is_empty() {
                    "ok"
                } else {
                    "incomplete"
                },
                error: clip(&problems.join("; "), 1000),
                result: CallResult::Answered(results),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(ids: &[&str]) -> TranslateJob {
        TranslateJob {
            source_language: "en".into(),
            target_language: "fr".into(),
            passages: ids
                .iter()
                .map(|id| PassageIn {
                    id: id.to_string(),
                    text: format!("text of {id}"),
                })
                .collect(),
            context: None,
        }
    }

    /// The failure of a failed call, with its retryable and fatal flags.
    fn failed(result: &CallResult) -> (&Failure, bool, bool, Option<Duration>) {
        match result {
            CallResult::Failed {
                failure,
                retryable,
                fatal,
                retry_after,
            } => (failure, *retryable, *fatal, *retry_after),
            CallResult::Answered(_) => panic!("expected a failed call"),
        }
    }

    #[test]
    fn a_full_answer_is_ok() {
        let job = job(&["a", "b"]);
        let text = r#"{"translations":[{"id":"a","text":"A"},{"id":"b","text":"B"}]}"#;
        let verdict = judge_completion(&job, &[0, 1], &Completion::of_text(text));
        assert_eq!((verdict.outcome, verdict.error.as_str()), ("ok", ""));
        let CallResult::Answered(results) = verdict.result else {
            panic!("expected an answer");
        };
        assert_eq!(results, [(0, Ok("A".into())), (1, Ok("B".into()))]);
    }

    #[test]
    fn an_answer_missing_passages_is_incomplete_and_names_them() {
        let job = job(&["a", "b", "c"]);
        let text = r#"{"translations":[{"id":"b","text":"B"}]}"#;
        let verdict = judge_completion(&job, &[0, 1, 2], &Completion::of_text(text));
        assert_eq!(verdict.outcome, "incomplete");
        assert_eq!(
            verdict.error,
            "a: missing from the answer; c: missing from the answer"
        );
        assert!(matches!(verdict.result, CallResult::Answered(ref r) if r.len() == 3));
    }

    #[test]
    fn a_malformed_answer_is_retryable_and_a_cut_one_says_so() {
        let job = job(&["a"]);
        let verdict = judge_completion(&job, &[0], &Completion::of_text("Voici la traduction."));
        assert_eq!(verdict.outcome, "malformed");
        let (failure, retryable, fatal, _) = failed(&verdict.result);
        assert_eq!(failure.reason, reason::PROVIDER_ERROR);
        assert!(retryable && !fatal);
        assert!(
            !verdict.error.starts_with("answer cut"),
            "{}",
            verdict.error
        );

        let cut = Completion {
            truncated: true,
            ..Completion::of_text(r#"{"translations":[{"id":"a","text":"A"#)
        };
        let verdict = judge_completion(&job, &[0], &cut);
        assert_eq!(verdict.outcome, "malformed");
        assert!(
            verdict.error.starts_with("answer cut at max_tokens: "),
            "{}",
            verdict.error
        );
        assert_eq!(failed(&verdict.result).0.error, verdict.error);
    }

    #[test]
    fn a_refusal_is_final_and_quotes_the_model() {
        let job = job(&["a"]);
        let refusal = Completion {
            refusal: true,
            ..Completion::of_text("I cannot help with that.")
        };
        let verdict = judge_completion(&job, &[0], &refusal);
        assert_eq!(verdict.outcome, "refused");
        assert_eq!(verdict.error, "refused: I cannot help with that.");
        let (failure, retryable, fatal, _) = failed(&verdict.result);
        assert_eq!(failure.reason, reason::REFUSED);
        assert!(!retryable && !fatal);
    }

    #[test]
    fn errors_carry_their_outcome_and_retry_decision() {
        let limited = judge_error(&LlmError::RateLimited {
            retry_after: Some(Duration::from_secs(7)),
        });
        assert_eq!(limited.outcome, "rate_limited");
        let (failure, retryable, fatal, retry_after) = failed(&limited.result);
        assert_eq!(failure.reason, reason::PROVIDER_ERROR);
        assert!(retryable && !fatal);
        assert_eq!(retry_after, Some(Duration::from_secs(7)));

        let refused = judge_error(&LlmError::Refused("content filter".into()));
        assert_eq!(failed(&refused.result).0.reason, reason::REFUSED);
        assert!(!failed(&refused.result).1);

        let bad_key = judge_error(&LlmError::Client(401, "invalid key".into()));
        assert_eq!(bad_key.outcome, "client_error");
        let (failure, retryable, fatal, _) = failed(&bad_key.result);
        assert_eq!(failure.reason, reason::PROVIDER_ERROR);
        assert!(!retryable && fatal);
        assert_eq!(failure.error, bad_key.error);
    }
}
