//! The watcher benchmark (`bench/watch_grpc.sh`, docs/benchmarks.md): opens
//! many `WatchTranslation` streams on one running request over a few HTTP/2
//! connections, reads the server's resident memory before and with them,
//! then pauses and resumes the request and times, for every watcher, how
//! long after the change's answer (the change is stored when the call
//! answers) a document with the new state reached it.
//!
//! Usage (the script starts the server and the request):
//! `watch_bench --server http://127.0.0.1:18880 --request-id ID --pid PID
//! --channels 10 --streams 100` with the API token in `WATCH_BENCH_TOKEN`.
//! With `--check` it exits 1 when a target is missed (every watcher has
//! each change within 1 s; memory under 200 MiB above idle).

use clap::{Parser, ValueEnum};
use dragoman_model::vocab::RequestStatus;
use dragoman_proto::api::v1::translations_service_client::TranslationsServiceClient;
use dragoman_proto::api::v1::{ControlTranslationRequest, WatchTranslationRequest};
use dragoman_proto::v1::{ControlAction, StatusDocument};
use dragoman_proto::wire::WireEnum;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tonic::metadata::AsciiMetadataValue;
use tonic::transport::{Channel, Endpoint};

/// The targets of the feature.
const DELIVERY_TARGET: Duration = Duration::from_secs(1);
const MEMORY_TARGET_MIB: f64 = 200.0;

#[derive(Parser)]
struct Args {
    /// The gateway's HTTP address (REST and gRPC).
    #[arg(long)]
    server: String,
    #[arg(long)]
    request_id: String,
    /// The server process, whose `/proc/<pid>/status` is read.
    #[arg(long)]
    pid: u32,
    /// HTTP/2 connections.
    #[arg(long, default_value_t = 10)]
    channels: usize,
    /// Watch streams on each connection.
    #[arg(long, default_value_t = 100)]
    streams: usize,
    /// Seconds to wait for every watcher's first document.
    #[arg(long, default_value_t = 60)]
    open_timeout: u64,
    /// Seconds to wait for every watcher to see a change.
    #[arg(long, default_value_t = 15)]
    change_timeout: u64,
    /// How the change is asked for.
    #[arg(long, value_enum, default_value_t = Control::Grpc)]
    control: Control,
    /// Exit 1 when a target is missed.
    #[arg(long)]
    check: bool,
}

#[derive(Clone, Copy, ValueEnum)]
enum Control {
    /// `ControlTranslation`.
    Grpc,
    /// `POST /api/v1/translation-requests/{id}/{action}`.
    Rest,
}

/// What a watcher can tell apart: the request's status and step.
type State = (i32, String);

/// One document a watcher received.
struct Seen {
    at: Instant,
    state: State,
}

/// What one watcher received, and how its stream ended if it did.
#[derive(Default)]
struct Log {
    seen: Vec<Seen>,
    ended: Option<String>,
}

type Client =
    TranslationsServiceClient<tonic::service::interceptor::InterceptedService<Channel, Bearer>>;

#[derive(Clone)]
struct Bearer(AsciiMetadataValue);

impl tonic::service::Interceptor for Bearer {
    fn call(
        &mut self,
        mut request: tonic::Request<()>,
    ) -> Result<tonic::Request<()>, tonic::Status> {
        request
            .metadata_mut()
            .insert("authorization", self.0.clone());
        Ok(request)
    }
}

fn state_of(doc: &StatusDocument) -> State {
    (doc.status, doc.step.clone())
}

fn show(state: &State) -> String {
    let status = RequestStatus::from_wire(state.0, "status")
        .map(|s| s.as_str().to_owned())
        .unwrap_or_else(|_| format!("#{}", state.0));
    if state.1.is_empty() {
        status
    } else {
        format!("{status}/{}", state.1)
    }
}

/// Resident and peak resident memory of `pid`, in MiB.
fn memory(pid: u32) -> Result<(f64, f64), Box<dyn std::error::Error>> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let field = |name: &str| -> Result<f64, Box<dyn std::error::Error>> {
        let line = text
            .lines()
            .find(|l| l.starts_with(name))
            .ok_or_else(|| format!("no {name} in /proc/{pid}/status"))?;
        let kib: f64 = line
            .split_whitespace()
            .nth(1)
            .ok_or("an empty memory line")?
            .parse()?;
        Ok(kib / 1024.0)
    };
    Ok((field("VmRSS:")?, field("VmHWM:")?))
}

/// CPU seconds `pid` has used (user and system).
fn cpu_seconds(pid: u32) -> Result<f64, Box<dyn std::error::Error>> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // The fields after the command name, which may hold spaces.
    let rest = text.rsplit_once(')').ok_or("no command name in stat")?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| -> Result<f64, Box<dyn std::error::Error>> {
        Ok(fields.get(i).ok_or("a short stat line")?.parse::<f64>()?)
    };
    // utime and stime (fields 14 and 15), in USER_HZ ticks of 1/100 s.
    Ok((ticks(11)? + ticks(12)?) / 100.0)
}

/// The share of one core `pid` uses over `window`.
async fn cpu_share(pid: u32, window: Duration) -> Result<f64, Box<dyn std::error::Error>> {
    let start = cpu_seconds(pid)?;
    tokio::time::sleep(window).await;
    Ok((cpu_seconds(pid)? - start) / window.as_secs_f64())
}

/// Watches the request until its stream ends, logging every document.
async fn watch(
    mut client: Client,
    request_id: String,
    log: Arc<Mutex<Log>>,
    first: Arc<AtomicUsize>,
) {
    let ended = async {
        let mut stream = client
            .watch_translation(WatchTranslationRequest { request_id })
            .await?
            .into_inner();
        let mut counted = false;
        while let Some(message) = stream.message().await? {
            let at = Instant::now();
            let Some(doc) = message.document else {
                return Err(tonic::Status::internal("a message without its document"));
            };
            if let Ok(mut log) = log.lock() {
                log.seen.push(Seen {
                    at,
                    state: state_of(&doc),
                });
            }
            if !counted {
                counted = true;
                first.fetch_add(1, Ordering::Relaxed);
            }
        }
        Ok::<_, tonic::Status>("the stream ended".to_owned())
    }
    .await;
    let reason = match ended {
        Ok(reason) => reason,
        Err(status) => format!("{:?}: {}", status.code(), status.message()),
    };
    if let Ok(mut log) = log.lock() {
        log.ended = Some(reason);
    }
}

/// Asks for `action` and answers the request's state after it, as the
/// answer tells it.
async fn change(
    args: &Args,
    client: &mut Client,
    http: &reqwest::Client,
    token: &str,
    action: ControlAction,
) -> Result<State, Box<dyn std::error::Error>> {
    match args.control {
        Control::Grpc => {
            let answer = client
                .control_translation(ControlTranslationRequest {
                    request_id: args.request_id.clone(),
                    action: action as i32,
                })
                .await?
                .into_inner();
            let doc = answer.document.ok_or("an answer without its document")?;
            Ok(state_of(&doc))
        }
        Control::Rest => {
            let name = match action {
                ControlAction::Pause => "pause",
                ControlAction::Resume => "resume",
                _ => return Err("only pause and resume are used".into()),
            };
            let url = format!(
                "{}/api/v1/translation-requests/{}/{name}",
                args.server, args.request_id
            );
            let answer = http.post(&url).bearer_auth(token).send().await?;
            let status = answer.status();
            let body: serde_json::Value = answer.json().await?;
            if !status.is_success() {
                return Err(format!("{name}: {status} {body}").into());
            }
            let text = body["status"].as_str().ok_or("no status in the answer")?;
            let status: RequestStatus = text.parse().map_err(|_| format!("status {text}"))?;
            let step = body["step"].as_str().unwrap_or_default().to_owned();
            Ok((status.to_wire(), step))
        }
    }
}

/// The state each watcher last saw.
fn last_states(logs: &[Arc<Mutex<Log>>]) -> Vec<Option<State>> {
    logs.iter()
        .map(|log| {
            log.lock()
                .ok()
                .and_then(|log| log.seen.last().map(|s| s.state.clone()))
        })
        .collect()
}

/// For each watcher, when it first saw a state other than `before` after
/// `sent`, and that state.
fn arrivals(
    logs: &[Arc<Mutex<Log>>],
    before: &[Option<State>],
    sent: Instant,
) -> Vec<Option<(Instant, State)>> {
    logs.iter()
        .zip(before)
        .map(|(log, before)| {
            let log = log.lock().ok()?;
            log.seen
                .iter()
                .find(|s| s.at >= sent && Some(&s.state) != before.as_ref())
                .map(|s| (s.at, s.state.clone()))
        })
        .collect()
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Makes one change and measures its delivery. Answers whether every
/// watcher had it within the target.
async fn measure_change(
    args: &Args,
    client: &mut Client,
    http: &reqwest::Client,
    token: &str,
    logs: &[Arc<Mutex<Log>>],
    action: ControlAction,
) -> Result<bool, Box<dyn std::error::Error>> {
    let before = last_states(logs);
    let sent = Instant::now();
    let after = change(args, client, http, token, action).await?;
    let answered = Instant::now();
    let deadline = answered + Duration::from_secs(args.change_timeout);
    let mut got = arrivals(logs, &before, sent);
    while got.iter().any(Option::is_none) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
        got = arrivals(logs, &before, sent);
    }
    let watchers = logs.len();
    let mut latencies: Vec<f64> = got
        .iter()
        .flatten()
        .map(|(at, _)| at.saturating_duration_since(answered).as_secs_f64() * 1000.0)
        .collect();
    latencies.sort_by(f64::total_cmp);
    let early = got
        .iter()
        .flatten()
        .filter(|(at, _)| *at < answered)
        .count();
    let mut received = std::collections::BTreeMap::<String, usize>::new();
    for (_, state) in got.iter().flatten() {
        *received.entry(show(state)).or_default() += 1;
    }
    let within = latencies
        .iter()
        .filter(|ms| **ms <= DELIVERY_TARGET.as_secs_f64() * 1000.0)
        .count();
    let from = before
        .iter()
        .flatten()
        .next()
        .map(show)
        .unwrap_or_else(|| "?".into());
    println!(
        "{action:?}: {from} -> {} (call answered in {:.1} ms)",
        show(&after),
        (answered - sent).as_secs_f64() * 1000.0
    );
    println!(
        "  delivered to {}/{watchers} (before the answer: {early}); within 1 s: {within}/{watchers}",
        latencies.len()
    );
    for (state, count) in &received {
        println!("  first new state received: {state} by {count}");
    }
    println!(
        "  latency after the answer: p50 {:.1} ms, p95 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        percentile(&latencies, 50.0),
        percentile(&latencies, 95.0),
        percentile(&latencies, 99.0),
        latencies.last().copied().unwrap_or(f64::NAN)
    );
    Ok(within == watchers)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let token = std::env::var("WATCH_BENCH_TOKEN").map_err(|_| "WATCH_BENCH_TOKEN is not set")?;
    let bearer = Bearer(format!("Bearer {}", token.trim()).parse()?);
    let endpoint = Endpoint::from_shared(args.server.clone())?;
    // One HTTP/2 connection per channel: `connect` opens its own.
    let mut clients = Vec::with_capacity(args.channels);
    for _ in 0..args.channels {
        let channel = endpoint.connect().await?;
        clients.push(
            TranslationsServiceClient::with_interceptor(channel, bearer.clone())
                .max_decoding_message_size(64 * 1024 * 1024),
        );
    }
    let mut control = clients
        .first()
        .cloned()
        .ok_or("--channels must be at least 1")?;
    let http = reqwest::Client::new();

    let idle_cpu = cpu_share(args.pid, Duration::from_secs(3)).await?;
    let (idle, idle_peak) = memory(args.pid)?;
    let watchers = args.channels * args.streams;
    println!(
        "{watchers} watchers on {} connections x {} streams",
        args.channels, args.streams
    );

    let first = Arc::new(AtomicUsize::new(0));
    let mut logs = Vec::with_capacity(watchers);
    let opening = Instant::now();
    for client in &clients {
        for _ in 0..args.streams {
            let log = Arc::new(Mutex::new(Log::default()));
            logs.push(log.clone());
            tokio::spawn(watch(
                client.clone(),
                args.request_id.clone(),
                log,
                first.clone(),
            ));
        }
    }
    let open_deadline = opening + Duration::from_secs(args.open_timeout);
    while first.load(Ordering::Relaxed) < watchers && Instant::now() < open_deadline {
        // A stream refused or ended before its first document will not get one.
        let settled = logs
            .iter()
            .filter(|log| {
                log.lock()
                    .map(|l| !l.seen.is_empty() || l.ended.is_some())
                    .unwrap_or(false)
            })
            .count();
        if settled == watchers {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let opened = first.load(Ordering::Relaxed);
    println!(
        "first document at {opened}/{watchers} watchers after {:.2} s",
        opening.elapsed().as_secs_f64()
    );
    let mut reasons = std::collections::BTreeMap::<String, usize>::new();
    for log in &logs {
        if let Ok(log) = log.lock()
            && let Some(reason) = &log.ended
        {
            *reasons.entry(reason.clone()).or_default() += 1;
        }
    }
    for (reason, count) in &reasons {
        println!("  streams ended before the change: {count} ({reason})");
    }
    // Let the server settle (tasks, buffers) before reading its memory.
    let watching_cpu = cpu_share(args.pid, Duration::from_secs(3)).await?;
    let (with, with_peak) = memory(args.pid)?;
    println!(
        "server CPU: idle {:.0} % of a core, with watchers {:.0} %",
        idle_cpu * 100.0,
        watching_cpu * 100.0
    );
    println!(
        "server RSS: idle {idle:.1} MiB, with watchers {with:.1} MiB, delta {:+.1} MiB (peak {idle_peak:.1} -> {with_peak:.1} MiB)",
        with - idle
    );
    if opened < watchers {
        println!("not every watcher got its first document: no change measured");
        if args.check {
            std::process::exit(1);
        }
        return Ok(());
    }

    let mut met = with - idle < MEMORY_TARGET_MIB;
    met &= measure_change(
        &args,
        &mut control,
        &http,
        &token,
        &logs,
        ControlAction::Pause,
    )
    .await?;
    // A resume right after a pause is a different document again; leave a
    // moment so the two changes are not read as one.
    tokio::time::sleep(Duration::from_secs(1)).await;
    met &= measure_change(
        &args,
        &mut control,
        &http,
        &token,
        &logs,
        ControlAction::Resume,
    )
    .await?;
    let (after, after_peak) = memory(args.pid)?;
    println!("server RSS after both changes: {after:.1} MiB (peak {after_peak:.1} MiB)");
    println!(
        "targets (every watcher within 1 s, memory under {MEMORY_TARGET_MIB} MiB above idle): {}",
        if met { "met" } else { "MISSED" }
    );
    if args.check && !met {
        std::process::exit(1);
    }
    Ok(())
}
