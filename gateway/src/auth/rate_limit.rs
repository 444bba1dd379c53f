//! The per-token rate limit of the token routes (spec 4, 4.10, 7, 8):
//! `API_RATE_LIMIT_PER_MINUTE` calls per token per minute, counted in the
//! coordination backend so every gateway process of an installation shares one
//! count per token.
//!
//! Both uses come after the bearer middleware, once the token is known. On
//! `/api/v1` a call costs one ([`per_call`]); on `/mcp` every JSON-RPC message
//! of the body costs one, and the transport ([`crate::mcp::transport`]) asks
//! for a whole batch at once, before any tool runs. A refusal is 429
//! `rate_limited` with `Retry-After` in whole seconds: the spec's envelope on
//! `/api/v1`, a JSON-RPC error object on `/mcp` (whose clients read JSON-RPC,
//! not the envelope).
//!
//! When the backend cannot answer (Redis down) the call is admitted and a
//! warning logged: the limit protects the service, and an API that stops
//! whenever Redis blinks would protect nothing.

use crate::auth::bearer::TokenCaller;
use crate::error::ApiError;
use crate::state::AppState;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use dragoman_model::coordination::{Coordination, RateDecision};
use dragoman_model::vocab::ErrorCode;
use std::sync::Arc;
use std::time::Duration;

/// JSON-RPC error code of a refused `/mcp` call. The spec fixes only the HTTP
/// answer (429 with `Retry-After`); -32003 sits in the range JSON-RPC leaves to
/// servers, next to the licence refusal's -32002, and `data.code` carries the
/// spec's `rate_limited`.
pub const JSONRPC_RATE_LIMITED: i64 = -32003;

/// Where the counts live and the limit.
#[derive(Clone)]
pub struct RateLimit {
    coordination: Arc<dyn Coordination>,
    per_minute: u32,
}

impl RateLimit {
    pub fn new(coordination: Arc<dyn Coordination>, per_minute: u32) -> Self {
        Self {
            coordination,
            per_minute,
        }
    }

    /// The limit of the gateway's settings.
    pub fn of(state: &AppState) -> Self {
        Self::new(
            state.coordination.clone(),
            state.settings.rate_limit_per_minute,
        )
    }

    /// `None` when `cost` calls of the token are admitted (all or none),
    /// else the seconds to announce in `Retry-After`.
    pub async fn check(&self, token_id: &str, cost: u32) -> Option<u64> {
        let key = format!("token:{token_id}");
        match self
            .coordination
            .rate_admit(&key, self.per_minute, cost)
            .await
        {
            Ok(RateDecision::Admitted) => None,
            Ok(RateDecision::Refused { retry_after }) => Some(retry_after_seconds(retry_after)),
            Err(error) => {
                tracing::warn!(%error, token_id, "rate limit unavailable; call admitted");
                None
            }
        }
    }
}

/// `Retry-After` of a wait: whole seconds rounded up, at least 1 (a client
/// told 0 would retry at once and be refused again).
pub fn retry_after_seconds(wait: Duration) -> u64 {
    let whole = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    whole.max(1)
}

fn token_id(request: &Request) -> Option<String> {
    request
        .extensions()
        .get::<TokenCaller>()
        .map(|caller| caller.token.id.clone())
}

/// `/api/v1`: each call costs one.
pub async fn per_call(State(limit): State<RateLimit>, request: Request, next: Next) -> Response {
    // Without a caller the bearer middleware did not run before this one;
    // the handler's own extractor refuses the call.
    if let Some(token_id) = token_id(&request)
        && let Some(seconds) = limit.check(&token_id, 1).await
    {
        let mut refusal = ApiError::new(ErrorCode::RateLimited);
        refusal.retry_after = Some(seconds);
        return refusal.into_response();
    }
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envelope::envelope;
    use async_trait::async_trait;
    use axum::Router;
    use axum::body::Body;
    use axum::http::{StatusCode, header};
    use axum::middleware::{from_fn, from_fn_with_state};
    use axum::routing::get;
    use dragoman_model::coordination::{CoordResult, LocalCoordination, Subscription};
    use dragoman_model::error::ModelError;
    use dragoman_model::vocab::Channel;
    use http_body_util::BodyExt;
    use serde_json::Value;
    use tower::ServiceExt;

    /// Stands in for the bearer middleware: the token id comes in the
    /// `x-token` header; without it no caller is set.
    async fn fake_bearer(mut request: Request, next: Next) -> Response {
        let id = request
            .headers()
            .get("x-token")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        if let Some(id) = id {
            request
                .extensions_mut()
                .insert(crate::auth::bearer::test_caller(&id, &[]));
        }
        next.run(request).await
    }

    /// `/x` behind `per_call`, as the real router stacks it.
    fn app(coordination: Arc<dyn Coordination>, per_minute: u32) -> Router {
        let limit = RateLimit::new(coordination, per_minute);
        Router::new()
            .route("/x", get(|| async { "reached" }))
            .layer(from_fn_with_state(limit, per_call))
            .layer(from_fn(fake_bearer))
            .layer(from_fn(envelope))
    }

    struct Answer {
        status: StatusCode,
        retry_after: Option<String>,
        body: String,
    }

    impl Answer {
        fn json(&self) -> Value {
            serde_json::from_str(&self.body).expect("JSON body")
        }
    }

    async fn send(app: &Router, request: Request) -> Answer {
        let response = app.clone().oneshot(request).await.expect("answers");
        let status = response.status();
        let retry_after = response
            .headers()
            .get(header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let bytes = response
            .into_body()
            .collect()
            .await
            .expect("body")
            .to_bytes();
        Answer {
            status,
            retry_after,
            body: String::from_utf8_lossy(&bytes).into_owned(),
        }
    }

    fn get_x(token: &str) -> Request {
        Request::get("/x")
            .header("x-token", token)
            .header(header::ACCEPT_LANGUAGE, "en")
            .body(Body::empty())
            .expect("request")
    }

    #[tokio::test]
    async fn api_calls_past_the_limit_get_429_with_retry_after() {
        let app = app(Arc::new(LocalCoordination::new()), 3);
        for i in 0..3 {
            let answer = send(&app, get_x("t1")).await;
            assert_eq!(
                (answer.status, answer.body.as_str()),
                (StatusCode::OK, "reached"),
                "call {i}"
            );
        }
        let refused = send(&app, get_x("t1")).await;
        assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
        // 3 a minute: a call every 20 s.
        let seconds: u64 = refused
            .retry_after
            .as_deref()
            .and_then(|s| s.parse().ok())
            .expect("Retry-After in seconds");
        assert!((1..=20).contains(&seconds), "Retry-After {seconds}");
        let body = refused.json();
        assert_eq!(body["detail"]["code"], "rate_limited");
        assert_eq!(body["detail"]["message"], "Too many requests; retry later.");
        // Another token has its own count.
        assert_eq!(send(&app, get_x("t2")).await.status, StatusCode::OK);
        // A call without a caller is not counted here.
        let anonymous = Request::get("/x").body(Body::empty()).expect("request");
        assert_eq!(send(&app, anonymous).await.status, StatusCode::OK);
    }

    /// A backend whose rate limit always fails, as Redis does when it is down.
    struct Unreachable(LocalCoordination);

    #[async_trait]
    impl Coordination for Unreachable {
        fn backend_name(&self) -> &'static str {
            "redis"
        }
        async fn ping(&self) -> CoordResult<()> {
            self.0.ping().await
        }
        async fn lease_acquire(&self, key: &str, holder: &str, ttl: Duration) -> CoordResult<bool> {
            self.0.lease_acquire(key, holder, ttl).await
        }
        async fn lease_release(&self, key: &str, holder: &str) -> CoordResult<bool> {
            self.0.lease_release(key, holder).await
        }
        async fn notify(&self, channel: &Channel) -> CoordResult<()> {
            self.0.notify(channel).await
        }
        fn subscribe(&self, channel: &Channel) -> Subscription {
            self.0.subscribe(channel)
        }
        async fn rate_admit(&self, _: &str, _: u32, _: u32) -> CoordResult<RateDecision> {
            Err(ModelError::Coordination("connection refused".into()))
        }
        async fn reserve(
            &self,
            pool: &str,
            id: &str,
            amount: f64,
            room: f64,
            ttl: Duration,
        ) -> CoordResult<bool> {
            self.0.reserve(pool, id, amount, room, ttl).await
        }
        async fn release(&self, pool: &str, id: &str) -> CoordResult<()> {
            self.0.release(pool, id).await
        }
        async fn reserved(&self, pool: &str) -> CoordResult<f64> {
            self.0.reserved(pool).await
        }
    }

    #[tokio::test]
    async fn an_unreachable_backend_admits() {
        let app = app(Arc::new(Unreachable(LocalCoordination::new())), 1);
        for _ in 0..3 {
            assert_eq!(send(&app, get_x("t1")).await.status, StatusCode::OK);
        }
    }

    #[test]
    fn retry_after_rounds_up_to_whole_seconds() {
        assert_eq!(retry_after_seconds(Duration::ZERO), 1);
        assert_eq!(retry_after_seconds(Duration::from_millis(1)), 1);
        assert_eq!(retry_after_seconds(Duration::from_secs(1)), 1);
        assert_eq!(retry_after_seconds(Duration::from_millis(1001)), 2);
        assert_eq!(retry_after_seconds(Duration::from_millis(59_900)), 60);
    }
}
