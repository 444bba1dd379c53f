//! Anthropic's Message Batches API: `POST /v1/messages/batches` (the
//! calls inline, `requests: [{custom_id, params}]`), `GET` of one batch
//! and of the list (newest first, `limit`, `after_id`, `before_id`),
//! `POST …/cancel`, and `GET …/results`: one JSON line per call, its
//! `result` `succeeded` (the message), `errored` (the error body),
//! `canceled` or `expired`, readable once the batch has ended.
//!
//! A request that breaks the API's rules (no call, more than 100,000, a
//! `custom_id` not of 1 to 64 letters, digits, `_` and `-`, or used twice,
//! `params` without `model`, `max_tokens` or `messages`) is refused with a
//! 400, as Anthropic does.

use std::collections::HashSet;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Batch, Item, Outcome, Phase, clock, refusal};
use crate::protocol::Wire;
use crate::replies::header_text;
use crate::state::Shared;

/// Calls of one batch at most.
const MAX_REQUESTS: usize = 100_000;

pub(super) fn router() -> Router<Arc<Shared>> {
    Router::new()
        .route("/v1/messages/batches", post(create).get(list))
        .route("/v1/messages/batches/{id}", get(read))
        .route("/v1/messages/batches/{id}/cancel", post(cancel))
        .route("/v1/messages/batches/{id}/results", get(results))
}

fn bad(message: &str) -> Response {
    refusal(Wire::Anthropic, StatusCode::BAD_REQUEST, message)
}

fn not_found(id: &str) -> Response {
    refusal(
        Wire::Anthropic,
        StatusCode::NOT_FOUND,
        &format!("No message batch with id '{id}'."),
    )
}

/// Where this simulator is reached, for the `results_url`.
fn origin(headers: &HeaderMap) -> String {
    let host = header_text(headers, "host").unwrap_or_else(|| "127.0.0.1".into());
    format!("http://{host}")
}

/// A batch as Anthropic describes it.
fn batch_json(batch: &Batch, origin: &str) -> Value {
    let ended = matches!(batch.phase, Phase::Ended(_));
    let [succeeded, errored, canceled, expired] = batch.result_counts();
    let status = match batch.phase {
        Phase::Cancelling => "canceling",
        Phase::Ended(_) | Phase::Failed => "ended",
        Phase::InProgress | Phase::Finalizing => "in_progress",
    };
    json!({
        "id": batch.id,
        "type": "message_batch",
        "processing_status": status,
        "request_counts": {
            "processing": batch.items.len() - batch.outcomes.len(),
            "succeeded": succeeded,
            "errored": errored,
            "canceled": canceled,
            "expired": expired,
        },
        "ended_at": batch.ended_at.map(clock::rfc3339),
        "created_at": clock::rfc3339(batch.created_at),
        "expires_at": clock::rfc3339(batch.expires_at()),
        "archived_at": null,
        "cancel_initiated_at": batch.cancelling_at.map(clock::rfc3339),
        "results_url": ended.then(|| format!("{origin}/v1/messages/batches/{}/results", batch.id)),
    })
}

/// Whether a `custom_id` is one Anthropic takes.
fn valid_custom_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// The calls of a creation request, or why it is refused.
fn calls(body: &[u8]) -> Result<Vec<Item>, String> {
    let body: Value = serde_json::from_slice(body).map_err(|e| format!("invalid JSON: {e}"))?;
    let requests = body
        .get("requests")
        .and_then(Value::as_array)
        .ok_or("requests: Field required")?;
    if requests.is_empty() {
        return Err("requests: at least one request is required".into());
    }
    if requests.len() > MAX_REQUESTS {
        return Err(format!("requests: at most {MAX_REQUESTS} requests"));
    }
    let mut seen = HashSet::new();
    let mut items = Vec::with_capacity(requests.len());
    for (i, request) in requests.iter().enumerate() {
        let custom_id = request
            .get("custom_id")
            .and_then(Value::as_str)
            .filter(|id| valid_custom_id(id))
            .ok_or_else(|| {
                format!("requests.{i}.custom_id: 1 to 64 characters among a-z, A-Z, 0-9, _ and -")
            })?;
        if !seen.insert(custom_id) {
            return Err(format!(
                "requests.{i}.custom_id: '{custom_id}' is used by another request"
            ));
        }
        let params = request
            .get("params")
            .filter(|p| p.is_object())
            .ok_or_else(|| format!("requests.{i}.params: Field required"))?;
        let checks = [
            ("model", params.get("model").is_some_and(Value::is_string)),
            (
                "max_tokens",
                params.get("max_tokens").is_some_and(Value::is_u64),
            ),
            (
                "messages",
                params.get("messages").is_some_and(Value::is_array),
            ),
        ];
        if let Some((field, _)) = checks.iter().find(|(_, ok)| !ok) {
            return Err(format!("requests.{i}.params.{field}: Field required"));
        }
        items.push(Item {
            custom_id: custom_id.to_owned(),
            body: Bytes::from(params.to_string()),
        });
    }
    Ok(items)
}

async fn create(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let items = match calls(&body) {
        Ok(items) => items,
        Err(message) => return bad(&message),
    };
    let origin = origin(&headers);
    let batch = super::create(
        &shared,
        &headers,
        Wire::Anthropic,
        items,
        |_| {},
        |b| batch_json(b, &origin),
    );
    axum::Json(batch).into_response()
}

async fn read(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let origin = origin(&headers);
    match shared.batches.read(&id, |b| batch_json(b, &origin)) {
        Some(batch) => axum::Json(batch).into_response(),
        None => not_found(&id),
    }
}

#[derive(Deserialize)]
struct ListQuery {
    limit: Option<usize>,
    after_id: Option<String>,
    before_id: Option<String>,
}

async fn list(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    Query(query): Query<ListQuery>,
) -> Response {
    let limit = query.limit.unwrap_or(20);
    if !(1..=1000).contains(&limit) {
        return bad("limit: between 1 and 1000");
    }
    let origin = origin(&headers);
    let all = shared
        .batches
        .list(true, |b| (b.id.clone(), batch_json(b, &origin)));
    let position = |id: &str| all.iter().position(|(b, _)| b == id);
    // Newest first: `after_id` pages towards older batches, `before_id`
    // towards newer ones.
    let (start, end) = match (&query.after_id, &query.before_id) {
        (Some(after), _) => {
            let start = position(after).map_or(all.len(), |i| i + 1);
            (start, (start + limit).min(all.len()))
        }
        (None, Some(before)) => {
            let end = position(before).unwrap_or(0);
            (end.saturating_sub(limit), end)
        }
        (None, None) => (0, limit.min(all.len())),
    };
    let has_more = match query.before_id {
        Some(_) if query.after_id.is_none() => start > 0,
        _ => end < all.len(),
    };
    let data: Vec<Value> = all[start..end].iter().map(|(_, v)| v.clone()).collect();
    let id = |v: Option<&Value>| v.and_then(|v| v.get("id")).cloned();
    axum::Json(json!({
        "first_id": id(data.first()),
        "last_id": id(data.last()),
        "has_more": has_more,
        "data": data,
    }))
    .into_response()
}

async fn cancel(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let origin = origin(&headers);
    match shared.batches.cancel(&id, |b| batch_json(b, &origin)) {
        Some(batch) => axum::Json(batch).into_response(),
        None => not_found(&id),
    }
}

/// The result line of one call.
fn result_line(custom_id: &str, outcome: &Outcome) -> Value {
    let result = match outcome {
        Outcome::Answered { status, body } if status.is_success() => {
            json!({"type": "succeeded", "message": body})
        }
        Outcome::Answered { body, .. } => json!({"type": "errored", "error": body}),
        Outcome::Cancelled => json!({"type": "canceled"}),
        Outcome::Expired => json!({"type": "expired"}),
    };
    json!({"custom_id": custom_id, "result": result})
}

async fn results(State(shared): State<Arc<Shared>>, Path(id): Path<String>) -> Response {
    let lines = shared.batches.read(&id, |b| {
        matches!(b.phase, Phase::Ended(_)).then(|| {
            b.items
                .iter()
                .zip(&b.outcomes)
                .map(|(item, outcome)| result_line(&item.custom_id, outcome).to_string() + "\n")
                .collect::<String>()
        })
    });
    match lines {
        None => not_found(&id),
        Some(None) => bad(&format!(
            "Message batch '{id}' has not ended yet: its results are not available."
        )),
        Some(Some(lines)) => {
            let mut response = (StatusCode::OK, lines).into_response();
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/binary"),
            );
            response
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn creation_requests_follow_the_api_rules() {
        let request = |id: &str| json!({"custom_id": id, "params": {"model": "m", "max_tokens": 10, "messages": []}});
        let body = |requests: Vec<Value>| json!({ "requests": requests }).to_string();
        let items = calls(body(vec![request("k-1"), request("k_2")]).as_bytes()).unwrap();
        assert_eq!(items.len(), 2);
        assert_eq!(items[1].custom_id, "k_2");
        for refused in [
            body(vec![]),
            body(vec![request("k-1"), request("k-1")]),
            body(vec![request("with space")]),
            body(vec![request(&"x".repeat(65))]),
            body(vec![
                json!({"custom_id": "a", "params": {"model": "m", "messages": []}}),
            ]),
            "{".to_owned(),
        ] {
            assert!(calls(refused.as_bytes()).is_err(), "{refused}");
        }
    }
}
