//! `POST /mcp` driven by the official MCP Python SDK (`mcp` on PyPI) over
//! Streamable HTTP, as an assistant's client would: the SDK negotiates,
//! lists the tools and calls them with a bearer token.
//!
//! The client is `tests/python/mcp_client.py`, run by the interpreter named
//! in `DRAGOMAN_TEST_PYTHON` (set by `.ci/run`), else `.venv-ci/bin/python`
//! at the repository root. Without an interpreter that imports `mcp` the
//! test is skipped, and fails under `CI=true`.

use dragoman_e2e::translation::chapter;
use dragoman_e2e::{Api, Backend, Server, eventually};
use dragoman_testing::python::python_with;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::AsyncWriteExt;

/// The 28 tools of spec 4.10.
const TOOLS: [&str; 28] = [
    "list_books",
    "get_book",
    "list_chapters",
    "book_quality",
    "list_terms",
    "read_bible",
    "list_series",
    "get_series",
    "series_consistency",
    "list_providers",
    "licence_status",
    "estimate_job",
    "configure_book",
    "shelve_book",
    "create_series",
    "update_series",
    "attach_volume",
    "add_term",
    "edit_term",
    "propagate_term",
    "delete_book",
    "delete_series",
    "delete_term",
    "start_job",
    "list_jobs",
    "control_job",
    "control_series",
    "export_book",
];

const SCRIPT_TIMEOUT: Duration = Duration::from_secs(180);

/// The SDK client: a Python interpreter with `mcp` installed.
struct SdkClient {
    python: PathBuf,
    script: PathBuf,
}

impl SdkClient {
    /// The interpreter, or `None` (after a note) when there is none with
    /// the SDK; under `CI=true` its absence fails the test.
    async fn find() -> Option<SdkClient> {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let python = python_with("the MCP Python SDK", "import mcp, httpx2").await?;
        Some(SdkClient {
            python,
            script: root.join("python/mcp_client.py"),
        })
    }

    /// Runs `steps` in one SDK session as `token`; one answer per step.
    async fn run(&self, server: &Server, token: &str, steps: &[Value]) -> Vec<Value> {
        let mut child = tokio::process::Command::new(&self.python)
            .arg(&self.script)
            .arg(server.url("/mcp"))
            .env("DRAGOMAN_MCP_TOKEN", token)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", self.python.display()));
        let input = Value::Array(steps.to_vec()).to_string();
        let mut stdin = child.stdin.take().expect("stdin");
        stdin
            .write_all(input.as_bytes())
            .await
            .expect("write the steps");
        drop(stdin);
        let output = tokio::time::timeout(SCRIPT_TIMEOUT, child.wait_with_output())
            .await
            .expect("the SDK client did not finish in time")
            .expect("the SDK client ran");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.success(),
            "SDK client failed ({}):\n{stderr}\nstdout:\n{stdout}\nserver stderr:\n{}",
            output.status,
            server.stderr()
        );
        let mut lines = stdout.lines().map(|line| {
            serde_json::from_str::<Value>(line)
                .unwrap_or_else(|e| panic!("SDK client line is not JSON ({e}): {line}"))
        });
        let connected = lines.next().expect("a connection line");
        assert_eq!(connected["op"], "connected", "{connected}");
        let answers: Vec<Value> = lines.collect();
        assert_eq!(answers.len(), steps.len(), "one answer per step: {stdout}");
        answers
    }
}

fn list_tools() -> Value {
    json!({"op": "list_tools"})
}

fn call(name: &str, arguments: Value) -> Value {
    json!({"op": "call_tool", "name": name, "arguments": arguments})
}

/// The JSON value of a successful tool answer (its first text block).
fn value(answer: &Value) -> Value {
    assert_eq!(answer["op"], "call_tool", "{answer}");
    assert_eq!(answer["is_error"], false, "{answer}");
    let text = answer["texts"][0]
        .as_str()
        .unwrap_or_else(|| panic!("no text content: {answer}"));
    serde_json::from_str(text).unwrap_or_else(|e| panic!("text is not JSON ({e}): {text}"))
}

/// The envelope detail of a tool's refusal.
fn refusal(answer: &Value) -> Value {
    assert_eq!(answer["is_error"], true, "{answer}");
    let text = answer["texts"][0].as_str().expect("text content");
    serde_json::from_str(text).expect("refusal detail is JSON")
}

#[tokio::test]
async fn the_official_sdk_lists_and_calls_the_tools() {
    let Some(sdk) = SdkClient::find().await else {
        return;
    };
    let api = Api::start(Backend::Sqlite).await;
    let mut book = api.payload("Through the SDK", vec![chapter("sdk", 1, 3)]);
    book["pipeline"] = json!({"start": false});
    let imported = api.submit_ok(&book).await;
    let series_id = imported["series_id"]
        .as_str()
        .expect("series id")
        .to_owned();

    let steps = [
        call("list_series", json!({"limit": 10})),
        call("get_series", json!({"series_id": series_id})),
        call("list_providers", json!({})),
        // Unknown fields are the tool's refusal, not a protocol error.
        call("list_series", json!({"limit": 10, "colour": "blue"})),
        list_tools(),
    ];
    let answers = sdk.run(&api.server, &api.token, &steps).await;

    let listed = value(&answers[0]);
    assert_eq!(listed["total"], 1, "{listed}");
    assert!(listed["items"].to_string().contains(&series_id), "{listed}");
    let detail = value(&answers[1]);
    assert!(detail.to_string().contains(&series_id), "{detail}");
    let providers = value(&answers[2]);
    assert!(
        providers.to_string().contains(&api.provider_id),
        "the simulator's provider is listed: {providers}"
    );
    let refused = refusal(&answers[3]);
    assert_eq!(refused["code"], "invalid_payload", "{refused}");

    // Last, so that the calls above are checked even while tools are missing.
    let mut names: Vec<String> = answers[4]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tool list: {}", answers[4]))
        .iter()
        .filter_map(|name| name.as_str().map(str::to_owned))
        .collect();
    names.sort();
    let mut expected: Vec<String> = TOOLS.iter().map(|name| (*name).to_owned()).collect();
    expected.sort();
    assert_eq!(names, expected, "the tools of spec 4.10");
}

/// Every tool once, as an assistant asked to "translate this volume and
/// export it" would use them: read the library, add a locked term, start
/// the job, follow it in `list_jobs`, export the book, then tidy up.
#[tokio::test]
async fn the_official_sdk_translates_and_exports_a_book() {
    let Some(sdk) = SdkClient::find().await else {
        return;
    };
    let api = Api::start(Backend::Sqlite).await;
    let (server, token) = (&api.server, api.token.as_str());
    let mut book = api.payload("SDK saga", vec![chapter("sdk", 1, 3), chapter("sdk", 2, 2)]);
    book["pipeline"] = json!({"start": false});
    let imported = api.submit_ok(&book).await;
    let book_id = imported["project_id"].as_str().expect("book").to_owned();
    let series_id = imported["series_id"].as_str().expect("series").to_owned();
    let absent = uuid::Uuid::new_v4().to_string();

    // Reading the library.
    let reads = [
        call("list_books", json!({})),
        call("get_book", json!({"book_id": book_id})),
        call("list_chapters", json!({"book_id": book_id, "limit": 1})),
        call("book_quality", json!({"book_id": book_id})),
        call("list_terms", json!({"book_id": book_id})),
        call("read_bible", json!({"book_id": book_id})),
        call("series_consistency", json!({"series_id": series_id})),
        call("licence_status", json!({})),
        call("estimate_job", json!({"book_id": book_id})),
        call("list_jobs", json!({})),
        call("get_book", json!({"book_id": absent})),
    ];
    let answers = sdk.run(server, token, &reads).await;
    let books = value(&answers[0]);
    assert_eq!(books["total"], 1, "{books}");
    assert_eq!(value(&answers[1])["id"], json!(book_id));
    let chapters = value(&answers[2]);
    assert_eq!(
        (
            chapters["total"].clone(),
            chapters["items"].as_array().map(Vec::len)
        ),
        (json!(2), Some(1))
    );
    for answer in &answers[3..10] {
        value(answer);
    }
    assert!(
        value(&answers[8])["calls"].as_u64() > Some(0),
        "{}",
        answers[8]
    );
    assert_eq!(refusal(&answers[10])["code"], "volume_not_found");

    // Changing it: a new series, a locked term, the book's title.
    let changes = [
        call("create_series", json!({"name": "SDK shelf"})),
        call(
            "add_term",
            json!({"book_id": book_id, "source": "sdk", "translation": "kit", "locked": true}),
        ),
        call(
            "configure_book",
            json!({"book_id": book_id, "title": "SDK saga, volume one"}),
        ),
        call("start_job", json!({"book_id": book_id})),
    ];
    let answers = sdk.run(server, token, &changes).await;
    let shelf = value(&answers[0])["id"]
        .as_str()
        .map(str::to_owned)
        .unwrap_or_else(|| panic!("series id: {}", answers[0]));
    let term = value(&answers[1]);
    assert_eq!(term["locked"], true, "{term}");
    let term_id = term["id"].as_str().expect("term id").to_owned();
    assert_eq!(value(&answers[2])["title"], "SDK saga, volume one");
    let started = value(&answers[3]);
    let request_id = started["request_id"]
        .as_str()
        .expect("request id")
        .to_owned();

    // Followed in list_jobs until it completes, then exported.
    let sdk = &sdk;
    eventually(Duration::from_secs(60), "the job completes", || {
        let step = [call("list_jobs", json!({"book_id": book_id, "limit": 1}))];
        async move {
            let answers = sdk.run(server, token, &step).await;
            let page = value(&answers[0]);
            (page["items"][0]["status"] == "completed").then_some(())
        }
    })
    .await;
    let work = [
        call("export_book", json!({"book_id": book_id, "format": "txt"})),
        call(
            "export_book",
            json!({"book_id": book_id, "format": "epub-bilingual"}),
        ),
        call(
            "update_series",
            json!({"series_id": shelf, "target_language": "fr"}),
        ),
        call(
            "edit_term",
            json!({"term_id": term_id, "translation": "trousse"}),
        ),
        call(
            "propagate_term",
            json!({"book_id": book_id, "previous": "[fr]", "replacement": "[FR]"}),
        ),
        call(
            "control_job",
            json!({"request_id": request_id, "action": "pause"}),
        ),
        call(
            "control_series",
            json!({"series_id": series_id, "action": "pause"}),
        ),
        call(
            "attach_volume",
            json!({"book_id": book_id, "series_id": shelf, "volume_number": 1}),
        ),
        call("shelve_book", json!({"book_id": book_id})),
        call("delete_term", json!({"term_id": term_id, "confirm": true})),
        call(
            "delete_series",
            json!({"series_id": series_id, "confirm": true}),
        ),
        call(
            "delete_book",
            json!({"book_id": book_id, "confirm": "true"}),
        ),
        call("delete_book", json!({"book_id": book_id, "confirm": true})),
        call("get_series", json!({"series_id": shelf})),
    ];
    let answers = sdk.run(server, token, &work).await;
    let text = value(&answers[0]);
    assert_eq!(text["format"], "txt", "{text}");
    let inline = answers[0]["texts"][1].as_str().unwrap_or_default();
    assert!(
        inline.contains("[fr]"),
        "the translation inline: {}",
        answers[0]
    );
    let epub = &answers[1];
    assert_eq!(epub["is_error"], false, "{epub}");
    assert_eq!(
        epub["resources"][0]["mime_type"], "application/epub+zip",
        "{epub}"
    );
    assert!(epub["resources"][0]["size"].as_u64() > Some(0), "{epub}");
    assert_eq!(value(&answers[2])["target_language"], "fr");
    assert_eq!(value(&answers[3])["translation"], "trousse");
    let preview = value(&answers[4]);
    assert_eq!(preview["dry_run"], true, "{preview}");
    assert!(preview["matches"].as_u64() > Some(0), "{preview}");
    // A completed request is final: nothing to pause.
    assert_eq!(refusal(&answers[5])["code"], "conflict");
    value(&answers[6]);
    value(&answers[7]);
    assert_eq!(value(&answers[8])["shelved"], true);
    value(&answers[9]);
    value(&answers[10]);
    // A string never confirms a deletion.
    assert_eq!(refusal(&answers[11])["code"], "invalid_payload");
    value(&answers[12]);
    let shelf_left = value(&answers[13]);
    assert_eq!(shelf_left["volume_list"], json!([]), "{shelf_left}");
}
