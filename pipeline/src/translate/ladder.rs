//! The fallback ladder: the whole batch with retries, then each passage it
//! did not deliver alone, then residuals (see the [parent module](super)).

use super::call::{CallRecord, CallResult, OnCall, call};
use super::job::TranslateJob;
use super::outcome::{Failure, PassageOutcome, Residual, reason};
use super::retry::RetryPolicy;
use crate::llm::LlmClient;

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
    use std::time::Duration;

    use super::*;

    /// A client for a port nothing listens on.
    fn unreachable_client() -> LlmClient {
        LlmClient::new(crate::llm::ProviderConfig {
            kind: crate::llm::ProviderKind::OpenAi,
            base_url: "http://127.0.0.1:9".into(),
            model: "m".into(),
            api_key: None,
            ids: Default::default(),
            timeout: Duration::from_secs(1),
            price_input: None,
            price_output: None,
            price_cached_input: None,
        })
        .unwrap()
    }

    fn empty_job() -> TranslateJob {
        TranslateJob {
            source_language: "en".into(),
            target_language: "fr".into(),
            passages: vec![],
            context: None,
        }
    }

    #[test]
    fn translate_future_is_send() {
        fn assert_send<T: Send>(_: &T) {}
        let client = unreachable_client();
        let job = empty_job();
        let policy = RetryPolicy::default();
        let mut sink = |_: CallRecord| {};
        let fut = translate(&client, &job, &policy, &mut sink);
        assert_send(&fut);
    }

    #[tokio::test]
    async fn an_empty_batch_makes_no_call() {
        let mut calls = 0;
        let outcomes = translate(
            &unreachable_client(),
            &empty_job(),
            &RetryPolicy::default(),
            &mut |_| calls += 1,
        )
        .await;
        assert!(outcomes.is_empty());
        assert_eq!(calls, 0);
    }

    #[tokio::test]
    async fn a_failing_batch_is_tried_passage_by_passage_then_left_residual() {
        let job = TranslateJob {
            passages: ["a", "b"]
                .map(|id| crate::translate::PassageIn {
                    id: id.into(),
                    text: "text".into(),
                })
                .into(),
            ..empty_job()
        };
        let policy = RetryPolicy {
            max_attempts: 1,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(1),
        };
        let mut calls = Vec::new();
        let outcomes = translate(&unreachable_client(), &job, &policy, &mut |record| {
            calls.push(record)
        })
        .await;
        // The batch, then each passage alone.
        let sizes: Vec<usize> = calls.iter().map(|c| c.passages).collect();
        assert_eq!(sizes, [2, 1, 1]);
        assert!(
            calls.iter().all(|c| c.outcome == "network_error"),
            "{calls:?}"
        );
        let ids: Vec<&str> = outcomes.iter().map(|o| o.id.as_str()).collect();
        assert_eq!(ids, ["a", "b"]);
        for outcome in &outcomes {
            let residual = outcome.result.as_ref().unwrap_err();
            assert_eq!(residual.reason, reason::PROVIDER_ERROR);
        }
    }
}
