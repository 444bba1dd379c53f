//! `GET /metrics` (docs/operations.md "Metrics"), scraped as Prometheus
//! would while translations run and after they end, with the provider
//! simulator and a webhook receiver: requests counted by route template
//! and status (ids never appear), the queue gauges and waiting times,
//! provider calls equal to what the simulator received with the tokens and
//! cost of the reports, passages by final status, the final webhook's
//! outcome. In one process the gateway's listener answers; in a gateway
//! and a services process each answers on a listener of its own
//! (`DRAGOMAN_METRICS_LISTEN`) with what it does, and the gateway's public
//! listener no longer does; `off` turns the endpoint off.

use dragoman_e2e::scrape::Scrape;
use dragoman_e2e::translation::{FINAL_STATUSES, chapter};
use dragoman_e2e::{
    Api, Backend, Installation, Receiver, SCOPES, Server, Session, Simulator, eventually, send,
};
use dragoman_testing::env::cluster_urls;
use serde_json::{Value, json};
use std::time::Duration;

const HTTP_REQUESTS: &str = "dragoman_http_requests_total";
const SUBMIT_ROUTE: &str = "/api/v1/translation-requests";
const STATUS_ROUTE: &str = "/api/v1/translation-requests/{request_id}";
const PROVIDER_CALLS: &str = "dragoman_provider_calls_total";
const PROVIDER_TOKENS: &str = "dragoman_provider_tokens_total";
const PROVIDER_ERRORS: &str = "dragoman_provider_errors_total";
const PROVIDER_COST_SUM: &str = "dragoman_provider_call_cost_sum";
const PROVIDER_DURATION_COUNT: &str = "dragoman_provider_call_duration_seconds_count";
const QUEUE_JOBS: &str = "dragoman_queue_jobs";
const JOBS_RUNNING: &str = "dragoman_jobs_running";
const QUEUE_WAIT_COUNT: &str = "dragoman_queue_wait_seconds_count";
const WEBHOOKS: &str = "dragoman_webhook_deliveries_total";
const PASSAGES: &str = "dragoman_passages_total";
const FINISHED: &str = "translation_request.finished";
const NORMAL: [(&str, &str); 1] = [("priority", "normal")];
const WEBHOOK_SECRET: &str = "a-signing-secret-of-forty-characters-long";

/// Every role in one process, one worker, a slow simulator (so a second
/// request waits while the first runs) and webhooks to 127.0.0.1 allowed.
async fn single_process() -> Api {
    Api::builder(Backend::Sqlite)
        .env("DRAGOMAN_WORKERS", "1")
        .env("DRAGOMAN_BATCH_TOKENS", "1")
        .env("API_WEBHOOK_HOSTS", "127.0.0.1")
        .env("API_WEBHOOK_PRIVATE_NETWORKS", "127.0.0.0/8")
        .env("API_WEBHOOK_SECRET", WEBHOOK_SECRET)
        .simulator(&["--latency-ms", "400"])
        .start()
        .await
}

fn chapters(tag: &str) -> Vec<Value> {
    (1..=3).map(|n| chapter(tag, n, 3)).collect()
}

fn id_of(summary: &Value) -> String {
    summary["request_id"]
        .as_str()
        .unwrap_or_else(|| panic!("no request id: {summary}"))
        .to_owned()
}

/// The sum of `field` (a JSON pointer) over the reports of `docs`.
fn report_sum(docs: &[Value], pointer: &str) -> f64 {
    docs.iter()
        .map(|doc| {
            doc["report"]
                .pointer(pointer)
                .and_then(Value::as_f64)
                .unwrap_or_else(|| panic!("report without {pointer}: {doc}"))
        })
        .sum()
}

/// Provider metrics agree with the simulator and the requests' reports.
async fn check_provider_metrics(scrape: &Scrape, simulator: &Simulator, docs: &[Value]) {
    let received = simulator.requests().await as f64;
    assert!(received > 0.0, "the simulator received nothing");
    let sim = [("provider", "sim")];
    assert_eq!(
        scrape.value(PROVIDER_CALLS, &sim),
        Some(received),
        "provider calls counted = calls the simulator received\n{}",
        scrape.text
    );
    assert_eq!(scrape.sum(PROVIDER_CALLS, &[]), received, "{}", scrape.text);
    assert_eq!(
        scrape.value(PROVIDER_DURATION_COUNT, &sim),
        Some(received),
        "every call timed"
    );
    assert_eq!(
        scrape.sum(PROVIDER_ERRORS, &[]),
        0.0,
        "the simulator made no fault\n{}",
        scrape.text
    );
    for (kind, pointer) in [
        ("prompt", "/usage/prompt_tokens"),
        ("completion", "/usage/completion_tokens"),
    ] {
        let tokens = scrape
            .value(PROVIDER_TOKENS, &[("provider", "sim"), ("type", kind)])
            .unwrap_or_else(|| panic!("no {kind} tokens\n{}", scrape.text));
        assert!(tokens > 0.0, "{kind} tokens");
        assert_eq!(tokens, report_sum(docs, pointer), "{kind} tokens = reports");
    }
    let cost = scrape
        .value(PROVIDER_COST_SUM, &sim)
        .unwrap_or_else(|| panic!("no cost\n{}", scrape.text));
    let reported = report_sum(docs, "/usage/cost");
    assert!(
        reported > 0.0 && (cost - reported).abs() < 1e-9,
        "cost {cost} = reports' {reported}"
    );
}

/// Passages counted by final status = the reports' `passages.by_status`.
fn check_passages(scrape: &Scrape, docs: &[Value]) {
    let mut total = 0.0;
    for status in ["ok", "check", "source_retained", "error"] {
        let counted = scrape.sum(PASSAGES, &[("status", status)]);
        assert_eq!(
            counted,
            report_sum(docs, &format!("/passages/by_status/{status}")),
            "passages {status}\n{}",
            scrape.text
        );
        total += counted;
    }
    assert_eq!(total, report_sum(docs, "/passages/total"), "every passage");
}

#[tokio::test]
async fn one_process_counts_what_a_user_checks() {
    let api = single_process().await;
    let server = &api.server;
    let receiver = Receiver::start().await;
    let scrape = || async { Scrape::get(server.client(), &server.url("/metrics")).await };

    let before = scrape().await;
    assert_eq!(
        before.value(
            "dragoman_build_info",
            &[
                ("version", env!("CARGO_PKG_VERSION")),
                ("roles", "gateway,scheduler,pipeline,delivery,memory"),
            ]
        ),
        Some(1.0),
        "{}",
        before.text
    );

    let mut first = api.payload("Metered", chapters("First"));
    first["callback_url"] = json!(receiver.url("/hook"));
    let first = id_of(&api.submit_ok(&first).await);
    let second = id_of(
        &api.submit_ok(&api.payload("Waiting", chapters("Second")))
            .await,
    );

    // While the first runs on the only worker, the second waits.
    let during = eventually(
        Duration::from_secs(60),
        "one job running and one waiting",
        || async {
            let now = scrape().await;
            (now.value(JOBS_RUNNING, &NORMAL) == Some(1.0)
                && now.value(QUEUE_JOBS, &NORMAL) == Some(1.0))
            .then_some(now)
        },
    )
    .await;
    for priority in ["low", "high"] {
        assert_eq!(
            during.value(QUEUE_JOBS, &[("priority", priority)]),
            Some(0.0)
        );
        assert_eq!(
            during.value(JOBS_RUNNING, &[("priority", priority)]),
            Some(0.0)
        );
    }
    assert_eq!(
        during.value(
            HTTP_REQUESTS,
            &[
                ("method", "POST"),
                ("route", SUBMIT_ROUTE),
                ("status", "202")
            ]
        ),
        Some(2.0),
        "{}",
        during.text
    );

    let docs = vec![
        api.wait_final(&first, Duration::from_secs(120)).await,
        api.wait_final(&second, Duration::from_secs(120)).await,
    ];
    for doc in &docs {
        assert_eq!(doc["status"], "completed", "{doc}");
    }
    receiver
        .wait_until(Duration::from_secs(30), "the final webhook", |calls| {
            !calls.is_empty()
        })
        .await;
    // What a client does besides: an unknown path, a tool-protocol call.
    let missing = send(server.client().get(server.url("/no/such/page"))).await;
    assert_eq!(missing.status, 404);
    let tools = dragoman_e2e::mcp::post(
        server,
        &api.token,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
    )
    .await;

    let after = eventually(
        Duration::from_secs(30),
        "the final webhook counted delivered",
        || async {
            let now = scrape().await;
            (now.value(WEBHOOKS, &[("event", FINISHED), ("outcome", "delivered")]) == Some(1.0))
                .then_some(now)
        },
    )
    .await;
    assert_eq!(after.sum(WEBHOOKS, &[("outcome", "failed")]), 0.0);
    // Nothing waits or runs any more, and both jobs waited once.
    for priority in ["low", "normal", "high"] {
        let at = [("priority", priority)];
        assert_eq!(after.value(QUEUE_JOBS, &at), Some(0.0), "{}", after.text);
        assert_eq!(after.value(JOBS_RUNNING, &at), Some(0.0), "{}", after.text);
    }
    assert_eq!(after.value(QUEUE_WAIT_COUNT, &NORMAL), Some(2.0));
    check_provider_metrics(&after, &api.simulator, &docs).await;
    check_passages(&after, &docs);

    // Requests by route template and status, the ids never.
    let polled = after.sum(
        HTTP_REQUESTS,
        &[
            ("method", "GET"),
            ("route", STATUS_ROUTE),
            ("status", "200"),
        ],
    );
    assert!(polled >= 2.0, "status polls counted: {}", after.text);
    assert_eq!(
        after.value(
            HTTP_REQUESTS,
            &[("method", "GET"), ("route", "unmatched"), ("status", "404")]
        ),
        Some(1.0),
        "{}",
        after.text
    );
    assert_eq!(
        after.value(
            HTTP_REQUESTS,
            &[
                ("method", "POST"),
                ("route", "/mcp"),
                ("status", &tools.status.as_u16().to_string())
            ]
        ),
        Some(1.0),
        "{}",
        after.text
    );
    assert!(
        after.has("dragoman_http_request_duration_seconds_bucket"),
        "{}",
        after.text
    );
    for id in [&first, &second] {
        assert!(!after.text.contains(id.as_str()), "an id in the metrics");
    }
    assert!(!after.text.contains("/no/such/page"));
    // A scrape is not a route of the API: it is not counted.
    assert_eq!(after.sum(HTTP_REQUESTS, &[("route", "/metrics")]), 0.0);
}

#[tokio::test]
async fn off_means_no_endpoint() {
    let server = Server::builder(Installation::new(Backend::Sqlite).await)
        .env("DRAGOMAN_METRICS_LISTEN", "off")
        .start()
        .await;
    let answer = send(server.client().get(server.url("/metrics"))).await;
    assert_eq!(answer.status, 404, "{}", answer.text);
}

#[tokio::test]
async fn a_gateway_and_a_services_process_each_expose_their_own() {
    let Some((database, redis)) =
        cluster_urls("metrics::a_gateway_and_a_services_process_each_expose_their_own")
    else {
        return;
    };
    let installation = Installation::cluster(&database, &redis).await;
    let webhooks = [
        ("API_WEBHOOK_HOSTS", "127.0.0.1"),
        ("API_WEBHOOK_PRIVATE_NETWORKS", "127.0.0.0/8"),
        ("API_WEBHOOK_SECRET", WEBHOOK_SECRET),
        ("DRAGOMAN_METRICS_LISTEN", "127.0.0.1:0"),
    ];
    let mut services = Server::builder(installation.clone())
        .roles("scheduler,pipeline,delivery,memory")
        .env("DRAGOMAN_BATCH_TOKENS", "1");
    let mut gateway = Server::builder(installation.clone()).roles("gateway");
    for (name, value) in webhooks {
        services = services.env(name, value);
        gateway = gateway.env(name, value);
    }
    let (simulator, services) =
        tokio::join!(Simulator::start(&["--latency-ms", "100"]), services.start());
    let gateway = gateway
        .env(
            "DRAGOMAN_SERVICES_URL",
            &format!("http://{}", services.grpc_addr()),
        )
        .start()
        .await;
    let provider_id = installation
        .add_simulator_provider(
            &simulator.openai_base_url(),
            &["--price-input", "1", "--price-output", "2"],
        )
        .await;
    let user = installation.create_user("metered", false).await;
    let token = Session::login(&gateway, &user)
        .await
        .token("metrics", &SCOPES)
        .await
        .token;
    let receiver = Receiver::start().await;

    // The public listener no longer answers /metrics; the metrics one does.
    let public = send(gateway.client().get(gateway.url("/metrics"))).await;
    assert_eq!(public.status, 404, "{}", public.text);
    let gateway_metrics = || async { Scrape::get(gateway.client(), &gateway.metrics_url()).await };
    let services_metrics =
        || async { Scrape::get(services.client(), &services.metrics_url()).await };

    let body = json!({
        "series": {"name": "Split", "create_if_missing": true},
        "volume": {"number": 1},
        "source_language": "en",
        "target_language": "fr",
        "provider_id": provider_id,
        "callback_url": receiver.url("/hook"),
        "chapters": chapters("Split"),
    });
    let answer = send(
        gateway
            .client()
            .post(gateway.url(SUBMIT_ROUTE))
            .bearer_auth(&token)
            .json(&body),
    )
    .await;
    let id = id_of(&answer.expect(202));
    let status_url = gateway.url(&format!("{SUBMIT_ROUTE}/{id}"));
    let doc = eventually(Duration::from_secs(120), "the request ends", || async {
        let doc = send(gateway.client().get(&status_url).bearer_auth(&token))
            .await
            .expect(200);
        doc["status"]
            .as_str()
            .is_some_and(|s| FINAL_STATUSES.contains(&s))
            .then_some(doc)
    })
    .await;
    assert_eq!(doc["status"], "completed", "{doc}");
    receiver
        .wait_until(Duration::from_secs(30), "the final webhook", |calls| {
            !calls.is_empty()
        })
        .await;

    // The gateway counts its HTTP requests, and does no provider work.
    let at_gateway = gateway_metrics().await;
    assert_eq!(
        at_gateway.value(
            HTTP_REQUESTS,
            &[
                ("method", "POST"),
                ("route", SUBMIT_ROUTE),
                ("status", "202")
            ]
        ),
        Some(1.0),
        "{}",
        at_gateway.text
    );
    assert!(
        at_gateway.sum(
            HTTP_REQUESTS,
            &[
                ("method", "GET"),
                ("route", STATUS_ROUTE),
                ("status", "200")
            ]
        ) >= 1.0
    );
    assert!(!at_gateway.has(PROVIDER_CALLS), "{}", at_gateway.text);
    assert!(!at_gateway.has(QUEUE_JOBS), "{}", at_gateway.text);
    assert_eq!(
        at_gateway.value(
            "dragoman_build_info",
            &[("version", env!("CARGO_PKG_VERSION")), ("roles", "gateway")]
        ),
        Some(1.0)
    );

    // The services process: the queue, the provider calls, the webhook.
    let at_services = eventually(
        Duration::from_secs(30),
        "the final webhook counted delivered",
        || async {
            let now = services_metrics().await;
            (now.value(WEBHOOKS, &[("event", FINISHED), ("outcome", "delivered")]) == Some(1.0))
                .then_some(now)
        },
    )
    .await;
    assert!(!at_services.has(HTTP_REQUESTS), "{}", at_services.text);
    for priority in ["low", "normal", "high"] {
        let at = [("priority", priority)];
        assert_eq!(at_services.value(QUEUE_JOBS, &at), Some(0.0));
        assert_eq!(at_services.value(JOBS_RUNNING, &at), Some(0.0));
    }
    assert_eq!(at_services.value(QUEUE_WAIT_COUNT, &NORMAL), Some(1.0));
    let docs = [doc];
    check_provider_metrics(&at_services, &simulator, &docs).await;
    check_passages(&at_services, &docs);
    assert_eq!(
        at_services.value(
            "dragoman_build_info",
            &[
                ("version", env!("CARGO_PKG_VERSION")),
                ("roles", "scheduler,pipeline,delivery,memory")
            ]
        ),
        Some(1.0)
    );
}
