//! The HTTP answers the routes share: JSON and server-sent-event bodies,
//! hanging requests, 429s, and what the request headers carry.

use std::time::Duration;

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};

use crate::protocol::{self, Content, Usage, Wire};
use crate::state::Shared;

/// A hanging request gives up after this long even if nobody stops the server.
pub(crate) const HANG_LIMIT: Duration = Duration::from_secs(3600);

pub(crate) fn json_response(status: StatusCode, body: serde_json::Value) -> Response {
    (status, axum::Json(body)).into_response()
}

/// A header's value, when present and not blank.
pub(crate) fn header_text(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
}

/// Whether a Codex request carries what the backend authorizes with: a
/// bearer token and the account it belongs to.
pub(crate) fn codex_authorized(headers: &HeaderMap) -> bool {
    let bearer = header_text(headers, "authorization")
        .and_then(|a| a.strip_prefix("Bearer ").map(|t| !t.trim().is_empty()))
        .unwrap_or(false);
    bearer && header_text(headers, "chatgpt-account-id").is_some()
}

/// An answer as server-sent events.
pub(crate) fn sse_response(events: Vec<protocol::StreamEvent>) -> Response {
    let events = events.into_iter().map(|(kind, data)| {
        Ok::<_, std::convert::Infallible>(Event::default().event(kind).data(data))
    });
    Sse::new(futures::stream::iter(events)).into_response()
}

/// A successful answer, streamed when the request asked for a stream.
pub(crate) fn reply(
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
pub(crate) async fn hang(shared: &Shared, wire: Wire) -> Response {
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
pub(crate) fn rate_limited(shared: &Shared, wire: Wire) -> Response {
    shared.count(|s| s.rate_limited += 1);
    let body = protocol::error(wire, protocol::error_kind(wire, 429), "rate limit reached");
    let mut response = json_response(StatusCode::TOO_MANY_REQUESTS, body);
    response.headers_mut().insert(
        header::RETRY_AFTER,
        HeaderValue::from(shared.config.retry_after_secs),
    );
    response
}
