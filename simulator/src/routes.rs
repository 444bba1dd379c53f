//! The simulator's routes: the completion endpoints of every protocol,
//! embeddings, the `/stats`, `/prompts` and `/faults` reports, and the
//! batch APIs (`batches.rs`).

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use dragoman_model::tokens::estimate_tokens;

use crate::completions::{cut_in_half, handle};
use crate::embeddings;
use crate::protocol::{self, Wire};
use crate::replies::{hang, json_response, rate_limited};
use crate::state::{Fault, Shared, lock};

pub(crate) fn router(shared: Arc<Shared>) -> Router {
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
        .with_state(shared.clone())
        .merge(crate::batches::router(shared))
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
