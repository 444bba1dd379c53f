//! The external memory's session routes (spec 1, 4.9) as people meet
//! them: administrators reach every `/api/settings/memory/…` route and
//! anyone else is refused with 403 `admin_required`; a series' or a
//! volume's memory routes answer its owner and administrators, and another
//! account's object answers exactly as an absent one. Without an external
//! memory the status says `configured: false` and every action answers 409
//! `conflict`; with a real Chroma server the status shows it reachable and
//! a volume's `synchronize` and `check` work.

use dragoman_e2e::translation::{chapter, tail};
use dragoman_e2e::{
    Answer, Api, Backend, SCOPES, Session, Simulator, eventually, on_both_backends,
};
use dragoman_testing::Chroma;
use reqwest::Method;
use serde_json::{Value, json};
use std::time::Duration;

on_both_backends!(
    without_an_external_memory_the_routes_answer_and_refuse,
    with_chroma_administrators_and_owners_manage_the_mirror,
    a_hybrid_series_goes_on_while_chroma_is_down
);

const MINUTE: Duration = Duration::from_secs(60);

/// Prints the end of the server's log when the test fails, so a refusal
/// or a 500 can be told from its cause.
struct ServerLog<'a>(&'a Api);

impl Drop for ServerLog<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "server stderr (end):\n{}",
                tail(&self.0.server.stderr(), 8000)
            );
        }
    }
}

/// A series and its volume, imported without translation.
struct Book {
    series: String,
    project: String,
}

/// Imports a one-chapter book named `series` with `token`.
async fn import(api: &Api, token: &str, series: &str) -> Book {
    let mut body = api.payload(series, vec![chapter(series, 1, 2)]);
    body["pipeline"] = json!({"start": false});
    let summary = api.submit_with(token, &body).await.expect(202);
    let id = |field: &str| {
        summary[field]
            .as_str()
            .unwrap_or_else(|| panic!("{field}: {summary}"))
            .to_owned()
    };
    Book {
        series: id("series_id"),
        project: id("project_id"),
    }
}

/// `method path` in `session`, with an empty JSON object as body for the
/// writes (the actions take none, the settings take an empty change).
async fn call(session: &Session, method: &Method, path: &str) -> Answer {
    match *method {
        Method::GET => session.get(path).await,
        Method::DELETE => session.delete(path).await,
        Method::PUT => session.put(path, &json!({})).await,
        _ => session.post(path, &json!({})).await,
    }
}

/// Every administrator route, with the way it answers without an external
/// memory: the status reads, everything else is refused as a conflict.
fn admin_routes() -> Vec<(Method, String, u16)> {
    let id = "00000000-0000-4000-8000-000000000000";
    vec![
        (Method::GET, "/api/settings/memory/status".into(), 200),
        (
            Method::POST,
            "/api/settings/memory/outbox/retry".into(),
            409,
        ),
        (Method::GET, "/api/settings/memory/cleanup".into(), 409),
        (Method::PUT, "/api/settings/memory/cleanup".into(), 409),
        (Method::DELETE, "/api/settings/memory/cleanup".into(), 409),
        (Method::GET, "/api/settings/memory/cleanups".into(), 409),
        (
            Method::POST,
            format!("/api/settings/memory/cleanups/{id}/retry"),
            409,
        ),
        (
            Method::POST,
            format!("/api/settings/memory/cleanups/{id}/retire"),
            409,
        ),
        (
            Method::POST,
            "/api/settings/memory/orphans/scan".into(),
            409,
        ),
        (
            Method::POST,
            "/api/settings/memory/orphans/clean".into(),
            409,
        ),
        (
            Method::GET,
            "/api/settings/memory/orphans/schedule".into(),
            409,
        ),
        (
            Method::PUT,
            "/api/settings/memory/orphans/schedule".into(),
            409,
        ),
    ]
}

/// A method and a path.
type Route = (Method, String);

/// A book's memory routes: the status reads, then the actions.
fn book_routes(book: &Book) -> (Vec<Route>, Vec<Route>) {
    let series = format!("/api/series/{}/memory", book.series);
    let project = format!("/api/projects/{}/memory", book.project);
    let reads = vec![
        (Method::GET, series.clone()),
        (Method::GET, format!("{project}/status")),
    ];
    let mut actions: Vec<Route> = ["resync", "rebuild", "reindex"]
        .iter()
        .map(|a| (Method::POST, format!("{series}/{a}")))
        .collect();
    actions.extend(
        ["synchronize", "rebuild", "reindex", "check"]
            .iter()
            .map(|a| (Method::POST, format!("{project}/{a}"))),
    );
    (reads, actions)
}

/// The not-found code of a book route: a series' or a volume's.
fn not_found_code(path: &str) -> &'static str {
    if path.starts_with("/api/series/") {
        "series_not_found"
    } else {
        "volume_not_found"
    }
}

async fn without_an_external_memory_the_routes_answer_and_refuse(backend: Backend) {
    let api = Api::start(backend).await;
    let _log = ServerLog(&api);
    let admin = api.session().await;
    let own = import(&api, &api.token, "Admin saga").await;

    // The status says there is no mirror and what waits locally.
    let status = admin.get("/api/settings/memory/status").await.expect(200);
    assert_eq!(status["configured"], false, "{status}");
    assert!(status["outbox"]["pending"].is_u64(), "{status}");

    for (method, path, expected) in admin_routes() {
        let answer = call(&admin, &method, &path).await;
        if expected == 200 {
            answer.expect(200);
        } else {
            answer.expect_error(409, "conflict", &format!("{method} {path}"));
        }
    }

    // A book's owner (here the administrator) reads its memory and is
    // refused its actions.
    let (reads, actions) = book_routes(&own);
    for (method, path) in &reads {
        let view = call(&admin, method, path).await.expect(200);
        assert_eq!(view["configured"], false, "{path}: {view}");
    }
    for (method, path) in &actions {
        call(&admin, method, path)
            .await
            .expect_error(409, "conflict", path);
    }

    // A person who is not an administrator.
    let reader = api.server.create_user("reader", false).await;
    let reader = Session::login(&api.server, &reader).await;
    for (method, path, _) in admin_routes() {
        call(&reader, &method, &path).await.expect_error(
            403,
            "admin_required",
            &format!("{method} {path}"),
        );
    }

    // Refused before their body is judged.
    reader
        .put(
            "/api/settings/memory/cleanup",
            &json!({"enabled": "sometimes"}),
        )
        .await
        .expect_error(403, "admin_required", "a reader's malformed settings");

    // Another account's series and volume answer as absent ones.
    let absent = Book {
        series: "00000000-0000-4000-8000-000000000001".into(),
        project: "00000000-0000-4000-8000-000000000002".into(),
    };
    let (foreign_reads, foreign_actions) = book_routes(&own);
    let (absent_reads, absent_actions) = book_routes(&absent);
    let foreign = foreign_reads.iter().chain(&foreign_actions);
    let missing = absent_reads.iter().chain(&absent_actions);
    for ((method, foreign), (_, missing)) in foreign.zip(missing) {
        let code = not_found_code(foreign);
        let refused = call(&reader, method, foreign)
            .await
            .expect_error(404, code, foreign);
        let absent = call(&reader, method, missing)
            .await
            .expect_error(404, code, missing);
        assert_eq!(refused, absent, "{foreign} and {missing} differ");
    }

    // The reader's own book: readable, and its actions refused for want of
    // an external memory, like the administrator's.
    let token = reader.token("reader", &SCOPES).await.token;
    let mine = import(&api, &token, "Reader saga").await;
    let (reads, actions) = book_routes(&mine);
    for (method, path) in &reads {
        let view = call(&reader, method, path).await.expect(200);
        assert_eq!(view["configured"], false, "{path}: {view}");
    }
    for (method, path) in &actions {
        call(&reader, method, path)
            .await
            .expect_error(409, "conflict", path);
    }

    // An action the spec does not list is an address that does not exist.
    for path in [
        format!("/api/series/{}/memory/check", own.series),
        format!("/api/projects/{}/memory/resync", own.project),
        format!("/api/projects/{}/memory/explode", own.project),
    ] {
        admin
            .post(&path, &json!({}))
            .await
            .expect_error(404, "not_found", &path);
    }

    // The gateway checks a settings body's shape before the service is
    // asked, without echoing the values.
    let refused = admin
        .put(
            "/api/settings/memory/cleanup",
            &json!({"enabled": "sometimes"}),
        )
        .await;
    let detail = refused.expect_error(422, "invalid_payload", "a string for a boolean");
    assert_eq!(
        detail["issues"][0]["loc"],
        json!(["body", "enabled"]),
        "{detail}"
    );
    assert!(!refused.text.contains("sometimes"), "{}", refused.text);
    let refused = admin
        .put(
            "/api/settings/memory/orphans/schedule",
            &json!({"interval_hours": 24, "every": "day"}),
        )
        .await;
    let detail = refused.expect_error(422, "invalid_payload", "an unknown field");
    assert_eq!(detail["issues"][0]["type"], "extra_forbidden", "{detail}");
    let value: Value = serde_json::from_str(&refused.text).expect("JSON");
    assert!(!value.to_string().contains("\"day\""), "{value}");
}

/// A server pointed at a fresh Chroma, with the embeddings of a second
/// simulator (the server's provider simulator starts with it, so its
/// address is not known beforehand).
async fn mirrored_api(backend: Backend, chroma: &Chroma, embeddings: &Simulator) -> Api {
    Api::builder(backend)
        .env("DRAGOMAN_MEMORY_EXTERNAL_URL", &chroma.url())
        .env(
            "DRAGOMAN_MEMORY_EMBEDDINGS_URL",
            &embeddings.openai_base_url(),
        )
        .start()
        .await
}

/// A book translated to the end.
async fn translated(api: &Api, series: &str) -> Book {
    let body = api.payload(series, vec![chapter(series, 1, 3)]);
    let summary = api.submit_ok(&body).await;
    let request = summary["request_id"].as_str().expect("request_id");
    let done = api.wait_final(request, MINUTE * 2).await;
    assert_eq!(done["status"], "completed", "{done}");
    Book {
        series: summary["series_id"].as_str().expect("series_id").to_owned(),
        project: summary["project_id"]
            .as_str()
            .expect("project_id")
            .to_owned(),
    }
}

async fn with_chroma_administrators_and_owners_manage_the_mirror(backend: Backend) {
    let Some(chroma) =
        Chroma::start_or_skip("external_memory::with_chroma_administrators_and_owners").await
    else {
        return;
    };
    let embeddings = Simulator::start(&[]).await;
    let api = mirrored_api(backend, &chroma, &embeddings).await;
    let _log = ServerLog(&api);
    let admin = api.session().await;

    let status = admin.get("/api/settings/memory/status").await.expect(200);
    assert_eq!(status["configured"], true, "{status}");
    assert_eq!(status["reachable"], true, "{status}");
    assert!(status["outbox"]["pending"].is_u64(), "{status}");

    // A translated book is mirrored by the loop; its owner sees it in sync
    // and a check finds every item in Chroma.
    let book = translated(&api, "Mirrored saga").await;
    let project = format!("/api/projects/{}/memory", book.project);
    let queued = admin
        .post(&format!("{project}/synchronize"), &json!({}))
        .await
        .expect(200);
    assert_eq!(queued["action"], "synchronize", "{queued}");
    let view = eventually(MINUTE, "the volume's mirror is in sync", || async {
        let view = admin.get(&format!("{project}/status")).await.expect(200);
        (view["in_sync"] == true).then_some(view)
    })
    .await;
    assert_eq!(view["configured"], true, "{view}");
    let local = view["items"]["local"].as_u64().expect("local items");
    assert!(local > 0, "translated passages are mirrored: {view}");
    let check = admin
        .post(&format!("{project}/check"), &json!({}))
        .await
        .expect(200);
    assert_eq!(check["in_sync"], true, "{check}");
    assert_eq!(check["missing"], 0, "{check}");
    assert_eq!(check["remote"], json!(local), "{check}");

    // The other scope actions answer for the owner.
    for action in ["rebuild", "reindex"] {
        let answer = admin
            .post(&format!("{project}/{action}"), &json!({}))
            .await
            .expect(200);
        assert_eq!(answer["action"], action, "{answer}");
    }
    let series = format!("/api/series/{}/memory", book.series);
    let view = admin.get(&series).await.expect(200);
    assert_eq!(view["scope"], json!({"kind": "series", "id": book.series}));
    for action in ["resync", "rebuild", "reindex"] {
        admin
            .post(&format!("{series}/{action}"), &json!({}))
            .await
            .expect(200);
    }
    // After a rebuild the loop writes everything again.
    eventually(MINUTE, "the rebuilt volume is in sync", || async {
        let check = admin
            .post(&format!("{project}/check"), &json!({}))
            .await
            .expect(200);
        (check["in_sync"] == true).then_some(())
    })
    .await;

    // Cleanup settings: changed, checked by the memory service, reset.
    let settings = admin
        .put("/api/settings/memory/cleanup", &json!({"max_attempts": 3}))
        .await
        .expect(200);
    assert_eq!(settings["max_attempts"], 3, "{settings}");
    assert_eq!(settings["overridden"], true, "{settings}");
    assert_eq!(
        admin.get("/api/settings/memory/cleanup").await.expect(200),
        settings
    );
    let refused = admin
        .put("/api/settings/memory/cleanup", &json!({"retain_days": 0}))
        .await;
    let detail = refused.expect_error(422, "invalid_request", "retain_days 0");
    assert_eq!(
        detail["issues"][0]["loc"],
        json!(["body", "retain_days"]),
        "{detail}"
    );
    let reset = admin
        .delete("/api/settings/memory/cleanup")
        .await
        .expect(200);
    assert_eq!(reset["overridden"], false, "{reset}");
    assert_eq!(reset["max_attempts"], 8, "{reset}");

    let cleanups = admin.get("/api/settings/memory/cleanups").await.expect(200);
    assert!(cleanups["cleanups"].is_array(), "{cleanups}");
    for action in ["retry", "retire"] {
        let path = format!("/api/settings/memory/cleanups/absent/{action}");
        admin
            .post(&path, &json!({}))
            .await
            .expect_error(404, "not_found", &path);
    }

    // Orphans: nothing of this installation is an orphan.
    let scan = admin
        .post("/api/settings/memory/orphans/scan", &json!({}))
        .await
        .expect(200);
    assert_eq!(scan["orphans"], 0, "{scan}");
    let clean = admin
        .post("/api/settings/memory/orphans/clean", &json!({}))
        .await
        .expect(200);
    assert_eq!(clean["removed"], 0, "{clean}");
    let schedule = admin
        .put(
            "/api/settings/memory/orphans/schedule",
            &json!({"enabled": true, "interval_hours": 12}),
        )
        .await
        .expect(200);
    assert_eq!(
        (&schedule["enabled"], &schedule["interval_hours"]),
        (&json!(true), &json!(12)),
        "{schedule}"
    );
    assert_eq!(
        admin
            .get("/api/settings/memory/orphans/schedule")
            .await
            .expect(200)["interval_hours"],
        12
    );
    admin
        .put(
            "/api/settings/memory/orphans/schedule",
            &json!({"interval_hours": 0}),
        )
        .await
        .expect_error(422, "invalid_request", "interval_hours 0");

    let retried = admin
        .post("/api/settings/memory/outbox/retry", &json!({}))
        .await
        .expect(200);
    assert!(retried["retried"].is_u64(), "{retried}");

    // Another account reaches neither the settings nor this book.
    let reader = api.server.create_user("reader", false).await;
    let reader = Session::login(&api.server, &reader).await;
    reader
        .get("/api/settings/memory/status")
        .await
        .expect_error(403, "admin_required", "a reader reads the status");
    reader
        .post(&format!("{project}/check"), &json!({}))
        .await
        .expect_error(404, "volume_not_found", "a reader checks another's book");
}

/// Volume `number` of `series` translated to the end with
/// `context_backend` `hybrid`: its final status document.
async fn hybrid_volume(api: &Api, series: &str, number: u32) -> Value {
    let mut body = api.payload(series, vec![chapter(series, number, 3)]);
    body["volume"] = json!({"number": number});
    body["pipeline"] = json!({"context_backend": "hybrid"});
    let summary = api.submit_ok(&body).await;
    let request = summary["request_id"].as_str().expect("request_id");
    let done = api.wait_final(request, MINUTE * 2).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["memory"]["backend"], "hybrid", "{done}");
    done
}

/// Waits until the volume's mirror holds everything it should.
async fn in_sync(admin: &Session, project: &str) -> Value {
    eventually(MINUTE, "the volume's mirror is in sync", || async {
        let check = admin
            .post(&format!("/api/projects/{project}/memory/check"), &json!({}))
            .await
            .expect(200);
        (check["in_sync"] == true).then_some(check)
    })
    .await
}

/// The issue's own check: a series translated with `hybrid`, Chroma
/// stopped between volumes and started again. Chroma answers the context
/// while it runs; while it is down the database answers within the
/// deadline, the translation completes and nothing stored is lost; once it
/// is back the outbox drains by itself and the mirror holds every volume.
async fn a_hybrid_series_goes_on_while_chroma_is_down(backend: Backend) {
    let Some(mut chroma) =
        Chroma::start_or_skip("external_memory::a_hybrid_series_goes_on_while_chroma_is_down")
            .await
    else {
        return;
    };
    let embeddings = Simulator::start(&[]).await;
    let api = mirrored_api(backend, &chroma, &embeddings).await;
    let _log = ServerLog(&api);
    let admin = api.session().await;

    let first = hybrid_volume(&api, "Hybrid saga", 1).await;
    assert_eq!(first["memory"]["answered_by"], "external", "{first}");
    assert_eq!(first["memory"]["fallbacks"], 0, "{first}");
    let first_project = first["project_id"].as_str().expect("project_id").to_owned();
    in_sync(&admin, &first_project).await;

    // With the first volume mirrored, the second one's context comes from
    // Chroma: the embeddings endpoint was asked for it.
    let second = hybrid_volume(&api, "Hybrid saga", 2).await;
    assert_eq!(second["memory"]["answered_by"], "external", "{second}");
    assert!(
        second["memory"]["external_batches"].as_u64().unwrap_or(0) > 0,
        "{second}"
    );

    chroma.stop().await;
    let down = admin.get("/api/settings/memory/status").await.expect(200);
    assert_eq!(down["reachable"], false, "{down}");

    // Chroma is down: the third volume completes, its batches answered by
    // the database, and the status document says so.
    let third = hybrid_volume(&api, "Hybrid saga", 3).await;
    assert_eq!(third["memory"]["answered_by"], "internal", "{third}");
    assert!(
        third["memory"]["fallbacks"].as_u64().unwrap_or(0) > 0,
        "{third}"
    );
    assert!(
        third["memory"]["note"]
            .as_str()
            .is_some_and(|note| note.contains("internal memory answered")),
        "{third}"
    );
    let third_project = third["project_id"].as_str().expect("project_id").to_owned();
    let waiting = admin.get("/api/settings/memory/status").await.expect(200);
    assert!(
        waiting["outbox"]["pending"].as_u64().unwrap_or(0) > 0,
        "the third volume's changes wait for Chroma: {waiting}"
    );
    // What was stored before stays: the first volume's result is whole.
    let request = first["request_id"].as_str().expect("request_id");
    api.result(request, "").await.expect(200);

    // Back up: the outbox drains by itself and every volume is mirrored.
    chroma.restart().await;
    let check = in_sync(&admin, &third_project).await;
    assert_eq!(check["missing"], 0, "{check}");
    let check = in_sync(&admin, &first_project).await;
    assert_eq!(check["extra"], 0, "{check}");
    let drained = eventually(MINUTE, "the outbox is drained", || async {
        let status = admin.get("/api/settings/memory/status").await.expect(200);
        (status["outbox"]["pending"] == 0).then_some(status)
    })
    .await;
    assert_eq!(drained["reachable"], true, "{drained}");
}
