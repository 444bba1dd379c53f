//! The public gRPC services (`dragoman.api.v1`) driven by a client that
//! nobody here wrote: grpcio (PyPI) with stubs that grpcio-tools generates
//! from the published protos at run time, services learnt by server
//! reflection, refusals read as rich statuses with grpcio-status. The
//! client, `tests/python/grpc_client.py`, maps a REST JSON payload onto
//! `SubmitTranslationRequest` field for field, follows the request with
//! `WatchTranslation`, streams the result, and uploads an EPUB in chunks;
//! this test checks what it reports against the REST surface.
//!
//! The interpreter is the one named in `DRAGOMAN_TEST_PYTHON` (set by
//! `.ci/run`), else `.venv-ci/bin/python` at the repository root. Without
//! an interpreter that imports the grpcio packages, or without the corpus
//! EPUB, the test is skipped, and fails under `CI=true`.

use dragoman_e2e::books::corpus_dir;
use dragoman_e2e::translation::chapter;
use dragoman_e2e::{Api, Backend, Receiver, SCOPES};
use dragoman_testing::python::python_with;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::AsyncWriteExt;

/// The whole script: stub generation, two translations followed to the end
/// (seconds; its summary says how many each step took).
const SCRIPT_TIMEOUT: Duration = Duration::from_secs(300);

/// The public services reflection must list.
const SERVICES: [&str; 5] = [
    "dragoman.api.v1.TranslationsService",
    "dragoman.api.v1.SeriesService",
    "dragoman.api.v1.GlossariesService",
    "dragoman.api.v1.BooksService",
    "dragoman.api.v1.ProvidersService",
];

const EPUB: &str = "valid-epub2-minimal.epub";

fn repository() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The client's tokens, of one account.
struct Tokens {
    /// Every scope, and a webhook signing secret.
    full: String,
    secret: String,
    /// Every scope but `jobs:read`.
    limited: String,
}

impl Tokens {
    async fn make(api: &Api) -> Tokens {
        let session = api.session().await;
        let created = session
            .create_token(&json!({"name": "grpc", "scopes": SCOPES, "webhook_secret": true}))
            .await;
        let secret = created.view["webhook_secret"]
            .as_str()
            .expect("the creation answer shows the webhook secret once")
            .to_owned();
        let without_jobs_read: Vec<&str> = SCOPES
            .iter()
            .copied()
            .filter(|scope| *scope != "jobs:read")
            .collect();
        let limited = session
            .token("no jobs:read", &without_jobs_read)
            .await
            .token;
        Tokens {
            full: created.token,
            secret,
            limited,
        }
    }
}

/// Runs the client against `api` with `input` on its standard input; its
/// summary, or a failure quoting its and the server's output.
async fn run_client(python: &Path, api: &Api, tokens: &Tokens, input: &Value) -> Value {
    let root = repository();
    let mut child = tokio::process::Command::new(python)
        .arg(root.join("tests/python/grpc_client.py"))
        .arg(api.server.host())
        .arg(root.join("proto"))
        .env("DRAGOMAN_GRPC_TOKEN", &tokens.full)
        .env("DRAGOMAN_GRPC_LIMITED_TOKEN", &tokens.limited)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
    let mut stdin = child.stdin.take().expect("stdin");
    stdin
        .write_all(input.to_string().as_bytes())
        .await
        .expect("write the input");
    drop(stdin);
    let output = tokio::time::timeout(SCRIPT_TIMEOUT, child.wait_with_output())
        .await
        .expect("the gRPC client did not finish in time")
        .expect("the gRPC client ran");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the gRPC client failed ({}):\n{stderr}\nstdout:\n{stdout}\nserver stderr:\n{}",
        output.status,
        api.server.stderr()
    );
    serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("the gRPC client's summary is not JSON ({e}): {stdout}"))
}

/// The bytes REST answers for a request's result.
async fn rest_result(api: &Api, request_id: &str, query: &str) -> Vec<u8> {
    let response = api
        .request(
            reqwest::Method::GET,
            &format!("/api/v1/translation-requests/{request_id}/result?{query}"),
        )
        .send()
        .await
        .expect("GET the result");
    assert_eq!(response.status(), 200, "REST result of {request_id}");
    response.bytes().await.expect("result bytes").to_vec()
}

fn sha256(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

fn text<'a>(value: &'a Value, what: &str) -> &'a str {
    value
        .as_str()
        .unwrap_or_else(|| panic!("{what} is no string: {value}"))
}

#[tokio::test]
async fn a_python_grpc_client_translates_through_the_public_services() {
    let Some(python) = python_with(
        "grpcio with grpcio-tools, grpcio-status, grpcio-reflection and grpcio-health-checking",
        "import grpc, grpc_tools.protoc, grpc_status.rpc_status, \
         grpc_reflection.v1alpha.proto_reflection_descriptor_database, grpc_health.v1.health_pb2",
    )
    .await
    else {
        return;
    };
    let Some(corpus) = corpus_dir() else {
        return;
    };
    let receiver = Receiver::start().await;
    let api = Api::builder(Backend::Sqlite)
        .env("API_WEBHOOK_HOSTS", "127.0.0.1")
        .env("API_WEBHOOK_PRIVATE_NETWORKS", "127.0.0.0/8")
        .start()
        .await;
    let tokens = Tokens::make(&api).await;

    // A REST payload as an integrator has it, with every enum kind.
    let mut payload = api.payload(
        "Over gRPC",
        vec![chapter("grpc", 1, 3), chapter("grpc", 2, 2)],
    );
    payload["external_id"] = json!("grpc-saga-1");
    payload["author"] = json!("A. Keeper");
    payload["pipeline"] = json!({
        "start": true,
        "quality": "high",
        "context_backend": "internal",
        "final_review": true,
        "priority": "normal",
    });
    payload["output"] = json!({"format": "json"});
    payload["callback_url"] = json!(receiver.url("/hooks"));
    payload["callback_events"] = json!(["chapters.translated"]);
    let upload = json!({
        "series": "Over gRPC books",
        "volume": "1",
        "target_language": "fr",
        "provider_id": api.provider_id,
        "quality": "normal",
        "start": true,
        "output_format": "epub",
    });
    let input = json!({
        "payload": payload,
        "idempotency_key": "grpc-saga-key",
        "epub": corpus.join(EPUB),
        "upload": upload,
    });
    let summary = run_client(&python, &api, &tokens, &input).await;
    eprintln!("the gRPC client's summary: {summary}");

    // (a) Learnt by reflection (v1alpha and v1), internal services hidden;
    // healthy.
    for listing in [
        &summary["reflection"]["services"],
        &summary["reflection"]["v1"],
    ] {
        let names: Vec<&str> = listing
            .as_array()
            .unwrap_or_else(|| panic!("no service list: {summary}"))
            .iter()
            .filter_map(Value::as_str)
            .collect();
        for service in SERVICES {
            assert!(names.contains(&service), "{service} is listed: {names:?}");
        }
        assert!(
            !names
                .iter()
                .any(|name| name.starts_with("dragoman.internal")),
            "no internal service is listed: {names:?}"
        );
    }
    for service in SERVICES {
        assert_eq!(
            summary["health"][service], "SERVING",
            "{}",
            summary["health"]
        );
    }

    // (b) Refusals as rich statuses.
    let refusals = &summary["refusals"];
    assert_eq!(refusals["missing_token"]["code"], "UNAUTHENTICATED");
    assert_eq!(refusals["missing_token"]["reason"], "missing_token");
    for refusal in ["insufficient_scope", "watch_insufficient_scope"] {
        assert_eq!(refusals[refusal]["code"], "PERMISSION_DENIED", "{refusals}");
        assert_eq!(refusals[refusal]["reason"], "insufficient_scope");
        assert_eq!(refusals[refusal]["domain"], "dragoman");
        assert_eq!(refusals[refusal]["metadata"]["scope"], "jobs:read");
    }
    let invalid = &refusals["invalid_payload"];
    assert_eq!(invalid["code"], "INVALID_ARGUMENT", "{invalid}");
    assert_eq!(
        invalid["violations"][0]["field"], "chapters[0].content",
        "the field at fault, named as in the message: {invalid}"
    );

    // (c)–(e) The payload arrived field for field, the watch ended
    // completed, and the streamed result is REST's, byte for byte.
    let submit = &summary["submit"];
    let renamed = submit["renamed"].as_array().expect("renamed fields");
    assert!(
        renamed.is_empty(),
        "every REST field has its name in the message: {renamed:?}"
    );
    assert_eq!(submit["replayed"], true);
    assert_eq!(submit["input"], "INPUT_KIND_JSON");
    let statuses = submit["statuses"].as_array().expect("statuses");
    assert_eq!(
        statuses.last(),
        Some(&json!("REQUEST_STATUS_COMPLETED")),
        "{submit}"
    );
    let request_id = text(&submit["request_id"], "request id");
    let status = api.status(request_id).await;
    assert_eq!(status["status"], "completed", "{status}");
    assert_eq!(status["external_id"], "grpc-saga-1", "{status}");
    assert_eq!(status["options"]["output_format"], "json", "{status}");
    let result = &submit["result"];
    assert_eq!(result["media_type"], "application/json", "{result}");
    let rest = rest_result(&api, request_id, "").await;
    assert_eq!(result["sha256"], json!(sha256(&rest)), "REST's bytes");
    assert_eq!(result["size"], json!(rest.len()));
    let document: Value = serde_json::from_slice(&rest).expect("a JSON result");
    assert_eq!(document["strategy"]["quality"], "high", "{document}");
    assert_eq!(document["strategy"]["context_backend"], "internal");
    assert_eq!(document["chapters"].as_array().map(Vec::len), Some(2));
    // `chapters.translated` reached the request: its webhook is sent.
    let calls = receiver
        .wait_until(
            Duration::from_secs(30),
            "a chapters.translated webhook",
            |calls| {
                calls.iter().any(|call| {
                    call.header("x-service-event") == Some("chapters.translated")
                        && call.json().to_string().contains(request_id)
                })
            },
        )
        .await;
    for call in &calls {
        call.verify(&tokens.secret)
            .unwrap_or_else(|e| panic!("a webhook signed with the token's secret: {e}"));
    }

    // (f) The EPUB sent in chunks came back translated as an EPUB.
    let upload = &summary["upload"];
    assert!(
        upload["renamed"].as_array().is_some_and(Vec::is_empty),
        "the upload fields are the message's: {upload}"
    );
    assert!(upload["sent_chunks"].as_u64() > Some(1), "{upload}");
    assert_eq!(
        upload["statuses"].as_array().and_then(|s| s.last()),
        Some(&json!("REQUEST_STATUS_COMPLETED")),
        "{upload}"
    );
    let upload_id = text(&upload["request_id"], "upload request id");
    let status = api.status(upload_id).await;
    assert_eq!(status["input"], "epub", "{status}");
    assert_eq!(upload["result"]["media_type"], "application/epub+zip");
    let rest = rest_result(&api, upload_id, "format=epub").await;
    assert_eq!(
        upload["result"]["sha256"],
        json!(sha256(&rest)),
        "REST's EPUB"
    );
}
