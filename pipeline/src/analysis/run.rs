//! Analysing a batch of passages: the whole batch with retries; an answer
//! cut at `max_tokens` splits the batch in halves (the same request would
//! only be cut again); then each passage the answer left out alone, then a
//! failed analysis for what still gives nothing (stored as failed, so a
//! resumed job does not pay for it again; the passage is translated without
//! what it would have added).

use std::collections::HashMap;
use std::time::Instant;

use dragoman_model::analysis::{Extraction, PassageExtraction};

use super::protocol::{ANALYSIS_SYSTEM_PROMPT, analysis_message, parse_analysis_answer};
use crate::llm::{LlmClient, clip};
use crate::translate::{CallRecord, MAX_COMPLETION_TOKENS, PassageIn, RetryPolicy, passage_tokens};

/// The languages of a batch.
#[derive(Debug, Clone, Copy)]
pub struct Languages<'a> {
    pub source: &'a str,
    pub target: &'a str,
}

/// How many times its passages' tokens an analysis answer may take: lists
/// of names, terms and evidence quote the text, with JSON around them.
pub const ANSWER_FACTOR: usize = 6;

/// `max_tokens` of an analysis answer: [`ANSWER_FACTOR`] times the
/// passages' estimate plus room for the JSON, capped.
pub fn max_tokens_for(passages: &[PassageIn]) -> u32 {
    let tokens: usize = passages.iter().map(passage_tokens).sum();
    u32::try_from(tokens.saturating_mul(ANSWER_FACTOR).saturating_add(1024))
        .unwrap_or(MAX_COMPLETION_TOKENS)
        .min(MAX_COMPLETION_TOKENS)
}

/// What one request with its retries gave.
enum Answered {
    /// The analyses it read, by id (empty when it kept failing or was
    /// refused).
    Read(HashMap<String, Extraction>),
    /// The answer was cut at `max_tokens`: the batch asks for too much.
    Cut,
}

/// One request with its retries.
async fn request(
    client: &LlmClient,
    languages: Languages<'_>,
    passages: &[PassageIn],
    policy: &RetryPolicy,
    on_call: &mut (dyn FnMut(CallRecord) + Send),
) -> Answered {
    let user = analysis_message(languages.source, languages.target, passages);
    let mut backoff = policy.backoff();
    let attempts = policy.max_attempts.max(1);
    for attempt in 1..=attempts {
        let started = Instant::now();
        let result = client
            .complete(ANALYSIS_SYSTEM_PROMPT, &user, max_tokens_for(passages))
            .await;
        let mut record = CallRecord::attempt(
            client,
            passages.len(),
            u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        );
        let (retry, retry_after, found) = match result {
            Err(e) => {
                record.outcome = e.outcome().into();
                record.error = e.to_string();
                (e.is_retryable(), e.retry_after(), None)
            }
            Ok(completion) => {
                record.take_usage(client, &completion);
                if completion.refusal {
                    record.outcome = "refused".into();
                    record.error = format!("refused: {}", clip(&completion.text, 300));
                    (false, None, None)
                } else {
                    match parse_analysis_answer(&completion.text) {
                        Err(e) if completion.truncated => {
                            record.outcome = "malformed".into();
                            record.error = format!("answer cut at max_tokens: {e}");
                            if passages.len() > 1 {
                                on_call(record);
                                return Answered::Cut;
                            }
                            // One passage cut again would only be cut again.
                            (false, None, None)
                        }
                        Err(e) => {
                            record.outcome = "malformed".into();
                            record.error = e;
                            (true, None, None)
                        }
                        Ok(items) => {
                            record.outcome = "ok".into();
                            (false, None, Some(items))
                        }
                    }
                }
            }
        };
        on_call(record);
        if let Some(items) = found {
            // A single passage's answer is taken whatever id the model wrote.
            if let ([one], [(_, analysis)]) = (passages, items.as_slice()) {
                return Answered::Read(HashMap::from([(one.id.clone(), analysis.clone())]));
            }
            let mut by_id = HashMap::new();
            for (id, analysis) in items {
                by_id.entry(id).or_insert(analysis);
            }
            return Answered::Read(by_id);
        }
        if !retry || attempt == attempts {
            break;
        }
        tokio::time::sleep(policy.delay(&mut backoff, retry_after)).await;
    }
    Answered::Read(HashMap::new())
}

/// Analyses one batch: one analysis per passage, in the order given; a
/// passage that no attempt analysed comes back with `failed` set.
pub async fn analyse(
    client: &LlmClient,
    languages: Languages<'_>,
    passages: &[PassageIn],
    policy: &RetryPolicy,
    on_call: &mut (dyn FnMut(CallRecord) + Send),
) -> Vec<PassageExtraction> {
    if passages.is_empty() {
        return Vec::new();
    }
    let mut found = HashMap::new();
    // Slices still to ask for; a cut answer puts back its two halves.
    let mut todo: Vec<&[PassageIn]> = vec![passages];
    while let Some(part) = todo.pop() {
        match request(client, languages, part, policy, &mut *on_call).await {
            Answered::Cut => {
                let (first, second) = part.split_at(part.len() / 2);
                todo.push(second);
                todo.push(first);
            }
            Answered::Read(read) => {
                let mut read = read;
                if part.len() > 1 {
                    for passage in part {
                        if read.contains_key(&passage.id) {
                            continue;
                        }
                        let alone = std::slice::from_ref(passage);
                        if let Answered::Read(one) =
                            request(client, languages, alone, policy, &mut *on_call).await
                        {
                            read.extend(one);
                        }
                    }
                }
                found.extend(read);
            }
        }
    }
    passages
        .iter()
        .map(|p| {
            let found = found.remove(&p.id);
            PassageExtraction {
                passage_id: p.id.clone(),
                failed: found.is_none(),
                extraction: found.unwrap_or_default(),
            }
        })
        .collect()
}
