//! HTTP metrics of the gateway: every request counted by method, route
//! template and status, and timed to its answer's head, in one middleware
//! that runs per route (so the route template is known), `/mcp` included.
//! See `dragoman_model::telemetry::metrics` for the names.

use axum::Router;
use axum::extract::{MatchedPath, Request};
use axum::middleware::{Next, from_fn};
use axum::response::Response;
use dragoman_model::telemetry::metrics;
use std::time::Instant;

/// The gateway's router with its requests measured and traced: the
/// outermost layer of every route, fallback included.
pub fn observe(router: Router) -> Router {
    router
        .layer(from_fn(crate::http_trace::trace))
        .layer(from_fn(record))
}

async fn record(request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = request.method().clone();
    let route = request.extensions().get::<MatchedPath>().cloned();
    let response = next.run(request).await;
    metrics::http_request(
        &method,
        route.as_ref().map(MatchedPath::as_str),
        response.status().as_u16(),
        started.elapsed(),
    );
    response
}
