//! The OpenAPI document (spec 9) against the running service: served at
//! `GET /api/v1/openapi.json` without a token and equal to the committed
//! `docs/openapi.json`; every operation it lists is routed and no other
//! method answers on its paths; and schemathesis (PyPI) exercises every
//! operation with generated and real data, checking that nothing answers
//! 5xx and every answer conforms to the document (status code, content
//! type, headers, body schema); Redocly CLI (npm) lints the committed
//! document with its `recommended` rules and finds no error.
//!
//! schemathesis runs from the interpreter named in `DRAGOMAN_TEST_PYTHON`
//! (set by `.ci/run`), else `.venv-ci/bin/python` at the repository root;
//! Redocly CLI from `tests/node/node_modules` (`npm ci` in `tests/node`,
//! run by `.ci/run`). Without them those tests are skipped, and fail under
//! `CI=true`.

use dragoman_e2e::client::send;
use dragoman_e2e::node::node_tool;
use dragoman_e2e::translation::{chapter, tail};
use dragoman_e2e::{Api, Backend};
use dragoman_testing::python::python_with;
use reqwest::Method;
use reqwest::multipart::{Form, Part};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

/// What schemathesis checks on every answer: no 5xx; status code, content
/// type, headers and body as documented; a call without the token refused;
/// an undocumented method answered 405.
const CHECKS: &str = "not_a_server_error,status_code_conformance,content_type_conformance,\
                      response_headers_conformance,response_schema_conformance,ignored_auth,\
                      unsupported_method";

/// Test cases per operation and phase: enough to reach every status an
/// operation documents with the seeded ids, few enough for a run of about
/// half a minute.
const MAX_EXAMPLES: &str = "25";

/// A bound on the whole schemathesis run.
const RUN_TIMEOUT: Duration = Duration::from_secs(240);

/// A bound on the Redocly lint (under a second on its own).
const LINT_TIMEOUT: Duration = Duration::from_secs(120);

const MINUTE: Duration = Duration::from_secs(60);

fn repository() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn committed() -> String {
    let path = repository().join("docs/openapi.json");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A server with the simulator provider and a token of every scope, its
/// rate limit raised and long polls cut to a second.
async fn start() -> Api {
    Api::builder(Backend::Sqlite)
        .env("API_RATE_LIMIT_PER_MINUTE", "1000000")
        .env("API_RESULT_MAX_WAIT_SECONDS", "1")
        .start()
        .await
}

/// Real ids for the operations' path parameters: a finished request and
/// its series and book, a glossary with terms that the series follows.
struct Seed {
    request_id: String,
    series_id: String,
    book_id: String,
    glossary_id: String,
}

async fn seed(api: &Api) -> Seed {
    let mut body = api.payload(
        "Schema saga",
        vec![chapter("schema", 1, 3), chapter("schema", 2, 2)],
    );
    body["external_id"] = json!("schema-saga-1");
    let summary = api.submit_ok(&body).await;
    let field = |name: &str| {
        summary[name]
            .as_str()
            .unwrap_or_else(|| panic!("{name}: {summary}"))
            .to_owned()
    };
    let (request_id, series_id, book_id) =
        (field("request_id"), field("series_id"), field("project_id"));
    let done = api.wait_final(&request_id, MINUTE).await;
    assert_eq!(done["status"], "completed", "{done}");

    let glossary = send(
        api.request(Method::POST, "/api/v1/glossaries")
            .json(&json!({"name": "Schema terms", "source_language": "en"})),
    )
    .await
    .expect(201);
    let glossary_id = glossary["id"].as_str().expect("glossary id").to_owned();
    let csv = "source,translation,category,description,locked,accepted\n\
               lighthouse,phare,lieu,,true,true\nkeeper,gardien,personne,,false,true\n";
    let form = Form::new().part(
        "file",
        Part::bytes(csv.as_bytes().to_vec()).file_name("terms.csv"),
    );
    send(
        api.request(
            Method::POST,
            &format!("/api/v1/glossaries/{glossary_id}/import"),
        )
        .multipart(form),
    )
    .await
    .expect(200);
    send(
        api.request(
            Method::PUT,
            &format!("/api/v1/series/{series_id}/shared-glossary"),
        )
        .json(&json!({"glossary_id": glossary_id})),
    )
    .await
    .expect(200);
    Seed {
        request_id,
        series_id,
        book_id,
        glossary_id,
    }
}

impl Seed {
    /// The real value of a path parameter.
    fn id(&self, parameter: &str) -> Option<&str> {
        match parameter {
            "request_id" => Some(&self.request_id),
            "series_id" => Some(&self.series_id),
            "book_id" => Some(&self.book_id),
            "glossary_id" => Some(&self.glossary_id),
            _ => None,
        }
    }
}

/// `(method, path template, operation)` of every operation.
fn operations(document: &Value) -> Vec<(String, String, Value)> {
    let mut found = Vec::new();
    for (path, item) in document["paths"].as_object().expect("paths") {
        for (method, operation) in item.as_object().expect("path item") {
            found.push((method.clone(), path.clone(), operation.clone()));
        }
    }
    found
}

/// The path with its parameters filled: seeded ids, and the first allowed
/// value of an enumerated one.
fn concrete(path: &str, operation: &Value, seed: &Seed) -> String {
    let mut concrete = path.to_owned();
    for parameter in operation["parameters"].as_array().into_iter().flatten() {
        if parameter["in"] != "path" {
            continue;
        }
        let name = parameter["name"].as_str().expect("parameter name");
        let value = match seed.id(name) {
            Some(id) => id.to_owned(),
            None => parameter["schema"]["enum"][0]
                .as_str()
                .unwrap_or_else(|| panic!("{path}: no value for {name}"))
                .to_owned(),
        };
        concrete = concrete.replace(&format!("{{{name}}}"), &value);
    }
    concrete
}

#[tokio::test]
async fn the_document_is_served_without_a_token_as_committed() {
    let api = start().await;
    let client = api.server.client();
    let url = api.server.url("/api/v1/openapi.json");
    let response = client.get(&url).send().await.expect("GET openapi.json");
    assert_eq!(response.status(), 200);
    assert_eq!(
        response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok()),
        Some("application/json")
    );
    let served = response.text().await.expect("body");
    assert!(
        served == committed(),
        "the served document differs from docs/openapi.json; regenerate it with \
         DRAGOMAN_UPDATE_OPENAPI=1 cargo test -p dragoman-gateway \
         openapi::tests::the_committed_document_is_current"
    );
    let document: Value = serde_json::from_str(&served).expect("JSON");
    assert_eq!(document["openapi"], "3.1.0");
    // A token changes nothing, and a wrong one is not looked at.
    let with_token = client
        .get(&url)
        .bearer_auth("not-a-token")
        .send()
        .await
        .expect("GET with a token");
    assert_eq!(with_token.status(), 200);
    // The rest of the API still needs one.
    let closed = client
        .get(api.server.url("/api/v1/series"))
        .send()
        .await
        .expect("GET series");
    assert_eq!(closed.status(), 401);
}

/// Every documented operation reaches a handler (never the router's
/// `not_found` or `method_not_allowed`), and every other method on its
/// path answers 405: the document and the router agree.
#[tokio::test]
async fn every_documented_operation_is_routed_and_nothing_else_on_its_paths() {
    let api = start().await;
    let seed = seed(&api).await;
    let document: Value = serde_json::from_str(&committed()).expect("JSON");
    let mut documented: Vec<(String, String)> = Vec::new();
    for (method, path, operation) in operations(&document) {
        let url = concrete(&path, &operation, &seed);
        let verb = Method::from_bytes(method.to_uppercase().as_bytes()).expect("method");
        let answer = send(api.request(verb, &url)).await;
        let body: Value = serde_json::from_str(&answer.text).unwrap_or(Value::Null);
        let code = body["detail"]["code"].clone();
        assert!(
            code != "not_found" && code != "method_not_allowed",
            "{method} {url} is documented but not routed: {} {code}",
            answer.status
        );
        documented.push((method, url));
    }
    for (_, url) in &documented {
        for verb in [
            Method::GET,
            Method::POST,
            Method::PUT,
            Method::PATCH,
            Method::DELETE,
        ] {
            let name = verb.as_str().to_lowercase();
            if documented.iter().any(|(m, u)| *m == name && u == url) {
                continue;
            }
            let answer = send(api.request(verb.clone(), url)).await;
            assert_eq!(
                answer.status, 405,
                "{verb} {url} answers but is not documented: {}",
                answer.text
            );
        }
    }
}

/// The interpreter with schemathesis installed.
async fn schemathesis_python() -> Option<PathBuf> {
    python_with("schemathesis", "import schemathesis").await
}

/// The document with the seeded ids as examples of the path parameters,
/// and valid bodies as examples of the writes, so the examples phase
/// reaches real series, requests and glossaries and each write's success.
fn with_examples(document: &mut Value, seed: &Seed, api: &Api) {
    let Some(paths) = document["paths"].as_object_mut() else {
        return;
    };
    for item in paths.values_mut().filter_map(Value::as_object_mut) {
        for operation in item.values_mut() {
            let Some(parameters) = operation
                .get_mut("parameters")
                .and_then(Value::as_array_mut)
            else {
                continue;
            };
            for parameter in parameters {
                let name = parameter["name"].as_str().unwrap_or_default().to_owned();
                if parameter["in"] == "path"
                    && let Some(id) = seed.id(&name)
                {
                    parameter["example"] = json!(id);
                }
            }
        }
    }
    let mut book = api.payload("Schema examples", vec![chapter("example", 1, 2)]);
    book["external_id"] = json!("schema-example-1");
    book["pipeline"] = json!({"start": false});
    let bodies = [
        (
            "/api/v1/translation-requests",
            "post",
            "application/json",
            book,
        ),
        (
            "/api/v1/glossaries",
            "post",
            "application/json",
            json!({"name": "Example terms", "description": "From the examples"}),
        ),
        (
            "/api/v1/series/{series_id}/shared-glossary",
            "put",
            "application/json",
            json!({"glossary_id": seed.glossary_id}),
        ),
        (
            "/api/v1/glossaries/{glossary_id}/import",
            "post",
            "multipart/form-data",
            json!({"file": "source,translation\nlantern,lanterne\n", "strategy": "skip"}),
        ),
    ];
    for (path, method, media, example) in bodies {
        let content = &mut paths[path][method]["requestBody"]["content"][media];
        assert!(content.is_object(), "{method} {path} takes {media}");
        content["example"] = example;
    }
}

#[tokio::test]
async fn schemathesis_finds_every_answer_conforming() {
    let Some(python) = schemathesis_python().await else {
        return;
    };
    let api = start().await;
    let seed = seed(&api).await;
    let mut document: Value = serde_json::from_str(&committed()).expect("JSON");
    let operations_count = operations(&document).len();
    with_examples(&mut document, &seed, &api);
    let work = tempfile::tempdir().expect("temporary folder");
    let schema = work.path().join("openapi.json");
    std::fs::write(&schema, document.to_string()).expect("write the schema");
    let report = work.path().join("report.xml");

    let mut command = tokio::process::Command::new(&python);
    command
        .args(["-m", "schemathesis.cli", "run"])
        .arg(&schema)
        .args(["--url", api.server.base()])
        .args(["--header", &format!("Authorization: Bearer {}", api.token)])
        .args(["--checks", CHECKS])
        .args(["--phases", "examples,coverage,fuzzing"])
        .args(["--max-examples", MAX_EXAMPLES])
        .args(["--seed", "20240917"])
        .args(["--workers", "2"])
        .args(["--request-timeout", "30"])
        .args(["--report", "junit"])
        .arg("--report-junit-path")
        .arg(&report)
        .args(["--suppress-health-check", "all"])
        .arg("--continue-on-failure")
        .env("NO_COLOR", "1")
        // A raw EPUB body is sent as bytes (see the hooks module).
        .env("SCHEMATHESIS_HOOKS", "schemathesis_hooks")
        .env("PYTHONPATH", repository().join("tests/python"))
        .current_dir(work.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let output = tokio::time::timeout(RUN_TIMEOUT, command.output())
        .await
        .expect("schemathesis did not finish in time")
        .expect("schemathesis ran");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "schemathesis found answers that do not conform ({}):\n{}\n{stderr}\nserver stderr \
         (end):\n{}",
        output.status,
        tail(&stdout, 20000),
        tail(&api.server.stderr(), 4000)
    );
    eprintln!("{}", tail(&stdout, 3000));
    // Every operation was exercised.
    let junit = std::fs::read_to_string(&report).expect("the JUnit report");
    let cases = junit.matches("<testcase").count();
    assert_eq!(
        cases,
        operations_count,
        "one test case per operation:\n{}",
        tail(&stdout, 4000)
    );
    assert!(
        !junit.contains("<skipped"),
        "an operation was skipped:\n{}",
        tail(&stdout, 8000)
    );
}

/// Redocly CLI's `recommended` ruleset finds no error in the committed
/// document (the end-to-end test above holds the served one equal to it);
/// its warnings are printed, not refused.
#[tokio::test]
async fn redocly_finds_no_error_in_the_document() {
    let Some(redocly) = node_tool("redocly").await else {
        return;
    };
    let document = repository().join("docs/openapi.json");
    // An empty working folder: no Redocly configuration file of the
    // machine's is read, only the ruleset named here.
    let work = tempfile::tempdir().expect("temporary folder");
    let mut command = tokio::process::Command::new(&redocly);
    command
        .args(["lint", "--extends=recommended", "--format=json"])
        .arg(&document)
        // No call home while testing: no usage data, no update check.
        .env("REDOCLY_TELEMETRY", "off")
        .env("REDOCLY_SUPPRESS_UPDATE_NOTICE", "true")
        .env("NO_COLOR", "1")
        .current_dir(work.path())
        .stdin(Stdio::null())
        .kill_on_drop(true);
    let output = tokio::time::timeout(LINT_TIMEOUT, command.output())
        .await
        .expect("redocly did not finish in time")
        .expect("redocly ran");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let report: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "redocly's report is not JSON ({e}, {}):\n{stdout}\n{stderr}",
            output.status
        )
    });
    let problems = report["problems"].as_array().cloned().unwrap_or_default();
    let line = |problem: &Value| {
        format!(
            "{} {}: {} at {}",
            problem["severity"].as_str().unwrap_or("?"),
            problem["ruleId"].as_str().unwrap_or("?"),
            problem["message"].as_str().unwrap_or("?"),
            problem["location"][0]["pointer"].as_str().unwrap_or("?")
        )
    };
    let errors: Vec<String> = problems
        .iter()
        .filter(|p| p["severity"] == "error")
        .map(line)
        .collect();
    assert!(
        errors.is_empty() && report["totals"]["errors"] == 0 && output.status.success(),
        "Redocly (recommended) finds {} error(s) in docs/openapi.json ({}):\n{}\n{stderr}",
        report["totals"]["errors"],
        output.status,
        errors.join("\n")
    );
    for warning in problems.iter().filter(|p| p["severity"] != "error") {
        eprintln!("redocly: {}", line(warning));
    }
}
