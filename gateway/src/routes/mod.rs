//! The HTTP surface: `/health`, the automation API under `/api/v1` (tokens
//! only), and the session routes under `/api` (cookies only). The API
//! routes answer at once while the database is away ([`crate::outage`]);
//! `/health` says so.
pub mod auth;
pub mod batch;
pub mod book_budget;
pub mod demo;
pub mod edition;
pub mod glossaries;
pub mod health;
pub mod jobs;
pub mod library;
pub mod licence;
pub mod mail_settings;
pub mod memory_settings;
pub mod narrative;
pub mod onboarding;
pub mod passages;
pub mod password_reset;
pub mod preferences;
pub mod providers;
pub mod queue_settings;
pub mod reader_notes;
pub mod requests;
pub mod second_factor;
pub mod series;
pub mod settings;
pub mod tokens;
pub mod users;

use crate::auth::{bearer, rate_limit, session};
use crate::envelope::envelope;
use crate::error::ApiError;
use crate::mcp::transport;
use crate::openapi;
use crate::outage;
use crate::state::AppState;
use axum::Router;
use axum::extract::{DefaultBodyLimit, Request};
use axum::http::Method;
use axum::middleware::{Next, from_fn, from_fn_with_state};
use axum::response::Response;
use axum::routing::{get, post, put};
use dragoman_model::vocab::ErrorCode;
use std::sync::Arc;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

/// Where the session routes are mounted.
const SESSION_ROOT: &str = "/api";
const SIGN_IN: &str = "/auth/login";
const SIGN_OUT: &str = "/auth/logout";

async fn not_found() -> ApiError {
    ApiError::new(ErrorCode::NotFound)
}

/// Demo sign-in, which demo mode exists for.
const DEMO_SIGN_IN: &str = "/auth/demo";
/// The tool protocol, closed in demo mode whatever the method.
const TOOL_PROTOCOL: &str = "/mcp";

/// Demo mode (spec 4.9): reads, sign-in (with a password or to the demo
/// account) and sign-out, on the session routes and the console. The spec also lets through the grouped EPUB and
/// text exports; this service has none (results are read with `GET`).
fn demo_allows(method: &Method, path: &str) -> bool {
    if path == TOOL_PROTOCOL {
        return false;
    }
    let read = matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS);
    let sign = path
        .strip_prefix(SESSION_ROOT)
        .is_some_and(|route| route == SIGN_IN || route == SIGN_OUT || route == DEMO_SIGN_IN);
    // The console's own sign-in and sign-out pages.
    let console_sign = path == "/login" || path == "/logout";
    read || sign || console_sign
}

/// 403 `demo_read_only` for every other call when `demo_mode` is on.
async fn demo_guard(demo_mode: bool, request: Request, next: Next) -> Result<Response, ApiError> {
    if demo_mode && !demo_allows(request.method(), request.uri().path()) {
        return Err(ApiError::new(ErrorCode::DemoReadOnly));
    }
    Ok(next.run(request).await)
}

/// The automation API's routes under `/api/v1`, each registered from its
/// `#[utoipa::path]` annotation: the router and the OpenAPI document list
/// the same operations by construction. `/api/v1/openapi.json` is added by
/// [`router`] outside the token's layers.
pub fn automation_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(requests::submit))
        .routes(routes!(requests::status))
        .routes(routes!(requests::result))
        .routes(routes!(requests::action))
        .routes(routes!(providers::list))
        .routes(routes!(series::list))
        .routes(routes!(series::detail))
        .routes(routes!(series::action))
        .routes(routes!(glossaries::followed, glossaries::attach))
        .routes(routes!(narrative::series_context))
        .routes(routes!(glossaries::list, glossaries::create))
        .routes(routes!(glossaries::detail))
        .routes(routes!(glossaries::export))
        .routes(routes!(glossaries::import))
        .routes(routes!(narrative::books))
        .routes(routes!(narrative::book_context))
        .routes(routes!(narrative::book_revision))
}

/// The external memory's session routes (spec 4.9): the administrator's
/// under `/settings/memory`, the owner's under a series or a volume. Demo
/// mode refuses their writes like every other (see [`demo_guard`]).
fn memory_routes() -> Router<AppState> {
    use memory_settings as m;
    Router::new()
        .route("/settings/memory/status", get(m::get_status))
        .route("/settings/memory/outbox/retry", post(m::retry_outbox))
        .route(
            "/settings/memory/cleanup",
            get(m::get_cleanup)
                .put(m::put_cleanup)
                .delete(m::delete_cleanup),
        )
        .route("/settings/memory/cleanups", get(m::list_cleanups))
        .route(
            "/settings/memory/cleanups/{cleanup_id}/retry",
            post(m::retry_cleanup),
        )
        .route(
            "/settings/memory/cleanups/{cleanup_id}/retire",
            post(m::retire_cleanup),
        )
        .route("/settings/memory/orphans/scan", post(m::scan_orphans))
        .route("/settings/memory/orphans/clean", post(m::clean_orphans))
        .route(
            "/settings/memory/orphans/schedule",
            get(m::get_orphan_schedule).put(m::put_orphan_schedule),
        )
        .route("/series/{series_id}/memory", get(m::series_memory))
        .route(
            "/series/{series_id}/memory/{action}",
            post(m::series_action),
        )
        .route(
            "/projects/{project_id}/memory/status",
            get(m::project_status),
        )
        .route(
            "/projects/{project_id}/memory/{action}",
            post(m::project_action),
        )
}

pub fn router(state: AppState) -> Router {
    let demo_mode = state.settings.demo_mode;
    // Layers run outside in: the bearer middleware first, so the limit knows
    // the token.
    let limit = rate_limit::RateLimit::of(&state);
    let (automation, _) = automation_routes().split_for_parts();
    let automation = automation
        .fallback(not_found)
        .layer(from_fn_with_state(limit.clone(), rate_limit::per_call))
        .layer(from_fn_with_state(state.clone(), bearer::require_token))
        .layer(from_fn_with_state(
            state.clone(),
            crate::auth::licence::require_automation,
        ))
        // Added after the layers, so it needs no token (nor licence).
        .route(openapi::DOCUMENT_PATH, get(openapi::serve))
        // Outermost, so the token's and the licence's reads are bounded too.
        .layer(from_fn_with_state(state.clone(), outage::answer_within));

    let session_routes = Router::new()
        .route(SIGN_IN, post(auth::login))
        .route(SIGN_OUT, post(auth::logout))
        .route("/auth/session", get(auth::current))
        .route("/tokens", get(tokens::list).post(tokens::create))
        .route("/tokens/{id}", axum::routing::delete(tokens::revoke))
        .route("/tokens/{id}/queue", put(tokens::update_queue))
        .route("/tokens/{id}/budget", put(tokens::update_budget))
        .route(
            "/providers",
            get(providers::admin_list).post(providers::admin_add),
        )
        .route("/providers/default", put(providers::admin_set_default))
        .route(
            "/providers/{id}",
            axum::routing::patch(providers::admin_update),
        )
        .route(
            "/projects/{project_id}/budget",
            get(book_budget::get_budget).put(book_budget::put_budget),
        )
        .route(
            "/settings/exports",
            get(edition::get_exports).put(edition::put_exports),
        )
        .route(
            "/projects/{project_id}/edition",
            axum::routing::patch(edition::patch_edition),
        )
        .route(
            "/settings/licence",
            get(licence::get_licence)
                .put(licence::put_licence)
                .delete(licence::delete_licence),
        )
        .route(
            "/settings/webhooks",
            get(settings::get_webhooks)
                .put(settings::put_webhooks)
                .delete(settings::delete_webhooks),
        )
        .route(
            "/settings/queue",
            get(queue_settings::get_queue)
                .put(queue_settings::put_queue)
                .delete(queue_settings::delete_queue),
        )
        .merge(memory_routes())
        .merge(users::routes())
        .merge(second_factor::routes())
        .merge(mail_settings::routes())
        .merge(password_reset::routes())
        .merge(preferences::routes())
        .merge(onboarding::routes())
        .merge(demo::routes())
        .merge(passages::routes())
        .merge(batch::routes())
        .merge(reader_notes::routes())
        .merge(jobs::routes())
        .merge(library::routes())
        .fallback(not_found)
        .layer(from_fn_with_state(state.clone(), session::same_origin))
        .layer(from_fn_with_state(state.clone(), outage::answer_within));

    // The tool protocol, outside in: POST only (405 otherwise, whoever
    // asks), the host and other sites' pages refused, the licence, the
    // bearer token, then the transport (body, batch, rate limit) before rmcp.
    // No blanket bound for a database outage: the licence and the token
    // are read bounded, and each tool call is bounded around its dispatch,
    // so a call answers `service_unavailable` inside the protocol.
    let endpoint = Arc::new(transport::Endpoint::new(
        crate::mcp::service(state.clone()),
        limit,
    ));
    let tool_protocol = Router::new()
        .route(
            "/mcp",
            post(move |request: Request| {
                let endpoint = endpoint.clone();
                async move { endpoint.handle(request).await }
            }),
        )
        .layer(from_fn_with_state(state.clone(), bearer::require_token))
        .layer(from_fn_with_state(
            state.clone(),
            crate::auth::licence::require_tool_protocol,
        ))
        .layer(from_fn_with_state(state.clone(), session::same_origin))
        .layer(from_fn_with_state(state.clone(), transport::allowed_host))
        .layer(from_fn(transport::post_only));

    Router::new()
        .route("/health", get(health::health))
        .merge(crate::console::routes(&state))
        .merge(tool_protocol)
        .nest(openapi::API_ROOT, automation)
        .nest(SESSION_ROOT, session_routes)
        .fallback(not_found)
        .layer(from_fn(move |request: Request, next: Next| {
            demo_guard(demo_mode, request, next)
        }))
        .layer(DefaultBodyLimit::max(state.settings.max_payload_bytes))
        .layer(from_fn(envelope))
        .with_state(state)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::http::StatusCode;
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    /// Routes like the real ones that all answer 200 when they are reached.
    fn app(demo_mode: bool) -> Router {
        let reached = || async { "reached" };
        let session_routes = Router::new()
            .route(SIGN_IN, post(reached))
            .route(SIGN_OUT, post(reached))
            .route(DEMO_SIGN_IN, post(reached))
            .route("/tokens", get(reached).post(reached));
        Router::new()
            .route(TOOL_PROTOCOL, get(reached).post(reached))
            .route("/api/v1/translation-requests", post(reached))
            .nest(SESSION_ROOT, session_routes)
            .layer(from_fn(move |request: Request, next: Next| {
                demo_guard(demo_mode, request, next)
            }))
            .layer(from_fn(envelope))
    }

    async fn send(demo_mode: bool, method: Method, path: &str) -> (StatusCode, String) {
        let request = Request::builder()
            .method(method)
            .uri(path)
            .body(Body::empty())
            .expect("request");
        let response = app(demo_mode).oneshot(request).await.expect("answers");
        let status = response.status();
        let bytes = response
            .into_body()
            .collect()
            .await
            .expect("body")
            .to_bytes();
        (status, String::from_utf8_lossy(&bytes).into_owned())
    }

    fn assert_read_only((status, body): (StatusCode, String), what: &str) {
        assert_eq!(status, StatusCode::FORBIDDEN, "{what}: {body}");
        let envelope: serde_json::Value = serde_json::from_str(&body).expect("envelope");
        assert_eq!(envelope["detail"]["code"], "demo_read_only", "{what}");
    }

    #[tokio::test]
    async fn demo_mode_allows_reads_and_signing_in_and_out_only() {
        for path in ["/api/auth/login", "/api/auth/logout", "/api/auth/demo"] {
            let (status, body) = send(true, Method::POST, path).await;
            assert_eq!(
                (status, body.as_str()),
                (StatusCode::OK, "reached"),
                "{path}"
            );
        }
        let (status, _) = send(true, Method::GET, "/api/tokens").await;
        assert_eq!(status, StatusCode::OK);
        assert_read_only(
            send(true, Method::POST, "/api/tokens").await,
            "session write",
        );
        assert_read_only(
            send(true, Method::POST, "/api/v1/translation-requests").await,
            "automation write",
        );
        // A sign-in path elsewhere than under the session root is not one.
        assert!(!demo_allows(&Method::POST, "/auth/login"));
        assert!(!demo_allows(&Method::POST, "/auth/demo"));
    }

    #[tokio::test]
    async fn demo_mode_closes_the_tool_protocol_for_every_method() {
        for method in [Method::POST, Method::GET] {
            assert_read_only(send(true, method.clone(), "/mcp").await, method.as_str());
        }
    }

    #[tokio::test]
    async fn without_demo_mode_writes_pass() {
        for (method, path) in [
            (Method::POST, "/api/auth/demo"),
            (Method::POST, "/api/tokens"),
            (Method::POST, "/mcp"),
        ] {
            let (status, body) = send(false, method, path).await;
            assert_eq!(
                (status, body.as_str()),
                (StatusCode::OK, "reached"),
                "{path}"
            );
        }
    }
}
