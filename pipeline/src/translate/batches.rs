//! Planning batches by estimated tokens, so that each request fits the
//! model's prompt budget.

use super::job::PassageIn;
use super::prompt::SYSTEM_PROMPT;

pub use dragoman_model::tokens::estimate_tokens;

/// Tokens of the JSON wrapping of one passage in the user message
/// (`{"id":"","text":""},` is 20 characters).
pub const PASSAGE_OVERHEAD_TOKENS: usize = 8;

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

#[cfg(test)]
mod tests {
    use super::*;

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
