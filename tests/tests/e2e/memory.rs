//! Narrative memory through the API, with the simulator's analysis and its
//! prompt log: a series keeps its names and its locked terms from volume to
//! volume and the third volume's prompts carry the first volume's character
//! sheet; the same book sent again costs no provider call; `parallel` and
//! `strict` analysis find the same entities; a SIGKILL during analysis
//! never has a stored analysis paid for again.

use dragoman_e2e::client::{SCOPES, Session, send};
use dragoman_e2e::translation::chapter_from;
use dragoman_e2e::{Api, Backend, on_both_backends};
use sea_orm::{ConnectionTrait, Statement};
use serde_json::{Value, json};
use std::collections::{BTreeSet, HashSet};
use std::time::Duration;

on_both_backends!(a_series_keeps_its_names_and_locked_terms);

const MINUTE: Duration = Duration::from_secs(60);

/// The locked rendering a person decides for the series.
const WARP_FR: &str = "cœur-de-distorsion";

/// Context budget of the series test, in estimated tokens.
const CONTEXT_TOKENS: usize = 120;

/// The service's token estimate (ASCII characters / 3 rounded up, plus one
/// per other character), as documented for `DRAGOMAN_CONTEXT_TOKENS`.
fn estimate_tokens(text: &str) -> usize {
    text.bytes().filter(u8::is_ascii).count().div_ceil(3)
        + text.chars().filter(|c| !c.is_ascii()).count()
}

/// Three volumes naming Alice and the WARPCORE; only the first says that
/// Alice is also called Ally.
fn volumes() -> [Vec<Value>; 3] {
    let one = [
        "On the first morning, Alice (Ally) walked to the harbour with the WARPCORE in her bag.",
        "The captain greeted Alice warmly and asked about the WARPCORE before the storm.",
        "Later that night, the sailors laughed when Bob dropped the map.",
    ];
    let two = [
        "Years later, Alice returned and the WARPCORE glowed again in the dark.",
        "When the tide turned, Bob and Alice argued about the course.",
    ];
    let three = [
        "In the end, Alice sealed the WARPCORE inside the old lighthouse.",
        "Everyone in the village thanked Alice for her courage.",
    ];
    let chapter = |texts: &[&str]| {
        let owned: Vec<String> = texts.iter().map(|t| (*t).to_owned()).collect();
        vec![chapter_from(1, &owned)]
    };
    [chapter(&one), chapter(&two), chapter(&three)]
}

fn volume_body(api: &Api, series: &str, number: u32, chapters: Vec<Value>) -> Value {
    let mut body = api.payload(series, chapters);
    body["volume"] = json!({"number": number});
    body
}

fn id_of(summary: &Value) -> String {
    summary["request_id"]
        .as_str()
        .expect("request_id")
        .to_owned()
}

/// Every translated chapter text of a request's JSON result.
async fn translations(api: &Api, request_id: &str) -> String {
    let result = api.result(request_id, "format=json").await.expect(200);
    result["chapters"]
        .as_array()
        .expect("chapters")
        .iter()
        .filter_map(|c| c["translation"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

async fn a_series_keeps_its_names_and_locked_terms(backend: Backend) {
    let api = Api::builder(backend)
        .env("DRAGOMAN_CONTEXT_TOKENS", &CONTEXT_TOKENS.to_string())
        .start()
        .await;
    let [one, two, three] = volumes();

    // The series exists once volume 1 is imported; a person then decides
    // the series' rendering of the WARPCORE, locked.
    let mut import = volume_body(&api, "Saga", 1, one.clone());
    import["pipeline"] = json!({"start": false});
    let imported = api.submit_ok(&import).await;
    let series_id = imported["series_id"]
        .as_str()
        .expect("series_id")
        .to_owned();
    api.server
        .cli_ok(&[
            "term",
            "add",
            "--series",
            &series_id,
            "--source",
            "WARPCORE",
            "--translation",
            WARP_FR,
            "--locked",
        ])
        .await;

    let mut requests = Vec::new();
    for (number, chapters) in [(1, one), (2, two), (3, three)] {
        let summary = api
            .submit_ok(&volume_body(&api, "Saga", number, chapters))
            .await;
        let id = id_of(&summary);
        let done = api.wait_final(&id, MINUTE).await;
        assert_eq!(done["status"], "completed", "volume {number}: {done}");
        let analysis = &done["progress"]["analysis"];
        assert_eq!(analysis["mode"], "parallel", "{done}");
        assert_eq!(analysis["done"], analysis["total"], "{done}");
        assert!(analysis["entities"].as_u64() >= Some(1), "{done}");
        let stage = done["progress"]["stages"]
            .as_array()
            .expect("stages")
            .iter()
            .find(|s| s["key"] == "analysis")
            .expect("analysis stage")
            .clone();
        assert_eq!(stage["skipped"], false, "{stage}");
        assert_eq!(stage["percent"], 100, "{stage}");
        assert_eq!(done["memory"]["answered_by"], "internal");
        requests.push(id);
    }

    // Every prompt's context within its budget; every sheet of Alice the same.
    let messages = api.simulator.translation_messages().await;
    let mut alice_sheets = BTreeSet::new();
    for message in &messages {
        let context = message["context"].as_str().unwrap_or("");
        assert!(
            estimate_tokens(context) <= CONTEXT_TOKENS,
            "context over its budget: {context}"
        );
        for line in context.lines() {
            if let Some(sheet) = line.strip_prefix("- Alice => ") {
                alice_sheets.insert(sheet.to_owned());
            }
        }
    }
    assert_eq!(
        alice_sheets.len(),
        1,
        "one sheet of Alice: {alice_sheets:?}"
    );
    let sheet = alice_sheets.pop_first().expect("a sheet of Alice");
    assert!(sheet.contains("aliases: Ally"), "{sheet}");
    let alice_fr = sheet
        .split(';')
        .next()
        .expect("rendering")
        .trim()
        .to_owned();

    // A volume-3 batch carries the character sheet made from volume 1 (the
    // alias appears in volume 1 only) and the locked term.
    let volume_three = messages
        .iter()
        .find(|m| {
            m["passages"].as_array().is_some_and(|ps| {
                ps.iter().any(|p| {
                    p["text"]
                        .as_str()
                        .is_some_and(|t| t.starts_with("In the end, Alice"))
                })
            })
        })
        .expect("a prompt of volume 3");
    let context = volume_three["context"].as_str().expect("a context");
    assert!(
        context.contains(&format!("- Alice => {sheet}")),
        "{context}"
    );
    assert!(
        context.contains(&format!("- WARPCORE => {WARP_FR} (locked)")),
        "{context}"
    );

    // Every rendering of the name and the term is the same in the three volumes.
    for (id, sources) in requests.iter().zip(volumes()) {
        let source: String = sources
            .iter()
            .filter_map(|c| c["content"].as_str())
            .collect();
        let text = translations(&api, id).await;
        assert_eq!(
            text.matches(WARP_FR).count(),
            source.matches("WARPCORE").count(),
            "{text}"
        );
        // The alias is rendered as the name it stands for.
        assert_eq!(
            text.matches(alice_fr.as_str()).count(),
            source.matches("Alice").count() + source.matches("Ally").count(),
            "{alice_fr} in {text}"
        );
    }
}

#[tokio::test]
async fn the_same_book_sent_again_costs_no_provider_call() {
    let api = Api::start(Backend::Sqlite).await;
    let [one, ..] = volumes();
    let first = id_of(
        &api.submit_ok(&volume_body(&api, "First", 1, one.clone()))
            .await,
    );
    let done = api.wait_final(&first, MINUTE).await;
    assert_eq!(done["status"], "completed", "{done}");
    let before = api.simulator.requests().await;
    assert!(before >= 2, "an analysis and a translation: {before}");

    let again = id_of(&api.submit_ok(&volume_body(&api, "Second", 1, one)).await);
    let done = api.wait_final(&again, MINUTE).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(api.simulator.requests().await, before, "no provider call");
    let usage = &done["report"]["usage"];
    assert_eq!(usage["calls"], 0, "{usage}");
    assert_eq!(usage["prompt_tokens"], 0, "{usage}");
    assert_eq!(
        usage["cached_calls"], 3,
        "three passages from memory: {usage}"
    );
    assert_eq!(done["progress"]["analysis"]["done"], 3, "{done}");
    assert_eq!(
        translations(&api, &again).await,
        translations(&api, &first).await
    );
}

async fn entities_of(api: &Api, project_id: &str) -> BTreeSet<(String, String, String, String)> {
    let db = api.server.installation.sql().await;
    let statement = Statement::from_string(
        db.get_database_backend(),
        format!(
            "SELECT kind, name, aliases, target_name FROM narrative_entities \
             WHERE project_id = '{project_id}'"
        ),
    );
    let rows = db.query_all_raw(statement).await.expect("entities");
    let _ = db.close().await;
    rows.iter()
        .map(|row| {
            let text = |i: usize| -> String {
                row.try_get_by_index::<Option<String>>(i)
                    .ok()
                    .flatten()
                    .unwrap_or_default()
            };
            let aliases: Value = row
                .try_get_by_index::<Value>(2)
                .or_else(|_| {
                    row.try_get_by_index::<String>(2)
                        .map(|s| serde_json::from_str(&s).unwrap_or(Value::Null))
                })
                .unwrap_or(Value::Null);
            (text(0), text(1), aliases.to_string(), text(3))
        })
        .collect()
}

#[tokio::test]
async fn parallel_and_strict_analysis_find_the_same_entities() {
    let api = Api::builder(Backend::Sqlite)
        // Small batches, so a book is several analysis calls.
        .env("DRAGOMAN_BATCH_TOKENS", "400")
        .start()
        .await;
    // A second account, so the second book cannot take the first's analyses.
    let account = api.server.create_user("second", false).await;
    let token = Session::login(&api.server, &account)
        .await
        .token("automation", &SCOPES)
        .await
        .token;
    let chapters: Vec<Value> = volumes()
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(i, mut c)| {
            c["number"] = json!(i + 1);
            c["external_id"] = json!(format!("ch-{}", i + 1));
            c
        })
        .collect();
    let mut projects = Vec::new();
    for (mode, who) in [("parallel", None), ("strict", Some(token.as_str()))] {
        let mut body = api.payload("Modes", chapters.clone());
        body["pipeline"] = json!({"analysis_mode": mode});
        let summary = match who {
            None => api.submit_ok(&body).await,
            Some(token) => api.submit_with(token, &body).await.expect(202),
        };
        let id = id_of(&summary);
        let done = match who {
            None => api.wait_final(&id, MINUTE).await,
            Some(token) => {
                let url = api
                    .server
                    .url(&format!("/api/v1/translation-requests/{id}?wait=60"));
                let answer = send(api.server.client().get(url).bearer_auth(token)).await;
                answer.expect(200)
            }
        };
        assert_eq!(done["status"], "completed", "{mode}: {done}");
        assert_eq!(done["progress"]["analysis"]["mode"], mode, "{done}");
        assert_eq!(done["options"]["analysis_mode"], mode, "{done}");
        projects.push(summary["project_id"].as_str().expect("project").to_owned());
    }
    let parallel = entities_of(&api, &projects[0]).await;
    let strict = entities_of(&api, &projects[1]).await;
    assert!(
        parallel
            .iter()
            .any(|e| e.1 == "Alice" && e.2.contains("Ally")),
        "{parallel:?}"
    );
    assert_eq!(parallel, strict);
}

#[tokio::test]
async fn sigkill_during_analysis_never_pays_a_stored_analysis_again() {
    let mut api = Api::builder(Backend::Sqlite)
        .env("DRAGOMAN_WORKERS", "1")
        .env("DRAGOMAN_LEASE_SECONDS", "3")
        // One passage per call.
        .env("DRAGOMAN_BATCH_TOKENS", "1")
        .simulator(&["--latency-ms", "300"])
        .start()
        .await;
    let paragraphs: Vec<String> = (1..=24)
        .map(|i| format!("In chapter one, paragraph {i}, Alice counted the ships of the fleet."))
        .collect();
    let mut body = api.payload("Killed", vec![chapter_from(1, &paragraphs)]);
    body["pipeline"] = json!({"threads": 2});
    let id = id_of(&api.submit_ok(&body).await);
    api.wait_until(&id, MINUTE, "some passages analysed", |d| {
        d["progress"]["analysis"]["done"].as_u64() >= Some(4)
    })
    .await;
    api.server.kill().await;

    let db = api.server.installation.sql().await;
    let statement = Statement::from_string(
        db.get_database_backend(),
        "SELECT passage_id FROM passage_analyses".to_owned(),
    );
    let stored: HashSet<String> = db
        .query_all_raw(statement)
        .await
        .expect("analyses")
        .iter()
        .filter_map(|row| row.try_get_by_index::<String>(0).ok())
        .collect();
    let _ = db.close().await;
    assert!(
        (4..24).contains(&stored.len()),
        "killed too late: {} analysed",
        stored.len()
    );
    let served_at_kill = api.simulator.prompts().await.len();

    api.restart().await;
    let done = api.wait_final(&id, Duration::from_secs(120)).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["progress"]["analysis"]["done"], 24, "{done}");
    let after: Vec<Value> = api.simulator.prompts().await[served_at_kill..]
        .iter()
        .filter(|p| p["kind"] == "analysis")
        .cloned()
        .collect();
    for prompt in &after {
        let message: Value =
            serde_json::from_str(prompt["user"].as_str().expect("user")).expect("JSON");
        for passage in message["passages"].as_array().expect("passages") {
            let passage_id = passage["id"].as_str().expect("id");
            assert!(
                !stored.contains(passage_id),
                "passage {passage_id} analysed again after the restart"
            );
        }
    }
    assert!(
        after.len() <= 24 - stored.len() + 2,
        "{} analyses after the restart for {} passages left",
        after.len(),
        24 - stored.len()
    );
}
