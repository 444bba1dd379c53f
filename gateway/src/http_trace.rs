//! The span of each HTTP request the gateway serves, named by method and
//! route template and continuing the trace of an incoming `traceparent`
//! header; the internal calls it makes join that trace. Created only while
//! trace export is on.

use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::Response;
use dragoman_model::telemetry::metrics::UNMATCHED_ROUTE;
use dragoman_model::telemetry::trace_context;
use tracing::Instrument;

/// Serves `request` inside its span (see [`crate::metrics::observe`]).
pub async fn trace(request: Request, next: Next) -> Response {
    if !trace_context::enabled() {
        return next.run(request).await;
    }
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|path| path.as_str().to_owned())
        .unwrap_or_else(|| UNMATCHED_ROUTE.to_owned());
    let method = request.method().clone();
    let span = tracing::info_span!(
        "http request",
        otel.name = %format_args!("{method} {route}"),
        otel.kind = "server",
        otel.status_code = tracing::field::Empty,
        http.request.method = %method,
        http.route = %route,
        http.response.status_code = tracing::field::Empty,
    );
    trace_context::continue_from(&span, request.headers());
    let response = next.run(request).instrument(span.clone()).await;
    let status = response.status();
    span.record("http.response.status_code", status.as_u16());
    if status.is_server_error() {
        span.record("otel.status_code", "ERROR");
    }
    response
}
