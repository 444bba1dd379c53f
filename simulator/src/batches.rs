//! The providers' batch APIs as the simulator serves them: the files and
//! batches it holds (in memory, lost on restart), the life of a batch, and
//! the log of every call received in one (`GET /batch-items`).
//!
//! A batch ends `--batch-delay-ms` after its creation. Its calls are then
//! answered by the same machinery as ordinary requests of their protocol
//! (`completions::batch_item`: same answers, faults, prompt log and
//! counters), a few at a time, in input order; every `--batch-fail-every`th
//! call fails with a server error instead, without reaching it. With
//! `--batch-expire` the batch ends expired: the first half of its calls is
//! answered, the others expire. A cancellation asked before the end ends
//! it at once, cancelled, none of its calls answered; asked later, it is
//! too late and the batch ends as it would have.
//!
//! The protocols' shapes and routes are in `batches/openai.rs` (Files and
//! `/batches`) and `batches/anthropic.rs` (`/v1/messages/batches`).

mod anthropic;
mod clock;
mod openai;

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::Notify;

use crate::completions::batch_item;
use crate::message::Message;
use crate::protocol::{self, Wire};
use crate::state::{Shared, lock};

/// The largest request body of the batch routes: Anthropic's 256 MB
/// (OpenAI takes 200 MB files).
const BODY_LIMIT: usize = 256 * 1024 * 1024;

/// Calls of one batch answered at the same time.
const ANSWERED_AT_ONCE: usize = 8;

/// How long a provider keeps a batch open: its completion window.
pub(crate) const WINDOW_SECS: i64 = 24 * 3600;

/// The batch routes of both protocols, and `GET /batch-items`.
pub(crate) fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .merge(openai::router())
        .merge(anthropic::router())
        .route("/batch-items", get(received))
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(shared)
}

async fn received(State(shared): State<Arc<Shared>>) -> Response {
    axum::Json(shared.batches.received()).into_response()
}

/// What the simulator holds of the batch APIs.
#[derive(Default)]
pub(crate) struct Batches {
    inner: std::sync::Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// Numbers the ids, so that they never repeat.
    next: u64,
    /// Uploaded input files and the output and error files of ended
    /// batches, oldest first.
    files: Vec<File>,
    /// Oldest first.
    batches: Vec<Batch>,
    received: Vec<BatchItem>,
}

impl Inner {
    /// A fresh id: `prefix`, then 24 characters.
    fn id(&mut self, prefix: &str) -> String {
        self.next += 1;
        let noise: u64 = rand::random();
        format!("{prefix}{:08x}{:016x}", self.next, noise)
    }

    fn batch(&mut self, id: &str) -> Option<&mut Batch> {
        self.batches.iter_mut().find(|b| b.id == id)
    }
}

/// A file of OpenAI's Files API.
#[derive(Clone)]
pub(crate) struct File {
    pub id: String,
    pub filename: String,
    pub purpose: String,
    pub created_at: i64,
    pub content: Bytes,
}

/// One call received in a batch, as `GET /batch-items` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchItem {
    pub batch_id: String,
    pub custom_id: String,
    /// `chat`, `responses` or `messages`, as in the prompt log.
    pub wire: String,
    /// `translation`, `analysis`, `review`, `notes` or `other`.
    pub kind: String,
    /// Its user message.
    pub user: String,
    pub received_at: i64,
}

/// One call of a batch.
#[derive(Clone)]
pub(crate) struct Item {
    pub custom_id: String,
    /// Its request body, as the ordinary call would send it.
    pub body: Bytes,
}

/// What became of one call.
#[derive(Debug, Clone)]
pub(crate) enum Outcome {
    /// The answer of the ordinary call: its status and body.
    Answered {
        status: StatusCode,
        body: Value,
    },
    Expired,
    Cancelled,
}

impl Outcome {
    fn succeeded(&self) -> bool {
        matches!(self, Outcome::Answered { status, .. } if status.is_success())
    }
}

/// Where a batch stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Waiting for its end.
    InProgress,
    /// Its calls are being answered.
    Finalizing,
    /// Cancellation asked, not yet done.
    Cancelling,
    Ended(End),
    /// Refused as a whole (OpenAI's input file validation).
    Failed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    Completed,
    Expired,
    Cancelled,
}

/// Why a batch fails: `(line, code, message)`, lines counted from 1.
pub(crate) type LineError = (Option<usize>, String, String);

/// A batch of either protocol.
pub(crate) struct Batch {
    pub id: String,
    /// The protocol of its calls: chat completions, Responses or Messages.
    pub wire: Wire,
    pub input_file_id: Option<String>,
    pub metadata: Value,
    pub created_at: i64,
    pub items: Vec<Item>,
    pub phase: Phase,
    /// One per item once the batch has ended.
    pub outcomes: Vec<Outcome>,
    pub in_progress_at: Option<i64>,
    pub finalizing_at: Option<i64>,
    pub cancelling_at: Option<i64>,
    pub ended_at: Option<i64>,
    pub output_file_id: Option<String>,
    pub error_file_id: Option<String>,
    /// Why it failed.
    pub errors: Vec<LineError>,
    cancel: Arc<Notify>,
}

impl Batch {
    fn new(id: String, wire: Wire, items: Vec<Item>, created_at: i64) -> Batch {
        Batch {
            id,
            wire,
            input_file_id: None,
            metadata: Value::Null,
            created_at,
            items,
            phase: Phase::InProgress,
            outcomes: Vec::new(),
            in_progress_at: Some(created_at),
            finalizing_at: None,
            cancelling_at: None,
            ended_at: None,
            output_file_id: None,
            error_file_id: None,
            errors: Vec::new(),
            cancel: Arc::new(Notify::new()),
        }
    }

    pub fn expires_at(&self) -> i64 {
        self.created_at + WINDOW_SECS
    }

    /// Calls answered successfully, calls failed (errors, expired and
    /// cancelled ones), so far.
    pub fn counts(&self) -> (usize, usize) {
        let done = self.outcomes.iter().filter(|o| o.succeeded()).count();
        (done, self.outcomes.len() - done)
    }

    /// The calls in each result, Anthropic's way: succeeded, errored,
    /// canceled, expired.
    pub fn result_counts(&self) -> [usize; 4] {
        let mut counts = [0; 4];
        for outcome in &self.outcomes {
            let i = match outcome {
                o if o.succeeded() => 0,
                Outcome::Answered { .. } => 1,
                Outcome::Cancelled => 2,
                Outcome::Expired => 3,
            };
            counts[i] += 1;
        }
        counts
    }
}

impl Batches {
    /// Every call received in a batch, oldest first.
    pub(crate) fn received(&self) -> Vec<BatchItem> {
        lock(&self.inner).received.clone()
    }

    /// Keeps an uploaded file; its id.
    pub(crate) fn add_file(&self, filename: String, purpose: String, content: Bytes) -> File {
        let mut inner = lock(&self.inner);
        let file = File {
            id: inner.id("file-"),
            filename,
            purpose,
            created_at: clock::now(),
            content,
        };
        inner.files.push(file.clone());
        file
    }

    pub(crate) fn file(&self, id: &str) -> Option<File> {
        lock(&self.inner).files.iter().find(|f| f.id == id).cloned()
    }

    /// Files of `purpose` (all when `None`), newest first.
    pub(crate) fn files(&self, purpose: Option<&str>) -> Vec<File> {
        let inner = lock(&self.inner);
        inner
            .files
            .iter()
            .rev()
            .filter(|f| purpose.is_none_or(|p| f.purpose == p))
            .cloned()
            .collect()
    }

    /// Reads what `f` needs of the batch `id`; `None` when there is none.
    pub(crate) fn read<T>(&self, id: &str, f: impl FnOnce(&Batch) -> T) -> Option<T> {
        lock(&self.inner).batches.iter().find(|b| b.id == id).map(f)
    }

    /// Reads what `f` needs of every batch of a protocol family (`anthropic`
    /// or not), newest first.
    pub(crate) fn list<T>(&self, anthropic: bool, f: impl Fn(&Batch) -> T) -> Vec<T> {
        lock(&self.inner)
            .batches
            .iter()
            .rev()
            .filter(|b| (b.wire == Wire::Anthropic) == anthropic)
            .map(f)
            .collect()
    }

    /// Asks the batch `id` to stop; reads it with `f` as it stands then.
    /// A batch that has ended, or whose calls are being answered, is left
    /// as it is.
    pub(crate) fn cancel<T>(&self, id: &str, f: impl FnOnce(&Batch) -> T) -> Option<T> {
        let mut inner = lock(&self.inner);
        let batch = inner.batch(id)?;
        if batch.phase == Phase::InProgress {
            batch.phase = Phase::Cancelling;
            batch.cancelling_at = Some(clock::now());
            batch.cancel.notify_one();
        }
        Some(f(batch))
    }
}

/// Creates a batch of `items` in `wire`'s protocol, logs its calls as
/// received, and starts its life; `prepare` fills what is particular to
/// the protocol (input file, metadata). A batch `failed` before it starts
/// (`errors` given) is kept as it is. Reads it with `f`.
pub(crate) fn create<T>(
    shared: &Arc<Shared>,
    headers: &HeaderMap,
    wire: Wire,
    items: Vec<Item>,
    prepare: impl FnOnce(&mut Batch),
    f: impl FnOnce(&Batch) -> T,
) -> T {
    let now = clock::now();
    let prefix = if wire == Wire::Anthropic {
        "msgbatch_"
    } else {
        "batch_"
    };
    let (id, read, cancel) = {
        let mut inner = lock(&shared.batches.inner);
        let id = inner.id(prefix);
        let mut batch = Batch::new(id.clone(), wire, items, now);
        prepare(&mut batch);
        if !batch.errors.is_empty() {
            batch.phase = Phase::Failed;
            batch.in_progress_at = None;
            batch.ended_at = Some(now);
            batch.items.clear();
        }
        for item in &batch.items {
            let user = protocol::parse_request(wire, &item.body)
                .map(|r| r.user)
                .unwrap_or_default();
            inner.received.push(BatchItem {
                batch_id: id.clone(),
                custom_id: item.custom_id.clone(),
                wire: wire.name().to_owned(),
                kind: Message::read(&user).kind().to_owned(),
                user,
                received_at: now,
            });
        }
        let count = batch.items.len();
        let running = batch.phase == Phase::InProgress;
        let read = f(&batch);
        let cancel = batch.cancel.clone();
        inner.batches.push(batch);
        shared.count(|s| {
            s.batches += 1;
            s.batch_items += u64::try_from(count).unwrap_or(u64::MAX);
        });
        (id, read, running.then_some(cancel))
    };
    if let Some(cancel) = cancel {
        tokio::spawn(run(shared.clone(), headers.clone(), id, cancel));
    }
    read
}

/// The life of a batch: waits for its end or its cancellation, answers
/// its calls, ends it.
async fn run(shared: Arc<Shared>, headers: HeaderMap, id: String, cancel: Arc<Notify>) {
    let cancelled = tokio::select! {
        _ = tokio::time::sleep(shared.config.batch_delay) => false,
        _ = cancel.notified() => true,
    };
    let items = {
        let mut inner = lock(&shared.batches.inner);
        let Some(batch) = inner.batch(&id) else {
            return;
        };
        if !cancelled {
            batch.phase = Phase::Finalizing;
            batch.finalizing_at = Some(clock::now());
        }
        (batch.wire, batch.items.clone())
    };
    let (wire, items) = items;
    let (outcomes, end) = if cancelled {
        (vec![Outcome::Cancelled; items.len()], End::Cancelled)
    } else {
        let answered = if shared.config.batch_expire {
            items.len() / 2
        } else {
            items.len()
        };
        let calls = items
            .iter()
            .take(answered)
            .cloned()
            .enumerate()
            .map(|(i, item)| answer(shared.clone(), headers.clone(), wire, i, item));
        let mut outcomes: Vec<Outcome> = futures::stream::iter(calls)
            .buffered(ANSWERED_AT_ONCE)
            .collect()
            .await;
        outcomes.resize(items.len(), Outcome::Expired);
        let end = if answered < items.len() {
            End::Expired
        } else {
            End::Completed
        };
        (outcomes, end)
    };
    finish(&shared, &id, outcomes, end);
}

/// The outcome of the call `i` (from 0) of a batch: a server error for
/// every `--batch-fail-every`th (not a request: no counter but the
/// batch's), else what the ordinary request gets.
async fn answer(
    shared: Arc<Shared>,
    headers: HeaderMap,
    wire: Wire,
    i: usize,
    item: Item,
) -> Outcome {
    let every = shared.config.batch_fail_every;
    let n = u64::try_from(i).unwrap_or(u64::MAX).saturating_add(1);
    if every > 0 && n % every == 0 {
        let kind = protocol::error_kind(wire, 500);
        return Outcome::Answered {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            body: protocol::error(wire, kind, "the server had an error"),
        };
    }
    let (status, body) = batch_item(shared, wire, &headers, item.body).await;
    Outcome::Answered { status, body }
}

/// Ends a batch with its outcomes; OpenAI's gets its output and error
/// files.
fn finish(shared: &Shared, id: &str, outcomes: Vec<Outcome>, end: End) {
    let mut inner = lock(&shared.batches.inner);
    let now = clock::now();
    let files = match inner.batches.iter().find(|b| b.id == id) {
        Some(batch) if batch.wire != Wire::Anthropic => openai::result_files(batch, &outcomes),
        Some(_) => (None, None),
        None => return,
    };
    let mut ids = [None, None];
    for (slot, lines) in ids.iter_mut().zip([files.0, files.1]) {
        if let Some((suffix, content)) = lines {
            let file = File {
                id: inner.id("file-"),
                filename: format!("{id}_{suffix}.jsonl"),
                purpose: "batch_output".into(),
                created_at: now,
                content: Bytes::from(content),
            };
            *slot = Some(file.id.clone());
            inner.files.push(file);
        }
    }
    let [output, error] = ids;
    if let Some(batch) = inner.batch(id) {
        // A cancellation asked while the calls were answered comes too
        // late: the batch ends as it would have.
        batch.phase = Phase::Ended(end);
        batch.outcomes = outcomes;
        batch.ended_at = Some(now);
        batch.output_file_id = output;
        batch.error_file_id = error;
    }
}

/// An answer with `status` and the protocol's error body: OpenAI's
/// `{"error": {message, type, param, code}}` (a 404 is an
/// `invalid_request_error` there), Anthropic's
/// `{"type": "error", "error": {type, message}}`.
pub(crate) fn refusal(wire: Wire, status: StatusCode, message: &str) -> Response {
    let body = if wire == Wire::Anthropic {
        let kind = match status.as_u16() {
            404 => "not_found_error",
            413 => "request_too_large",
            _ => protocol::error_kind(wire, status.as_u16()),
        };
        json!({"type": "error", "error": {"type": kind, "message": message}})
    } else {
        let kind = protocol::error_kind(wire, status.as_u16());
        let kind = if status == StatusCode::NOT_FOUND {
            "invalid_request_error"
        } else {
            kind
        };
        json!({"error": {"message": message, "type": kind, "param": null, "code": null}})
    };
    (status, axum::Json(body)).into_response()
}

#[cfg(test)]
mod tests;
