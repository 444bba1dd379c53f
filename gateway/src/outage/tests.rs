//! The API during a database outage, seen by its callers: a gateway whose
//! database and services accept connections and never answer (what a
//! failover looks like from the pool), with its watch marked away.

use super::*;
use crate::envelope::envelope;
use crate::state::{Gateway, GatewaySettings, ReadCaches, Service};
use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{from_fn, from_fn_with_state};
use axum::routing::get;
use dragoman_model::coordination::{Coordination, LocalCoordination};
use dragoman_model::db_watch::DatabaseWatch;
use dragoman_model::server_key::ServerKey;
use dragoman_proto::principal::InternalCredential;
use dragoman_proto::remote::{
    CallLimits, RemoteDelivery, RemoteMemory, RemotePipeline, RemoteScheduler, channel,
};
use http_body_util::BodyExt;
use sea_orm::{ConnectOptions, Database};
use serde_json::{Value, json};
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::time::Instant;
use tower::ServiceExt;

/// Well under the two seconds every call must be answered within during
/// an outage, with room for a slow test machine.
const ANSWERED_WITHIN: Duration = Duration::from_millis(1500);

/// Accepts connections and never writes a byte: every query and every
/// service call waits as on a database that fails over.
async fn silent_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address");
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    address.to_string()
}

/// A gateway state whose database and four services are `silent`.
async fn silent_gateway() -> (AppState, tokio::sync::watch::Sender<bool>) {
    let silent = silent_server().await;
    let mut options = ConnectOptions::new(format!("postgres://dragoman@{silent}/dragoman"));
    options
        .connect_lazy(true)
        .sqlx_logging(false)
        .connect_timeout(Duration::from_secs(30))
        .acquire_timeout(Duration::from_secs(30));
    let db = Database::connect(options).await.expect("lazy pool");
    let limits = CallLimits {
        max_message_bytes: 1024 * 1024,
        timeout: Duration::from_secs(60),
    };
    let remote = || channel(&format!("http://{silent}"), limits).expect("channel");
    let coordination: Arc<dyn Coordination> = Arc::new(LocalCoordination::new());
    let (stop, stopping) = tokio::sync::watch::channel(false);
    let gateway = Gateway {
        db,
        database: DatabaseWatch::unprobed(Duration::from_secs(300)),
        caches: ReadCaches::new(&coordination),
        coordination,
        scheduler: Service {
            handle: Arc::new(RemoteScheduler::new(remote(), limits)),
            local: false,
        },
        pipeline: Service {
            handle: Arc::new(RemotePipeline::new(remote(), limits)),
            local: false,
        },
        delivery: Service {
            handle: Arc::new(RemoteDelivery::new(remote(), limits)),
            local: false,
        },
        memory: Service {
            handle: Arc::new(RemoteMemory::new(remote(), limits)),
            local: false,
        },
        credential: InternalCredential::new("test-credential"),
        server_key: ServerKey::generate(),
        settings: GatewaySettings {
            max_payload_bytes: 1024 * 1024,
            demo_mode: false,
            public_url: None,
            session_days: 30,
            max_wait_seconds: 60,
            rate_limit_per_minute: 600,
            roles: vec!["gateway".into()],
            licence: Default::default(),
        },
        blobs: Arc::new(object_store::memory::InMemory::new()),
        stopping,
    };
    (Arc::new(gateway), stop)
}

fn mark_away(state: &AppState) {
    let away = sea_orm::DbErr::ConnectionAcquire(sea_orm::ConnAcquireErr::Timeout);
    assert!(state.database.report(&away));
}

struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: Value,
    took: Duration,
}

async fn send(app: &Router, request: axum::extract::Request) -> Answer {
    let started = Instant::now();
    let response = app.clone().oneshot(request).await.expect("answers");
    let took = started.elapsed();
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    Answer {
        status,
        headers,
        body,
        took,
    }
}

fn assert_unavailable(answer: &Answer) {
    assert_eq!(
        answer.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        answer.body
    );
    assert_eq!(
        answer
            .headers
            .get(header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok()),
        Some("5")
    );
    assert_eq!(answer.body["detail"]["code"], "service_unavailable");
    assert!(
        answer.took < ANSWERED_WITHIN,
        "answered after {:?}",
        answer.took
    );
}

fn bearer(path: &str) -> axum::extract::Request {
    let token = crate::auth::token_format::generate().token;
    axum::extract::Request::get(path)
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .header(header::ACCEPT_LANGUAGE, "en")
        .body(Body::empty())
        .expect("request")
}

#[tokio::test]
async fn a_call_held_up_answers_503_and_a_quick_one_still_answers() {
    let (state, _stop) = silent_gateway().await;
    let app = Router::new()
        .route("/stuck", get(std::future::pending::<&'static str>))
        .route("/quick", get(|| async { "held in a cache" }))
        .layer(from_fn_with_state(state.clone(), answer_within))
        .layer(from_fn(envelope));
    mark_away(&state);
    let stuck = axum::extract::Request::get("/stuck")
        .body(Body::empty())
        .expect("request");
    let answer = send(&app, stuck).await;
    assert_unavailable(&answer);
    assert_eq!(
        answer
            .headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok()),
        Some("application/json")
    );
    let quick = axum::extract::Request::get("/quick")
        .body(Body::empty())
        .expect("request");
    let answer = send(&app, quick).await;
    assert_eq!(answer.status, StatusCode::OK);
}

#[tokio::test]
async fn api_calls_answer_503_at_once_when_the_database_is_away() {
    let (state, _stop) = silent_gateway().await;
    let app = crate::router(state.clone());
    mark_away(&state);
    for path in ["/api/v1/translation-requests/r1", "/api/v1/series"] {
        assert_unavailable(&send(&app, bearer(path)).await);
    }
    // A submission is refused, never taken without being stored.
    let submission = axum::extract::Request::post("/api/v1/translation-requests")
        .header(
            header::AUTHORIZATION,
            format!("Bearer {}", crate::auth::token_format::generate().token),
        )
        .header(header::CONTENT_TYPE, "application/json")
        .header("Idempotency-Key", "outage-1")
        .body(Body::from(json!({"chapters": []}).to_string()))
        .expect("request");
    assert_unavailable(&send(&app, submission).await);
    // The session routes too.
    let session = axum::extract::Request::get("/api/tokens")
        .header(
            header::COOKIE,
            format!("{}=abc", crate::auth::session::COOKIE),
        )
        .body(Body::empty())
        .expect("request");
    assert_unavailable(&send(&app, session).await);
    // What needs no database still answers.
    let document = axum::extract::Request::get("/api/v1/openapi.json")
        .body(Body::empty())
        .expect("request");
    let answer = send(&app, document).await;
    assert_eq!(answer.status, StatusCode::OK);
}

#[tokio::test]
async fn a_call_waiting_when_the_database_goes_away_answers_503() {
    let (state, _stop) = silent_gateway().await;
    let app = crate::router(state.clone());
    let watch = state.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        mark_away(&watch);
    });
    assert_unavailable(&send(&app, bearer("/api/v1/translation-requests/r1")).await);
}

#[tokio::test]
async fn health_answers_at_once_and_says_the_database_is_down() {
    let (state, _stop) = silent_gateway().await;
    let app = crate::router(state.clone());
    mark_away(&state);
    let request = axum::extract::Request::get("/health")
        .body(Body::empty())
        .expect("request");
    let answer = send(&app, request).await;
    assert!(
        answer.took < ANSWERED_WITHIN,
        "answered after {:?}",
        answer.took
    );
    assert_eq!(answer.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(answer.body["status"], "degraded");
    assert_eq!(answer.body["database"]["ok"], false);
    assert_eq!(answer.body["database"]["backend"], "postgres");
    assert!(
        answer.body["database"]["down_since"].is_i64(),
        "{}",
        answer.body
    );
    assert_eq!(answer.body["coordination"]["ok"], true);
    assert_eq!(answer.body["roles"]["scheduler"]["ok"], false);
    assert_eq!(answer.body["roles"]["gateway"]["ok"], true);
}

#[tokio::test]
async fn the_tool_protocol_refuses_its_request_while_the_token_cannot_be_read() {
    let (state, _stop) = silent_gateway().await;
    let app = crate::router(state.clone());
    mark_away(&state);
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "list_books", "arguments": {}}});
    let request = axum::extract::Request::post("/mcp")
        .header(header::HOST, "127.0.0.1:8080")
        .header(
            header::AUTHORIZATION,
            format!("Bearer {}", crate::auth::token_format::generate().token),
        )
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json, text/event-stream")
        .body(Body::from(call.to_string()))
        .expect("request");
    assert_unavailable(&send(&app, request).await);
}

#[tokio::test]
async fn a_tool_call_answers_is_error_with_service_unavailable() {
    use crate::auth::rate_limit::RateLimit;
    use crate::mcp::transport::Endpoint;
    use dragoman_model::vocab::Scope;

    let (state, _stop) = silent_gateway().await;
    let limit = RateLimit::new(state.coordination.clone(), 600);
    let endpoint = Arc::new(Endpoint::new(crate::mcp::service(state.clone()), limit));
    // The token as the bearer middleware leaves it once read.
    let app = Router::new().route(
        "/mcp",
        axum::routing::post(move |mut request: axum::extract::Request| {
            let endpoint = endpoint.clone();
            async move {
                request
                    .extensions_mut()
                    .insert(crate::auth::bearer::test_caller(
                        "t1",
                        &[Scope::LibraryRead],
                    ));
                endpoint.handle(request).await
            }
        }),
    );
    mark_away(&state);
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "list_books", "arguments": {}}});
    let request = axum::extract::Request::post("/mcp")
        .header(header::HOST, "127.0.0.1:8080")
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json, text/event-stream")
        .body(Body::from(call.to_string()))
        .expect("request");
    let answer = send(&app, request).await;
    assert!(
        answer.took < ANSWERED_WITHIN,
        "answered after {:?}",
        answer.took
    );
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    assert_eq!(answer.body["id"], 7);
    let result = &answer.body["result"];
    assert_eq!(result["isError"], true, "{}", answer.body);
    let text = result["content"][0]["text"].as_str().expect("text");
    let detail: Value = serde_json::from_str(text).expect("detail");
    assert_eq!(detail["code"], "service_unavailable");
    assert_eq!(detail["retry_after"], 5);
}
