//! The provider simulator: an HTTP server speaking the OpenAI
//! chat-completions and Anthropic Messages protocols, for tests, the demo and
//! the benchmarks. Nothing in the product depends on it.
//!
//! Routes: `POST /v1/chat/completions` and `POST /chat/completions` (so both
//! `http://host:port/v1` and `http://host:port` work as OpenAI base URLs),
//! `POST /v1/messages` (Anthropic base URL `http://host:port`), and
//! `GET /stats` ([`SimulatorStats`] as JSON). Keys are not checked.
//!
//! Answers. A user message in the translation protocol of
//! [`crate::translate`] gets `{"translations": [...]}` with a pseudo-translation
//! of every passage ([`pseudo::pseudo_translate`]); any other user message is
//! pseudo-translated as plain text into `sim`. Usage is the
//! [`estimate_tokens`] of the system prompt plus the user message, and of the
//! answer's text. A request identical to one answered before reports its
//! whole prompt as cached, as a provider's prompt cache would. An answer
//! longer than the request's `max_tokens` is cut there (`length` /
//! `max_tokens`).
//!
//! Faults. For every well-formed request, in arrival order, one seeded RNG
//! draws the same number of values, and the first fault whose draw falls
//! under its rate applies, in this order: 429 with `Retry-After`, 500, hang
//! (no answer until the client gives up or the server shuts down), a
//! malformed JSON body, truncated content (the translation JSON cut in the
//! middle), a refusal, a dropped placeholder in one passage. Each rate is
//! thus the chance of its fault among the requests the earlier ones spared;
//! with a given seed and request order the faults are always the same.

mod protocol;
pub mod pseudo;

use std::collections::HashSet;
use std::future::Future;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

use crate::translate::{PassageIn, estimate_tokens};
use protocol::{Usage, Wire};

/// Latency and faults of a simulated provider.
#[derive(Debug, Clone, PartialEq, clap::Args)]
pub struct SimulatorConfig {
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
}

impl Default for SimulatorConfig {
    /// No latency, no faults, seed 0, `Retry-After: 1`.
    fn default() -> Self {
        SimulatorConfig {
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

/// What the simulator has served. Every completion request counts in
/// `requests` and in exactly one of `bad_requests`, `ok`, `cut_at_max_tokens`,
/// `rate_limited`, `server_errors`, `hangs`, `malformed`, `truncated`,
/// `refusals`, `dropped_placeholders`; `cached` counts answers whose prompt
/// was reported cached.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SimulatorStats {
    pub requests: u64,
    pub openai: u64,
    pub anthropic: u64,
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

/// Prompts remembered for the simulated cache before it is emptied, to bound memory.
const CACHE_ENTRIES: usize = 100_000;

/// A hanging request gives up after this long even if nobody stops the server.
const HANG_LIMIT: Duration = Duration::from_secs(3600);

struct Shared {
    config: SimulatorConfig,
    rng: Mutex<StdRng>,
    stats: Mutex<SimulatorStats>,
    seen: Mutex<HashSet<u64>>,
    stopping: watch::Receiver<bool>,
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

    /// True when the same prompt was answered before; remembers it.
    fn cached(&self, system: &str, user: &str) -> bool {
        let mut h = DefaultHasher::new();
        (system, user).hash(&mut h);
        let key = h.finish();
        let mut seen = lock(&self.seen);
        if seen.len() >= CACHE_ENTRIES {
            seen.clear();
        }
        !seen.insert(key)
    }
}

/// The translation protocol's user message, as far as the simulator needs it.
#[derive(Deserialize)]
struct Job {
    target_language: String,
    passages: Vec<PassageIn>,
}

/// The pseudo-translated answer to a user message, with one placeholder
/// dropped when `drop` says so and a passage has one; the flag tells whether
/// one was dropped.
fn translate_message(user: &str, drop: Option<u64>) -> (String, bool) {
    let Ok(job) = serde_json::from_str::<Job>(user) else {
        return (pseudo::pseudo_translate(user, "sim"), false);
    };
    let mut texts: Vec<String> = job
        .passages
        .iter()
        .map(|p| pseudo::pseudo_translate(&p.text, &job.target_language))
        .collect();
    let mut dropped = false;
    if let Some(pick) = drop {
        let candidates: Vec<usize> = (0..texts.len())
            .filter(|&i| pseudo::drop_placeholder(&texts[i]).is_some())
            .collect();
        if !candidates.is_empty() {
            let len = u64::try_from(candidates.len()).unwrap_or(u64::MAX);
            let i = candidates[usize::try_from(pick % len).unwrap_or(0)];
            if let Some(t) = pseudo::drop_placeholder(&texts[i]) {
                texts[i] = t;
                dropped = true;
            }
        }
    }
    let translations: Vec<serde_json::Value> = job
        .passages
        .iter()
        .zip(texts)
        .map(|(p, text)| serde_json::json!({"id": p.id, "text": text}))
        .collect();
    let answer = serde_json::json!({ "translations": translations });
    (answer.to_string(), dropped)
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

async fn openai(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    handle(shared, Wire::OpenAi, body).await
}

async fn anthropic(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    handle(shared, Wire::Anthropic, body).await
}

async fn stats(State(shared): State<Arc<Shared>>) -> Response {
    let stats = lock(&shared.stats).clone();
    axum::Json(stats).into_response()
}

async fn handle(shared: Arc<Shared>, wire: Wire, body: Bytes) -> Response {
    let mut n = 0;
    shared.count(|s| {
        s.requests += 1;
        n = s.requests;
        match wire {
            Wire::OpenAi => s.openai += 1,
            Wire::Anthropic => s.anthropic += 1,
        }
    });
    let request = match protocol::parse_request(wire, &body) {
        Ok(r) => r,
        Err(message) => {
            shared.count(|s| s.bad_requests += 1);
            let body = protocol::error(wire, protocol::error_kind(wire, 400), &message);
            return json_response(StatusCode::BAD_REQUEST, body);
        }
    };
    let fault = shared.draw();
    if fault == Fault::Hang {
        shared.count(|s| s.hangs += 1);
        let mut stopping = shared.stopping.clone();
        tokio::select! {
            _ = stopping.wait_for(|stop| *stop) => {}
            _ = tokio::time::sleep(HANG_LIMIT) => {}
        }
        let body = protocol::error(wire, protocol::error_kind(wire, 503), "shutting down");
        return json_response(StatusCode::SERVICE_UNAVAILABLE, body);
    }
    if !shared.config.latency.is_zero() {
        tokio::time::sleep(shared.config.latency).await;
    }
    match fault {
        Fault::RateLimited => {
            shared.count(|s| s.rate_limited += 1);
            let body = protocol::error(wire, protocol::error_kind(wire, 429), "rate limit reached");
            let mut response = json_response(StatusCode::TOO_MANY_REQUESTS, body);
            response.headers_mut().insert(
                header::RETRY_AFTER,
                HeaderValue::from(shared.config.retry_after_secs),
            );
            return response;
        }
        Fault::Server => {
            shared.count(|s| s.server_errors += 1);
            let body = protocol::error(wire, protocol::error_kind(wire, 500), "internal error");
            return json_response(StatusCode::INTERNAL_SERVER_ERROR, body);
        }
        Fault::Malformed => {
            shared.count(|s| s.malformed += 1);
            let mut response = protocol::malformed(wire, n).into_response();
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            return response;
        }
        _ => {}
    }

    let prompt = u64::try_from(estimate_tokens(&request.system) + estimate_tokens(&request.user))
        .unwrap_or(u64::MAX);
    let cached = shared.cached(&request.system, &request.user);
    if cached {
        shared.count(|s| s.cached += 1);
    }
    let mut usage = Usage {
        prompt,
        completion: 0,
        cached: if cached { prompt } else { 0 },
    };
    if fault == Fault::Refusal {
        shared.count(|s| s.refusals += 1);
        usage.completion = match wire {
            Wire::OpenAi => u64::try_from(estimate_tokens(protocol::REFUSAL)).unwrap_or(0),
            Wire::Anthropic => 0,
        };
        let body = protocol::answer(wire, n, &request.model, None, false, &usage);
        return json_response(StatusCode::OK, body);
    }
    let drop = match fault {
        Fault::DropPlaceholder(pick) => Some(pick),
        _ => None,
    };
    let (full, dropped) = translate_message(&request.user, drop);
    let mut content = full.as_str();
    let mut cut = false;
    if fault == Fault::Truncated {
        content = cut_in_half(content);
        cut = true;
        shared.count(|s| s.truncated += 1);
    } else if let Some(max) = request.max_tokens
        && u64::try_from(estimate_tokens(content)).unwrap_or(u64::MAX) > max
    {
        content = cut_to_tokens(content, max);
        cut = true;
        shared.count(|s| s.cut_at_max_tokens += 1);
    } else if dropped {
        shared.count(|s| s.dropped_placeholders += 1);
    } else {
        shared.count(|s| s.ok += 1);
    }
    usage.completion = u64::try_from(estimate_tokens(content)).unwrap_or(u64::MAX);
    let body = protocol::answer(wire, n, &request.model, Some(content), cut, &usage);
    json_response(StatusCode::OK, body)
}

fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/v1/chat/completions", post(openai))
        .route("/chat/completions", post(openai))
        .route("/v1/messages", post(anthropic))
        .route("/stats", get(stats))
        .with_state(shared)
}

fn shared(config: SimulatorConfig) -> (Arc<Shared>, watch::Sender<bool>) {
    let (stop, stopping) = watch::channel(false);
    let shared = Arc::new(Shared {
        rng: Mutex::new(StdRng::seed_from_u64(config.seed)),
        config,
        stats: Mutex::new(SimulatorStats::default()),
        seen: Mutex::new(HashSet::new()),
        stopping,
    });
    (shared, stop)
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
/// hanging requests and waits for the others. Prints nothing.
pub async fn serve(
    listener: tokio::net::TcpListener,
    config: SimulatorConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    let (shared, stop) = shared(config);
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
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let (shared, stop_hangs) = shared(config);
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

    /// What has been served so far.
    pub fn stats(&self) -> SimulatorStats {
        lock(&self.shared.stats).clone()
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
        ])
        .unwrap();
        assert_eq!(cli.config.latency, Duration::from_millis(15));
        assert_eq!(cli.config.seed, 7);
        assert_eq!(cli.config.rate_429, 0.2);
        assert_eq!(cli.config.rate_drop_placeholder, 1.0);
        assert!(Cli::try_parse_from(["x", "--rate-500", "1.5"]).is_err());
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
            let (s, _stop) = shared(config.clone());
            (0..50).map(|_| s.draw()).collect::<Vec<_>>()
        };
        let a = draws(&config);
        assert_eq!(a, draws(&config));
        assert!(a.contains(&Fault::None) && a.contains(&Fault::Hang));
        let other = SimulatorConfig { seed: 8, ..config };
        assert_ne!(a, draws(&other));
    }

    #[test]
    fn answers_translate_every_passage() {
        let user = r#"{"source_language":"en","target_language":"fr","context":null,
            "passages":[{"id":"a","text":"Hi ⟦1/⟧"},{"id":"b","text":"no"}]}"#;
        let (answer, dropped) = translate_message(user, None);
        assert!(!dropped);
        let parsed = crate::translate::parse_answer(&answer).unwrap();
        assert_eq!(
            parsed,
            vec![
                ("a".into(), "[fr] Hí ⟦1/⟧".into()),
                ("b".into(), "[fr] nó".into())
            ]
        );
        let (answer, dropped) = translate_message(user, Some(5));
        assert!(dropped);
        assert!(answer.contains("[fr] Hí \""));
        assert_eq!(translate_message("Hello", None).0, "[sim] Hélló");
    }

    #[test]
    fn cuts_stay_within_their_limits() {
        assert_eq!(cut_to_tokens("abcdefg", 2), "abcdef");
        assert_eq!(cut_to_tokens("ééé", 2), "éé");
        assert_eq!(cut_in_half("abcd"), "ab");
    }
}
