//! HTTP clients for language-model providers.
//!
//! One client per provider kind of spec 2.10: `openai` (chat completions on
//! any compatible base URL), `openai_direct` (chat completions on OpenAI's
//! own API, with what only it takes: see `openai.rs`), `openai_responses`
//! (the Responses API), `anthropic` (the Messages API, with a prompt-cache
//! breakpoint after the system prompt) and `codex_chatgpt` (the ChatGPT
//! Codex backend, Responses-shaped and streamed as server-sent events). A
//! [`LlmClient`] sends one system prompt and one user message and gives back
//! the text with its usage, prompt-cache tokens included, or an [`LlmError`]
//! that says whether trying again can help. Retries, batching and the
//! placeholder checks live in [`crate::translate`]; this layer makes exactly
//! one HTTP request per call so that every request can be recorded.
//!
//! The system prompt always comes first and the user message second, so
//! that what stays the same from call to call (the instructions) is the
//! prefix a provider's prompt cache can serve.

mod anthropic;
mod batch;
mod codex;
mod config;
mod openai;
mod pricing;
mod responses;

use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use sha2::{Digest, Sha256};

pub use batch::{BatchLimits, Found, ItemAnswer, RemoteBatch, RemoteStatus};
pub use config::{
    ACCOUNT_ID_SUFFIX, AccountIds, ORGANIZATION_SUFFIX, PROJECT_SUFFIX, ProviderConfig,
    chatgpt_account_of, default_base_url,
};
pub use dragoman_model::vocab::ProviderKind;
pub use pricing::{Prices, cache_write_share, completion_cost, cost, default_cached_input_share};

/// A provider's answer to one call.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    /// The model's text; for a refusal, the refusal message when there is one.
    pub text: String,
    /// All prompt tokens, cached ones included (Anthropic reports cache
    /// reads and writes apart; they are added back so every kind counts
    /// alike).
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Prompt tokens the provider served from its prompt cache.
    pub cached_prompt_tokens: u64,
    /// Prompt tokens the provider wrote to its prompt cache (only Anthropic
    /// reports and bills them).
    pub cache_write_tokens: u64,
    /// The model declined to answer (content filter or refusal).
    pub refusal: bool,
    /// The answer stopped at its token limit, so the text is cut.
    pub truncated: bool,
}

#[cfg(test)]
impl Completion {
    /// A plain answer of `text` with 10 prompt and 5 completion tokens.
    pub(crate) fn of_text(text: &str) -> Completion {
        Completion {
            text: text.into(),
            prompt_tokens: 10,
            completion_tokens: 5,
            cached_prompt_tokens: 0,
            cache_write_tokens: 0,
            refusal: false,
            truncated: false,
        }
    }
}

impl Completion {
    /// The provider served part of the prompt from its cache.
    pub fn cached(&self) -> bool {
        self.cached_prompt_tokens > 0
    }
}

/// Why a call gave no usable completion. Data for the caller's decisions and
/// records, not the crate's error type.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LlmError {
    #[error("rate limited by the provider")]
    RateLimited { retry_after: Option<Duration> },
    #[error("provider server error (HTTP {0})")]
    Server(u16),
    #[error("the provider did not answer in time")]
    Timeout,
    #[error("network error: {0}")]
    Network(String),
    #[error("malformed answer: {0}")]
    Malformed(String),
    #[error("refused by the provider: {0}")]
    Refused(String),
    #[error("request refused by the provider (HTTP {0}): {1}")]
    Client(u16, String),
    /// The provider answered, then reported that it failed (server-side
    /// errors of the Responses protocols).
    #[error("the provider failed ({code}): {message}")]
    Failed { code: String, message: String },
    /// The provider's configuration cannot make a request (found before
    /// any is sent).
    #[error("provider not usable as configured: {0}")]
    Config(String),
}

impl LlmError {
    /// True when the same request may succeed later: rate limits, server
    /// errors, timeouts, network errors and malformed answers. A refusal or a
    /// 4xx would only be refused again.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            LlmError::RateLimited { .. }
                | LlmError::Server(_)
                | LlmError::Timeout
                | LlmError::Network(_)
                | LlmError::Malformed(_)
                | LlmError::Failed { .. }
        )
    }

    /// True when no other request to this provider can succeed either (bad
    /// key, no access, unknown model or route): trying passage by passage
    /// would only repeat the same refusal.
    pub fn is_fatal(&self) -> bool {
        matches!(
            self,
            LlmError::Client(401 | 403 | 404, _) | LlmError::Config(_)
        )
    }

    /// The delay the provider asked for, if any.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            LlmError::RateLimited { retry_after } => *retry_after,
            _ => None,
        }
    }

    /// Short name used as a call record's outcome.
    pub fn outcome(&self) -> &'static str {
        match self {
            LlmError::RateLimited { .. } => "rate_limited",
            LlmError::Server(_) | LlmError::Failed { .. } => "server_error",
            LlmError::Timeout => "timeout",
            LlmError::Network(_) => "network_error",
            LlmError::Malformed(_) => "malformed",
            LlmError::Refused(_) => "refused",
            LlmError::Client(..) | LlmError::Config(_) => "client_error",
        }
    }

    fn from_reqwest(error: reqwest::Error) -> LlmError {
        if error.is_timeout() {
            LlmError::Timeout
        } else if error.is_decode() {
            LlmError::Malformed(error.to_string())
        } else {
            // `without_url` keeps query strings (some gateways put keys there)
            // out of records.
            LlmError::Network(error.without_url().to_string())
        }
    }
}

/// One provider's client. Cloning is cheap and shares the connection pool.
#[derive(Debug, Clone)]
pub struct LlmClient {
    config: ProviderConfig,
    http: reqwest::Client,
}

impl LlmClient {
    /// Builds the HTTP client: no proxy (provider traffic must not leak
    /// through whatever the environment sets), the configured timeout. A
    /// `codex_chatgpt` provider without a ChatGPT account is refused here,
    /// before any call.
    pub fn new(config: ProviderConfig) -> Result<LlmClient, LlmError> {
        if config.kind == ProviderKind::CodexChatgpt && config.ids.chatgpt_account.is_none() {
            return Err(LlmError::Config(format!(
                "no ChatGPT account: the access token carries no chatgpt_account_id claim \
                 and no <key variable>{ACCOUNT_ID_SUFFIX} variable is set"
            )));
        }
        let http = reqwest::Client::builder()
            .no_proxy()
            .timeout(config.timeout)
            .connect_timeout(config.timeout.min(Duration::from_secs(10)))
            .user_agent(concat!("dragoman/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| LlmError::Network(format!("building the HTTP client: {e}")))?;
        Ok(LlmClient { config, http })
    }

    pub fn config(&self) -> &ProviderConfig {
        &self.config
    }

    fn prices(&self) -> Prices {
        Prices {
            input: self.config.price_input,
            output: self.config.price_output,
            cached_input: self.config.price_cached_input,
        }
    }

    /// Cost of uncached tokens at this provider's prices; `None` when a
    /// price is unknown.
    pub fn cost(&self, prompt_tokens: u64, completion_tokens: u64) -> Option<f64> {
        cost(
            prompt_tokens,
            completion_tokens,
            self.config.price_input,
            self.config.price_output,
        )
    }

    /// Cost of an answered call, its cached prompt tokens at the cached
    /// prices (see [`pricing`]).
    pub fn completion_cost(&self, completion: &Completion) -> Option<f64> {
        completion_cost(self.config.kind, self.prices(), completion)
    }

    /// One request: the system prompt, one user message, at most
    /// `max_tokens` in the answer (where the kind takes a limit),
    /// temperature 0 where the model takes one.
    pub async fn complete(
        &self,
        system: &str,
        user: &str,
        max_tokens: u32,
    ) -> Result<Completion, LlmError> {
        let prompt = Prompt {
            system,
            user,
            max_tokens,
        };
        let (http, config) = (&self.http, &self.config);
        match config.kind {
            ProviderKind::OpenAi | ProviderKind::OpenAiDirect => {
                openai::complete(http, config, &prompt).await
            }
            ProviderKind::OpenAiResponses => responses::complete(http, config, &prompt).await,
            ProviderKind::Anthropic => anthropic::complete(http, config, &prompt).await,
            ProviderKind::CodexChatgpt => codex::complete(http, config, &prompt).await,
        }
    }
}

/// One call's prompt, as every protocol module takes it.
struct Prompt<'a> {
    system: &'a str,
    user: &'a str,
    max_tokens: u32,
}

/// The `prompt_cache_key` of a system prompt: the same for every call with
/// the same instructions, so that the provider routes them to the machine
/// that holds their cached prefix. Derived from the text, not configured,
/// so it never names a book or an account.
fn prompt_cache_key(system: &str) -> String {
    let digest = Sha256::digest(system.as_bytes());
    format!("dragoman-{}", hex_prefix(&digest, 8))
}

fn hex_prefix(bytes: &[u8], n: usize) -> String {
    bytes.iter().take(n).map(|b| format!("{b:02x}")).collect()
}

/// OpenAI's reasoning models (`o1`, `o3`, `o4-mini`, the `gpt-5` family
/// except `gpt-5-chat`): they refuse a `temperature` other than the default,
/// take a `reasoning` effort, and spend part of the token limit reasoning.
/// Read from the model name, the only thing the API tells apart.
fn is_reasoning_model(model: &str) -> bool {
    let name = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    let o_series = name.starts_with('o') && name[1..].starts_with(|c: char| c.is_ascii_digit());
    o_series || (name.starts_with("gpt-5") && !name.contains("-chat"))
}

/// Tokens added to the limit of a reasoning model's answer for its
/// reasoning, which counts against the limit but not in the text.
const REASONING_ALLOWANCE: u32 = 4096;

/// The effort asked of a reasoning model: translating needs little, and
/// every reasoning token is paid.
const REASONING_EFFORT: &str = "low";

/// Sends a prepared request and reads the whole body as text, mapping every
/// non-success status to its error. `refusal_codes` are error codes a
/// provider uses for a prompt its filter rejected (answered as 400).
async fn send(
    request: reqwest::RequestBuilder,
    refusal_codes: &[&str],
) -> Result<String, LlmError> {
    open(request, refusal_codes)
        .await?
        .text()
        .await
        .map_err(LlmError::from_reqwest)
}

/// Sends a prepared request and gives back a successful response unread
/// (for a streamed body), or the error of any other status.
async fn open(
    request: reqwest::RequestBuilder,
    refusal_codes: &[&str],
) -> Result<reqwest::Response, LlmError> {
    let response = request.send().await.map_err(LlmError::from_reqwest)?;
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let retry_after = retry_after(response.headers());
    let body = response.text().await.map_err(LlmError::from_reqwest)?;
    Err(status_error(status, retry_after, &body, refusal_codes))
}

/// A failure the provider reports inside a successful answer (a Responses
/// `failed` status, a streamed `error` or `response.failed` event), by its
/// error code.
fn reported_failure(code: Option<&str>, message: &str) -> LlmError {
    let message = clip(message, 300);
    match code.unwrap_or_default() {
        "rate_limit_exceeded" | "usage_limit_reached" => {
            LlmError::RateLimited { retry_after: None }
        }
        "content_filter" | "content_policy_violation" => LlmError::Refused(message),
        code @ ("invalid_prompt"
        | "invalid_request_error"
        | "context_length_exceeded"
        | "insufficient_quota") => LlmError::Client(400, format!("{code}: {message}")),
        code => LlmError::Failed {
            code: if code.is_empty() { "unknown" } else { code }.to_owned(),
            message,
        },
    }
}

fn status_error(
    status: StatusCode,
    retry_after: Option<Duration>,
    body: &str,
    refusal_codes: &[&str],
) -> LlmError {
    let code = status.as_u16();
    let message = error_message(body);
    match code {
        429 => LlmError::RateLimited { retry_after },
        // 408 is the server giving up waiting: as retryable as our own timeout.
        408 => LlmError::Timeout,
        500..=599 => LlmError::Server(code),
        _ if refusal_codes
            .iter()
            .any(|c| error_code(body).as_deref() == Some(*c)) =>
        {
            LlmError::Refused(message)
        }
        _ => LlmError::Client(code, message),
    }
}

/// The message of an error body (`error.message` in every protocol,
/// `detail` or `message` in some gateways), or the start of the body;
/// bounded so records stay small.
fn error_message(body: &str) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_str(body).ok();
    // `detail` is where the ChatGPT backend puts its message.
    let message = ["/error/message", "/detail", "/message"]
        .iter()
        .find_map(|p| parsed.as_ref()?.pointer(p)?.as_str())
        .map(str::to_string)
        .unwrap_or_else(|| body.to_string());
    clip(&message, 300)
}

fn error_code(body: &str) -> Option<String> {
    let parsed: serde_json::Value = serde_json::from_str(body).ok()?;
    ["/error/code", "/error/type"]
        .iter()
        .filter_map(|p| parsed.pointer(p).and_then(|c| c.as_str()))
        .next()
        .map(str::to_string)
}

/// `retry-after-ms` (OpenAI) or `retry-after` in seconds. The HTTP-date form
/// is not used by these providers and is ignored (the backoff applies).
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|v| v.is_finite() && *v >= 0.0)
    };
    if let Some(ms) = header("retry-after-ms") {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    header("retry-after").map(Duration::from_secs_f64)
}

/// At most `max` characters of `s`, cut on a character boundary.
pub(crate) fn clip(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn retry_after_reads_seconds_and_milliseconds() {
        let mut h = HeaderMap::new();
        assert_eq!(retry_after(&h), None);
        h.insert("retry-after", HeaderValue::from_static("3"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(3)));
        h.insert("retry-after-ms", HeaderValue::from_static("250"));
        assert_eq!(retry_after(&h), Some(Duration::from_millis(250)));
        let mut h = HeaderMap::new();
        h.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&h), None);
    }

    #[test]
    fn statuses_map_to_errors() {
        let filtered = r#"{"error":{"message":"filtered","code":"content_filter"}}"#;
        assert_eq!(
            status_error(StatusCode::BAD_REQUEST, None, filtered, &["content_filter"]),
            LlmError::Refused("filtered".into())
        );
        assert_eq!(
            status_error(StatusCode::UNAUTHORIZED, None, "{}", &[]),
            LlmError::Client(401, "{}".into())
        );
        assert!(status_error(StatusCode::UNAUTHORIZED, None, "", &[]).is_fatal());
        assert_eq!(
            status_error(StatusCode::from_u16(529).unwrap(), None, "", &[]),
            LlmError::Server(529)
        );
        assert!(status_error(StatusCode::TOO_MANY_REQUESTS, None, "", &[]).is_retryable());
    }

    #[test]
    fn reasoning_models_are_told_by_name() {
        for model in [
            "o1",
            "o3-mini",
            "o4-mini",
            "gpt-5",
            "gpt-5.1-codex",
            "openai/o3",
        ] {
            assert!(is_reasoning_model(model), "{model}");
        }
        for model in [
            "gpt-4o",
            "gpt-4.1-mini",
            "gpt-5-chat-latest",
            "omni-moderation",
            "o",
        ] {
            assert!(!is_reasoning_model(model), "{model}");
        }
    }

    #[test]
    fn the_cache_key_follows_the_system_prompt_only() {
        assert_eq!(prompt_cache_key("a"), prompt_cache_key("a"));
        assert_ne!(prompt_cache_key("a"), prompt_cache_key("b"));
        assert_eq!(prompt_cache_key("a").len(), "dragoman-".len() + 16);
    }

    #[test]
    fn gateway_error_bodies_keep_their_message() {
        let refused = status_error(
            StatusCode::BAD_REQUEST,
            None,
            r#"{"detail":"Instructions are not valid"}"#,
            &[],
        );
        assert_eq!(
            refused,
            LlmError::Client(400, "Instructions are not valid".into())
        );
        assert!(!refused.is_retryable() && !refused.is_fatal());
    }

    #[test]
    fn clip_cuts_on_char_boundaries() {
        assert_eq!(clip("ééé", 2), "éé…");
        assert_eq!(clip("ab", 2), "ab");
    }
}
