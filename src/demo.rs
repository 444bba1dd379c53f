//! `dragoman demo`: every role with the provider simulator, a demo account
//! and token, a sample book translated end to end through the real HTTP
//! API, results written to ./demo-out, then the service keeps serving until
//! Ctrl-C so the printed curl lines can be tried. Everything it stores goes
//! to a data folder of its own ([`crate::demo_data`]), never into the
//! installation the configuration names.

use crate::config::Config;
use crate::demo_data::{self, DemoData};
use crate::error::Error;
use crate::serve::{self, ServeArgs};
use dragoman_migrations::{Migrator, MigratorTrait};
use dragoman_model::entities::provider;
use dragoman_model::provider_input::NewProvider;
use dragoman_model::vocab::{ErrorCode, ProviderKind, Scope};
use dragoman_simulator::{self as simulator, SimulatorConfig};
use rand::Rng;
use sea_orm::{ActiveModelTrait, ColumnTrait, EntityTrait, QueryFilter, Set};
use serde::Serialize;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const OUT_DIR: &str = "demo-out";
const PROVIDER_NAME: &str = "demo-simulator";

/// A failed call of the demo to its own service, named by its step.
fn fail(step: &'static str) -> impl Fn(reqwest::Error) -> Error {
    move |source| Error::DemoCall { step, source }
}

/// `POST /api/auth/login`.
#[derive(Serialize)]
struct SignIn<'a> {
    password: &'a str,
    username: &'a str,
}

/// `POST /api/tokens`: the demo's token, with what the sample book needs.
#[derive(Serialize)]
struct NewToken {
    expires_in_days: i64,
    name: String,
    scopes: [Scope; 6],
}

/// `POST /api/tokens` answers the token once, in `token`.
#[derive(serde::Deserialize)]
struct CreatedToken {
    #[serde(default)]
    token: String,
}

#[derive(clap::Args, Default)]
pub struct DemoArgs {
    /// Keep the demo's data (its own database, blobs and key) in this folder,
    /// created when missing; a folder holding anything an earlier demo did not
    /// make is refused. Default: a fresh temporary folder, removed when the
    /// demo stops. The configuration's database, blob store, Redis and key are
    /// never used.
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
}

pub async fn run(config: &Config, args: DemoArgs) -> Result<(), Error> {
    // Dropped when the demo returns: a temporary folder goes with it.
    let data = DemoData::open(args.data_dir.as_deref())?;
    println!("{}", data.describe());
    let mut config = demo_data::isolate(config, data.path());
    config.listen = free_address(&config.listen).await?;

    // The simulator, in this process, on a free port.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(Error::Simulator)?;
    let simulator_address = listener.local_addr().map_err(Error::LocalAddress)?;
    let simulator_config = SimulatorConfig {
        latency: Duration::from_millis(40),
        seed: 1,
        rate_429: 0.05,
        retry_after_secs: 1,
        ..SimulatorConfig::default()
    };
    tokio::spawn(simulator::serve(
        listener,
        simulator_config,
        std::future::pending::<()>(),
    ));

    // Database ready, the simulator registered as a provider, a demo account.
    let db = dragoman_model::db::connect(&config.database_url())
        .await
        .map_err(|source| Error::Open {
            what: "database".to_owned(),
            source,
        })?;
    Migrator::up(&db, None).await.map_err(Error::Migrations)?;
    let base_url = format!("http://{simulator_address}/v1");
    let provider_id = match provider::Entity::find()
        .filter(provider::Column::Name.eq(PROVIDER_NAME))
        .one(&db)
        .await
        .map_err(Error::DemoDatabase)?
    {
        Some(existing) => {
            let id = existing.id.clone();
            let mut model: provider::ActiveModel = existing.into();
            model.base_url = Set(base_url);
            model.update(&db).await.map_err(Error::DemoDatabase)?;
            id
        }
        None => dragoman_pipeline::providers::add(
            &db,
            NewProvider {
                name: PROVIDER_NAME.into(),
                kind: ProviderKind::OpenAi,
                model: "simulated-translator".into(),
                base_url,
                api_key_env: String::new(),
                price_input: Some(0.5),
                price_output: Some(1.5),
                price_cached_input: None,
                capacity: Some(4),
                fallback: None,
                batch_discount: None,
            },
        )
        .await
        .map_err(Error::DemoProvider)?
        .provider
        .map(|p| p.id)
        .unwrap_or_default(),
    };
    let password: String = rand::thread_rng()
        .sample_iter(&rand::distributions::Alphanumeric)
        .take(20)
        .map(char::from)
        .collect();
    let licence = config.licence_settings();
    match dragoman_gateway::identity::create_user(&db, &licence, "demo", &password, false).await {
        Ok(_) => {}
        Err(e) if e.code == ErrorCode::UsernameTaken => {
            dragoman_gateway::identity::set_password(&db, "demo", &password)
                .await
                .map_err(|e| Error::DemoPassword(e.code))?;
        }
        Err(e) => return Err(Error::DemoAccount(e.code)),
    }
    db.close().await.map_err(Error::DemoDatabase)?;

    // Every role, gRPC off (see `isolate`): this demo talks HTTP to itself.
    let listen = config.listen.clone();
    let mut serve_config = config.clone();
    let server =
        tokio::spawn(async move { serve::run(&mut serve_config, ServeArgs::default()).await });
    let base = format!("http://{listen}");
    let http = reqwest::Client::builder()
        .cookie_store(true)
        .no_proxy()
        .build()
        .map_err(fail("HTTP client"))?;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if server.is_finished() {
            return match server.await {
                Ok(Err(e)) => Err(e),
                _ => Err(Error::DemoServiceStopped),
            };
        }
        if http
            .get(format!("{base}/health"))
            .send()
            .await
            .is_ok_and(|r| r.status().is_success())
        {
            break;
        }
        if Instant::now() > deadline {
            return Err(Error::DemoServiceSilent(base));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    let summary = drive(&http, &base, &password, &provider_id).await?;
    println!("{summary}");
    println!("The service keeps running on {base}; press Ctrl-C to stop.");
    let served = match server.await {
        Ok(result) => result,
        Err(e) => Err(Error::DemoServer(e)),
    };
    drop(data);
    served
}

/// `listen` with a concrete port: the demo calls the address it serves on,
/// so a port of 0 (any free one) is chosen here, before the service binds.
async fn free_address(listen: &str) -> Result<String, Error> {
    let probe = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|source| Error::Listen {
            what: "",
            address: listen.to_owned(),
            source,
        })?;
    let address = probe.local_addr().map_err(Error::LocalAddress)?;
    Ok(address.to_string())
}

/// Signs in, creates a token, submits the sample book, follows it and
/// writes the results; returns what to print.
async fn drive(
    http: &reqwest::Client,
    base: &str,
    password: &str,
    provider_id: &str,
) -> Result<String, Error> {
    http.post(format!("{base}/api/auth/login"))
        .json(&SignIn {
            password,
            username: "demo",
        })
        .send()
        .await
        .and_then(reqwest::Response::error_for_status)
        .map_err(fail("sign-in"))?;
    let token: CreatedToken = http
        .post(format!("{base}/api/tokens"))
        .json(&NewToken {
            expires_in_days: 30,
            name: format!("demo {}", dragoman_model::clock::now()),
            scopes: [
                Scope::SeriesRead,
                Scope::ContentWrite,
                Scope::PipelineStart,
                Scope::JobsRead,
                Scope::JobsControl,
                Scope::ResultsRead,
            ],
        })
        .send()
        .await
        .and_then(reqwest::Response::error_for_status)
        .map_err(fail("token"))?
        .json()
        .await
        .map_err(fail("token"))?;
    let token = token.token;
    let bearer = format!("Bearer {token}");
    let submitted = http
        .post(format!("{base}/api/v1/translation-requests"))
        .header("authorization", &bearer)
        .header(
            "idempotency-key",
            format!("demo-{}", dragoman_model::clock::now()),
        )
        .json(&crate::demo_book::request(provider_id))
        .send()
        .await
        .map_err(fail("submit"))?;
    let code = submitted.status();
    let summary: Value = submitted.json().await.map_err(fail("submit"))?;
    if !code.is_success() {
        return Err(Error::DemoRefused {
            status: code,
            answer: summary,
        });
    }
    let request_id = summary["request_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    if code == reqwest::StatusCode::OK {
        println!(
            "request {request_id}: this book was sent before with the same external_id and content, \
             so the service answered with the original request (an idempotent replay)"
        );
    } else {
        println!("submitted request {request_id} ({})", summary["status"]);
    }
    let status_url = format!("{base}/api/v1/translation-requests/{request_id}");
    let document = loop {
        let doc: Value = http
            .get(format!("{status_url}?wait=2"))
            .header("authorization", &bearer)
            .send()
            .await
            .map_err(fail("status"))?
            .json()
            .await
            .map_err(fail("status"))?;
        println!(
            "  {:<24} {:>3}%  ({} of {} passages)",
            doc["status"].as_str().unwrap_or(""),
            doc["progress"]["percent"],
            doc["progress"]["translated"],
            doc["progress"]["segments"]
        );
        if doc["finished_at"].is_number() {
            break doc;
        }
    };
    let written = |path: &Path| {
        let path = path.to_path_buf();
        move |source| Error::DemoWrite { path, source }
    };
    std::fs::create_dir_all(OUT_DIR).map_err(written(Path::new(OUT_DIR)))?;
    let request_file = Path::new(OUT_DIR).join("request.json");
    let sample = serde_json::to_vec_pretty(&crate::demo_book::request(provider_id))
        .map_err(Error::DemoJson)?;
    std::fs::write(&request_file, sample).map_err(written(&request_file))?;
    for (format, file) in [
        ("json", "result.json"),
        ("txt", "result.txt"),
        ("epub-bilingual", "bilingual.epub"),
        ("txt-zip", "chapters.zip"),
    ] {
        let body = http
            .get(format!("{status_url}/result?format={format}"))
            .header("authorization", &bearer)
            .send()
            .await
            .and_then(reqwest::Response::error_for_status)
            .map_err(fail("result"))?
            .bytes()
            .await
            .map_err(fail("result"))?;
        let path = Path::new(OUT_DIR).join(file);
        std::fs::write(&path, &body).map_err(written(&path))?;
    }
    let report = &document["report"];
    Ok(format!(
        "\nDone: {status}. Passages {translated}/{total} translated, {residuals} residual(s); \
         {calls} provider calls, {prompt} prompt + {completion} completion tokens, cost {cost}.\n\
         Results written to ./{OUT_DIR}/ (result.json, result.txt, bilingual.epub, chapters.zip; request.json is what was sent).\n\n\
         Try it by hand (token shown once, keep it):\n\
         export TOKEN={token}\n\
         curl -H \"Authorization: Bearer $TOKEN\" {status_url}\n\
         curl -H \"Authorization: Bearer $TOKEN\" '{status_url}/result?format=txt'\n\
         curl -H \"Authorization: Bearer $TOKEN\" -H 'Content-Type: application/json' \\\n  \
         -d @{OUT_DIR}/request.json {base}/api/v1/translation-requests\n\
         (demo account: demo / {password})",
        status = document["status"].as_str().unwrap_or(""),
        translated = report["passages"]["translated"],
        total = report["passages"]["total"],
        residuals = report["residual_total"],
        calls = report["usage"]["calls"],
        prompt = report["usage"]["prompt_tokens"],
        completion = report["usage"]["completion_tokens"],
        cost = report["usage"]["cost"],
    ))
}
