//! Several processes of one installation (DESIGN "One trait, local or
//! remote"): a gateway process reaching the four services in another
//! process over real gRPC, on Postgres and Redis; what `/health` says when
//! the services process goes away or the gateway holds the wrong key; and
//! the start-up refusals of a process that runs only some roles.

use dragoman_e2e::postgres::{TestDatabase, cluster_urls, database_url_or_skip};
use dragoman_e2e::server::random_secret_key;
use dragoman_e2e::{
    Answer, Backend, Installation, SCOPES, Server, Session, bearer_get, eventually, send,
};
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
        "dragoman.v1.Scheduler",
        "dragoman.v1.Pipeline",
        "dragoman.v1.Delivery",
        "dragoman.v1.Memory",
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
    let fresh = match database_url_or_skip("cluster::partial_roles_refuse_to_start on Postgres") {
        Some(admin) => Some(TestDatabase::create(&admin).await),
        None => None,
    };
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
