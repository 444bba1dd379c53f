//! What a call costs, prompt caching included.
//!
//! Prices are per million tokens. A prompt token is billed at one of three
//! prices: read from the provider's prompt cache (the provider's cached-input
//! price: the administrator's `price_cached_input`, else the kind's default
//! share of the input price), written to the cache (Anthropic bills a write
//! at 125 % of the input price; the OpenAI kinds do not bill writes), or
//! plain input. Unknown input or output price means unknown cost: a call is
//! never passed off as free.

use dragoman_model::vocab::ProviderKind;

use super::Completion;

/// Share of the input price a cached prompt token costs when the
/// administrator set no cached-input price: Anthropic bills cache reads at
/// 10 %; OpenAI's discount is 50 % on the models that introduced it (newer
/// ones give more), so 50 % never counts a call as cheaper than it was. A
/// compatible server reporting cached tokens is taken at the same 50 %.
pub fn default_cached_input_share(kind: ProviderKind) -> f64 {
    match kind {
        ProviderKind::Anthropic => 0.10,
        ProviderKind::OpenAi
        | ProviderKind::OpenAiDirect
        | ProviderKind::OpenAiResponses
        | ProviderKind::CodexChatgpt => 0.50,
    }
}

/// Price of a prompt token written to the cache, as a share of the input
/// price (Anthropic's five-minute cache: 125 %).
pub fn cache_write_share(kind: ProviderKind) -> f64 {
    match kind {
        ProviderKind::Anthropic => 1.25,
        ProviderKind::OpenAi
        | ProviderKind::OpenAiDirect
        | ProviderKind::OpenAiResponses
        | ProviderKind::CodexChatgpt => 1.0,
    }
}

/// A provider's prices per million tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Prices {
    pub input: Option<f64>,
    pub output: Option<f64>,
    /// Prompt tokens read from the cache; `None`: the kind's default share.
    pub cached_input: Option<f64>,
}

/// Cost of a call without cached tokens; `None` when either price is
/// unknown.
pub fn cost(
    prompt_tokens: u64,
    completion_tokens: u64,
    price_input: Option<f64>,
    price_output: Option<f64>,
) -> Option<f64> {
    let (pi, po) = (price_input?, price_output?);
    Some((prompt_tokens as f64 * pi + completion_tokens as f64 * po) / 1_000_000.0)
}

/// Cost of an answered call: its prompt tokens at the plain, cache-read and
/// cache-write prices, its completion tokens at the output price.
pub fn completion_cost(kind: ProviderKind, prices: Prices, c: &Completion) -> Option<f64> {
    let (pi, po) = (prices.input?, prices.output?);
    let read_price = prices
        .cached_input
        .unwrap_or(pi * default_cached_input_share(kind));
    let write_price = pi * cache_write_share(kind);
    // Providers count cached tokens within the prompt; a server reporting
    // more cached than prompt tokens is not trusted past the prompt.
    let read = c.cached_prompt_tokens.min(c.prompt_tokens);
    let written = c.cache_write_tokens.min(c.prompt_tokens - read);
    let plain = c.prompt_tokens - read - written;
    Some(
        (plain as f64 * pi
            + read as f64 * read_price
            + written as f64 * write_price
            + c.completion_tokens as f64 * po)
            / 1_000_000.0,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn completion(prompt: u64, read: u64, written: u64, out: u64) -> Completion {
        Completion {
            text: String::new(),
            prompt_tokens: prompt,
            completion_tokens: out,
            cached_prompt_tokens: read,
            cache_write_tokens: written,
            refusal: false,
            truncated: false,
        }
    }

    fn close(a: Option<f64>, b: f64) -> bool {
        a.is_some_and(|a| (a - b).abs() < 1e-12)
    }

    #[test]
    fn cost_needs_both_prices() {
        assert_eq!(cost(1000, 500, None, Some(2.0)), None);
        assert_eq!(cost(1000, 500, Some(1.0), None), None);
        assert!(close(cost(1_000_000, 500_000, Some(1.0), Some(4.0)), 3.0));
        let unpriced = Prices {
            input: None,
            output: Some(1.0),
            cached_input: Some(0.1),
        };
        let c = completion(10, 5, 0, 1);
        assert_eq!(completion_cost(ProviderKind::OpenAi, unpriced, &c), None);
    }

    #[test]
    fn cached_tokens_take_the_kinds_share_or_the_set_price() {
        let prices = Prices {
            input: Some(2.0),
            output: Some(8.0),
            cached_input: None,
        };
        // 600k plain at 2, 400k read at 1 (50 %), 100k out at 8.
        let c = completion(1_000_000, 400_000, 0, 100_000);
        assert!(close(
            completion_cost(ProviderKind::OpenAiDirect, prices, &c),
            1.2 + 0.4 + 0.8
        ));
        // Anthropic: reads at 10 %, writes at 125 %.
        let c = completion(1_000_000, 400_000, 200_000, 0);
        assert!(close(
            completion_cost(ProviderKind::Anthropic, prices, &c),
            0.8 + 0.08 + 0.5
        ));
        let set = Prices {
            cached_input: Some(0.5),
            ..prices
        };
        assert!(close(
            completion_cost(ProviderKind::Anthropic, set, &c),
            0.8 + 0.2 + 0.5
        ));
        // No cached tokens: the plain formula.
        let c = completion(1_000, 0, 0, 500);
        assert_eq!(
            completion_cost(ProviderKind::OpenAi, prices, &c),
            cost(1_000, 500, Some(2.0), Some(8.0))
        );
        // More cached than prompt tokens is bounded by the prompt.
        let c = completion(100, 500, 500, 0);
        assert!(close(
            completion_cost(ProviderKind::OpenAi, prices, &c),
            100.0 * 1.0 / 1_000_000.0
        ));
    }
}
