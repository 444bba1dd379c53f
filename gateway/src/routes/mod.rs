//! The HTTP surface: `/health`, the automation API under `/api/v1` (tokens
//! only), and the session routes under `/api` (cookies only).
pub mod auth;
pub mod health;
pub mod providers;
pub mod requests;
pub mod series;
pub mod settings;
pub mod tokens;

use crate::auth::{bearer, session};
use crate::envelope::envelope;
use crate::error::ApiError;
use crate::state::AppState;
use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::Method;
use axum::middleware::{Next, from_fn, from_fn_with_state};
use axum::response::Response;
use axum::routing::{get, post, post_service, put};

async fn not_found() -> ApiError {
    ApiError::not_found("not_found")
}

/// Demo mode (spec 4.9): only reads, sign-in and sign-out are allowed.
async fn demo_guard(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    if state.settings.demo_mode {
        let path = request.uri().path();
        let read = matches!(
            *request.method(),
            Method::GET | Method::HEAD | Method::OPTIONS
        );
        let sign =
            path == "/api/auth/login" || path == "/api/auth/logout" || path == "/api/auth/demo";
        if !read && !sign {
            return Err(ApiError::forbidden("demo_read_only"));
        }
    }
    Ok(next.run(request).await)
}

pub fn router(state: AppState) -> Router {
    let automation = Router::new()
        .route("/translation-requests", post(requests::submit))
        .route("/translation-requests/{request_id}", get(requests::status))
        .route(
            "/translation-requests/{request_id}/result",
            get(requests::result),
        )
        .route(
            "/translation-requests/{request_id}/{action}",
            post(requests::action),
        )
        .route("/providers", get(providers::list))
        .route("/series", get(series::list))
        .route("/series/{series_id}", get(series::detail))
        .fallback(not_found)
        .layer(from_fn_with_state(state.clone(), bearer::require_token));

    let session_routes = Router::new()
        .route("/auth/login", post(auth::login))
        .route("/auth/logout", post(auth::logout))
        .route("/auth/session", get(auth::current))
        .route("/tokens", get(tokens::list).post(tokens::create))
        .route("/tokens/{id}", axum::routing::delete(tokens::revoke))
        .route("/tokens/{id}/queue", put(tokens::update_queue))
        .route("/tokens/{id}/budget", put(tokens::update_budget))
        .route(
            "/providers",
            get(providers::admin_list).post(providers::admin_add),
        )
        .route(
            "/settings/webhooks",
            get(settings::get_webhooks)
                .put(settings::put_webhooks)
                .delete(settings::delete_webhooks),
        )
        .fallback(not_found)
        .layer(from_fn_with_state(state.clone(), session::same_origin));

    // The tool protocol answers POST only; other methods get 405.
    let tool_protocol = Router::new()
        .route("/mcp", post_service(crate::mcp::service(state.clone())))
        .layer(from_fn_with_state(state.clone(), bearer::require_token));

    Router::new()
        .route("/health", get(health::health))
        .merge(tool_protocol)
        .nest("/api/v1", automation)
        .nest("/api", session_routes)
        .fallback(not_found)
        .layer(from_fn_with_state(state.clone(), demo_guard))
        .layer(DefaultBodyLimit::max(state.settings.max_payload_bytes))
        .layer(from_fn(envelope))
        .with_state(state)
}
