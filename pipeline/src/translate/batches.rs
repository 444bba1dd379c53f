//! Planning batches by estimated tokens, so that each request fits the
//! model's prompt budget. The packing itself is
//! [`dragoman_model::batching`]'s, which the estimate of a job counts calls
//! with too.

use super::job::PassageIn;
use dragoman_model::batching;

pub use dragoman_model::batching::PASSAGE_OVERHEAD_TOKENS;
pub use dragoman_model::tokens::estimate_tokens;

/// Estimated prompt tokens of one passage in a batch.
pub fn passage_tokens(passage: &PassageIn) -> usize {
    batching::passage_tokens(&passage.id, &passage.text)
}

/// Estimated prompt tokens of a job apart from its passages: the system
/// prompt, the languages and the context. Subtract it from the model's
/// prompt budget before calling [`plan_batches`].
pub fn prompt_overhead_tokens(
    source_language: &str,
    target_language: &str,
    context: Option<&str>,
) -> usize {
    batching::call_overhead_tokens(source_language, target_language, context)
}

/// Splits passages, in order, into batches whose estimated passage tokens
/// ([`passage_tokens`]) stay within `max_prompt_tokens`. A passage larger than
/// the budget goes alone.
pub fn plan_batches(passages: &[PassageIn], max_prompt_tokens: usize) -> Vec<Vec<PassageIn>> {
    let tokens: Vec<usize> = passages.iter().map(passage_tokens).collect();
    batching::pack(&tokens, max_prompt_tokens)
        .into_iter()
        .map(|range| passages[range].to_vec())
        .collect()
}

/// The translation calls of a job: its passages packed into calls of at most
/// `batch_tokens` prompt tokens between these languages, the context apart
/// (it has a budget of its own).
pub fn plan_translation(
    passages: &[PassageIn],
    batch_tokens: usize,
    source_language: &str,
    target_language: &str,
) -> Vec<Vec<PassageIn>> {
    let room = batching::passage_room(batch_tokens, source_language, target_language);
    plan_batches(passages, room)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::translate::SYSTEM_PROMPT;
    use dragoman_model::entities::provider;
    use dragoman_model::estimate::{Estimate, Throughput, Work, estimate};
    use dragoman_model::vocab::ProviderKind;

    fn p(id: &str, text: &str) -> PassageIn {
        PassageIn {
            id: id.into(),
            text: text.into(),
        }
    }

    fn ids(batches: &[Vec<PassageIn>]) -> Vec<Vec<&str>> {
        batches
            .iter()
            .map(|b| b.iter().map(|p| p.id.as_str()).collect())
            .collect()
    }

    /// The estimate a job gets at start (`dragoman_model::estimate`) for
    /// these passages, translation stage only.
    fn estimated(passages: &[PassageIn], batch_tokens: usize, languages: (&str, &str)) -> Estimate {
        let work = Work {
            passages: passages
                .iter()
                .map(|p| (p.id.as_str(), p.text.as_str()))
                .collect(),
            source_language: languages.0,
            target_language: languages.1,
            analysis: false,
            review: false,
            batch_tokens: batch_tokens as u64,
            context_tokens: 0,
            threads: 1,
            batch: false,
        };
        let provider = provider::Model {
            id: "p".into(),
            name: "p".into(),
            kind: ProviderKind::OpenAi,
            model: "m".into(),
            base_url: String::new(),
            api_key_env: String::new(),
            price_input: None,
            price_output: None,
            price_cached_input: None,
            capacity: 1,
            batch_discount: 0.5,
            fallback_provider_id: None,
            created_at: 0,
            updated_at: 0,
        };
        let throughput = Throughput {
            measured: false,
            seconds_per_call: 1.0,
            completion_ratio: 1.0,
        };
        estimate(&work, &provider, throughput, 0)
    }

    #[test]
    fn the_estimate_counts_the_calls_the_worker_plans() {
        // Sizes from a word to several batches' worth, ids of chapters of
        // different lengths, scripts the token estimate counts differently.
        let passages: Vec<PassageIn> = (0..400)
            .map(|i| {
                let text = match i % 4 {
                    0 => "word ".repeat((i * 37) % 90),
                    1 => "日本語の文。".repeat((i * 13) % 40),
                    2 => "x".repeat((i * 101) % 9000),
                    _ => "Été, ⟦1⟧déjà⟦/1⟧ vu. ".repeat(i % 30),
                };
                p(&format!("c{}.p{}", i / 37 + 1, i), &text)
            })
            .collect();
        for languages in [("en", "fr"), ("zh-Hant-TW", "pt-BR")] {
            for batch_tokens in [1, 300, 700, 2000, 3500, 8000, 100_000] {
                for count in [0, 1, 7, 120, 400] {
                    let some = &passages[..count];
                    // What the worker sends (`Worker::translation_stages`).
                    let planned = plan_translation(some, batch_tokens, languages.0, languages.1);
                    let e = estimated(some, batch_tokens, languages);
                    let case = format!("{languages:?}, {batch_tokens} tokens, {count} passages");
                    assert_eq!(e.calls, planned.len() as u64, "{case}");
                    let sent: usize = planned.iter().flatten().map(passage_tokens).sum();
                    let fixed = prompt_overhead_tokens(languages.0, languages.1, None);
                    assert_eq!(
                        e.prompt_tokens,
                        (sent + planned.len() * fixed) as u64,
                        "{case}"
                    );
                }
            }
        }
    }

    #[test]
    fn passage_tokens_count_id_text_and_wrapping() {
        // "a" → 1, "abcdef" → 2, plus the JSON wrapping.
        assert_eq!(
            passage_tokens(&p("a", "abcdef")),
            3 + PASSAGE_OVERHEAD_TOKENS
        );
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
    fn a_batch_filled_exactly_to_the_budget_is_kept_whole() {
        // Each passage is 11 tokens.
        let passages = [p("a", "abcdef"), p("b", "abcdef"), p("c", "abcdef")];
        let each = passage_tokens(&passages[0]);
        assert_eq!(
            ids(&plan_batches(&passages, 2 * each)),
            [vec!["a", "b"], vec!["c"]]
        );
        assert_eq!(
            ids(&plan_batches(&passages, 2 * each - 1)),
            [vec!["a"], vec!["b"], vec!["c"]]
        );
        assert_eq!(
            ids(&plan_batches(&passages, 3 * each)),
            [vec!["a", "b", "c"]]
        );
    }

    #[test]
    fn a_passage_over_the_budget_goes_alone_between_its_neighbours() {
        let passages = [p("a", "abc"), p("big", &"x".repeat(300)), p("b", "abc")];
        // Room for both small passages together, not for the big one.
        let budget = passage_tokens(&passages[0]) + passage_tokens(&passages[2]);
        assert_eq!(
            ids(&plan_batches(&passages, budget)),
            [vec!["a"], vec!["big"], vec!["b"]]
        );
    }

    #[test]
    fn prompt_overhead_covers_the_system_prompt_languages_and_context() {
        let bare = prompt_overhead_tokens("en", "fr", None);
        assert!(bare > estimate_tokens(SYSTEM_PROMPT));
        assert_eq!(prompt_overhead_tokens("en", "fr", Some("")), bare);
        assert_eq!(
            prompt_overhead_tokens("en", "fr", Some("glossary: ÿ")),
            bare + estimate_tokens("glossary: ÿ")
        );
        assert_eq!(
            prompt_overhead_tokens("english", "fr", None),
            bare - estimate_tokens("en") + estimate_tokens("english")
        );
    }
}
