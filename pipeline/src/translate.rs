//! Translating a batch of passages: the prompt protocol and the fallback ladder.
//!
//! Protocol. The system prompt is constant (so providers can cache it); the
//! user message is JSON
//! `{"source_language", "target_language", "context", "passages": [{"id", "text"}]}`
//! and the expected answer is `{"translations": [{"id", "text"}]}`, tolerated
//! inside a code fence.
//!
//! Ladder, for one [`TranslateJob`] (one batch, planned with [`plan_batches`]):
//! 1. the whole batch, retried with backoff on retryable failures (429, 5xx,
//!    timeouts, network errors, malformed or cut answers);
//! 2. each passage the batch did not deliver (the batch kept failing or was
//!    refused, or the passage was missing from the answer, or its
//!    placeholders did not match the source's) alone, retried the same way —
//!    a missing or mismatched passage is retried too, since models answer
//!    differently from one call to the next;
//! 3. what still fails becomes a [`Residual`] with its reason.
//!
//! Every HTTP attempt is reported through `on_call`, failed ones included.
//!
//! Cancellation: [`translate`] keeps all its state in locals and writes
//! nothing anywhere except through `on_call`, which is called synchronously
//! after each finished attempt; dropping the future at any await point loses
//! only the attempt in flight (unrecorded, its usage unknown) and leaves no
//! partial state behind.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use backon::{BackoffBuilder, ExponentialBackoff, ExponentialBuilder};
use dragoman_book::Tag;
use dragoman_book::placeholder::{self, Token};
use serde::{Deserialize, Serialize};

use crate::llm::{LlmClient, LlmError, clip};

/// One passage to translate: its stable id and its text with placeholders.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PassageIn {
    pub id: String,
    pub text: String,
}

/// One batch of passages with what the model needs to know about it.
/// `passages` travel in one request first; plan them with [`plan_batches`].
/// Ids must be unique within the job.
#[derive(Debug, Clone, PartialEq)]
pub struct TranslateJob {
    pub source_language: String,
    pub target_language: String,
    pub passages: Vec<PassageIn>,
    /// Glossary terms, character notes, previous passages: reference only.
    pub context: Option<String>,
}

/// Estimated tokens of a text: ASCII characters / 3, rounded up, plus one per
/// other character. Real tokenizers give about 4 ASCII characters per token
/// and 1 to 3 other characters (accented, Cyrillic, CJK, the placeholder
/// brackets) per token, so the estimate errs on the high side: a batch
/// planned with it fits the budget for every provider. The simulator reports
/// usage with the same estimate.
pub fn estimate_tokens(text: &str) -> usize {
    let ascii = text.bytes().filter(u8::is_ascii).count();
    let other = text.chars().filter(|c| !c.is_ascii()).count();
    ascii.div_ceil(3) + other
}

/// Tokens of the JSON wrapping of one passage in the user message
/// (`{"id":"","text":""},` is 20 characters).
pub const PASSAGE_OVERHEAD_TOKENS: usize = 8;

/// Upper bound on `max_tokens` asked for one answer: what current models of
/// both providers accept.
pub const MAX_COMPLETION_TOKENS: u32 = 8192;

/// Estimated prompt tokens of one passage in a batch.
pub fn passage_tokens(passage: &PassageIn) -> usize {
    estimate_tokens(&passage.id) + estimate_tokens(&passage.text) + PASSAGE_OVERHEAD_TOKENS
}

/// Estimated prompt tokens of a job apart from its passages: the system
/// prompt, the languages and the context. Subtract it from the model's
/// prompt budget before calling [`plan_batches`].
pub fn prompt_overhead_tokens(
    source_language: &str,
    target_language: &str,
    context: Option<&str>,
) -> usize {
    estimate_tokens(SYSTEM_PROMPT)
        + estimate_tokens(source_language)
        + estimate_tokens(target_language)
        + context.map_or(0, estimate_tokens)
        + 24
}

/// Splits passages, in order, into batches whose estimated passage tokens
/// ([`passage_tokens`]) stay within `max_prompt_tokens`. A passage larger than
/// the budget goes alone.
pub fn plan_batches(passages: &[PassageIn], max_prompt_tokens: usize) -> Vec<Vec<PassageIn>> {
    let mut batches = Vec::new();
    let mut current: Vec<PassageIn> = Vec::new();
    let mut used = 0;
    for passage in passages {
        let tokens = passage_tokens(passage);
        if !current.is_empty() && used + tokens > max_prompt_tokens {
            batches.push(std::mem::take(&mut current));
            used = 0;
        }
        used += tokens;
        current.push(passage.clone());
    }
    if !current.is_empty() {
        batches.push(current);
    }
    batches
}

/// The translator's instructions; constant so that providers can cache it.
pub const SYSTEM_PROMPT: &str = "You are a professional literary translator working on a book. \
The user message is JSON: {\"source_language\", \"target_language\", \"context\", \"passages\": [{\"id\", \"text\"}]}. \
Translate the text of every passage from source_language into target_language, faithfully and naturally, \
keeping tone, register and names consistent with the context. \
The context (glossary, characters, earlier passages) is reference only: never translate it or repeat it. \
Inline markup appears as numbered placeholders: \u{27E6}n\u{27E7}\u{2026}\u{27E6}/n\u{27E7} around words and \u{27E6}n/\u{27E7} alone. \
Keep every placeholder exactly as written and exactly once: never add, drop, renumber, translate or merge one. \
A paired placeholder must surround the words that translate the words it surrounds in the source, properly nested; \
you may move placeholders to follow the word order of the target language. \
Answer with ONLY this JSON, without commentary or code fence: \
{\"translations\":[{\"id\":\"\u{2026}\",\"text\":\"\u{2026}\"}]}, one entry per passage, same ids, same order.";

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
fn max_tokens_for(passages: &[&PassageIn]) -> u32 {
    let tokens: usize = passages.iter().map(|p| passage_tokens(p)).sum();
    u32::try_from(tokens.saturating_mul(4).saturating_add(256))
        .unwrap_or(MAX_COMPLETION_TOKENS)
        .min(MAX_COMPLETION_TOKENS)
}

#[derive(Deserialize)]
struct Answer {
    translations: Vec<AnswerItem>,
}

#[derive(Deserialize)]
struct AnswerItem {
    /// A string as asked; a number is tolerated.
    id: serde_json::Value,
    text: String,
}

/// Reads the model's answer into (id, text) pairs. Tolerates a code fence and
/// text around the JSON object.
pub fn parse_answer(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut body = text.trim();
    if let Some(rest) = body.strip_prefix("```") {
        // Drop the fence line (```json) and the closing fence.
        body = rest.split_once('\n').map_or("", |(_, r)| r);
        body = body.trim_end().strip_suffix("```").unwrap_or(body).trim();
    }
    let parsed = serde_json::from_str::<Answer>(body).or_else(|first| {
        match (body.find('{'), body.rfind('}')) {
            (Some(a), Some(b)) if a < b => serde_json::from_str::<Answer>(&body[a..=b]),
            _ => Err(first),
        }
    });
    let answer = parsed.map_err(|e| format!("answer is not the expected JSON: {e}"))?;
    Ok(answer
        .translations
        .into_iter()
        .map(|item| {
            let id = match item.id {
                serde_json::Value::String(s) => s,
                other => other.to_string(),
            };
            (id, item.text)
        })
        .collect())
}

/// The placeholder shapes of a source text as the tags
/// [`placeholder::check`] compares against; `None` when the source's
/// placeholders are not numbered 1..n each once (not produced by our
/// readers, but passages may come from elsewhere).
fn source_tags(source: &str) -> Option<Vec<Tag>> {
    let tokens = placeholder::tokenize(source).ok()?;
    let mut tags: Vec<Option<Tag>> = Vec::new();
    for token in &tokens {
        let (n, void) = match *token {
            Token::Open(n) => (n, false),
            Token::Void(n) => (n, true),
            Token::Close(_) | Token::Text(_) => continue,
        };
        if tags.len() < n {
            tags.resize(n, None);
        }
        let slot = &mut tags[n - 1];
        if slot.is_some() {
            return None;
        }
        *slot = Some(Tag {
            open: String::new(),
            close: if void { None } else { Some(String::new()) },
            plain: String::new(),
        });
    }
    let tags: Vec<Tag> = tags.into_iter().collect::<Option<_>>()?;
    placeholder::check(source, &tags).ok()?;
    Some(tags)
}

/// Checks that a translation carries exactly the source's placeholders,
/// properly nested (with [`placeholder::check`]). For a source whose own
/// placeholders are irregular, the translation must carry the same
/// placeholder tokens, in any order.
pub fn check_placeholders(source: &str, translation: &str) -> Result<(), String> {
    if let Some(tags) = source_tags(source) {
        return placeholder::check(translation, &tags)
            .map(|_| ())
            .map_err(|m| m.to_string());
    }
    let marks = |text: &str| -> Result<Vec<String>, String> {
        let mut marks: Vec<String> = placeholder::tokenize(text)
            .map_err(|m| m.to_string())?
            .into_iter()
            .filter(|t| !matches!(t, Token::Text(_)))
            .map(|t| format!("{t:?}"))
            .collect();
        marks.sort();
        Ok(marks)
    };
    match (marks(source), marks(translation)?) {
        (Ok(a), b) if a == b => Ok(()),
        (Ok(_), _) => Err("placeholders differ from the source's".into()),
        // A source that cannot even be tokenized: only an identical set of
        // brackets would be safe, which the comparison above cannot tell.
        (Err(e), _) => Err(format!("source placeholders unreadable: {e}")),
    }
}

/// How many times and how long to try.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Attempts per request, the first included (0 counts as 1).
    pub max_attempts: u32,
    /// First backoff delay; doubled after each attempt, with jitter.
    pub base_delay: Duration,
    /// Longest wait, for the backoff and for a provider's `Retry-After` alike.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 4,
            base_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// The delays of one request's retries: exponential from `base_delay`,
    /// with jitter so that workers hit by the same outage do not retry in step.
    fn backoff(&self) -> ExponentialBackoff {
        ExponentialBuilder::new()
            .with_min_delay(self.base_delay)
            .with_max_delay(self.max_delay)
            .with_factor(2.0)
            .with_jitter()
            .without_max_times()
            .build()
    }

    /// The wait before the next attempt: the provider's `Retry-After` when it
    /// gave one, else the next backoff step; never more than `max_delay`
    /// (jitter may push a step past it).
    fn delay(&self, backoff: &mut ExponentialBackoff, retry_after: Option<Duration>) -> Duration {
        // The backoff advances either way so that delays keep growing.
        let step = backoff.next().unwrap_or(self.max_delay);
        retry_after.unwrap_or(step).min(self.max_delay)
    }
}

/// One HTTP attempt, as the usage records need it.
#[derive(Debug, Clone, PartialEq)]
pub struct CallRecord {
    /// Passages sent in the request.
    pub passages: usize,
    /// 0 when the call failed without usage.
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cached: bool,
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

/// Residual reasons.
pub mod reason {
    /// The translation's placeholders never matched the source's.
    pub const MARKUP_MISMATCH: &str = "markup_mismatch";
    /// The provider refused to translate the passage.
    pub const REFUSED: &str = "refused";
    /// The provider kept failing (errors, timeouts, unreadable answers).
    pub const PROVIDER_ERROR: &str = "provider_error";
    /// Answers kept leaving the passage out.
    pub const UNTRANSLATED: &str = "untranslated";
}

/// A passage without a usable translation: it keeps its source text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Residual {
    /// One of [`reason`].
    pub reason: String,
    /// The last failure, for the report and the logs.
    pub error: String,
}

/// What became of one passage of a job.
#[derive(Debug, Clone, PartialEq)]
pub struct PassageOutcome {
    pub id: String,
    pub result: Result<String, Residual>,
}

#[derive(Debug, Clone)]
struct Failure {
    reason: &'static str,
    error: String,
}

impl Failure {
    fn residual(&self) -> Residual {
        Residual {
            reason: self.reason.to_string(),
            error: self.error.clone(),
        }
    }
}

enum CallResult {
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

type OnCall<'a> = &'a mut (dyn FnMut(CallRecord) + Send);

/// One HTTP attempt for the passages at `indices`, recorded.
async fn call(
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
    let mut record = CallRecord {
        passages: passages.len(),
        prompt_tokens: 0,
        completion_tokens: 0,
        cached: false,
        cost: client.cost(0, 0),
        duration_ms,
        outcome: String::new(),
        error: String::new(),
    };
    let completion = match result {
        Ok(c) => c,
        Err(e) => {
            record.outcome = e.outcome().into();
            record.error = e.to_string();
            on_call(record);
            return CallResult::Failed {
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
            };
        }
    };
    record.prompt_tokens = completion.prompt_tokens;
    record.completion_tokens = completion.completion_tokens;
    record.cached = completion.cached;
    record.cost = client.cost(completion.prompt_tokens, completion.completion_tokens);

    let (outcome, error, result) = if completion.refusal {
        let error = format!("refused: {}", clip(&completion.text, 300));
        let failure = Failure {
            reason: reason::REFUSED,
            error: error.clone(),
        };
        let result = CallResult::Failed {
            failure,
            retryable: false,
            fatal: false,
            retry_after: None,
        };
        ("refused", error, result)
    } else {
        match parse_answer(&completion.text) {
            Err(e) => {
                let error = if completion.truncated {
                    format!("answer cut at max_tokens: {e}")
                } else {
                    e
                };
                let result = CallResult::Failed {
                    failure: Failure {
                        reason: reason::PROVIDER_ERROR,
                        error: error.clone(),
                    },
                    retryable: true,
                    fatal: false,
                    retry_after: None,
                };
                ("malformed", error, result)
            }
            Ok(items) => {
                let results = match_answer(&passages, indices, items);
                let problems: Vec<String> = results
                    .iter()
                    .filter_map(|(i, r)| {
                        r.as_ref()
                            .err()
                            .map(|f| format!("{}: {}", job.passages[*i].id, f.error))
                    })
                    .collect();
                let outcome = if problems.is_empty() {
                    "ok"
                } else {
                    "incomplete"
                };
                (
                    outcome,
                    clip(&problems.join("; "), 1000),
                    CallResult::Answered(results),
                )
            }
        }
    };
    record.outcome = outcome.into();
    record.error = error;
    on_call(record);
    result
}

/// Pairs an answer's translations with the requested passages and checks each.
fn match_answer(
    passages: &[&PassageIn],
    indices: &[usize],
    items: Vec<(String, String)>,
) -> Vec<(usize, Result<String, Failure>)> {
    // A single passage's answer is taken whatever id the model wrote.
    let lone = if passages.len() == 1 && items.len() == 1 {
        items.first().map(|(_, t)| t.clone())
    } else {
        None
    };
    let mut by_id: HashMap<String, String> = HashMap::new();
    for (id, text) in items {
        by_id.entry(id).or_insert(text);
    }
    passages
        .iter()
        .zip(indices)
        .map(|(p, &i)| {
            let text = lone.clone().or_else(|| by_id.get(&p.id).cloned());
            let result = match text {
                Some(t) if !t.trim().is_empty() || p.text.trim().is_empty() => {
                    check_placeholders(&p.text, &t)
                        .map(|()| t)
                        .map_err(|e| Failure {
                            reason: reason::MARKUP_MISMATCH,
                            error: e,
                        })
                }
                _ => Err(Failure {
                    reason: reason::UNTRANSLATED,
                    error: "missing from the answer".into(),
                }),
            };
            (i, result)
        })
        .collect()
}

/// What one request (with its retries) gave.
struct Run {
    results: Vec<(usize, Result<String, Failure>)>,
    /// The request as a whole failed (kept failing, refused, or fatal).
    fatal: bool,
}

/// One request with retries. A whole-call failure is retried while
/// retryable; passage-level failures (missing, mismatched) are retried only
/// when `retry_passages` (a passage alone), for just those passages.
async fn run(
    client: &LlmClient,
    job: &TranslateJob,
    policy: &RetryPolicy,
    indices: &[usize],
    retry_passages: bool,
    on_call: OnCall<'_>,
) -> Run {
    let mut backoff = policy.backoff();
    let mut pending = indices.to_vec();
    let mut results = Vec::with_capacity(indices.len());
    let mut attempt = 1;
    loop {
        let last = attempt >= policy.max_attempts.max(1);
        attempt += 1;
        match call(client, job, &pending, &mut *on_call).await {
            CallResult::Failed {
                failure,
                retryable,
                fatal,
                retry_after,
            } => {
                if retryable && !last {
                    tokio::time::sleep(policy.delay(&mut backoff, retry_after)).await;
                    continue;
                }
                results.extend(pending.iter().map(|&i| (i, Err(failure.clone()))));
                return Run { results, fatal };
            }
            CallResult::Answered(items) => {
                let mut again = Vec::new();
                for (i, result) in items {
                    match result {
                        Err(_) if retry_passages && !last => again.push(i),
                        other => results.push((i, other)),
                    }
                }
                if again.is_empty() {
                    return Run {
                        results,
                        fatal: false,
                    };
                }
                pending = again;
                tokio::time::sleep(policy.delay(&mut backoff, None)).await;
            }
        }
    }
}

/// Translates one batch down the ladder (see the module doc). Outcomes come
/// in the order of `job.passages`, one per passage.
pub async fn translate(
    client: &LlmClient,
    job: &TranslateJob,
    policy: &RetryPolicy,
    on_call: &mut (dyn FnMut(CallRecord) + Send),
) -> Vec<PassageOutcome> {
    let n = job.passages.len();
    let mut out: Vec<Option<Result<String, Residual>>> = vec![None; n];
    if n > 0 {
        let all: Vec<usize> = (0..n).collect();
        // A batch of one is already the passage alone: no second rung.
        let single = n == 1;
        let batch = run(client, job, policy, &all, single, &mut *on_call).await;
        let mut alone = Vec::new();
        let mut fatal = batch
            .fatal
            .then(|| {
                batch
                    .results
                    .iter()
                    .find_map(|(_, r)| r.as_ref().err().cloned())
            })
            .flatten();
        for (i, result) in batch.results {
            match result {
                Ok(text) => out[i] = Some(Ok(text)),
                Err(f) if single || fatal.is_some() => out[i] = Some(Err(f.residual())),
                Err(_) => alone.push(i),
            }
        }
        for i in alone {
            // After a bad key or unknown model, asking again per passage
            // would only collect the same refusal.
            if let Some(f) = &fatal {
                out[i] = Some(Err(f.residual()));
                continue;
            }
            let single = run(client, job, policy, &[i], true, &mut *on_call).await;
            if single.fatal {
                fatal = single
                    .results
                    .iter()
                    .find_map(|(_, r)| r.as_ref().err().cloned());
            }
            for (j, result) in single.results {
                out[j] = Some(result.map_err(|f| f.residual()));
            }
        }
    }
    job.passages
        .iter()
        .zip(out)
        .map(|(p, result)| PassageOutcome {
            id: p.id.clone(),
            result: result.unwrap_or_else(|| {
                Err(Residual {
                    reason: reason::UNTRANSLATED.into(),
                    error: "not attempted".into(),
                })
            }),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(id: &str, text: &str) -> PassageIn {
        PassageIn {
            id: id.into(),
            text: text.into(),
        }
    }

    #[test]
    fn estimate_counts_ascii_by_threes_and_others_by_one() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("abcd"), 2);
        assert_eq!(estimate_tokens("⟦1/⟧"), 3);
        assert_eq!(estimate_tokens("日本"), 2);
    }

    #[test]
    fn plan_batches_respects_the_budget_and_order() {
        // A deterministic spread of sizes, some over the budget.
        let passages: Vec<PassageIn> = (0..300)
            .map(|i| p(&format!("c1.p{i}"), &"word ".repeat((i * 37) % 90)))
            .collect();
        for budget in [1, 50, 120, 400, 5000] {
            let batches = plan_batches(&passages, budget);
            let flat: Vec<PassageIn> = batches.iter().flatten().cloned().collect();
            assert_eq!(flat, passages, "order and content kept");
            for b in &batches {
                let total: usize = b.iter().map(passage_tokens).sum();
                assert!(!b.is_empty());
                assert!(total <= budget || b.len() == 1, "budget {budget}: {total}");
            }
            // Greedy: a batch is closed only when the next passage does not fit.
            for pair in batches.windows(2) {
                let total: usize = pair[0].iter().map(passage_tokens).sum();
                assert!(total + passage_tokens(&pair[1][0]) > budget);
            }
        }
        assert!(plan_batches(&[], 100).is_empty());
    }

    #[test]
    fn answers_are_read_with_or_without_fence() {
        let plain = r#"{"translations":[{"id":"a","text":"x"},{"id":2,"text":"y"}]}"#;
        let want = vec![("a".to_string(), "x".to_string()), ("2".into(), "y".into())];
        assert_eq!(parse_answer(plain).unwrap(), want);
        assert_eq!(
            parse_answer(&format!("```json\n{plain}\n```")).unwrap(),
            want
        );
        assert_eq!(
            parse_answer(&format!("Here:\n{plain}\nDone.")).unwrap(),
            want
        );
        assert!(parse_answer(r#"{"translations":[{"id":"a","te"#).is_err());
        assert!(parse_answer("Bonjour").is_err());
    }

    #[test]
    fn placeholders_are_checked_against_the_source() {
        let src = "a ⟦1⟧b⟦/1⟧ c⟦2/⟧";
        assert_eq!(check_placeholders(src, "⟦2/⟧x ⟦1⟧y⟦/1⟧"), Ok(()));
        assert!(check_placeholders(src, "x ⟦1⟧y⟦/1⟧").is_err());
        assert!(check_placeholders(src, "x ⟦1⟧y⟦2/⟧⟦/1⟧ ⟦2/⟧").is_err());
        assert!(check_placeholders("plain", "⟦1/⟧").is_err());
        assert_eq!(check_placeholders("plain", "simple"), Ok(()));
        // Irregular numbering in the source: same tokens in any order.
        assert_eq!(check_placeholders("⟦3/⟧ x ⟦5/⟧", "⟦5/⟧ y ⟦3/⟧"), Ok(()));
        assert!(check_placeholders("⟦3/⟧ x ⟦5/⟧", "⟦5/⟧ y").is_err());
    }

    #[test]
    fn delays_honour_retry_after_within_the_cap() {
        let policy = RetryPolicy {
            max_attempts: 5,
            base_delay: Duration::from_millis(10),
            max_delay: Duration::from_millis(100),
        };
        let mut b = policy.backoff();
        assert_eq!(
            policy.delay(&mut b, Some(Duration::from_millis(30))),
            Duration::from_millis(30)
        );
        assert_eq!(
            policy.delay(&mut b, Some(Duration::from_secs(5))),
            Duration::from_millis(100)
        );
        let mut b = policy.backoff();
        let first = policy.delay(&mut b, None);
        assert!(first >= Duration::from_millis(10) && first <= Duration::from_millis(20));
        for _ in 0..10 {
            assert!(policy.delay(&mut b, None) <= Duration::from_millis(100));
        }
    }

    #[test]
    fn max_tokens_grow_with_the_batch_and_are_capped() {
        let small = p("a", "hello");
        assert!(max_tokens_for(&[&small]) >= 256);
        let big = p("b", &"x".repeat(100_000));
        assert_eq!(max_tokens_for(&[&big]), MAX_COMPLETION_TOKENS);
    }

    #[test]
    fn translate_future_is_send() {
        fn assert_send<T: Send>(_: &T) {}
        let client = LlmClient::new(crate::llm::ProviderConfig {
            kind: crate::llm::ProviderKind::OpenAi,
            base_url: "http://127.0.0.1:9".into(),
            model: "m".into(),
            api_key: None,
            timeout: Duration::from_secs(1),
            price_input: None,
            price_output: None,
        })
        .unwrap();
        let job = TranslateJob {
            source_language: "en".into(),
            target_language: "fr".into(),
            passages: vec![],
            context: None,
        };
        let policy = RetryPolicy::default();
        let mut sink = |_: CallRecord| {};
        let fut = translate(&client, &job, &policy, &mut sink);
        assert_send(&fut);
    }
}
