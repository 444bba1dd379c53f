//! The API during a database outage (docs/decisions.md, "Database outages
//! at the API"): a call never waits for a database that does not answer.
//!
//! Every REST call runs through [`answer_within`]: while the database
//! answers, nothing changes; once the process knows it is away (the
//! [`DatabaseWatch`](dragoman_model::db_watch::DatabaseWatch) of the
//! gateway state), a call not finished [`GRACE`] later is dropped and
//! answered 503 `service_unavailable` with `Retry-After`. What the gateway
//! holds in its caches (a token, the licence, a status document) comes back
//! within that grace, so it is still answered. A dropped submission stored
//! nothing this process knows of: it is refused, never accepted unstored,
//! and sent again with its `Idempotency-Key` it is taken once.
//!
//! The tool protocol answers the same code inside the protocol: its HTTP
//! request is bounded only while the caller is authenticated ([`bounded`]
//! around the token and licence reads), and each tool call is bounded
//! around its dispatch, answering an `isError` result (see
//! [`crate::mcp`]).

use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use dragoman_model::vocab::ErrorCode;
use std::future::Future;
use std::time::Duration;

/// How long a call may still take once the database is known away: long
/// enough for an answer from the caches, short enough that every call is
/// answered well within two seconds.
pub const GRACE: Duration = Duration::from_millis(300);

/// The `Retry-After` of `service_unavailable`, in seconds: a managed
/// database fails over in 30 to 120 seconds, and a client asking every
/// few seconds finds it back soon after it returns. The services state the
/// same wait in their own refusals.
pub const RETRY_AFTER_SECONDS: u64 = dragoman_proto::api_status::DATABASE_AWAY_RETRY_AFTER;

/// How long the gateway holds what it read (a token, the licence, a status
/// document) to answer it while the database is away: past the outage
/// limit's default, so what was read before an outage answers through it.
pub const HELD_FOR: Duration = Duration::from_secs(600);

/// Whether a call was refused because the database is away.
pub fn is_unavailable(error: &ApiError) -> bool {
    error.code == ErrorCode::ServiceUnavailable
}

/// A read for one of the gateway's caches: once the database is (or goes)
/// away, refused at once with [`unavailable`], so the cache answers what
/// it holds without waiting for the grace.
pub async fn read_now<T>(
    state: &AppState,
    read: impl Future<Output = ApiResult<T>>,
) -> ApiResult<T> {
    state
        .database
        .bounded(read, Duration::ZERO)
        .await
        .unwrap_or_else(|_| Err(unavailable()))
}

/// 503 `service_unavailable` with its `Retry-After`.
pub fn unavailable() -> ApiError {
    let mut error = ApiError::new(ErrorCode::ServiceUnavailable);
    error.retry_after = Some(RETRY_AFTER_SECONDS);
    error
}

/// Runs `work`, answering [`unavailable`] instead when the database is (or
/// goes) away and `work` has not finished [`GRACE`] later.
pub async fn bounded<T>(
    state: &AppState,
    work: impl Future<Output = ApiResult<T>>,
) -> ApiResult<T> {
    state
        .database
        .bounded(work, GRACE)
        .await
        .unwrap_or_else(|_| Err(unavailable()))
}

/// Middleware of the REST routes: the call, bounded as [`bounded`] says.
pub async fn answer_within(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    match state.database.bounded(next.run(request), GRACE).await {
        Ok(response) => response,
        Err(outage) => {
            // The watch logs the outage once; each call cut by it only
            // at debug level, or an outage would flood the log.
            tracing::debug!(%outage, "call answered service_unavailable");
            unavailable().into_response()
        }
    }
}

#[cfg(test)]
pub(crate) mod tests;
