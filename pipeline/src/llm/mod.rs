//! HTTP clients for language-model providers.
//!
//! Two wire protocols: `openai` (chat completions, on any compatible base URL)
//! and `anthropic` (the Messages API). A [`LlmClient`] sends one system prompt
//! and one user message and gives back the text with its usage, or an
//! [`LlmError`] that says whether trying again can help. Retries, batching and
//! the placeholder checks live in [`crate::translate`]; this layer makes exactly
//! one HTTP request per call so that every request can be recorded.

mod anthropic;
mod openai;

use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::HeaderMap;

/// Which wire protocol a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderKind {
    /// `POST {base_url}/chat/completions`, base URL like `https://api.openai.com/v1`.
    OpenAi,
    /// `POST {base_url}/v1/messages`, base URL like `https://api.anthropic.com`.
    Anthropic,
}

impl ProviderKind {
    /// The protocol of a provider kind of spec 2.10, when this module speaks
    /// it: the one place that decides which kinds can run (the others are
    /// refused when a provider is registered). `openai_direct` is the same
    /// protocol as `openai` against OpenAI itself.
    pub fn for_kind(kind: dragoman_model::vocab::ProviderKind) -> Option<ProviderKind> {
        use dragoman_model::vocab::ProviderKind as Kind;
        match kind {
            Kind::OpenAi | Kind::OpenAiDirect => Some(ProviderKind::OpenAi),
            Kind::Anthropic => Some(ProviderKind::Anthropic),
            Kind::OpenAiResponses | Kind::CodexChatgpt => None,
        }
    }
}

/// Everything needed to call one provider.
#[derive(Debug, Clone)]
pub struct ProviderConfig {
    pub kind: ProviderKind,
    pub base_url: String,
    pub model: String,
    pub api_key: Option<String>,
    /// Whole-request timeout (connect, send, wait, read the body).
    pub timeout: Duration,
    /// Price per million prompt tokens; `None` when unknown.
    pub price_input: Option<f64>,
    /// Price per million completion tokens; `None` when unknown.
    pub price_output: Option<f64>,
}

/// A provider's answer to one call.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    /// The model's text; for a refusal, the refusal message when there is one.
    pub text: String,
    /// All prompt tokens, cached ones included (Anthropic reports cached reads
    /// apart; they are added back so both protocols count alike).
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// The provider served part of the prompt from its cache.
    pub cached: bool,
    /// The model declined to answer (content filter or refusal).
    pub refusal: bool,
    /// The answer stopped at `max_tokens`, so the text is cut.
    pub truncated: bool,
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
        )
    }

    /// True when no other request to this provider can succeed either (bad
    /// key, no access, unknown model or route): trying passage by passage
    /// would only repeat the same refusal.
    pub fn is_fatal(&self) -> bool {
        matches!(self, LlmError::Client(401 | 403 | 404, _))
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
            LlmError::Server(_) => "server_error",
            LlmError::Timeout => "timeout",
            LlmError::Network(_) => "network_error",
            LlmError::Malformed(_) => "malformed",
            LlmError::Refused(_) => "refused",
            LlmError::Client(..) => "client_error",
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

/// Cost of a call from per-million-token prices; `None` when either price is
/// unknown, so that unknown never passes for free.
pub fn cost(
    prompt_tokens: u64,
    completion_tokens: u64,
    price_input: Option<f64>,
    price_output: Option<f64>,
) -> Option<f64> {
    let (pi, po) = (price_input?, price_output?);
    Some((prompt_tokens as f64 * pi + completion_tokens as f64 * po) / 1_000_000.0)
}

/// One provider's client. Cloning is cheap and shares the connection pool.
#[derive(Debug, Clone)]
pub struct LlmClient {
    config: ProviderConfig,
    http: reqwest::Client,
}

impl LlmClient {
    /// Builds the HTTP client: no proxy (provider traffic must not leak
    /// through whatever the environment sets), the configured timeout.
    pub fn new(config: ProviderConfig) -> Result<LlmClient, LlmError> {
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

    /// Cost of a call at this provider's prices.
    pub fn cost(&self, prompt_tokens: u64, completion_tokens: u64) -> Option<f64> {
        cost(
            prompt_tokens,
            completion_tokens,
            self.config.price_input,
            self.config.price_output,
        )
    }

    /// One request: the system prompt, one user message, at most
    /// `max_tokens` in the answer, temperature 0.
    pub async fn complete(
        &self,
        system: &str,
        user: &str,
        max_tokens: u32,
    ) -> Result<Completion, LlmError> {
        match self.config.kind {
            ProviderKind::OpenAi => {
                openai::complete(&self.http, &self.config, system, user, max_tokens).await
            }
            ProviderKind::Anthropic => {
                anthropic::complete(&self.http, &self.config, system, user, max_tokens).await
            }
        }
    }
}

/// Sends a prepared request and reads the whole body as text, mapping every
/// non-success status to its error. `refusal_codes` are error codes a
/// provider uses for a prompt its filter rejected (answered as 400).
async fn send(
    request: reqwest::RequestBuilder,
    refusal_codes: &[&str],
) -> Result<String, LlmError> {
    let response = request.send().await.map_err(LlmError::from_reqwest)?;
    let status = response.status();
    let retry_after = retry_after(response.headers());
    let body = response.text().await.map_err(LlmError::from_reqwest)?;
    if status.is_success() {
        return Ok(body);
    }
    Err(status_error(status, retry_after, &body, refusal_codes))
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

/// The `error.message` of an error body (both protocols use that shape), or
/// the start of the body; bounded so records stay small.
fn error_message(body: &str) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_str(body).ok();
    let message = parsed
        .as_ref()
        .and_then(|v| v.pointer("/error/message"))
        .and_then(|m| m.as_str())
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
    fn cost_needs_both_prices() {
        assert_eq!(cost(1000, 500, None, Some(2.0)), None);
        assert_eq!(cost(1000, 500, Some(1.0), None), None);
        let c = cost(1_000_000, 500_000, Some(1.0), Some(4.0)).unwrap();
        assert!((c - 3.0).abs() < 1e-9);
    }

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
    fn clip_cuts_on_char_boundaries() {
        assert_eq!(clip("ééé", 2), "éé…");
        assert_eq!(clip("ab", 2), "ab");
    }
}
