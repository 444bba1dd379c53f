//! Reviewing a batch of passages: the whole batch with retries on
//! retryable failures; an answer cut at `max_tokens` splits the batch in
//! halves (the same request would only be cut again); then each passage the
//! answer left out (or that a failed batch never reviewed) alone, one
//! request with its retries; what still has no review comes back as an
//! error with the reason. A refused or failed review costs the passage
//! nothing but the review: the caller keeps its translation as it is.

use std::collections::HashMap;
use std::time::Instant;

use super::Languages;
use super::protocol::{
    REVIEW_SYSTEM_PROMPT, ReviewItem, ReviewName, ReviewPassage, ReviewTerm, parse_review_answer,
    review_message,
};
use crate::llm::{LlmClient, clip};
use crate::translate::{CallRecord, MAX_COMPLETION_TOKENS, RetryPolicy, estimate_tokens};

/// The reason of a passage the answers never mentioned.
const MISSING: &str = "missing from the answer";

/// Completion tokens allowed per passage besides its correction: the
/// flags and the JSON around them.
const ROOM_PER_PASSAGE: usize = 200;

/// One passage's review, or why it has none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewOutcome {
    pub id: String,
    /// `Err` with the reason when no attempt gave a review of the passage:
    /// the passage counts as not reviewed, not as flagged.
    pub result: Result<ReviewItem, String>,
}

/// `max_tokens` of a review answer: twice each translation's estimate (a
/// correction repeats the translation, and real tokenizers split some
/// scripts finer than the estimate) plus [`ROOM_PER_PASSAGE`], capped.
pub fn max_tokens_for(passages: &[ReviewPassage]) -> u32 {
    let tokens = passages
        .iter()
        .map(|p| {
            estimate_tokens(&p.translation)
                .saturating_mul(2)
                .saturating_add(ROOM_PER_PASSAGE)
        })
        .fold(0usize, usize::saturating_add);
    u32::try_from(tokens)
        .unwrap_or(MAX_COMPLETION_TOKENS)
        .min(MAX_COMPLETION_TOKENS)
}

/// What one request with its retries gave.
enum Answered {
    /// The reviews it read of the requested passages, by id (some may be
    /// missing).
    Read(HashMap<String, ReviewItem>),
    /// No readable answer: the last attempt's error; `fatal` when no other
    /// request to the provider can succeed either.
    Failed { error: String, fatal: bool },
    /// The answer was cut at `max_tokens`: the batch asks for too much.
    Cut,
}

/// What the caller of [`request`] needs besides the client.
struct Sheet<'a> {
    languages: Languages<'a>,
    terms: &'a [ReviewTerm],
    names: &'a [ReviewName],
}

/// An answer's items paired with the requested passages: the reviews by
/// id, and the ids the answer left out, in the order asked. A single
/// passage takes the single review whatever id the model wrote; otherwise
/// the first review of an id wins and unrequested ids are ignored.
pub fn match_items(
    passages: &[ReviewPassage],
    items: Vec<ReviewItem>,
) -> (HashMap<String, ReviewItem>, Vec<String>) {
    if let ([one], [_]) = (passages, items.as_slice()) {
        let found = items
            .into_iter()
            .map(|item| {
                (
                    one.id.clone(),
                    ReviewItem {
                        id: one.id.clone(),
                        ..item
                    },
                )
            })
            .collect();
        return (found, Vec::new());
    }
    let mut by_id: HashMap<String, ReviewItem> = HashMap::new();
    for item in items {
        if passages.iter().any(|p| p.id == item.id) {
            by_id.entry(item.id.clone()).or_insert(item);
        }
    }
    let missing = passages
        .iter()
        .filter(|p| !by_id.contains_key(&p.id))
        .map(|p| p.id.clone())
        .collect();
    (by_id, missing)
}

/// One request with its retries, every attempt recorded.
async fn request(
    client: &LlmClient,
    sheet: &Sheet<'_>,
    passages: &[ReviewPassage],
    policy: &RetryPolicy,
    on_call: &mut (dyn FnMut(CallRecord) + Send),
) -> Answered {
    let user = review_message(sheet.languages, sheet.terms, sheet.names, passages);
    let max_tokens = max_tokens_for(passages);
    let mut backoff = policy.backoff();
    let attempts = policy.max_attempts.max(1);
    let mut last_error = String::new();
    for attempt in 1..=attempts {
        let started = Instant::now();
        let result = client
            .complete(REVIEW_SYSTEM_PROMPT, &user, max_tokens)
            .await;
        let mut record = CallRecord::attempt(
            client,
            passages.len(),
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
                    match parse_review_answer(&completion.text) {
                        Err(e) if completion.truncated => {
                            record.outcome = "malformed".into();
                            record.error = format!("answer cut at max_tokens: {e}");
                            if passages.len() > 1 {
                                on_call(record);
                                return Answered::Cut;
                            }
                            // One passage cut again would only be cut again.
                            (false, None)
                        }
                        Err(e) => {
                            record.outcome = "malformed".into();
                            record.error = e;
                            (true, None)
                        }
                        Ok(items) => {
                            let (found, missing) = match_items(passages, items);
                            if missing.is_empty() {
                                record.outcome = "ok".into();
                            } else {
                                record.outcome = "incomplete".into();
                                let named: Vec<String> = missing
                                    .iter()
                                    .map(|id| format!("{id}: {MISSING}"))
                                    .collect();
                                record.error = clip(&named.join("; "), 1000);
                            }
                            on_call(record);
                            return Answered::Read(found);
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

/// Reviews one batch of translated passages against the glossary `terms`
/// and the character sheet `names`: one outcome per passage, in the order
/// given. Passage ids must be unique within the batch.
///
/// A correction identical to the translation reads as none.
pub async fn review(
    client: &LlmClient,
    languages: Languages<'_>,
    terms: &[ReviewTerm],
    names: &[ReviewName],
    passages: &[ReviewPassage],
    policy: &RetryPolicy,
    on_call: &mut (dyn FnMut(CallRecord) + Send),
) -> Vec<ReviewOutcome> {
    if passages.is_empty() {
        return Vec::new();
    }
    let sheet = Sheet {
        languages,
        terms,
        names,
    };
    let mut found: HashMap<String, ReviewItem> = HashMap::new();
    let mut failed: HashMap<String, String> = HashMap::new();
    // Slices still to ask for; a cut answer puts back its two halves.
    let mut todo: Vec<&[ReviewPassage]> = vec![passages];
    while let Some(part) = todo.pop() {
        let left_out: Vec<&ReviewPassage> =
            match request(client, &sheet, part, policy, &mut *on_call).await {
                Answered::Cut => {
                    let (first, second) = part.split_at(part.len() / 2);
                    todo.push(second);
                    todo.push(first);
                    continue;
                }
                Answered::Read(read) => {
                    found.extend(read);
                    part.iter().filter(|p| !found.contains_key(&p.id)).collect()
                }
                Answered::Failed { error, fatal } => {
                    for p in part {
                        failed.insert(p.id.clone(), error.clone());
                    }
                    if fatal {
                        // Every other request would be refused the same way.
                        break;
                    }
                    part.iter().collect()
                }
            };
        if part.len() == 1 {
            continue;
        }
        for passage in left_out {
            let alone = std::slice::from_ref(passage);
            match request(client, &sheet, alone, policy, &mut *on_call).await {
                Answered::Read(read) => {
                    if !read.contains_key(&passage.id) {
                        failed.insert(passage.id.clone(), MISSING.to_owned());
                    }
                    found.extend(read);
                }
                Answered::Failed { error, fatal } => {
                    failed.insert(passage.id.clone(), error);
                    if fatal {
                        todo.clear();
                        break;
                    }
                }
                // A single passage's cut answer comes back as failed.
                Answered::Cut => {}
            }
        }
    }
    passages
        .iter()
        .map(|p| {
            let result = match found.get(&p.id) {
                Some(item) => Ok(settled(item.clone(), p)),
                None => Err(failed
                    .get(&p.id)
                    .filter(|e| !e.is_empty())
                    .cloned()
                    .unwrap_or_else(|| MISSING.to_owned())),
            };
            ReviewOutcome {
                id: p.id.clone(),
                result,
            }
        })
        .collect()
}

/// A passage's review as the caller takes it: under the passage's id,
/// a correction identical to the translation read as none.
pub fn settled(item: ReviewItem, passage: &ReviewPassage) -> ReviewItem {
    let mut item = item;
    item.id.clone_from(&passage.id);
    if item.correction.as_deref().map(str::trim) == Some(passage.translation.trim()) {
        item.correction = None;
    }
    item
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use dragoman_model::vocab::Severity;

    use super::*;
    use crate::llm::{ProviderConfig, ProviderKind};
    use dragoman_simulator::{RunningSimulator, SimulatorConfig, pseudo};

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

    fn passage(id: &str, source: &str, translation: &str) -> ReviewPassage {
        ReviewPassage {
            id: id.into(),
            source: source.into(),
            translation: translation.into(),
        }
    }

    fn item(id: &str) -> ReviewItem {
        ReviewItem {
            id: id.into(),
            correction: None,
            flags: Vec::new(),
        }
    }

    #[test]
    fn review_future_is_send() {
        fn assert_send<T: Send>(_: &T) {}
        let client = client("http://127.0.0.1:9".into());
        let policy = RetryPolicy::default();
        let mut sink = |_: CallRecord| {};
        let fut = review(&client, LANGUAGES, &[], &[], &[], &policy, &mut sink);
        assert_send(&fut);
    }

    #[test]
    fn max_tokens_grow_with_the_translations_and_are_capped() {
        let small = passage("a", "x", "abcdef");
        assert_eq!(max_tokens_for(std::slice::from_ref(&small)), 2 * 2 + 200);
        assert_eq!(max_tokens_for(&[small.clone(), small]), 2 * (2 * 2 + 200));
        let big = passage("b", "x", &"x".repeat(100_000));
        assert_eq!(max_tokens_for(&[big]), MAX_COMPLETION_TOKENS);
    }

    #[test]
    fn answers_are_matched_to_the_requested_passages() {
        let passages = [
            passage("a", "", ""),
            passage("b", "", ""),
            passage("c", "", ""),
        ];
        let first = ReviewItem {
            correction: Some("first".into()),
            ..item("a")
        };
        let (found, missing) = match_items(
            &passages,
            vec![first.clone(), item("a"), item("zzz"), item("c")],
        );
        assert_eq!(missing, ["b"]);
        assert_eq!(found.len(), 2);
        assert_eq!(
            found.get("a"),
            Some(&first),
            "the first review of an id wins"
        );
        // A lone passage takes the lone review whatever its id.
        let (found, missing) = match_items(&passages[1..2], vec![item("1")]);
        assert!(missing.is_empty());
        assert_eq!(found.get("b").map(|i| i.id.as_str()), Some("b"));
        let (found, missing) = match_items(&passages[1..2], vec![item("1"), item("2")]);
        assert!(found.is_empty());
        assert_eq!(missing, ["b"]);
    }

    #[tokio::test]
    async fn an_empty_batch_makes_no_call() {
        let mut calls = 0;
        let outcomes = review(
            &client("http://127.0.0.1:9".into()),
            LANGUAGES,
            &[],
            &[],
            &[],
            &RetryPolicy::default(),
            &mut |_| calls += 1,
        )
        .await;
        assert!(outcomes.is_empty());
        assert_eq!(calls, 0);
    }

    #[tokio::test]
    async fn the_simulator_reviews_every_passage_in_order() {
        let sim = RunningSimulator::start(SimulatorConfig::default())
            .await
            .expect("simulator");
        let terms = [ReviewTerm {
            source: "warp core".into(),
            translation: "cœur de distorsion".into(),
            locked: true,
        }];
        let names = [ReviewName {
            name: "Alice".into(),
            aliases: vec!["Ally".into()],
            rendering: "Alicia".into(),
        }];
        let fixed = [
            ("warp core", "cœur de distorsion"),
            ("Alice", "Alicia"),
            ("Ally", "Alicia"),
        ];
        let faithful = |source: &str| pseudo::pseudo_translate_with(source, "fr", &fixed);
        let sources = ["Ally fixed the warp core.", "Rain ⟦1/⟧fell.", "Alice ran."];
        let passages = [
            passage("p1", sources[0], &faithful(sources[0])),
            passage("p2", sources[1], &faithful(sources[1])),
            passage(
                "p3",
                sources[2],
                &pseudo::pseudo_translate(sources[2], "fr"),
            ),
        ];
        let mut calls = Vec::new();
        let outcomes = review(
            &client(sim.openai_base_url()),
            LANGUAGES,
            &terms,
            &names,
            &passages,
            &quick(2),
            &mut |record| calls.push(record),
        )
        .await;
        let ids: Vec<&str> = outcomes.iter().map(|o| o.id.as_str()).collect();
        assert_eq!(ids, ["p1", "p2", "p3"]);
        for clean in &outcomes[..2] {
            let reviewed = clean.result.as_ref().expect("reviewed");
            assert_eq!(reviewed.correction, None);
            assert!(reviewed.flags.is_empty());
        }
        let drifted = outcomes[2].result.as_ref().expect("reviewed");
        assert_eq!(drifted.correction.as_deref(), Some("[fr] Alicia rán."));
        assert_eq!(drifted.flags.len(), 1);
        assert_eq!(drifted.flags[0].severity, Severity::Major);
        assert_eq!(drifted.flags[0].code, "consistency");
        assert_eq!(calls.len(), 1, "{calls:?}");
        assert_eq!((calls[0].outcome.as_str(), calls[0].passages), ("ok", 3));
        assert!(calls[0].prompt_tokens > 0 && calls[0].completion_tokens > 0);
        assert_eq!(sim.stats().reviews, 1);
        sim.stop().await.expect("stop");
    }

    #[tokio::test]
    async fn failing_reviews_are_retried_then_tried_alone_then_left_unreviewed() {
        let passages = [passage("a", "one", "un"), passage("b", "two", "deux")];
        let cases = [
            (
                SimulatorConfig {
                    rate_500: 1.0,
                    ..SimulatorConfig::default()
                },
                "server_error",
                // The batch twice, then each passage twice.
                6,
            ),
            (
                SimulatorConfig {
                    rate_refusal: 1.0,
                    ..SimulatorConfig::default()
                },
                "refused",
                // A refusal is not retried, but each passage is tried alone.
                3,
            ),
        ];
        for (config, outcome, count) in cases {
            let sim = RunningSimulator::start(config).await.expect("simulator");
            let mut calls = Vec::new();
            let outcomes = review(
                &client(sim.openai_base_url()),
                LANGUAGES,
                &[],
                &[],
                &passages,
                &quick(2),
                &mut |record| calls.push(record),
            )
            .await;
            assert_eq!(calls.len(), count, "{outcome}: {calls:?}");
            assert!(calls.iter().all(|c| c.outcome == outcome), "{calls:?}");
            let sizes: Vec<usize> = calls.iter().map(|c| c.passages).collect();
            assert_eq!(sizes[0], 2);
            assert!(sizes[count - 2..].iter().all(|&n| n == 1));
            let ids: Vec<&str> = outcomes.iter().map(|o| o.id.as_str()).collect();
            assert_eq!(ids, ["a", "b"]);
            for o in &outcomes {
                let reason = o.result.as_ref().expect_err("not reviewed");
                assert!(!reason.is_empty());
            }
            sim.stop().await.expect("stop");
        }
    }
}
