//! OpenAI's Batch API: the Files API (`POST /files` with purpose `batch`,
//! `GET /files`, `GET /files/{id}`, `GET /files/{id}/content`) and
//! `/batches` (create, read, list newest first, cancel), over
//! `/v1/chat/completions` and `/v1/responses`, on both the `/v1` and the
//! bare prefix like the completion routes.
//!
//! An input file must be JSON lines, each an object; a batch whose lines
//! are not calls of its endpoint (`custom_id`, `method` `POST`, `url`, a
//! `body` object, one model, no `custom_id` twice, at most 50,000 lines
//! and 200 MB) is created `failed` with an error per bad line, as OpenAI
//! validates them. Results: the output file holds the answers with a 2xx
//! status, the error file the others, expired calls (`batch_expired`) and
//! cancelled ones (`batch_cancelled`).

use std::collections::HashSet;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::multipart::MultipartRejection;
use axum::extract::{Multipart, Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Batch, End, File, Item, LineError, Outcome, Phase, refusal};
use crate::protocol::Wire;
use crate::state::Shared;

const CHAT: &str = "/v1/chat/completions";
const RESPONSES: &str = "/v1/responses";

/// Lines of one input file at most.
const MAX_LINES: usize = 50_000;
/// Bytes of one input file at most.
const MAX_BYTES: usize = 200 * 1024 * 1024;

pub(super) fn router() -> Router<Arc<Shared>> {
    let mut router = Router::new();
    for prefix in ["/v1", ""] {
        router = router
            .route(&format!("{prefix}/files"), post(upload).get(files))
            .route(&format!("{prefix}/files/{{id}}"), get(file))
            .route(&format!("{prefix}/files/{{id}}/content"), get(content))
            .route(&format!("{prefix}/batches"), post(create).get(list))
            .route(&format!("{prefix}/batches/{{id}}"), get(read))
            .route(&format!("{prefix}/batches/{{id}}/cancel"), post(cancel));
    }
    router
}

fn bad(message: &str) -> Response {
    refusal(Wire::OpenAi, StatusCode::BAD_REQUEST, message)
}

fn not_found(what: &str, id: &str) -> Response {
    refusal(
        Wire::OpenAi,
        StatusCode::NOT_FOUND,
        &format!("No such {what}: '{id}'"),
    )
}

fn file_json(file: &File) -> Value {
    json!({
        "id": file.id,
        "object": "file",
        "bytes": file.content.len(),
        "created_at": file.created_at,
        "expires_at": null,
        "filename": file.filename,
        "purpose": file.purpose,
        "status": "processed",
        "status_details": null,
    })
}

/// `{"object": "list", "data", "first_id", "last_id", "has_more"}` of
/// `items` (newest first) after the one whose id is `after`, at most
/// `limit`.
fn page(items: Vec<(String, Value)>, after: Option<&str>, limit: usize) -> Value {
    let start = after
        .and_then(|after| items.iter().position(|(id, _)| id == after))
        .map_or(0, |i| i + 1);
    let rest = items.len().saturating_sub(start);
    let data: Vec<Value> = items
        .iter()
        .skip(start)
        .take(limit)
        .map(|(_, v)| v.clone())
        .collect();
    let id = |v: Option<&Value>| v.and_then(|v| v.get("id")).cloned();
    json!({
        "object": "list",
        "first_id": id(data.first()),
        "last_id": id(data.last()),
        "has_more": rest > limit,
        "data": data,
    })
}

async fn upload(
    State(shared): State<Arc<Shared>>,
    multipart: Result<Multipart, MultipartRejection>,
) -> Response {
    let mut multipart = match multipart {
        Ok(m) => m,
        Err(e) => return bad(&e.body_text()),
    };
    let (mut purpose, mut file) = (None, None);
    loop {
        let field = match multipart.next_field().await {
            Ok(Some(field)) => field,
            Ok(None) => break,
            Err(e) => return bad(&e.body_text()),
        };
        let name = field.name().unwrap_or_default().to_owned();
        let filename = field.file_name().unwrap_or("file").to_owned();
        let bytes = match field.bytes().await {
            Ok(bytes) => bytes,
            Err(e) => return bad(&e.body_text()),
        };
        match name.as_str() {
            "purpose" => purpose = Some(String::from_utf8_lossy(&bytes).trim().to_owned()),
            "file" => file = Some((filename, bytes)),
            _ => {}
        }
    }
    let Some(purpose) = purpose else {
        return bad("Missing required parameter: 'purpose'.");
    };
    if purpose != "batch" {
        return bad(&format!(
            "Invalid value for 'purpose': '{purpose}' (this simulator keeps batch files only)."
        ));
    }
    let Some((filename, content)) = file else {
        return bad("Missing required parameter: 'file'.");
    };
    if let Err(message) = json_lines(&content) {
        return bad(&message);
    }
    let file = shared.batches.add_file(filename, purpose, content);
    (StatusCode::OK, axum::Json(file_json(&file))).into_response()
}

/// The JSON objects of a JSON-lines file, blank lines skipped; why not
/// when a line is not one, or there is none.
fn json_lines(content: &[u8]) -> Result<Vec<(usize, Value)>, String> {
    let text = std::str::from_utf8(content)
        .map_err(|_| "Invalid file format for Batch API: the file is not UTF-8.".to_owned())?;
    let mut lines = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(line) {
            Ok(value) if value.is_object() => lines.push((i + 1, value)),
            _ => {
                return Err(format!(
                    "Invalid file format for Batch API: line {} is not a JSON object.",
                    i + 1
                ));
            }
        }
    }
    if lines.is_empty() {
        return Err("Invalid file format for Batch API: the file has no line.".into());
    }
    Ok(lines)
}

#[derive(Deserialize)]
struct FilesQuery {
    purpose: Option<String>,
    after: Option<String>,
    limit: Option<usize>,
}

async fn files(State(shared): State<Arc<Shared>>, Query(query): Query<FilesQuery>) -> Response {
    let files = shared.batches.files(query.purpose.as_deref());
    let items = files.iter().map(|f| (f.id.clone(), file_json(f))).collect();
    let limit = query.limit.unwrap_or(10_000).clamp(1, 10_000);
    axum::Json(page(items, query.after.as_deref(), limit)).into_response()
}

async fn file(State(shared): State<Arc<Shared>>, Path(id): Path<String>) -> Response {
    match shared.batches.file(&id) {
        Some(file) => axum::Json(file_json(&file)).into_response(),
        None => not_found("File object", &id),
    }
}

async fn content(State(shared): State<Arc<Shared>>, Path(id): Path<String>) -> Response {
    let Some(file) = shared.batches.file(&id) else {
        return not_found("File object", &id);
    };
    let mut response = (StatusCode::OK, file.content).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    response
}

#[derive(Deserialize)]
struct CreateBody {
    input_file_id: Option<String>,
    endpoint: Option<String>,
    completion_window: Option<String>,
    metadata: Option<serde_json::Map<String, Value>>,
}

async fn create(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let body: CreateBody = match serde_json::from_slice(&body) {
        Ok(body) => body,
        Err(e) => return bad(&format!("Invalid body: {e}")),
    };
    let (Some(input_file_id), Some(endpoint)) = (body.input_file_id, body.endpoint) else {
        return bad("Missing required parameter: 'input_file_id' and 'endpoint' are required.");
    };
    let wire = match endpoint.as_str() {
        CHAT => Wire::OpenAi,
        RESPONSES => Wire::Responses,
        _ => {
            return bad(&format!(
                "Invalid value for 'endpoint': '{endpoint}' (supported here: {CHAT}, {RESPONSES})."
            ));
        }
    };
    if body.completion_window.as_deref() != Some("24h") {
        return bad("Invalid value for 'completion_window': only '24h' is supported.");
    }
    if body.metadata.as_ref().is_some_and(|m| m.len() > 16) {
        return bad("Invalid 'metadata': at most 16 keys.");
    }
    let Some(file) = shared.batches.file(&input_file_id) else {
        return not_found("File object", &input_file_id);
    };
    if file.purpose != "batch" {
        return bad("The input file must have been uploaded with purpose 'batch'.");
    }
    let (items, errors) = calls(&file.content, &endpoint);
    let metadata = body.metadata.map_or(Value::Null, Value::Object);
    let batch = super::create(
        &shared,
        &headers,
        wire,
        items,
        |batch| {
            batch.input_file_id = Some(input_file_id);
            batch.metadata = metadata;
            batch.errors = errors;
        },
        batch_json,
    );
    axum::Json(batch).into_response()
}

/// The calls of an input file for `endpoint`, or why the batch fails:
/// `(line, code, message)` for each line in error.
fn calls(content: &[u8], endpoint: &str) -> (Vec<Item>, Vec<LineError>) {
    let fail = |code: &str, message: String| (Vec::new(), vec![(None, code.to_owned(), message)]);
    if content.len() > MAX_BYTES {
        return fail(
            "file_too_large",
            format!("The input file is larger than {MAX_BYTES} bytes."),
        );
    }
    let lines = match json_lines(content) {
        Ok(lines) => lines,
        Err(message) => return fail("invalid_json_line", message),
    };
    if lines.len() > MAX_LINES {
        return fail(
            "too_many_requests",
            format!("The input file has more than {MAX_LINES} requests."),
        );
    }
    let (mut items, mut errors) = (Vec::new(), Vec::new());
    let mut seen = HashSet::new();
    let mut model: Option<String> = None;
    for (n, line) in lines {
        let mut error = |code: &str, message: &str| {
            errors.push((Some(n), code.to_owned(), message.to_owned()));
        };
        let custom_id = line.get("custom_id").and_then(Value::as_str);
        let Some(custom_id) = custom_id.filter(|c| !c.is_empty()) else {
            error("missing_required_parameter", "Missing 'custom_id'.");
            continue;
        };
        if !seen.insert(custom_id.to_owned()) {
            error(
                "duplicate_custom_id",
                "The custom_id of this line is used by another line.",
            );
            continue;
        }
        if line.get("method").and_then(Value::as_str) != Some("POST") {
            error("invalid_method", "The method must be POST.");
            continue;
        }
        if line.get("url").and_then(Value::as_str) != Some(endpoint) {
            error(
                "mismatched_endpoint",
                &format!("The url of this line must be the batch's endpoint, {endpoint}."),
            );
            continue;
        }
        let Some(body) = line.get("body").filter(|b| b.is_object()) else {
            error(
                "invalid_body",
                "The body of this line must be a JSON object.",
            );
            continue;
        };
        let line_model = body
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or_default();
        match &model {
            Some(m) if m != line_model => {
                error(
                    "mismatched_model",
                    "Every line of a batch must use the same model.",
                );
                continue;
            }
            Some(_) => {}
            None => model = Some(line_model.to_owned()),
        }
        items.push(Item {
            custom_id: custom_id.to_owned(),
            body: Bytes::from(body.to_string()),
        });
    }
    if !errors.is_empty() {
        items.clear();
    }
    (items, errors)
}

fn status(batch: &Batch) -> &'static str {
    match batch.phase {
        Phase::InProgress => "in_progress",
        Phase::Finalizing => "finalizing",
        Phase::Cancelling => "cancelling",
        Phase::Ended(End::Completed) => "completed",
        Phase::Ended(End::Expired) => "expired",
        Phase::Ended(End::Cancelled) => "cancelled",
        Phase::Failed => "failed",
    }
}

/// A batch as OpenAI describes it.
fn batch_json(batch: &Batch) -> Value {
    let (completed, failed) = batch.counts();
    let ended = |end: End| batch.ended_at.filter(|_| batch.phase == Phase::Ended(end));
    let errors = (!batch.errors.is_empty()).then(|| {
        let data: Vec<Value> = batch
            .errors
            .iter()
            .map(|(line, code, message)| {
                json!({"code": code, "message": message, "param": null, "line": line})
            })
            .collect();
        json!({"object": "list", "data": data})
    });
    json!({
        "id": batch.id,
        "object": "batch",
        "endpoint": if batch.wire == Wire::Responses { RESPONSES } else { CHAT },
        "errors": errors,
        "input_file_id": batch.input_file_id,
        "completion_window": "24h",
        "status": status(batch),
        "output_file_id": batch.output_file_id,
        "error_file_id": batch.error_file_id,
        "created_at": batch.created_at,
        "in_progress_at": batch.in_progress_at,
        "expires_at": batch.expires_at(),
        "finalizing_at": batch.finalizing_at,
        "completed_at": ended(End::Completed),
        "failed_at": batch.ended_at.filter(|_| batch.phase == Phase::Failed),
        "expired_at": ended(End::Expired),
        "cancelling_at": batch.cancelling_at,
        "cancelled_at": ended(End::Cancelled),
        "request_counts": {
            "total": batch.items.len(),
            "completed": completed,
            "failed": failed,
        },
        "metadata": batch.metadata,
    })
}

async fn read(State(shared): State<Arc<Shared>>, Path(id): Path<String>) -> Response {
    match shared.batches.read(&id, batch_json) {
        Some(batch) => axum::Json(batch).into_response(),
        None => not_found("batch", &id),
    }
}

#[derive(Deserialize)]
struct ListQuery {
    after: Option<String>,
    limit: Option<usize>,
}

async fn list(State(shared): State<Arc<Shared>>, Query(query): Query<ListQuery>) -> Response {
    let limit = query.limit.unwrap_or(20);
    if !(1..=100).contains(&limit) {
        return bad("Invalid 'limit': between 1 and 100.");
    }
    let items = shared
        .batches
        .list(false, |b| (b.id.clone(), batch_json(b)));
    axum::Json(page(items, query.after.as_deref(), limit)).into_response()
}

async fn cancel(State(shared): State<Arc<Shared>>, Path(id): Path<String>) -> Response {
    match shared.batches.cancel(&id, batch_json) {
        Some(batch) => axum::Json(batch).into_response(),
        None => not_found("batch", &id),
    }
}

/// A result file to write: its name suffix and its JSON lines.
pub(super) type ResultFile = Option<(&'static str, Vec<u8>)>;

/// The output and error files of an ended batch, `None` where no line
/// goes.
pub(super) fn result_files(batch: &Batch, outcomes: &[Outcome]) -> (ResultFile, ResultFile) {
    let (mut output, mut errors) = (String::new(), String::new());
    for (item, outcome) in batch.items.iter().zip(outcomes) {
        let id = format!("batch_req_{:032x}", rand::random::<u128>());
        let (line, ok) = match outcome {
            Outcome::Answered { status, body } => (
                json!({
                    "id": id,
                    "custom_id": item.custom_id,
                    "response": {
                        "status_code": status.as_u16(),
                        "request_id": format!("req_{:032x}", rand::random::<u128>()),
                        "body": body,
                    },
                    "error": null,
                }),
                status.is_success(),
            ),
            Outcome::Expired | Outcome::Cancelled => {
                let (code, message) = if matches!(outcome, Outcome::Expired) {
                    (
                        "batch_expired",
                        "This request could not be executed before the completion window expired.",
                    )
                } else {
                    (
                        "batch_cancelled",
                        "This request could not be executed before the batch was cancelled.",
                    )
                };
                (
                    json!({
                        "id": id,
                        "custom_id": item.custom_id,
                        "response": null,
                        "error": {"code": code, "message": message},
                    }),
                    false,
                )
            }
        };
        let file = if ok { &mut output } else { &mut errors };
        file.push_str(&line.to_string());
        file.push('\n');
    }
    let file = |suffix, lines: String| (!lines.is_empty()).then(|| (suffix, lines.into_bytes()));
    (file("output", output), file("error", errors))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_that_are_not_calls_of_the_endpoint_fail_the_batch() {
        let good = |id: &str| {
            json!({"custom_id": id, "method": "POST", "url": CHAT,
                   "body": {"model": "m", "messages": []}})
            .to_string()
        };
        let file = format!("{}\n\n{}\n", good("a"), good("b"));
        let (items, errors) = calls(file.as_bytes(), CHAT);
        assert_eq!(items.len(), 2);
        assert!(errors.is_empty());
        let (items, errors) = calls(file.as_bytes(), RESPONSES);
        assert!(items.is_empty());
        assert_eq!(errors.len(), 2);
        assert_eq!(errors[0].1, "mismatched_endpoint");
        let file = format!("{}\n{}\n", good("a"), good("a"));
        let (_, errors) = calls(file.as_bytes(), CHAT);
        assert_eq!(errors[0].0, Some(2));
        assert_eq!(errors[0].1, "duplicate_custom_id");
        assert!(json_lines(b"{\"a\":1}\nnot json\n").is_err());
        assert!(json_lines(b"\n\n").is_err());
    }

    #[test]
    fn pages_go_on_after_the_cursor() {
        let items: Vec<(String, Value)> = (0..5)
            .map(|i| (format!("b{i}"), json!({"id": format!("b{i}")})))
            .collect();
        let first = page(items.clone(), None, 2);
        assert_eq!(first["has_more"], true);
        assert_eq!(first["last_id"], "b1");
        let last = page(items, Some("b2"), 2);
        assert_eq!(last["first_id"], "b3");
        assert_eq!(last["has_more"], false);
    }
}
