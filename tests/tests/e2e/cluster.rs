//! Several processes of one installation (DESIGN "One trait, local or
//! remote"): a gateway process reaching the four services in another
//! process over real gRPC, on Postgres and Redis; a book larger than gRPC's
//! usual 4 MiB message going through and its result coming back; what
//! `/health` says when the services process goes away or the gateway holds
//! the wrong key; and the start-up refusals of a process that runs only
//! some roles.

use dragoman_e2e::server::random_secret_key;
use dragoman_e2e::translation::{FINAL_STATUSES, chapter_from, tail};
use dragoman_e2e::{
    Answer, Backend, Installation, SCOPES, Server, Session, Simulator, bearer_get, eventually, send,
};
use dragoman_testing::TestDatabase;
use dragoman_testing::env::cluster_urls;
use serde_json::{Value, json};
use std::time::Duration;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::{HealthCheckRequest, health_client::HealthClient};

const SERVICES: [&str; 4] = ["scheduler", "pipeline", "delivery", "memory"];

async fn health(server: &Server) -> Answer {
    send(server.client().get(server.url("/health"))).await
}

/// The standard gRPC health service of the services process.
async fn grpc_health(server: &Server, service: &str) -> Result<i32, tonic::Status> {
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{}", server.grpc_addr()))
        .expect("endpoint")
        .connect_timeout(Duration::from_secs(5))
        .connect()
        .await
        .map_err(|e| tonic::Status::unavailable(e.to_string()))?;
    let answer = HealthClient::new(channel)
        .check(HealthCheckRequest {
            service: service.to_owned(),
        })
        .await?;
    Ok(answer.into_inner().status)
}

fn roles_report(body: &Value) -> Vec<(String, bool, String)> {
    SERVICES
        .iter()
        .map(|role| {
            let entry = &body["roles"][role];
            (
                (*role).to_owned(),
                entry["ok"] == true,
                entry["location"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn gateway_reaches_services_over_grpc() {
    let Some((database, redis)) = cluster_urls("cluster::gateway_reaches_services_over_grpc")
    else {
        return;
    };
    let installation = Installation::cluster(&database, &redis).await;
    let mut services = Server::builder(installation.clone())
        .roles("scheduler,pipeline,delivery,memory")
        .start()
        .await;
    let services_url = format!("http://{}", services.grpc_addr());
    let gateway = Server::builder(installation.clone())
        .roles("gateway")
        .env("DRAGOMAN_SERVICES_URL", &services_url)
        .start()
        .await;

    // The services process answers the standard gRPC health check.
    for service in [
        "",
        "dragoman.internal.v1.Scheduler",
        "dragoman.internal.v1.Pipeline",
        "dragoman.internal.v1.Delivery",
        "dragoman.internal.v1.Memory",
    ] {
        let status = grpc_health(&services, service)
            .await
            .unwrap_or_else(|e| panic!("gRPC health of `{service}`: {e}"));
        assert_eq!(
            status,
            ServingStatus::Serving as i32,
            "gRPC health of `{service}`"
        );
    }

    // The gateway reports the four roles as remote and working.
    let answer = health(&gateway).await;
    let body = answer.expect(200);
    assert_eq!(body["status"], "ok", "{body}");
    for (role, ok, location) in roles_report(&body) {
        assert!(
            ok && location == "remote",
            "{role}: {}",
            body["roles"][&role]
        );
    }
    assert_eq!(body["roles"]["gateway"]["location"], "local", "{body}");
    assert_eq!(body["process_roles"], json!(["gateway"]), "{body}");
    assert_eq!(body["database"]["backend"], "postgres", "{body}");
    assert_eq!(body["coordination"]["backend"], "redis", "{body}");

    // The whole flow through the gateway.
    let admin = installation.create_user("cluster-admin", true).await;
    let user = installation.create_user("cluster-user", false).await;
    installation
        .cli_ok(&[
            "provider",
            "add",
            "--name",
            "From the CLI",
            "--kind",
            "anthropic",
            "--model",
            "m-1",
            "--base-url",
            "http://upstream.example/v1",
            "--api-key-env",
            "E2E_CLUSTER_KEY",
        ])
        .await;
    let admin_session = Session::login(&gateway, &admin).await;
    let user_session = Session::login(&gateway, &user).await;
    let token = user_session.token("cluster token", &SCOPES).await;
    let series = bearer_get(&gateway, "/api/v1/series", &token.token)
        .await
        .expect(200);
    assert_eq!(series, json!([]));
    bearer_get(
        &gateway,
        &format!("/api/v1/series/{}", uuid::Uuid::new_v4()),
        &token.token,
    )
    .await
    .expect_error(404, "series_not_found", "unknown series through gRPC");
    let created = admin_session
        .post(
            "/api/providers",
            &json!({"name": "Through the gateway", "kind": "openai", "model": "m-2",
                    "base_url": "http://other.example/v1", "api_key_env": "E2E_OTHER"}),
        )
        .await
        .expect(201);
    admin_session
        .post(
            "/api/providers",
            &json!({"name": "Through the gateway", "kind": "openai", "model": "m-2",
                    "base_url": "http://other.example/v1", "api_key_env": "E2E_OTHER"}),
        )
        .await
        .expect_error(409, "provider_exists", "duplicate provider through gRPC");
    user_session.get("/api/providers").await.expect_error(
        403,
        "admin_required",
        "user on admin providers through gRPC",
    );
    let answer = bearer_get(&gateway, "/api/v1/providers", &token.token).await;
    let providers = answer.expect(200);
    let names: Vec<&str> = providers
        .as_array()
        .expect("array")
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert_eq!(
        names,
        ["From the CLI", "Through the gateway"],
        "{}",
        answer.text
    );
    assert!(!answer.text.contains("example/v1"), "{}", answer.text);
    assert_eq!(providers[1]["id"], created["id"]);

    // A gateway holding another key is refused by the services.
    let stranger = Server::builder(installation.clone())
        .roles("gateway")
        .env("DRAGOMAN_SERVICES_URL", &services_url)
        .env("DRAGOMAN_SECRET_KEY", &random_secret_key())
        .start()
        .await;
    let answer = health(&stranger).await;
    let body = answer.json();
    assert_eq!(answer.status, 503, "wrong key: {body}");
    assert_eq!(body["status"], "degraded", "{body}");
    for (role, ok, location) in roles_report(&body) {
        assert!(
            !ok && location == "remote",
            "wrong key, {role}: {}",
            body["roles"][&role]
        );
    }
    let answer = bearer_get(&stranger, "/api/v1/series", &token.token).await;
    assert!(
        answer.status.is_server_error()
            && (answer
                .check_error(answer.status.as_u16(), "server_error")
                .is_ok()
                || answer
                    .check_error(answer.status.as_u16(), "service_unavailable")
                    .is_ok()),
        "a refused internal call must be a server-side error envelope: {} {}",
        answer.status,
        answer.text
    );
    // The right gateway is not affected.
    bearer_get(&gateway, "/api/v1/series", &token.token)
        .await
        .expect(200);

    // The services process stops: the gateway says so.
    let (status, _) = services.terminate(Duration::from_secs(10)).await;
    assert!(
        status.success(),
        "services exit: {status}\n{}",
        services.stderr()
    );
    let body = eventually(
        Duration::from_secs(20),
        "gateway /health turns 503",
        || async {
            let answer = health(&gateway).await;
            (answer.status == 503).then(|| answer.json())
        },
    )
    .await;
    assert_eq!(body["status"], "degraded", "{body}");
    for (role, ok, location) in roles_report(&body) {
        assert!(
            !ok && location == "remote",
            "services gone, {role}: {}",
            body["roles"][&role]
        );
    }
    assert_eq!(body["database"]["ok"], true, "{body}");
    let answer = bearer_get(&gateway, "/api/v1/series", &token.token).await;
    assert!(
        answer.status.is_server_error() && answer.json()["detail"]["code"].is_string(),
        "series without the scheduler: {} {}",
        answer.status,
        answer.text
    );
    // Identity stays with the gateway.
    user_session.get("/api/tokens").await.expect(200);
}

/// Paragraphs of about 1,700 characters, every one distinct.
fn long_paragraphs(chapter: u32, count: u32) -> Vec<String> {
    (1..=count)
        .map(|paragraph| {
            (1..=16)
                .map(|sentence| {
                    format!(
                        "Chapter {chapter}, paragraph {paragraph}, sentence {sentence}: the \
                         lighthouse keeper counted the ships that passed in the night."
                    )
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

#[tokio::test]
async fn a_book_over_four_mib_goes_through_the_gateway_and_comes_back() {
    let Some((database, redis)) =
        cluster_urls("cluster::a_book_over_four_mib_goes_through_the_gateway_and_comes_back")
    else {
        return;
    };
    const MIB: usize = 1024 * 1024;
    const CHAPTERS: u32 = 72;
    const PARAGRAPHS: u32 = 50;
    let installation = Installation::cluster(&database, &redis).await;
    let (simulator, services) = tokio::join!(
        Simulator::start(&[]),
        Server::builder(installation.clone())
            .roles("scheduler,pipeline,delivery,memory")
            // Few large batches: the test is about sizes, not calls.
            .env("DRAGOMAN_BATCH_TOKENS", "3500")
            .start()
    );
    let gateway = Server::builder(installation.clone())
        .roles("gateway")
        .env(
            "DRAGOMAN_SERVICES_URL",
            &format!("http://{}", services.grpc_addr()),
        )
        .start()
        .await;
    let provider_id = installation
        .add_simulator_provider(&simulator.openai_base_url(), &["--capacity", "8"])
        .await;
    let user = installation.create_user("big-book", false).await;
    let token = Session::login(&gateway, &user)
        .await
        .token("big book", &SCOPES)
        .await
        .token;

    let texts: Vec<Vec<String>> = (1..=CHAPTERS)
        .map(|n| long_paragraphs(n, PARAGRAPHS))
        .collect();
    let chapters: Vec<Value> = texts
        .iter()
        .zip(1..)
        .map(|(p, n)| chapter_from(n, p))
        .collect();
    let body = serde_json::to_vec(&json!({
        "series": {"name": "Big book", "create_if_missing": true},
        "volume": {"number": 1},
        "source_language": "en",
        "target_language": "fr",
        "provider_id": provider_id,
        "pipeline": {"threads": 8},
        "chapters": chapters,
    }))
    .expect("payload");
    assert!(
        body.len() > 5 * MIB,
        "the book must be well over 4 MiB: {} bytes",
        body.len()
    );
    let started = std::time::Instant::now();
    let answer = send(
        gateway
            .client()
            .post(gateway.url("/api/v1/translation-requests"))
            .bearer_auth(&token)
            .header("content-type", "application/json")
            .body(body),
    )
    .await;
    assert_eq!(
        answer.status.as_u16(),
        202,
        "submitting a {CHAPTERS}-chapter book: {}\ngateway stderr (end):\n{}",
        tail(&answer.text, 2000),
        tail(&gateway.stderr(), 4000)
    );
    let id = answer.json()["request_id"]
        .as_str()
        .expect("request_id")
        .to_owned();
    eprintln!("big book submitted in {:?}", started.elapsed());

    let status_path = format!("/api/v1/translation-requests/{id}");
    // A debug build translates and scores a book of this size in about
    // five minutes on a two-core machine; this test is about the path a
    // large book takes, its speed is the benchmarks' concern.
    let doc = eventually(Duration::from_secs(900), "the big book ends", || async {
        let answer = bearer_get(&gateway, &format!("{status_path}?wait=20"), &token).await;
        let doc = answer.expect(200);
        doc["status"]
            .as_str()
            .is_some_and(|s| FINAL_STATUSES.contains(&s))
            .then_some(doc)
    })
    .await;
    eprintln!("big book ended in {:?}", started.elapsed());
    assert_eq!(
        doc["status"],
        "completed",
        "{doc}\nservices stderr (end):\n{}",
        tail(&services.stderr(), 4000)
    );

    let answer = bearer_get(
        &gateway,
        &format!("{status_path}/result?format=json"),
        &token,
    )
    .await;
    let result = answer.expect(200);
    assert!(
        answer.text.len() > 4 * MIB,
        "the result crosses the limit too: {} bytes",
        answer.text.len()
    );
    assert_eq!(answer.header("x-service-complete"), Some("true"));
    assert_eq!(result["complete"], true);
    assert_eq!(result["incomplete_chapters"], json!([]));
    crate::requests::check_json_result(&result);
    let translated = result["chapters"].as_array().expect("chapters");
    assert_eq!(translated.len(), texts.len());
    for (chapter, (source, n)) in translated.iter().zip(texts.iter().zip(1..)) {
        assert_eq!(chapter["external_id"], format!("ch-{n}"));
        let paragraphs: Vec<&str> = chapter["translation"]
            .as_str()
            .expect("translation")
            .split("\n\n")
            .collect();
        assert_eq!(paragraphs.len(), source.len(), "chapter {n}");
        for (translation, original) in paragraphs.iter().zip(source) {
            assert!(
                translation.starts_with("[fr] ") && translation.len() > original.len(),
                "chapter {n}: {}",
                tail(translation, 200)
            );
        }
    }
    eprintln!("big book fetched in {:?}", started.elapsed());

    // An EPUB crosses too: the gateway streams it into the shared blob store,
    // the scheduler reads it there, and the export stage runs in the
    // delivery role of the other process.
    let Some(epub) = dragoman_e2e::books::corpus_file("valid-epub3-wasteland-endnotes.epub") else {
        return;
    };
    let answer = send(
        gateway
            .client()
            .post(gateway.url(&format!(
                "/api/v1/translation-requests?target_language=fr&provider_id={provider_id}&filename=waste.epub"
            )))
            .bearer_auth(&token)
            .header("content-type", "application/epub+zip")
            .body(epub),
    )
    .await;
    let id = answer.expect(202)["request_id"]
        .as_str()
        .expect("request_id")
        .to_owned();
    let status_path = format!("/api/v1/translation-requests/{id}");
    let doc = eventually(Duration::from_secs(120), "the EPUB ends", || async {
        let doc = bearer_get(&gateway, &format!("{status_path}?wait=20"), &token)
            .await
            .expect(200);
        doc["status"]
            .as_str()
            .is_some_and(|s| FINAL_STATUSES.contains(&s))
            .then_some(doc)
    })
    .await;
    assert_eq!(doc["status"], "completed", "{doc}");
    assert_eq!(doc["result"]["format"], "epub");
    assert!(doc["report"]["delivery"]["validation"].is_object(), "{doc}");
    let download = gateway
        .client()
        .get(gateway.url(&format!("{status_path}/result")))
        .bearer_auth(&token)
        .send()
        .await
        .expect("result");
    assert_eq!(download.status().as_u16(), 200);
    assert!(download.bytes().await.expect("body").starts_with(b"PK"));
}

/// Runs `serve` expecting a refusal that names `needle` on stderr.
async fn expect_refusal(builder: dragoman_e2e::server::ServerBuilder, needle: &str, what: &str) {
    let output = builder.start_expecting_refusal().await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        !output.status.success(),
        "{what}: started anyway\n{stdout}\n{stderr}"
    );
    assert!(
        stderr.contains(needle),
        "{what}: stderr does not mention {needle}:\n{stderr}"
    );
    assert!(
        !stdout.contains("listening"),
        "{what}: listened before refusing:\n{stdout}"
    );
}

#[tokio::test]
async fn partial_roles_refuse_to_start() {
    let sqlite = Installation::new(Backend::Sqlite).await;
    expect_refusal(
        Server::builder(sqlite.clone()).roles("gateway"),
        "PostgreSQL",
        "gateway alone on SQLite",
    )
    .await;
    expect_refusal(
        Server::builder(sqlite.clone()).roles("scheduler,pipeline,delivery,memory"),
        "PostgreSQL",
        "services alone on SQLite",
    )
    .await;

    // A real (fresh) Postgres when there is one: the refusal must come
    // before anything is done to it.
    let fresh = TestDatabase::fresh(
        "cluster::partial_roles_refuse_to_start on Postgres",
        "dragoman_e2e",
    )
    .await;
    let postgres_url = fresh
        .as_ref()
        .map(|db| db.url().to_owned())
        .unwrap_or_else(|| "postgres://e2e@127.0.0.1:9/not_there".into());
    expect_refusal(
        Server::builder(sqlite.clone())
            .roles("gateway")
            .env("DRAGOMAN_DATABASE_URL", &postgres_url),
        "DRAGOMAN_REDIS_URL",
        "gateway on Postgres without Redis",
    )
    .await;
    expect_refusal(
        Server::builder(sqlite.clone())
            .roles("scheduler")
            .env("DRAGOMAN_DATABASE_URL", &postgres_url)
            .env("DRAGOMAN_REDIS_URL", "redis://127.0.0.1:9"),
        "DRAGOMAN_SECRET_KEY",
        "a subset without a shared key",
    )
    .await;
    expect_refusal(
        Server::builder(sqlite.clone())
            .roles("gateway")
            .env("DRAGOMAN_DATABASE_URL", &postgres_url)
            .env("DRAGOMAN_REDIS_URL", "redis://127.0.0.1:9")
            .env("DRAGOMAN_SECRET_KEY", &random_secret_key()),
        "DRAGOMAN_SERVICES_URL",
        "a gateway that does not know where the services are",
    )
    .await;
    if let Some(db) = &fresh {
        let sql = {
            let mut options = sea_orm::ConnectOptions::new(db.url().to_owned());
            options.sqlx_logging(false).max_connections(1);
            sea_orm::Database::connect(options).await.expect("connect")
        };
        let tables = sea_orm::ConnectionTrait::query_all_raw(
            &sql,
            sea_orm::Statement::from_string(
                sea_orm::DbBackend::Postgres,
                "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'",
            ),
        )
        .await
        .expect("list tables");
        assert!(tables.is_empty(), "a refused process migrated the database");
        let _ = sql.close().await;
    }
}
