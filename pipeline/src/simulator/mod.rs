//! The provider simulator: an HTTP server speaking the protocols of every
//! provider kind (see `protocol.rs`), for tests, the demo and the
//! benchmarks. Nothing in the product depends on it.
//!
//! Routes: `POST /v1/chat/completions` and `POST /chat/completions` (so both
//! `http://host:port/v1` and `http://host:port` work as OpenAI base URLs;
//! `openai` and `openai_direct`), `POST /v1/messages` (Anthropic base URL
//! `http://host:port`), `POST /v1/responses` and `POST /responses` (the
//! Responses API, `openai_responses`), `POST /codex/responses` and
//! `POST /backend-api/codex/responses` (the ChatGPT Codex backend,
//! `codex_chatgpt`, base URL `http://host:port` or
//! `http://host:port/backend-api`; server-sent events only; a request
//! without a bearer token and a `chatgpt-account-id` header is answered
//! 401), `POST /v1/embeddings` and `POST /embeddings` (OpenAI-compatible
//! embeddings: deterministic, L2-normalised vectors of hashed word and
//! character-trigram features, `dimensions` honoured, 256 by default, the
//! model echoed; see `embeddings.rs`), `GET /stats` ([`SimulatorStats`] as
//! JSON), `GET /prompts` (the last
//! [`PROMPTS_KEPT`] well-formed requests' prompts, oldest first, as a JSON
//! array of [`Prompt`]: `{"n", "kind", "system", "user", "wire"}` plus the
//! `cache_key`, `organization`, `project` and `account_id` the request
//! carried, `kind` being `translation`, `analysis`, `review` or `other`)
//! and `GET /faults` (the
//! fault ledger: the last [`FAULTS_KEPT`] content faults and dropped
//! placeholders put in translation answers that went out whole, in the order
//! applied, as a JSON array of [`FaultRecord`]: `{"passage_id", "kind"}`,
//! `kind` being `name_drift`, `glossary_violation`, `untranslated`,
//! `wrong_language` or `dropped_placeholder`). Keys are not checked. With
//! `--prompt-log FILE` every such prompt is also appended to the file as a
//! JSON line.
//!
//! Answers. A user message in the analysis protocol of [`crate::analysis`]
//! (`"task": "analysis"`) gets `{"analyses": [...]}`, a deterministic
//! reading of each passage (see `analysis.rs`: names, all-capitals terms,
//! tense and register, first words and first sentence). A user message in
//! the review protocol of [`crate::review`] (`"task": "review"`) gets
//! `{"reviews": [...]}`: each translation compared with the faithful
//! pseudo-translation of its source under the message's glossary and
//! characters, and when they differ, that rendering as the correction with
//! one `major` flag coded `consistency` (see `review.rs`). A user message in
//! the translation protocol of [`crate::translate`] gets
//! `{"translations": [...]}` with a pseudo-translation of every passage
//! ([`pseudo::pseudo_translate`]), except that what the request's `context`
//! maps (its `Glossary`, `Characters` with their aliases, and `Places and
//! things` lines, `source => rendering`) is written as that rendering,
//! verbatim, wherever the source occurs as a whole word outside
//! placeholders, longest source first; without a match the answer is the
//! plain pseudo-translation. Any other user message is pseudo-translated as
//! plain text into `sim`. Usage is the [`estimate_tokens`] of the system
//! prompt plus the user message, and of the answer's text. Cached prompt
//! tokens follow the simulated prompt cache (`cache.rs`): the longest
//! cacheable prefix of the prompt (the system prompt, or the whole prompt)
//! seen before for the same protocol and model; Anthropic caches only the
//! prefixes marked `cache_control` and reports the writes. An answer longer
//! than the request's token limit is cut there (`length`, `max_tokens`, or
//! `incomplete` with `max_output_tokens`).
//!
//! Translator. That is `--translator pseudo`, the default. With
//! `--translator apertium` (and `--apertium-bin PATH`, else `apertium` on
//! `PATH`; the simulator does not start without it or without any mode
//! installed) translation and review answers are Apertium's real
//! translation for the message's language pair instead, the context's
//! renderings still verbatim and the placeholders exact (see
//! `apertium.rs` and `machine.rs`: one Apertium run per answer, the
//! translations kept in memory); the analysis answer keeps names and terms
//! as they are, and any other message is still pseudo-translated. A
//! translation or review message whose pair Apertium has not installed is
//! refused with a 400 whose error message says so and lists the installed
//! modes (a bad request: no prompt, no fault draw); an Apertium run that
//! fails or takes longer than a minute answers 500 (a server error).
//!
//! Transport faults. For every well-formed request, in arrival order, one
//! seeded RNG draws the same number of values, and the first fault whose
//! draw falls under its rate applies, in this order: 429 with `Retry-After`,
//! 500 (in a stream: a `response.failed` event), hang (no answer until the
//! client gives up or the server shuts down), a malformed JSON body (in a
//! stream: an event whose data is not JSON, then the end), truncated
//! content (the answer's JSON cut in the middle), a refusal, a dropped
//! placeholder in one passage (translation answers only; elsewhere, reviews
//! included, the request is answered normally). Latency, faults and rate
//! limits apply alike to every protocol. Each rate is
//! thus the chance of its fault among the requests the earlier ones spared;
//! with a given seed and request order the faults are always the same.
//!
//! Content faults, in translation answers only: name drift, glossary
//! violation, untranslated passage, wrong language (see `translation.rs`),
//! each in one passage of the answer when its draw falls under its rate.
//! They come from a second RNG, seeded from the seed and drawing the same
//! number of values for every well-formed translation request, so turning
//! them on never changes which transport faults a seed gives. Analyses and
//! reviews never carry them. A content fault does not change a request's
//! outcome: it is counted apart in [`SimulatorStats`]. Every content fault
//! and dropped placeholder of a translation answer that went out whole (not
//! truncated, not cut at `max_tokens`) is written in the fault ledger with
//! the passage that got it.

mod analysis;
mod apertium;
mod cache;
mod context;
mod embeddings;
mod faults;
mod machine;
mod prompts;
mod protocol;
pub mod pseudo;
mod review;
mod translation;

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

use crate::analysis::AnalysisMessage;
use crate::review::ReviewMessage;
use crate::translate::estimate_tokens;
use apertium::Apertium;
use cache::PromptCache;
use faults::FaultLedger;
pub use faults::{FaultKind, FaultRecord, KEPT as FAULTS_KEPT};
use prompts::PromptLog;
pub use prompts::{KEPT as PROMPTS_KEPT, Prompt};
use protocol::{Content, Usage, Wire};
use translation::{ContentFaults, Job};

/// What writes the simulator's translations.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Translator {
    /// Deterministic pseudo-translation (`pseudo.rs`).
    #[default]
    Pseudo,
    /// Apertium, the rule-based machine translator, for the pairs it has
    /// installed (`apertium.rs`, `machine.rs`).
    Apertium,
}

/// Latency and faults of a simulated provider.
#[derive(Debug, Clone, PartialEq, clap::Args)]
pub struct SimulatorConfig {
    /// What writes the translations: `pseudo` (pseudo-translation) or
    /// `apertium` (real text from Apertium for the pairs it has installed).
    #[arg(long, value_enum, default_value_t = Translator::Pseudo)]
    pub translator: Translator,
    /// The Apertium binary of `--translator apertium` (`apertium` on
    /// `PATH` by default).
    #[arg(long = "apertium-bin", value_name = "PATH")]
    pub apertium_bin: Option<PathBuf>,
    /// Delay before every answer, in milliseconds.
    #[arg(long = "latency-ms", value_name = "MS", default_value = "0", value_parser = parse_millis)]
    pub latency: Duration,
    /// Seed of the fault draws.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Share of requests answered 429 with `Retry-After`.
    #[arg(long = "rate-429", value_name = "RATE", default_value_t = 0.0, value_parser = parse_rate)]
    pub rate_429: f64,
    /// `Retry-After` of a 429, in seconds.
    #[arg(long = "retry-after-secs", value_name = "SECS", default_value_t = 1)]
    pub retry_after_secs: u64,
    /// Share of requests answered 500.
    #[arg(long = "rate-500", value_name = "RATE", default_value_t = 0.0, value_parser = parse_rate)]
    pub rate_500: f64,
    /// Share of requests never answered.
    #[arg(long = "rate-hang", value_name = "RATE", default_value_t = 0.0, value_parser = parse_rate)]
    pub rate_hang: f64,
    /// Share of requests answered with a body that is not JSON.
    #[arg(long = "rate-malformed", value_name = "RATE", default_value_t = 0.0, value_parser = parse_rate)]
    pub rate_malformed: f64,
    /// Share of answers whose content is cut in the middle.
    #[arg(long = "rate-truncated", value_name = "RATE", default_value_t = 0.0, value_parser = parse_rate)]
    pub rate_truncated: f64,
    /// Share of answers where one passage loses a placeholder.
    #[arg(long = "rate-drop-placeholder", value_name = "RATE", default_value_t = 0.0, value_parser = parse_rate)]
    pub rate_drop_placeholder: f64,
    /// Share of requests refused by the model.
    #[arg(long = "rate-refusal", value_name = "RATE", default_value_t = 0.0, value_parser = parse_rate)]
    pub rate_refusal: f64,
    /// Share of translation answers where one passage renders a character's
    /// name another way than the context says.
    #[arg(long = "rate-name-drift", value_name = "RATE", default_value_t = 0.0, value_parser = parse_rate)]
    pub rate_name_drift: f64,
    /// Share of translation answers where one passage ignores a glossary
    /// entry of the context.
    #[arg(long = "rate-glossary-violation", value_name = "RATE", default_value_t = 0.0, value_parser = parse_rate)]
    pub rate_glossary_violation: f64,
    /// Share of translation answers where one passage comes back untranslated.
    #[arg(long = "rate-untranslated", value_name = "RATE", default_value_t = 0.0, value_parser = parse_rate)]
    pub rate_untranslated: f64,
    /// Share of translation answers where one passage comes back in another
    /// language (`xx`).
    #[arg(long = "rate-wrong-language", value_name = "RATE", default_value_t = 0.0, value_parser = parse_rate)]
    pub rate_wrong_language: f64,
    /// Appends the prompt of every well-formed request to this file, one JSON
    /// object a line.
    #[arg(long = "prompt-log", value_name = "FILE")]
    pub prompt_log: Option<PathBuf>,
}

impl Default for SimulatorConfig {
    /// Pseudo-translation, no latency, no faults, seed 0, `Retry-After: 1`,
    /// no prompt log file.
    fn default() -> Self {
        SimulatorConfig {
            translator: Translator::Pseudo,
            apertium_bin: None,
            latency: Duration::ZERO,
            seed: 0,
            rate_429: 0.0,
            retry_after_secs: 1,
            rate_500: 0.0,
            rate_hang: 0.0,
            rate_malformed: 0.0,
            rate_truncated: 0.0,
            rate_drop_placeholder: 0.0,
            rate_refusal: 0.0,
            rate_name_drift: 0.0,
            rate_glossary_violation: 0.0,
            rate_untranslated: 0.0,
            rate_wrong_language: 0.0,
            prompt_log: None,
        }
    }
}

fn parse_millis(s: &str) -> Result<Duration, String> {
    s.parse::<u64>()
        .map(Duration::from_millis)
        .map_err(|e| format!("milliseconds expected: {e}"))
}

fn parse_rate(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(r) if (0.0..=1.0).contains(&r) => Ok(r),
        _ => Err("a rate between 0 and 1 expected".into()),
    }
}

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
/// carry several.
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

/// A hanging request gives up after this long even if nobody stops the server.
const HANG_LIMIT: Duration = Duration::from_secs(3600);

/// Mixed into the seed for the content faults' RNG, so that its draws are
/// unrelated to the transport faults' ones.
const CONTENT_SEED: u64 = 0x9E37_79B9_7F4A_7C15;

struct Shared {
    config: SimulatorConfig,
    rng: Mutex<StdRng>,
    content_rng: Mutex<StdRng>,
    stats: Mutex<SimulatorStats>,
    cache: PromptCache,
    prompts: PromptLog,
    faults: FaultLedger,
    stopping: watch::Receiver<bool>,
    /// Apertium, in `--translator apertium` mode.
    apertium: Option<Apertium>,
}

/// A mutex guard even after a panic elsewhere: the data are counters and
/// caches that stay meaningful.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Fault {
    None,
    RateLimited,
    Server,
    Hang,
    Malformed,
    Truncated,
    Refusal,
    DropPlaceholder(u64),
}

impl Shared {
    fn count(&self, f: impl FnOnce(&mut SimulatorStats)) {
        f(&mut lock(&self.stats));
    }

    /// Draws this request's fault. Always the same number of draws, so one
    /// request's outcome never shifts the next one's.
    fn draw(&self) -> Fault {
        let c = &self.config;
        let mut rng = lock(&self.rng);
        let rolls: [f64; 7] = std::array::from_fn(|_| rng.r#gen::<f64>());
        let pick: u64 = rng.r#gen();
        let rates = [
            (c.rate_429, Fault::RateLimited),
            (c.rate_500, Fault::Server),
            (c.rate_hang, Fault::Hang),
            (c.rate_malformed, Fault::Malformed),
            (c.rate_truncated, Fault::Truncated),
            (c.rate_refusal, Fault::Refusal),
            (c.rate_drop_placeholder, Fault::DropPlaceholder(pick)),
        ];
        rates
            .iter()
            .zip(rolls)
            .find(|((rate, _), roll)| *roll < *rate)
            .map_or(Fault::None, |((_, fault), _)| *fault)
    }

    /// Draws the content faults of a translation request, from their own
    /// RNG and always the same number of values, so that the draws of
    /// [`Shared::draw`] are the same whatever the content rates.
    fn draw_content(&self) -> ContentFaults {
        let c = &self.config;
        let mut rng = lock(&self.content_rng);
        let rolls: [f64; 4] = std::array::from_fn(|_| rng.r#gen::<f64>());
        let picks: [u64; 4] = std::array::from_fn(|_| rng.r#gen::<u64>());
        let on = |i: usize, rate: f64| (rolls[i] < rate).then_some(picks[i]);
        ContentFaults {
            name_drift: on(0, c.rate_name_drift),
            glossary_violation: on(1, c.rate_glossary_violation),
            untranslated: on(2, c.rate_untranslated),
            wrong_language: on(3, c.rate_wrong_language),
        }
    }
}

/// A user message, read in the protocol it is in.
enum Message {
    Translation(Job),
    Analysis(AnalysisMessage),
    Review(ReviewMessage),
    Other,
}

impl Message {
    fn read(user: &str) -> Message {
        if let Ok(m) = serde_json::from_str::<AnalysisMessage>(user)
            && m.task == crate::analysis::TASK
        {
            return Message::Analysis(m);
        }
        if let Ok(m) = serde_json::from_str::<ReviewMessage>(user)
            && m.task == crate::review::TASK
        {
            return Message::Review(m);
        }
        match serde_json::from_str::<Job>(user) {
            Ok(job) => Message::Translation(job),
            Err(_) => Message::Other,
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            Message::Translation(_) => "translation",
            Message::Analysis(_) => "analysis",
            Message::Review(_) => "review",
            Message::Other => "other",
        }
    }
}

/// The longest prefix of `text` whose estimate stays within `max` tokens.
fn cut_to_tokens(text: &str, max: u64) -> &str {
    let max = usize::try_from(max).unwrap_or(usize::MAX);
    let (mut ascii, mut other) = (0usize, 0usize);
    for (i, c) in text.char_indices() {
        if c.is_ascii() {
            ascii += 1;
        } else {
            other += 1;
        }
        if ascii.div_ceil(3) + other > max {
            return &text[..i];
        }
    }
    text
}

/// `text` cut in the middle (on a character boundary).
fn cut_in_half(text: &str) -> &str {
    let half = text.chars().count() / 2;
    text.char_indices()
        .nth(half)
        .map_or(text, |(i, _)| &text[..i])
}

fn json_response(status: StatusCode, body: serde_json::Value) -> Response {
    (status, axum::Json(body)).into_response()
}

async fn openai(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    handle(shared, Wire::OpenAi, &headers, body).await
}

async fn anthropic(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    handle(shared, Wire::Anthropic, &headers, body).await
}

async fn responses(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    handle(shared, Wire::Responses, &headers, body).await
}

async fn codex(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    handle(shared, Wire::Codex, &headers, body).await
}

async fn stats(State(shared): State<Arc<Shared>>) -> Response {
    let stats = lock(&shared.stats).clone();
    axum::Json(stats).into_response()
}

async fn prompt_log(State(shared): State<Arc<Shared>>) -> Response {
    axum::Json(shared.prompts.recent()).into_response()
}

async fn fault_ledger(State(shared): State<Arc<Shared>>) -> Response {
    axum::Json(shared.faults.recent()).into_response()
}

/// A header's value, when present and not blank.
fn header_text(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
}

/// Whether a Codex request carries what the backend authorizes with: a
/// bearer token and the account it belongs to.
fn codex_authorized(headers: &HeaderMap) -> bool {
    let bearer = header_text(headers, "authorization")
        .and_then(|a| a.strip_prefix("Bearer ").map(|t| !t.trim().is_empty()))
        .unwrap_or(false);
    bearer && header_text(headers, "chatgpt-account-id").is_some()
}

/// An answer as server-sent events.
fn sse_response(events: Vec<protocol::StreamEvent>) -> Response {
    let events = events.into_iter().map(|(kind, data)| {
        Ok::<_, std::convert::Infallible>(Event::default().event(kind).data(data))
    });
    Sse::new(futures::stream::iter(events)).into_response()
}

/// A successful answer, streamed when the request asked for a stream.
fn reply(
    wire: Wire,
    request: &protocol::Request,
    n: u64,
    content: &Content<'_>,
    usage: &Usage,
) -> Response {
    if request.stream {
        sse_response(protocol::stream_answer(n, &request.model, content, usage))
    } else {
        json_response(
            StatusCode::OK,
            protocol::answer(wire, n, &request.model, content, usage),
        )
    }
}

/// A request that is never answered: it waits until the server stops (or
/// [`HANG_LIMIT`]), then gets a 503.
async fn hang(shared: &Shared, wire: Wire) -> Response {
    shared.count(|s| s.hangs += 1);
    let mut stopping = shared.stopping.clone();
    tokio::select! {
        _ = stopping.wait_for(|stop| *stop) => {}
        _ = tokio::time::sleep(HANG_LIMIT) => {}
    }
    let body = protocol::error(wire, protocol::error_kind(wire, 503), "shutting down");
    json_response(StatusCode::SERVICE_UNAVAILABLE, body)
}

/// A 429 with the configured `Retry-After`.
fn rate_limited(shared: &Shared, wire: Wire) -> Response {
    shared.count(|s| s.rate_limited += 1);
    let body = protocol::error(wire, protocol::error_kind(wire, 429), "rate limit reached");
    let mut response = json_response(StatusCode::TOO_MANY_REQUESTS, body);
    response.headers_mut().insert(
        header::RETRY_AFTER,
        HeaderValue::from(shared.config.retry_after_secs),
    );
    response
}

/// `POST /v1/embeddings` (and `/embeddings`): deterministic vectors (see
/// `embeddings.rs`), under the same latency and transport faults as the
/// other protocols. A refusal or a dropped placeholder has no meaning for
/// a vector: such a draw is answered normally and counts as `ok`; a
/// malformed or truncated answer is the answer's JSON cut in the middle.
/// Embedding requests are not written in the prompt log (they are not
/// prompts).
async fn embeddings_route(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    let wire = Wire::OpenAi;
    shared.count(|s| {
        s.requests += 1;
        s.embeddings += 1;
    });
    let request = match embeddings::parse(&body) {
        Ok(request) => request,
        Err(message) => {
            shared.count(|s| s.bad_requests += 1);
            let body = protocol::error(wire, protocol::error_kind(wire, 400), &message);
            return json_response(StatusCode::BAD_REQUEST, body);
        }
    };
    let fault = shared.draw();
    if fault == Fault::Hang {
        return hang(&shared, wire).await;
    }
    if !shared.config.latency.is_zero() {
        tokio::time::sleep(shared.config.latency).await;
    }
    let tokens = |text: &str| u64::try_from(estimate_tokens(text)).unwrap_or(u64::MAX);
    let answer = embeddings::answer(&request, tokens);
    match fault {
        Fault::RateLimited => rate_limited(&shared, wire),
        Fault::Server => {
            shared.count(|s| s.server_errors += 1);
            let body = protocol::error(wire, protocol::error_kind(wire, 500), "internal error");
            json_response(StatusCode::INTERNAL_SERVER_ERROR, body)
        }
        Fault::Malformed | Fault::Truncated => {
            shared.count(|s| {
                if fault == Fault::Malformed {
                    s.malformed += 1;
                } else {
                    s.truncated += 1;
                }
            });
            let text = answer.to_string();
            let mut response = (StatusCode::OK, cut_in_half(&text).to_owned()).into_response();
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            response
        }
        Fault::None | Fault::Hang | Fault::Refusal | Fault::DropPlaceholder(_) => {
            shared.count(|s| s.ok += 1);
            json_response(StatusCode::OK, answer)
        }
    }
}

async fn handle(shared: Arc<Shared>, wire: Wire, headers: &HeaderMap, body: Bytes) -> Response {
    let mut n = 0;
    shared.count(|s| {
        s.requests += 1;
        n = s.requests;
        match wire {
            Wire::OpenAi => s.openai += 1,
            Wire::Anthropic => s.anthropic += 1,
            Wire::Responses => s.responses += 1,
            Wire::Codex => s.codex += 1,
        }
    });
    let refuse = |status: StatusCode, message: &str| {
        shared.count(|s| s.bad_requests += 1);
        let body = protocol::error(wire, protocol::error_kind(wire, status.as_u16()), message);
        json_response(status, body)
    };
    if wire == Wire::Codex && !codex_authorized(headers) {
        return refuse(
            StatusCode::UNAUTHORIZED,
            "a bearer token and a chatgpt-account-id header are required",
        );
    }
    let request = match protocol::parse_request(wire, &body) {
        Ok(r) => r,
        Err(message) => return refuse(StatusCode::BAD_REQUEST, &message),
    };
    let message = Message::read(&request.user);
    let mode = match apertium_mode(&shared, &message) {
        Ok(mode) => mode,
        Err(message) => return refuse(StatusCode::BAD_REQUEST, &message),
    };
    shared.prompts.record(Prompt {
        n,
        kind: message.kind().to_owned(),
        system: request.system.clone(),
        user: request.user.clone(),
        wire: wire.name().to_owned(),
        cache_key: request.cache_key.clone(),
        organization: header_text(headers, "openai-organization"),
        project: header_text(headers, "openai-project"),
        account_id: header_text(headers, "chatgpt-account-id"),
    });
    let fault = shared.draw();
    let content = match message {
        Message::Translation(_) => shared.draw_content(),
        _ => ContentFaults::default(),
    };
    if fault == Fault::Hang {
        return hang(&shared, wire).await;
    }
    if !shared.config.latency.is_zero() {
        tokio::time::sleep(shared.config.latency).await;
    }
    match fault {
        Fault::RateLimited => return rate_limited(&shared, wire),
        Fault::Server => {
            shared.count(|s| s.server_errors += 1);
            if request.stream {
                return sse_response(protocol::stream_failure(
                    n,
                    &request.model,
                    "internal error",
                ));
            }
            let body = protocol::error(wire, protocol::error_kind(wire, 500), "internal error");
            return json_response(StatusCode::INTERNAL_SERVER_ERROR, body);
        }
        Fault::Malformed => {
            shared.count(|s| s.malformed += 1);
            if request.stream {
                return sse_response(protocol::stream_malformed(n, &request.model));
            }
            let mut response = protocol::malformed(wire, n).into_response();
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            return response;
        }
        _ => {}
    }

    let tokens = |text: &str| u64::try_from(estimate_tokens(text)).unwrap_or(u64::MAX);
    let system_tokens = tokens(&request.system);
    let prompt = system_tokens.saturating_add(tokens(&request.user));
    let cache = shared.cache.serve(wire, &request, system_tokens, prompt);
    if cache.read > 0 {
        shared.count(|s| s.cached += 1);
    }
    let mut usage = Usage {
        prompt,
        completion: 0,
        cached: cache.read,
        written: cache.written,
    };
    if fault == Fault::Refusal {
        shared.count(|s| s.refusals += 1);
        usage.completion = match wire {
            Wire::Anthropic => 0,
            Wire::OpenAi | Wire::Responses | Wire::Codex => tokens(protocol::REFUSAL),
        };
        let refusal = Content {
            text: None,
            cut: false,
        };
        return reply(wire, &request, n, &refusal, &usage);
    }
    let drop = match fault {
        Fault::DropPlaceholder(pick) => Some(pick),
        _ => None,
    };
    let (full, applied) = match compose(
        &shared,
        &message,
        mode.as_deref(),
        &request.user,
        drop,
        &content,
    )
    .await
    {
        Ok(composed) => composed,
        Err(message) => {
            shared.count(|s| s.server_errors += 1);
            if request.stream {
                return sse_response(protocol::stream_failure(n, &request.model, &message));
            }
            let body = protocol::error(wire, protocol::error_kind(wire, 500), &message);
            return json_response(StatusCode::INTERNAL_SERVER_ERROR, body);
        }
    };
    let mut text = full.as_str();
    let mut cut = false;
    if fault == Fault::Truncated {
        text = cut_in_half(text);
        cut = true;
        shared.count(|s| s.truncated += 1);
    } else if let Some(max) = request.max_tokens
        && tokens(text) > max
    {
        text = cut_to_tokens(text, max);
        cut = true;
        shared.count(|s| s.cut_at_max_tokens += 1);
    } else {
        shared.count(|s| {
            if applied.dropped_placeholder.is_some() {
                s.dropped_placeholders += 1;
            } else {
                s.ok += 1;
            }
            s.name_drifts += u64::from(applied.name_drift.is_some());
            s.glossary_violations += u64::from(applied.glossary_violation.is_some());
            s.untranslated += u64::from(applied.untranslated.is_some());
            s.wrong_language += u64::from(applied.wrong_language.is_some());
        });
        shared.faults.record(applied.records());
    }
    usage.completion = tokens(text);
    let answer = Content {
        text: Some(text),
        cut,
    };
    reply(wire, &request, n, &answer, &usage)
}

/// The Apertium mode a translation or review message is translated in, in
/// `--translator apertium` mode (`None` in pseudo mode and for the other
/// messages); why not when its language pair is not installed.
fn apertium_mode(shared: &Shared, message: &Message) -> Result<Option<String>, String> {
    let Some(apertium) = &shared.apertium else {
        return Ok(None);
    };
    let (source, target) = match message {
        Message::Translation(job) => (&job.source_language, &job.target_language),
        Message::Review(m) => (&m.source_language, &m.target_language),
        Message::Analysis(_) | Message::Other => return Ok(None),
    };
    apertium.mode(source, target).map(Some)
}

/// The full text of the answer to `message` and the faults it carries;
/// fails when Apertium does (`mode` is the one [`apertium_mode`] gave).
async fn compose(
    shared: &Shared,
    message: &Message,
    mode: Option<&str>,
    user: &str,
    drop: Option<u64>,
    content: &ContentFaults,
) -> Result<(String, translation::Applied), String> {
    let apertium = shared.apertium.as_ref().zip(mode);
    let clean = translation::Applied::default;
    Ok(match (message, apertium) {
        (Message::Translation(job), None) => {
            translation::answer(job, drop, content, &translation::Pseudo(job))
        }
        (Message::Translation(job), Some((apertium, mode))) => {
            let alone = content.glossary_violation.is_some();
            let elsewhere = content.wrong_language.is_some();
            let rendering = machine::translation(apertium, mode, job, alone, elsewhere).await?;
            translation::answer(job, drop, content, &rendering)
        }
        (Message::Analysis(m), _) => {
            shared.count(|s| s.analyses += 1);
            let render: analysis::Render = if shared.apertium.is_some() {
                machine::keep
            } else {
                pseudo::render
            };
            (analysis::answer(m, render), clean())
        }
        (Message::Review(m), None) => {
            shared.count(|s| s.reviews += 1);
            (review::answer(m), clean())
        }
        (Message::Review(m), Some((apertium, mode))) => {
            let faithful = machine::review(apertium, mode, m).await?;
            shared.count(|s| s.reviews += 1);
            (review::answer_with(m, &faithful), clean())
        }
        (Message::Other, _) => (pseudo::pseudo_translate(user, "sim"), clean()),
    })
}

fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/v1/chat/completions", post(openai))
        .route("/chat/completions", post(openai))
        .route("/v1/messages", post(anthropic))
        .route("/v1/responses", post(responses))
        .route("/responses", post(responses))
        .route("/codex/responses", post(codex))
        .route("/backend-api/codex/responses", post(codex))
        .route("/v1/embeddings", post(embeddings_route))
        .route("/embeddings", post(embeddings_route))
        .route("/stats", get(stats))
        .route("/prompts", get(prompt_log))
        .route("/faults", get(fault_ledger))
        .with_state(shared)
}

/// The state of a simulator keeping the last `prompts_kept` prompts, with
/// Apertium in `--translator apertium` mode; fails when the prompt log file
/// cannot be opened.
fn shared(
    config: SimulatorConfig,
    prompts_kept: usize,
    apertium: Option<Apertium>,
) -> io::Result<(Arc<Shared>, watch::Sender<bool>)> {
    let (stop, stopping) = watch::channel(false);
    let prompts = PromptLog::open(prompts_kept, config.prompt_log.as_deref())?;
    let shared = Arc::new(Shared {
        rng: Mutex::new(StdRng::seed_from_u64(config.seed)),
        content_rng: Mutex::new(StdRng::seed_from_u64(config.seed ^ CONTENT_SEED)),
        config,
        stats: Mutex::new(SimulatorStats::default()),
        cache: PromptCache::new(),
        prompts,
        faults: FaultLedger::new(FAULTS_KEPT),
        stopping,
        apertium,
    });
    Ok((shared, stop))
}

/// Apertium in `--translator apertium` mode, else `None`; fails when it
/// cannot be run or has no mode installed.
async fn translator(config: &SimulatorConfig) -> io::Result<Option<Apertium>> {
    match config.translator {
        Translator::Pseudo => Ok(None),
        Translator::Apertium => Ok(Some(Apertium::open(config.apertium_bin.as_deref()).await?)),
    }
}

async fn run(
    listener: tokio::net::TcpListener,
    shared: Arc<Shared>,
    stop: watch::Sender<bool>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    let signal = async move {
        shutdown.await;
        // Hanging requests end too, or the graceful shutdown would wait on
        // them forever.
        let _ = stop.send(true);
    };
    axum::serve(listener, router(shared))
        .with_graceful_shutdown(signal)
        .await
}

/// Serves the simulator on `listener` until `shutdown` completes, then ends
/// hanging requests and waits for the others. Prints nothing. Fails at once
/// when the prompt log file cannot be opened, or in `--translator apertium`
/// mode when Apertium cannot be run or has no mode installed.
pub async fn serve(
    listener: tokio::net::TcpListener,
    config: SimulatorConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    let apertium = translator(&config).await?;
    let (shared, stop) = shared(config, PROMPTS_KEPT, apertium)?;
    run(listener, shared, stop, shutdown).await
}

/// A simulator running in the background on `127.0.0.1`, for tests. Stopped
/// by [`RunningSimulator::stop`] or when dropped.
pub struct RunningSimulator {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<io::Result<()>>>,
}

impl RunningSimulator {
    /// Binds `127.0.0.1:0` and serves there.
    pub async fn start(config: SimulatorConfig) -> io::Result<RunningSimulator> {
        Self::start_keeping(config, PROMPTS_KEPT).await
    }

    /// [`RunningSimulator::start`] keeping the last `prompts_kept` prompts.
    async fn start_keeping(
        config: SimulatorConfig,
        prompts_kept: usize,
    ) -> io::Result<RunningSimulator> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let apertium = translator(&config).await?;
        let (shared, stop_hangs) = shared(config, prompts_kept, apertium)?;
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(run(listener, shared.clone(), stop_hangs, async move {
            let _ = stopped.await;
        }));
        Ok(RunningSimulator {
            addr,
            shared,
            stop: Some(stop),
            task: Some(task),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Base URL for an `openai` provider (`http://127.0.0.1:PORT/v1`).
    pub fn openai_base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Base URL for an `anthropic` provider (`http://127.0.0.1:PORT`).
    pub fn anthropic_base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Base URL for a `codex_chatgpt` provider
    /// (`http://127.0.0.1:PORT/backend-api`, as `https://chatgpt.com/backend-api`).
    pub fn codex_base_url(&self) -> String {
        format!("http://{}/backend-api", self.addr)
    }

    /// Base URL of a provider of `kind` on this simulator.
    pub fn base_url(&self, kind: crate::llm::ProviderKind) -> String {
        use crate::llm::ProviderKind as Kind;
        match kind {
            Kind::OpenAi | Kind::OpenAiDirect | Kind::OpenAiResponses => self.openai_base_url(),
            Kind::Anthropic => self.anthropic_base_url(),
            Kind::CodexChatgpt => self.codex_base_url(),
        }
    }

    /// What has been served so far.
    pub fn stats(&self) -> SimulatorStats {
        lock(&self.shared.stats).clone()
    }

    /// The last prompts served, oldest first (what `GET /prompts` answers).
    pub fn prompts(&self) -> Vec<Prompt> {
        self.shared.prompts.recent()
    }

    /// The fault ledger, oldest first (what `GET /faults` answers).
    pub fn faults(&self) -> Vec<FaultRecord> {
        self.shared.faults.recent()
    }

    /// Stops serving and waits for the server to end.
    pub async fn stop(mut self) -> io::Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.task.take() {
            Some(task) => task.await.map_err(io::Error::other)?,
            None => Ok(()),
        }
    }
}

impl Drop for RunningSimulator {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use serde_json::{Value, json};

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        config: SimulatorConfig,
    }

    #[test]
    fn flags_parse_with_defaults() {
        let cli = Cli::try_parse_from(["x"]).unwrap();
        assert_eq!(cli.config, SimulatorConfig::default());
        let cli = Cli::try_parse_from([
            "x",
            "--latency-ms",
            "15",
            "--seed",
            "7",
            "--rate-429",
            "0.2",
            "--rate-drop-placeholder",
            "1",
            "--rate-name-drift",
            "0.1",
            "--rate-glossary-violation",
            "0.2",
            "--rate-untranslated",
            "0.3",
            "--rate-wrong-language",
            "0.4",
            "--prompt-log",
            "/tmp/prompts.jsonl",
        ])
        .unwrap();
        assert_eq!(cli.config.latency, Duration::from_millis(15));
        assert_eq!(cli.config.seed, 7);
        assert_eq!(cli.config.rate_429, 0.2);
        assert_eq!(cli.config.rate_drop_placeholder, 1.0);
        assert_eq!(cli.config.rate_name_drift, 0.1);
        assert_eq!(cli.config.rate_glossary_violation, 0.2);
        assert_eq!(cli.config.rate_untranslated, 0.3);
        assert_eq!(cli.config.rate_wrong_language, 0.4);
        assert_eq!(
            cli.config.prompt_log,
            Some(PathBuf::from("/tmp/prompts.jsonl"))
        );
        assert_eq!(cli.config.translator, Translator::Pseudo);
        let cli = Cli::try_parse_from([
            "x",
            "--translator",
            "apertium",
            "--apertium-bin",
            "/opt/apertium/bin/apertium",
        ])
        .unwrap();
        assert_eq!(cli.config.translator, Translator::Apertium);
        assert_eq!(
            cli.config.apertium_bin,
            Some(PathBuf::from("/opt/apertium/bin/apertium"))
        );
        assert!(Cli::try_parse_from(["x", "--translator", "deepl"]).is_err());
        assert!(Cli::try_parse_from(["x", "--rate-500", "1.5"]).is_err());
        assert!(Cli::try_parse_from(["x", "--rate-untranslated", "-0.1"]).is_err());
    }

    fn state(config: &SimulatorConfig) -> Arc<Shared> {
        shared(config.clone(), PROMPTS_KEPT, None).expect("state").0
    }

    #[test]
    fn draws_are_deterministic_per_seed() {
        let config = SimulatorConfig {
            seed: 7,
            rate_429: 0.2,
            rate_500: 0.2,
            rate_hang: 0.2,
            rate_drop_placeholder: 0.2,
            ..SimulatorConfig::default()
        };
        let draws = |config: &SimulatorConfig| {
            let s = state(config);
            (0..50).map(|_| s.draw()).collect::<Vec<_>>()
        };
        let a = draws(&config);
        assert_eq!(a, draws(&config));
        assert!(a.contains(&Fault::None) && a.contains(&Fault::Hang));
        let other = SimulatorConfig { seed: 8, ..config };
        assert_ne!(a, draws(&other));
    }

    /// The transport faults seed 7 gave before the content faults existed;
    /// scripted runs and tests rely on them.
    #[test]
    fn transport_draws_keep_their_sequence_whatever_the_content_faults() {
        use Fault::*;
        let expected = [
            RateLimited,
            Malformed,
            None,
            Truncated,
            Malformed,
            DropPlaceholder(7462447079380153359),
            Malformed,
            None,
            RateLimited,
            Refusal,
            Hang,
            Hang,
            None,
            RateLimited,
            None,
            Malformed,
            None,
            Server,
            DropPlaceholder(7491468990417403850),
            Hang,
            None,
            None,
            None,
            Malformed,
        ];
        let old = SimulatorConfig {
            seed: 7,
            rate_429: 0.1,
            rate_500: 0.1,
            rate_hang: 0.1,
            rate_malformed: 0.1,
            rate_truncated: 0.1,
            rate_refusal: 0.1,
            rate_drop_placeholder: 0.3,
            ..SimulatorConfig::default()
        };
        let with_content = SimulatorConfig {
            rate_name_drift: 1.0,
            rate_glossary_violation: 0.5,
            rate_untranslated: 0.5,
            rate_wrong_language: 1.0,
            ..old.clone()
        };
        for config in [old, with_content] {
            let s = state(&config);
            let draws: Vec<Fault> = (0..expected.len())
                .map(|i| {
                    if i % 2 == 0 {
                        s.draw_content();
                    }
                    s.draw()
                })
                .collect();
            assert_eq!(draws, expected);
        }
    }

    #[test]
    fn content_draws_follow_their_rates() {
        let off = state(&SimulatorConfig::default());
        assert!((0..100).all(|_| off.draw_content() == ContentFaults::default()));
        let on = SimulatorConfig {
            seed: 3,
            rate_name_drift: 1.0,
            rate_glossary_violation: 1.0,
            rate_untranslated: 1.0,
            rate_wrong_language: 1.0,
            ..SimulatorConfig::default()
        };
        let s = state(&on);
        let draws: Vec<ContentFaults> = (0..100).map(|_| s.draw_content()).collect();
        assert!(draws.iter().all(|d| d.name_drift.is_some()
            && d.glossary_violation.is_some()
            && d.untranslated.is_some()
            && d.wrong_language.is_some()));
        let again = state(&on);
        assert!(draws.iter().all(|d| *d == again.draw_content()));
        let half = SimulatorConfig {
            rate_untranslated: 0.5,
            ..SimulatorConfig::default()
        };
        let s = state(&half);
        let hits = (0..1000)
            .filter(|_| s.draw_content().untranslated.is_some())
            .count();
        assert!((350..650).contains(&hits), "{hits}");
    }

    #[test]
    fn messages_are_told_apart_by_protocol() {
        let analysis = crate::analysis::analysis_message("en", "fr", &[]);
        assert_eq!(Message::read(&analysis).kind(), "analysis");
        let translation =
            r#"{"source_language":"en","target_language":"fr","context":null,"passages":[]}"#;
        assert_eq!(Message::read(translation).kind(), "translation");
        let other_task = analysis.replace("\"analysis\"", "\"summary\"");
        assert_eq!(Message::read(&other_task).kind(), "translation");
        let review = review_user("Alice ran.", "[fr] Alicia rán.");
        assert_eq!(Message::read(&review).kind(), "review");
        let other_task = review.replace("\"review\"", "\"summary\"");
        assert_eq!(Message::read(&other_task).kind(), "other");
        assert_eq!(Message::read("Hello").kind(), "other");
    }

    #[test]
    fn cuts_stay_within_their_limits() {
        assert_eq!(cut_to_tokens("abcdefg", 2), "abcdef");
        assert_eq!(cut_to_tokens("ééé", 2), "éé");
        assert_eq!(cut_in_half("abcd"), "ab");
    }

    /// POSTs an OpenAI chat-completions request and returns the answer's
    /// status and body.
    async fn chat(sim: &RunningSimulator, user: &str) -> (u16, Value) {
        let body = json!({
            "model": "m",
            "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": user}],
        });
        post(sim, "/v1/chat/completions", &body).await
    }

    async fn post(sim: &RunningSimulator, path: &str, body: &Value) -> (u16, Value) {
        let response = reqwest::Client::new()
            .post(format!("http://{}{path}", sim.addr()))
            .json(body)
            .send()
            .await
            .expect("request");
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    fn content(answer: &Value) -> &str {
        answer["choices"][0]["message"]["content"]
            .as_str()
            .unwrap_or_default()
    }

    fn analysis_user() -> String {
        crate::analysis::analysis_message(
            "en",
            "fr",
            &[crate::translate::PassageIn {
                id: "p1".into(),
                text: "Then Alice (Ally) met ⟦1/⟧Bob near the WARPCORE.".into(),
            }],
        )
    }

    fn review_user(source: &str, translation: &str) -> String {
        review_user_into("fr", "p1", source, translation)
    }

    /// A review message for one passage en→`target`, Alice rendered Alicia.
    fn review_user_into(target: &str, id: &str, source: &str, translation: &str) -> String {
        crate::review::review_message(
            crate::analysis::Languages {
                source: "en",
                target,
            },
            &[],
            &[crate::review::ReviewName {
                name: "Alice".into(),
                aliases: vec![],
                rendering: "Alicia".into(),
            }],
            &[crate::review::ReviewPassage {
                id: id.into(),
                source: source.into(),
                translation: translation.into(),
            }],
        )
    }

    fn translation_user(context: Option<&str>, text: &str) -> String {
        json!({
            "source_language": "en", "target_language": "fr", "context": context,
            "passages": [{"id": "p1", "text": text}],
        })
        .to_string()
    }

    #[tokio::test]
    async fn analysis_requests_get_analyses_in_both_protocols() {
        let sim = RunningSimulator::start(SimulatorConfig {
            rate_drop_placeholder: 1.0,
            ..SimulatorConfig::default()
        })
        .await
        .expect("start");
        let user = analysis_user();
        let (status, answer) = chat(&sim, &user).await;
        assert_eq!(status, 200);
        let items = crate::analysis::parse_analysis_answer(content(&answer)).expect("analyses");
        assert_eq!(items.len(), 1);
        let names: Vec<&str> = items[0]
            .1
            .entities
            .iter()
            .map(|e| e.name.as_str())
            .collect();
        assert_eq!(names, ["Alice", "Bob"]);
        assert!(answer["usage"]["completion_tokens"].as_u64() > Some(0));
        let (status, answer) = post(
            &sim,
            "/v1/messages",
            &json!({"model": "m", "max_tokens": 4000, "system": "S",
                    "messages": [{"role": "user", "content": user}]}),
        )
        .await;
        assert_eq!(status, 200);
        let text = answer["content"][0]["text"].as_str().unwrap_or_default();
        assert!(crate::analysis::parse_analysis_answer(text).is_ok());
        // A cut analysis is still an analysis answer, and still one outcome.
        let (_, answer) = post(
            &sim,
            "/v1/chat/completions",
            &json!({"model": "m", "max_tokens": 5,
                    "messages": [{"role": "user", "content": user}]}),
        )
        .await;
        assert_eq!(answer["choices"][0]["finish_reason"], "length");
        let stats = sim.stats();
        assert_eq!(stats.analyses, 3);
        assert_eq!(
            (
                stats.ok,
                stats.cut_at_max_tokens,
                stats.dropped_placeholders
            ),
            (2, 1, 0),
            "placeholders are never dropped from analyses"
        );
        assert_eq!(stats.outcomes(), stats.requests);
        sim.stop().await.expect("stop");
    }

    #[tokio::test]
    async fn transport_faults_apply_to_analyses() {
        let sim = RunningSimulator::start(SimulatorConfig {
            rate_truncated: 1.0,
            ..SimulatorConfig::default()
        })
        .await
        .expect("start");
        let (status, answer) = chat(&sim, &analysis_user()).await;
        assert_eq!(status, 200);
        assert!(crate::analysis::parse_analysis_answer(content(&answer)).is_err());
        sim.stop().await.expect("stop");
        let sim = RunningSimulator::start(SimulatorConfig {
            rate_500: 1.0,
            ..SimulatorConfig::default()
        })
        .await
        .expect("start");
        assert_eq!(chat(&sim, &analysis_user()).await.0, 500);
        let stats = sim.stats();
        assert_eq!((stats.server_errors, stats.analyses), (1, 0));
        sim.stop().await.expect("stop");
    }

    #[tokio::test]
    async fn content_faults_are_counted_apart_from_outcomes() {
        let context = "Glossary:\n- warp core => cœur de distorsion\n\
            Characters:\n- Alice => Alicia";
        let passages = [
            "Then Alice spoke.",
            "The warp core hummed.",
            "Rain fell.",
            "Snow fell.",
        ];
        let user = json!({
            "source_language": "en", "target_language": "fr", "context": context,
            "passages": passages.iter().enumerate()
                .map(|(i, t)| json!({"id": format!("p{i}"), "text": t}))
                .collect::<Vec<_>>(),
        })
        .to_string();
        let all = SimulatorConfig {
            rate_name_drift: 1.0,
            rate_glossary_violation: 1.0,
            rate_untranslated: 1.0,
            rate_wrong_language: 1.0,
            ..SimulatorConfig::default()
        };
        for (config, faulty) in [(all, true), (SimulatorConfig::default(), false)] {
            let sim = RunningSimulator::start(config).await.expect("start");
            let (_, answer) = chat(&sim, &user).await;
            let texts: Vec<String> = crate::translate::parse_answer(content(&answer))
                .expect("translations")
                .into_iter()
                .map(|(_, t)| t)
                .collect();
            assert_eq!(
                texts.contains(&"Rain fell.".to_owned())
                    || texts.contains(&"Snow fell.".to_owned()),
                faulty
            );
            assert_eq!(texts.iter().any(|t| t.starts_with("[xx] ")), faulty);
            assert_eq!(texts.iter().any(|t| t.contains("ALICE")), faulty);
            assert_eq!(
                !texts.iter().any(|t| t.contains("cœur de distorsion")),
                faulty
            );
            // The analysis protocol never carries content faults.
            chat(&sim, &analysis_user()).await;
            let stats = sim.stats();
            let expected = u64::from(faulty);
            assert_eq!(
                (
                    stats.name_drifts,
                    stats.glossary_violations,
                    stats.untranslated,
                    stats.wrong_language
                ),
                (expected, expected, expected, expected)
            );
            assert_eq!(stats.ok, 2);
            assert_eq!(stats.outcomes(), stats.requests);
            sim.stop().await.expect("stop");
        }
    }

    #[tokio::test]
    async fn review_requests_get_reviews_without_faults() {
        let sim = RunningSimulator::start(SimulatorConfig {
            rate_drop_placeholder: 1.0,
            rate_name_drift: 1.0,
            rate_untranslated: 1.0,
            ..SimulatorConfig::default()
        })
        .await
        .expect("start");
        let faithful = review_user("Alice ⟦1/⟧ran.", "[fr] Alicia ⟦1/⟧rán.");
        let drifted = review_user("Alice ⟦1/⟧ran.", "[fr] ALICE ⟦1/⟧rán.");
        let (status, answer) = chat(&sim, &faithful).await;
        assert_eq!(status, 200);
        let items = crate::review::parse_review_answer(content(&answer)).expect("reviews");
        assert_eq!(items.len(), 1);
        assert_eq!(
            (items[0].correction.as_deref(), items[0].flags.len()),
            (None, 0)
        );
        let (_, answer) = post(
            &sim,
            "/v1/messages",
            &json!({"model": "m", "max_tokens": 4000, "system": "S",
                    "messages": [{"role": "user", "content": drifted}]}),
        )
        .await;
        let text = answer["content"][0]["text"].as_str().unwrap_or_default();
        let items = crate::review::parse_review_answer(text).expect("reviews");
        assert_eq!(items[0].correction.as_deref(), Some("[fr] Alicia ⟦1/⟧rán."));
        assert_eq!(items[0].flags[0].code, "consistency");
        let stats = sim.stats();
        assert_eq!(stats.reviews, 2);
        assert_eq!(
            (
                stats.ok,
                stats.dropped_placeholders,
                stats.name_drifts,
                stats.untranslated
            ),
            (2, 0, 0, 0),
            "reviews carry neither dropped placeholders nor content faults"
        );
        assert!(sim.faults().is_empty());
        let kinds: Vec<String> = sim.prompts().into_iter().map(|p| p.kind).collect();
        assert_eq!(kinds, ["review", "review"]);
        sim.stop().await.expect("stop");
        // Transport faults apply as to any request.
        let sim = RunningSimulator::start(SimulatorConfig {
            rate_truncated: 1.0,
            ..SimulatorConfig::default()
        })
        .await
        .expect("start");
        let (status, answer) = chat(&sim, &faithful).await;
        assert_eq!(status, 200);
        assert!(crate::review::parse_review_answer(content(&answer)).is_err());
        assert_eq!((sim.stats().truncated, sim.stats().reviews), (1, 1));
        sim.stop().await.expect("stop");
    }

    #[tokio::test]
    async fn the_fault_ledger_names_each_faulty_passage_in_order() {
        let context = "Glossary:\n- warp core => cœur de distorsion\n\
            Characters:\n- Alice => Alicia";
        let user = |first: usize| {
            let passages = [
                "Then Alice spoke ⟦1/⟧.",
                "The warp core hummed.",
                "Rain fell.",
                "Snow fell.",
            ];
            json!({
                "source_language": "en", "target_language": "fr", "context": context,
                "passages": passages.iter().enumerate()
                    .map(|(i, t)| json!({"id": format!("c{first}.p{i}"), "text": t}))
                    .collect::<Vec<_>>(),
            })
            .to_string()
        };
        let sim = RunningSimulator::start(SimulatorConfig {
            rate_name_drift: 1.0,
            rate_glossary_violation: 1.0,
            rate_untranslated: 1.0,
            rate_wrong_language: 1.0,
            rate_drop_placeholder: 1.0,
            ..SimulatorConfig::default()
        })
        .await
        .expect("start");
        chat(&sim, &user(1)).await;
        // Cut at max_tokens: its faults never reached anyone.
        post(
            &sim,
            "/v1/chat/completions",
            &json!({"model": "m", "max_tokens": 5,
                    "messages": [{"role": "user", "content": user(2)}]}),
        )
        .await;
        chat(&sim, &user(3)).await;
        let served: Vec<FaultRecord> = reqwest::get(format!("http://{}/faults", sim.addr()))
            .await
            .expect("GET /faults")
            .json()
            .await
            .expect("a JSON array of faults");
        assert_eq!(served, sim.faults());
        let ledger: Vec<(&str, FaultKind)> = served
            .iter()
            .map(|f| (f.passage_id.as_str(), f.kind))
            .collect();
        assert_eq!(ledger.len(), 10, "{ledger:?}");
        for (answer, chapter) in ledger.chunks(5).zip(["c1.", "c3."]) {
            assert!(
                answer.iter().all(|(id, _)| id.starts_with(chapter)),
                "{answer:?}"
            );
            let kinds: Vec<FaultKind> = answer.iter().map(|(_, k)| *k).collect();
            assert_eq!(
                kinds,
                [
                    FaultKind::NameDrift,
                    FaultKind::GlossaryViolation,
                    FaultKind::Untranslated,
                    FaultKind::WrongLanguage,
                    FaultKind::DroppedPlaceholder,
                ]
            );
        }
        let stats = sim.stats();
        assert_eq!(
            (stats.dropped_placeholders, stats.cut_at_max_tokens),
            (2, 1)
        );
        sim.stop().await.expect("stop");
    }

    #[tokio::test]
    async fn the_context_is_rendered_verbatim_over_http() {
        let sim = RunningSimulator::start(SimulatorConfig::default())
            .await
            .expect("start");
        let context = "Characters:\n- Alice => Alicia; aliases: Ally\nBefore: Alice sat.";
        let (_, answer) = chat(&sim, &translation_user(Some(context), "Ally saw ⟦1/⟧Bob.")).await;
        let texts = crate::translate::parse_answer(content(&answer)).expect("translations");
        assert_eq!(texts[0].1, "[fr] Alicia sáw ⟦1/⟧Bób.");
        sim.stop().await.expect("stop");
    }

    #[tokio::test]
    async fn prompts_are_listed_bounded_in_order_and_appended_to_the_log_file() {
        let path = std::env::temp_dir().join(format!(
            "dragoman-sim-prompts-{}-{:?}.jsonl",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_file(&path);
        let sim = RunningSimulator::start_keeping(
            SimulatorConfig {
                prompt_log: Some(path.clone()),
                rate_429: 0.5,
                seed: 4,
                ..SimulatorConfig::default()
            },
            3,
        )
        .await
        .expect("start");
        // A request that is not well-formed is not a prompt.
        assert_eq!(post(&sim, "/v1/chat/completions", &json!({})).await.0, 400);
        let users = [
            translation_user(None, "one"),
            analysis_user(),
            "Hello".to_owned(),
            translation_user(None, "four"),
            analysis_user(),
        ];
        for user in &users {
            chat(&sim, user).await;
        }
        let prompts: Vec<Prompt> = reqwest::get(format!("http://{}/prompts", sim.addr()))
            .await
            .expect("GET /prompts")
            .json()
            .await
            .expect("a JSON array of prompts");
        let seen: Vec<(u64, &str, &str)> = prompts
            .iter()
            .map(|p| (p.n, p.kind.as_str(), p.user.as_str()))
            .collect();
        assert_eq!(
            seen,
            [
                (4, "other", "Hello"),
                (5, "translation", users[3].as_str()),
                (6, "analysis", users[4].as_str()),
            ]
        );
        assert!(prompts.iter().all(|p| p.system == "S"));
        assert_eq!(sim.prompts(), prompts);
        sim.stop().await.expect("stop");
        let logged: Vec<Prompt> = std::fs::read_to_string(&path)
            .expect("prompt log file")
            .lines()
            .map(|line| serde_json::from_str(line).expect("a JSON line"))
            .collect();
        let _ = std::fs::remove_file(&path);
        let ns: Vec<u64> = logged.iter().map(|p| p.n).collect();
        assert_eq!(ns, [2, 3, 4, 5, 6]);
        assert_eq!(logged[1].kind, "analysis");
        assert_eq!(logged[0].user, users[0]);
    }

    #[tokio::test]
    async fn the_codex_route_wants_credentials_and_a_stream() {
        let sim = RunningSimulator::start(SimulatorConfig::default())
            .await
            .expect("start");
        let url = format!("{}/codex/responses", sim.codex_base_url());
        let body = json!({"model": "m", "instructions": "S", "input": "Hello",
                          "stream": true, "store": false});
        let send = |auth: bool, account: bool, body: Value| {
            let mut request = reqwest::Client::new().post(&url).json(&body);
            if auth {
                request = request.bearer_auth("token");
            }
            if account {
                request = request.header("chatgpt-account-id", "acc");
            }
            request.send()
        };
        for (auth, account) in [(false, true), (true, false)] {
            let answer = send(auth, account, body.clone()).await.expect("send");
            assert_eq!(answer.status().as_u16(), 401);
        }
        let mut unstreamed = body.clone();
        unstreamed["stream"] = json!(false);
        let answer = send(true, true, unstreamed).await.expect("send");
        assert_eq!(answer.status().as_u16(), 400);
        let answer = send(true, true, body).await.expect("send");
        assert_eq!(answer.status().as_u16(), 200);
        assert_eq!(answer.headers()[header::CONTENT_TYPE], "text/event-stream",);
        let text = answer.text().await.expect("events");
        assert!(text.contains("event: response.output_text.delta"), "{text}");
        assert!(text.contains("[sim] Hélló"), "{text}");
        assert!(text.trim_end().ends_with('}') && text.contains("event: response.completed"));
        let stats = sim.stats();
        assert_eq!((stats.codex, stats.bad_requests, stats.ok), (4, 3, 1));
        assert_eq!(stats.outcomes(), stats.requests);
        let prompts = sim.prompts();
        assert_eq!(prompts.len(), 1, "refused requests are no prompts");
        assert_eq!(
            (prompts[0].wire.as_str(), prompts[0].account_id.as_deref()),
            ("codex", Some("acc"))
        );
        sim.stop().await.expect("stop");
    }

    #[tokio::test]
    async fn latency_and_faults_apply_to_every_protocol() {
        let latency = Duration::from_millis(60);
        let sim = RunningSimulator::start(SimulatorConfig {
            latency,
            rate_429: 1.0,
            retry_after_secs: 7,
            ..SimulatorConfig::default()
        })
        .await
        .expect("start");
        let user = "Hello";
        let requests = [
            (
                "/v1/chat/completions",
                json!({"model": "m",
                "messages": [{"role": "user", "content": user}]}),
            ),
            (
                "/v1/messages",
                json!({"model": "m", "max_tokens": 10,
                "messages": [{"role": "user", "content": user}]}),
            ),
            ("/v1/responses", json!({"model": "m", "input": user})),
        ];
        for (path, body) in requests {
            let started = std::time::Instant::now();
            let answer = reqwest::Client::new()
                .post(format!("http://{}{path}", sim.addr()))
                .json(&body)
                .send()
                .await
                .expect("send");
            assert!(started.elapsed() >= latency, "{path}");
            assert_eq!(answer.status().as_u16(), 429, "{path}");
            assert_eq!(answer.headers()[header::RETRY_AFTER], "7", "{path}");
        }
        let stats = sim.stats();
        assert_eq!(
            (
                stats.openai,
                stats.anthropic,
                stats.responses,
                stats.rate_limited
            ),
            (1, 1, 1, 3)
        );
        sim.stop().await.expect("stop");
    }

    #[tokio::test]
    async fn an_unwritable_prompt_log_fails_the_start() {
        let config = SimulatorConfig {
            prompt_log: Some(PathBuf::from("/nonexistent-dir/prompts.jsonl")),
            ..SimulatorConfig::default()
        };
        assert!(RunningSimulator::start(config).await.is_err());
    }

    fn vector(answer: &Value, index: usize) -> Vec<f32> {
        answer["data"][index]["embedding"]
            .as_array()
            .map(|v| {
                v.iter()
                    .filter_map(Value::as_f64)
                    .map(|x| x as f32)
                    .collect()
            })
            .unwrap_or_default()
    }

    #[tokio::test]
    async fn embeddings_are_deterministic_unit_vectors_near_for_similar_texts() {
        let sim = RunningSimulator::start(SimulatorConfig::default())
            .await
            .expect("start");
        let texts = json!([
            "Ishmael watched the white whale from the deck.",
            "From the deck Ishmael watched the whale.",
            "Two eggs, flour and a pinch of salt.",
        ]);
        let (status, answer) = post(
            &sim,
            "/v1/embeddings",
            &json!({"model": "text-embedding-3-small", "input": texts}),
        )
        .await;
        assert_eq!(status, 200, "{answer}");
        assert_eq!(answer["model"], "text-embedding-3-small");
        assert_eq!(answer["data"].as_array().map(Vec::len), Some(3));
        let [a, near, far] = [0, 1, 2].map(|i| vector(&answer, i));
        assert_eq!(a.len(), 256, "the default dimension");
        let dot = |x: &[f32], y: &[f32]| x.iter().zip(y).map(|(p, q)| p * q).sum::<f32>();
        assert!((dot(&a, &a) - 1.0).abs() < 1e-4, "unit length");
        assert!(dot(&a, &near) > dot(&a, &far) + 0.3);

        // `dimensions` honoured, the same text the same vector, with or
        // without `/v1` in the base URL.
        let (status, short) = post(
            &sim,
            "/embeddings",
            &json!({"model": "m", "input": "From the deck Ishmael watched the whale.",
                    "dimensions": 32}),
        )
        .await;
        assert_eq!(status, 200);
        assert_eq!(short["model"], "m");
        assert_eq!(vector(&short, 0).len(), 32);
        let (_, again) = post(
            &sim,
            "/v1/embeddings",
            &json!({"model": "m", "input": ["From the deck Ishmael watched the whale."],
                    "dimensions": 32}),
        )
        .await;
        assert_eq!(vector(&short, 0), vector(&again, 0));

        let (status, refused) = post(&sim, "/v1/embeddings", &json!({"input": "x"})).await;
        assert_eq!(status, 400);
        assert_eq!(refused["error"]["type"], "invalid_request_error");
        let stats = sim.stats();
        assert_eq!(
            (
                stats.requests,
                stats.embeddings,
                stats.ok,
                stats.bad_requests
            ),
            (4, 4, 3, 1)
        );
        assert_eq!(stats.outcomes(), stats.requests);
        assert!(sim.prompts().is_empty(), "embeddings are not prompts");
        sim.stop().await.expect("stop");
    }

    #[tokio::test]
    async fn embeddings_get_the_transport_faults_and_latency() {
        let latency = Duration::from_millis(50);
        let sim = RunningSimulator::start(SimulatorConfig {
            latency,
            rate_500: 1.0,
            ..SimulatorConfig::default()
        })
        .await
        .expect("start");
        let started = std::time::Instant::now();
        let (status, answer) =
            post(&sim, "/v1/embeddings", &json!({"model": "m", "input": "x"})).await;
        assert!(started.elapsed() >= latency);
        assert_eq!(status, 500);
        assert_eq!(answer["error"]["type"], "server_error");
        sim.stop().await.expect("stop");

        let sim = RunningSimulator::start(SimulatorConfig {
            rate_malformed: 1.0,
            ..SimulatorConfig::default()
        })
        .await
        .expect("start");
        let response = reqwest::Client::new()
            .post(format!("http://{}/v1/embeddings", sim.addr()))
            .json(&json!({"model": "m", "input": "x"}))
            .send()
            .await
            .expect("send");
        assert_eq!(response.status().as_u16(), 200);
        let body = response.text().await.expect("body");
        assert!(serde_json::from_str::<Value>(&body).is_err(), "{body}");
        let stats = sim.stats();
        assert_eq!((stats.embeddings, stats.malformed), (1, 1));
        sim.stop().await.expect("stop");
    }

    fn spanish_job(passages: &[&str]) -> String {
        json!({
            "source_language": "en", "target_language": "es-ES",
            "context": "Glossary:\n- warp core => núcleo warp (locked)\n\
                        Characters:\n- Alice => Alicia",
            "passages": passages.iter().enumerate()
                .map(|(i, t)| json!({"id": format!("p{i}"), "text": t}))
                .collect::<Vec<_>>(),
        })
        .to_string()
    }

    async fn apertium_simulator(config: SimulatorConfig) -> Option<RunningSimulator> {
        apertium::for_tests().await?;
        let config = SimulatorConfig {
            translator: Translator::Apertium,
            ..config
        };
        Some(RunningSimulator::start(config).await.expect("start"))
    }

    #[tokio::test]
    async fn apertium_mode_answers_in_real_spanish_over_http() {
        let Some(sim) = apertium_simulator(SimulatorConfig::default()).await else {
            return;
        };
        let mut passages = vec![
            "It was raining on the ⟦1⟧old⟦/1⟧ harbour.".to_owned(),
            "Alice fixed the warp core⟦1/⟧ before dinner.".to_owned(),
        ];
        passages.extend((3..=20).map(|i| {
            format!("In chapter {i}, the keeper counted the ships that passed in the night.")
        }));
        let refs: Vec<&str> = passages.iter().map(String::as_str).collect();
        let started = std::time::Instant::now();
        let (status, answer) = chat(&sim, &spanish_job(&refs)).await;
        let first = started.elapsed();
        assert_eq!(status, 200, "{answer}");
        let texts = crate::translate::parse_answer(content(&answer)).expect("translations");
        assert_eq!(texts.len(), 20);
        assert!(texts[0].1.starts_with("Llovía"), "{texts:?}");
        assert!(
            texts[1].1.starts_with("Alicia") && texts[1].1.contains("núcleo warp⟦1/⟧"),
            "{texts:?}"
        );
        assert!(texts[2].1.contains("barcos"), "{texts:?}");
        for (source, (_, text)) in refs.iter().zip(&texts) {
            assert_eq!(crate::translate::check_placeholders(source, text), Ok(()));
        }
        // The same request again: from memory, no Apertium run.
        let started = std::time::Instant::now();
        let (_, again) = chat(&sim, &spanish_job(&refs)).await;
        let cached = started.elapsed();
        assert_eq!(content(&again), content(&answer));
        eprintln!("20 passages: {first:?}, again {cached:?}");
        assert!(cached < first, "{cached:?} vs {first:?}");

        // Reviewed against the same rendering: no flag.
        let review = review_user_into("es", "p0", refs[0], &texts[0].1);
        let (status, answer) = chat(&sim, &review).await;
        assert_eq!(status, 200, "{answer}");
        let items = crate::review::parse_review_answer(content(&answer)).expect("reviews");
        assert_eq!(
            (items[0].correction.as_deref(), items[0].flags.len()),
            (None, 0)
        );

        // Analyses keep names as they are, as Apertium does.
        let (_, answer) = chat(&sim, &analysis_user()).await;
        let analyses = crate::analysis::parse_analysis_answer(content(&answer)).expect("analyses");
        let names: Vec<Option<&str>> = analyses[0]
            .1
            .entities
            .iter()
            .map(|e| e.target_name.as_deref())
            .collect();
        assert_eq!(names, [Some("Alice"), Some("Bob")]);
        sim.stop().await.expect("stop");
    }

    #[tokio::test]
    async fn a_pair_apertium_lacks_is_a_clear_client_error() {
        let Some(sim) = apertium_simulator(SimulatorConfig {
            rate_500: 0.5,
            ..SimulatorConfig::default()
        })
        .await
        else {
            return;
        };
        let user = json!({
            "source_language": "en", "target_language": "ja",
            "passages": [{"id": "p1", "text": "Rain fell."}],
        })
        .to_string();
        let (status, answer) = chat(&sim, &user).await;
        assert_eq!(status, 400, "{answer}");
        assert_eq!(answer["error"]["type"], "invalid_request_error");
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("en-ja is not installed in Apertium") && message.contains("eng-spa"),
            "{message}"
        );
        let review = crate::review::review_message(
            crate::analysis::Languages {
                source: "de",
                target: "es",
            },
            &[],
            &[],
            &[],
        );
        assert_eq!(chat(&sim, &review).await.0, 400);
        let stats = sim.stats();
        assert_eq!((stats.requests, stats.bad_requests), (2, 2));
        assert!(sim.prompts().is_empty(), "a refused pair is no prompt");
        // Refused before the fault draws: the next request gets the first.
        let first = state(&SimulatorConfig {
            rate_500: 0.5,
            ..SimulatorConfig::default()
        })
        .draw();
        let (status, _) = chat(&sim, &spanish_job(&["Rain fell."])).await;
        assert_eq!(status == 500, first == Fault::Server);
        sim.stop().await.expect("stop");
    }

    #[tokio::test]
    async fn apertium_mode_needs_apertium_to_start() {
        let config = SimulatorConfig {
            translator: Translator::Apertium,
            apertium_bin: Some(PathBuf::from("/nonexistent/apertium")),
            ..SimulatorConfig::default()
        };
        let error = RunningSimulator::start(config)
            .await
            .err()
            .expect("no start");
        assert!(
            error.to_string().contains("/nonexistent/apertium"),
            "{error}"
        );
    }
}
