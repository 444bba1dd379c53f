//! The counters of what the simulator has served (`GET /stats`).

use serde::{Deserialize, Serialize};

/// What the simulator has served. Every completion or embeddings request
/// counts in `requests` and in exactly one of `bad_requests`, `ok`,
/// `cut_at_max_tokens`, `rate_limited`, `server_errors`, `hangs`,
/// `malformed`, `truncated`, `refusals`, `dropped_placeholders` (the
/// exclusive outcomes, see [`SimulatorStats::outcomes`]).
///
/// A request refused for its shape or its credentials (`codex` without
/// bearer token or account) counts as a bad request.
///
/// The other counters are not outcomes and overlap them: `openai`,
/// `anthropic`, `responses`, `codex` and `embeddings` count the requests
/// of each protocol; `cached` counts answers with cached prompt tokens; `analyses` and `reviews` the
/// answers in the analysis and review protocols (whole, cut or truncated);
/// `name_drifts`,
/// `glossary_violations`, `untranslated` and `wrong_language` the content
/// faults in translation answers that went out whole, so a request carrying
/// one still counts as `ok` (or `dropped_placeholders`), and one answer may
/// carry several; `batches` and `batch_items` count the batch APIs' input.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct SimulatorStats {
    pub requests: u64,
    /// Requests by protocol: chat completions, Messages, Responses, Codex.
    pub openai: u64,
    pub anthropic: u64,
    pub responses: u64,
    pub codex: u64,
    /// Requests of `POST /v1/embeddings`.
    pub embeddings: u64,
    pub bad_requests: u64,
    pub ok: u64,
    pub cut_at_max_tokens: u64,
    pub rate_limited: u64,
    pub server_errors: u64,
    pub hangs: u64,
    pub malformed: u64,
    pub truncated: u64,
    pub refusals: u64,
    pub dropped_placeholders: u64,
    pub cached: u64,
    pub analyses: u64,
    pub reviews: u64,
    pub name_drifts: u64,
    pub glossary_violations: u64,
    pub untranslated: u64,
    pub wrong_language: u64,
    /// Batches created (OpenAI `POST /batches`, Anthropic
    /// `POST /v1/messages/batches`), refused ones not included.
    pub batches: u64,
    /// Calls received in those batches. Each answered one also counts as a
    /// request of its protocol, with its outcome.
    pub batch_items: u64,
}

impl SimulatorStats {
    /// The sum of the exclusive outcomes; equals `requests` once no request
    /// is in flight.
    pub fn outcomes(&self) -> u64 {
        self.bad_requests
            + self.ok
            + self.cut_at_max_tokens
            + self.rate_limited
            + self.server_errors
            + self.hangs
            + self.malformed
            + self.truncated
            + self.refusals
            + self.dropped_placeholders
    }
}
