//! A book's paid asynchronous operations started by a person (spec 4.9):
//! `POST /api/projects/{pid}/jobs` with `{"operation": …}`.
//!
//! `translator_notes` has a model pass over the translated book propose
//! reader notes for its glossary terms (kept as proposals until a person
//! accepts one through the reader-note route); `translate` translates what
//! is left, as the tool protocol's `start_job` does. Both go through the
//! queue, the budget and the licence like any work: the scheduler's
//! `StartJob` judges the book and the admission; this route checks the
//! body's shape only (an unknown or missing operation is 422
//! `invalid_request` naming the accepted values). The book must be one of
//! the caller's own: another account's answers 404 like an absent one.
//!
//! The answer is 202 with the request summary (spec 2.1) and the
//! operation, `Location` pointing at the request's status document, which
//! the caller follows with an API token (`jobs:read`), like any request.

use crate::auth::session::SessionUser;
use crate::error::{ApiError, ApiResult};
use crate::extract::{is_json, parse_json};
use crate::operations::requests;
use crate::state::AppState;
use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::post;
use dragoman_model::documents::request::RequestSummary;
use dragoman_model::vocab::{ErrorCode, JobOperation};
use dragoman_proto::v1::StartJobRequest;
use dragoman_proto::wire::WireEnum;
use serde::{Deserialize, Serialize};

/// The routes of this module, mounted under `/api`.
pub fn routes() -> Router<AppState> {
    Router::new().route("/projects/{project_id}/jobs", post(start))
}

/// The body of `POST /api/projects/{pid}/jobs`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobBody {
    operation: JobOperation,
    /// A provider's name; none: the book's, the series', the default.
    #[serde(default)]
    provider: Option<String>,
    /// The provider's batch mode; none: the book's default, else the
    /// server's.
    #[serde(default)]
    batch: Option<bool>,
}

/// The answer: what a person needs to follow the job.
#[derive(Debug, Serialize)]
pub struct StartedJob {
    #[serde(flatten)]
    summary: RequestSummary,
    operation: JobOperation,
}

/// A body whose shape errors are 422 `invalid_request` (a session route
/// answers a bad body as the spec's session routes do).
fn job_body(headers: &HeaderMap, bytes: &Bytes) -> ApiResult<JobBody> {
    if !is_json(headers) {
        return Err(ApiError::new(ErrorCode::UnsupportedMediaType));
    }
    parse_json(bytes).map_err(|mut error| {
        error.code = ErrorCode::InvalidRequest;
        error
    })
}

pub async fn start(
    State(state): State<AppState>,
    user: SessionUser,
    Path(project_id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<impl IntoResponse> {
    let body = job_body(&headers, &body)?;
    let message = StartJobRequest {
        project_id,
        provider: body.provider,
        priority: None,
        operation: Some(body.operation.to_wire()),
        batch: body.batch,
    };
    let answer = state
        .scheduler
        .handle
        .start_job(state.call(&user.principal(), message))
        .await?
        .into_inner();
    let document = requests::status_document(answer)?;
    let location = document.summary.status_url.clone();
    let started = StartedJob {
        summary: document.summary,
        operation: body.operation,
    };
    Ok((
        StatusCode::ACCEPTED,
        [(header::LOCATION, location)],
        Json(started),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn headers() -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::CONTENT_TYPE,
            "application/json".parse().expect("value"),
        );
        headers
    }

    fn refusal(body: Value) -> Value {
        let bytes = Bytes::from(body.to_string());
        let error = job_body(&headers(), &bytes).expect_err("refused");
        assert_eq!(error.code, ErrorCode::InvalidRequest);
        serde_json::to_value(&error.issues).expect("issues")
    }

    #[test]
    fn the_body_names_a_known_operation() {
        let bytes = Bytes::from(json!({"operation": "translator_notes"}).to_string());
        let body = job_body(&headers(), &bytes).expect("read");
        assert_eq!(body.operation, JobOperation::TranslatorNotes);
        assert_eq!(body.provider, None);

        let unknown = refusal(json!({"operation": "summarise"}));
        assert_eq!(unknown[0]["loc"], json!(["body", "operation"]));
        assert_eq!(unknown[0]["type"], "enum");
        assert_eq!(
            unknown[0]["ctx"]["expected"], "translate, translator_notes",
            "{unknown}"
        );
        assert!(!unknown.to_string().contains("summarise"), "never echoed");
        let missing = refusal(json!({}));
        assert_eq!(missing[0]["loc"], json!(["body", "operation"]));
        assert_eq!(missing[0]["type"], "missing");
        let extra = refusal(json!({"operation": "translate", "quality": "high"}));
        assert_eq!(extra[0]["type"], "extra_forbidden");
    }
}
