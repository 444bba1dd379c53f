//! Traces (docs/operations.md "Traces"): a gateway process and a services
//! process export their spans over OTLP/HTTP to a receiver written here
//! (axum, decoding `ExportTraceServiceRequest`). A call through the gateway
//! gives spans from both processes in one trace: the caller's own when it
//! sends a `traceparent`, a new one otherwise; each process names itself
//! `dragoman-<roles>`. The batch delay is longer than the test, so what
//! arrives was sent by the flush at shutdown.

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{StatusCode, header::CONTENT_TYPE};
use axum::response::IntoResponse;
use axum::routing::post;
use dragoman_e2e::{Installation, SCOPES, Server, Session, bearer_get};
use dragoman_testing::env::cluster_urls;
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use prost::Message;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpListener;

/// The trace and parent span a client sends in its `traceparent`.
const CLIENT_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";

const GATEWAY: &str = "dragoman-gateway";
const SERVICES: &str = "dragoman-scheduler-pipeline-delivery-memory";

/// One span as exported, ids in hex.
#[derive(Debug, Clone)]
struct Exported {
    service: String,
    trace: String,
    id: String,
    parent: String,
    name: String,
    kind: i32,
}

type Store = Arc<Mutex<Vec<Exported>>>;

fn service_of(request: &opentelemetry_proto::tonic::trace::v1::ResourceSpans) -> String {
    request
        .resource
        .iter()
        .flat_map(|r| &r.attributes)
        .find(|a| a.key == "service.name")
        .and_then(|a| a.value.as_ref()?.value.as_ref())
        .map(|v| match v {
            any_value::Value::StringValue(s) => s.clone(),
            other => format!("{other:?}"),
        })
        .unwrap_or_default()
}

async fn export(State(store): State<Store>, body: Bytes) -> impl IntoResponse {
    let Ok(request) = ExportTraceServiceRequest::decode(body) else {
        return (StatusCode::BAD_REQUEST, Vec::new()).into_response();
    };
    let mut spans = Vec::new();
    for resource in &request.resource_spans {
        let service = service_of(resource);
        for scope in &resource.scope_spans {
            for span in &scope.spans {
                spans.push(Exported {
                    service: service.clone(),
                    trace: hex::encode(&span.trace_id),
                    id: hex::encode(&span.span_id),
                    parent: hex::encode(&span.parent_span_id),
                    name: span.name.clone(),
                    kind: span.kind,
                });
            }
        }
    }
    if let Ok(mut store) = store.lock() {
        store.extend(spans);
    }
    (
        [(CONTENT_TYPE, "application/x-protobuf")],
        ExportTraceServiceResponse::default().encode_to_vec(),
    )
        .into_response()
}

/// An OTLP/HTTP trace receiver on `127.0.0.1:0` (stopped on drop).
struct Receiver {
    address: SocketAddr,
    store: Store,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Receiver {
    async fn start() -> Receiver {
        let store = Store::default();
        let app = Router::new()
            .route("/v1/traces", post(export))
            .with_state(store.clone());
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let address = listener.local_addr().expect("address");
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Receiver {
            address,
            store,
            task,
        }
    }

    fn spans(&self) -> Vec<Exported> {
        self.store.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

fn find<'a>(spans: &'a [Exported], service: &str, name: &str, trace: Option<&str>) -> &'a Exported {
    spans
        .iter()
        .find(|s| s.service == service && s.name == name && trace.is_none_or(|t| s.trace == t))
        .unwrap_or_else(|| {
            let seen: Vec<String> = spans
                .iter()
                .map(|s| format!("{} {} {} <- {}", s.service, s.name, s.trace, s.parent))
                .collect();
            panic!("no span `{name}` of {service} (trace {trace:?}); exported:\n{seen:#?}")
        })
}

#[tokio::test]
async fn a_call_through_two_processes_is_one_trace() {
    let Some((database, redis)) = cluster_urls("traces::a_call_through_two_processes_is_one_trace")
    else {
        return;
    };
    let receiver = Receiver::start().await;
    let endpoint = format!("http://{}", receiver.address);
    let installation = Installation::cluster(&database, &redis).await;
    let traced = |builder: dragoman_e2e::server::ServerBuilder| {
        builder
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
            // Longer than the test: only the flush at shutdown sends.
            .env("OTEL_BSP_SCHEDULE_DELAY", "600000")
    };
    let mut services =
        traced(Server::builder(installation.clone()).roles("scheduler,pipeline,delivery,memory"))
            .start()
            .await;
    let mut gateway = traced(Server::builder(installation.clone()).roles("gateway").env(
        "DRAGOMAN_SERVICES_URL",
        &format!("http://{}", services.grpc_addr()),
    ))
    .start()
    .await;
    let user = installation.create_user("traced", false).await;
    let token = Session::login(&gateway, &user)
        .await
        .token("traces", &SCOPES)
        .await
        .token;

    // A client that traces its own calls sends its context along.
    let answer = gateway
        .client()
        .get(gateway.url("/api/v1/series"))
        .bearer_auth(&token)
        .header("traceparent", format!("00-{CLIENT_TRACE}-{CLIENT_SPAN}-01"))
        .send()
        .await
        .expect("GET /api/v1/series");
    assert_eq!(answer.status(), 200);
    // One that does not.
    bearer_get(&gateway, "/api/v1/providers", &token)
        .await
        .expect(200);
    assert!(
        receiver.spans().is_empty(),
        "nothing is sent before the batch delay or the shutdown"
    );

    for server in [&mut gateway, &mut services] {
        let (status, _) = server.terminate(Duration::from_secs(30)).await;
        assert!(status.success(), "exit {status}\n{}", server.stderr());
    }
    let spans = receiver.spans();

    // The client's trace: gateway request → gateway call → services.
    let request = find(&spans, GATEWAY, "GET /api/v1/series", Some(CLIENT_TRACE));
    assert_eq!(request.parent, CLIENT_SPAN, "{request:?}");
    assert_eq!(request.kind, SpanKind::Server as i32);
    let call = find(
        &spans,
        GATEWAY,
        "dragoman.internal.v1.Scheduler/ListSeries",
        Some(CLIENT_TRACE),
    );
    assert_eq!(call.parent, request.id, "{call:?}");
    assert_eq!(call.kind, SpanKind::Client as i32);
    let served = find(
        &spans,
        SERVICES,
        "dragoman.internal.v1.Scheduler/ListSeries",
        Some(CLIENT_TRACE),
    );
    assert_eq!(served.parent, call.id, "{served:?}");
    assert_eq!(served.kind, SpanKind::Server as i32);

    // Without a context, the gateway starts a trace the services join.
    let request = find(&spans, GATEWAY, "GET /api/v1/providers", None);
    assert!(request.parent.is_empty(), "a root span: {request:?}");
    assert_ne!(request.trace, CLIENT_TRACE);
    assert_eq!(request.trace.len(), 32);
    let served = find(
        &spans,
        SERVICES,
        "dragoman.internal.v1.Pipeline/ListProviders",
        Some(&request.trace),
    );
    assert!(!served.parent.is_empty(), "{served:?}");
}
