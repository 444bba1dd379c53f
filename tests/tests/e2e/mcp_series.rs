//! The series tools over `POST /mcp` (spec 4.10): a series is created,
//! changed only in the fields given, given books by number and by label
//! (never both), read for disagreements, driven by `control_series` (whose
//! `start` needs `pipeline:start`), and deleted only once empty and with
//! `confirm` true. One table checks that `control_series` and the REST
//! route `POST /api/v1/series/{id}/jobs/{action}` answer the same in the
//! same situations; a volume refused in a series action answers a spec
//! code with its reason on both.

use dragoman_e2e::client::send;
use dragoman_e2e::mcp::{ToolAnswer, call};
use dragoman_e2e::translation::chapter;
use dragoman_e2e::{Answer, Api, Backend, on_both_backends};
use serde_json::{Value, json};
use std::time::Duration;

on_both_backends!(
    series_tools_change_the_library,
    control_series_answers_as_the_rest_route
);

const MINUTE: Duration = Duration::from_secs(60);

/// Every scope but `pipeline:start`.
const NO_START: [&str; 9] = [
    "series:read",
    "content:write",
    "jobs:read",
    "jobs:control",
    "results:read",
    "narrative:read",
    "library:read",
    "library:write",
    "library:delete",
];

/// The library scopes without `jobs:control`.
const NO_CONTROL: [&str; 4] = [
    "library:read",
    "library:write",
    "library:delete",
    "pipeline:start",
];

/// Imports volume `number` of series `series` without starting it:
/// (book id, series id).
async fn imported(api: &Api, series: &str, number: u32, tag: &str) -> (String, String) {
    let mut body = api.payload(series, vec![chapter(tag, 1, 3)]);
    body["volume"] = json!({"number": number});
    body["pipeline"] = json!({"start": false});
    let summary = api.submit_ok(&body).await;
    (
        summary["project_id"].as_str().expect("project").to_owned(),
        summary["series_id"].as_str().expect("series").to_owned(),
    )
}

async fn tool(api: &Api, token: &str, name: &str, arguments: Value) -> ToolAnswer {
    call(&api.server, token, name, arguments).await
}

fn book_ids(detail: &Value) -> Vec<String> {
    detail["volume_list"]
        .as_array()
        .expect("volume_list")
        .iter()
        .map(|v| v["project_id"].as_str().expect("id").to_owned())
        .collect()
}

async fn series_tools_change_the_library(backend: Backend) {
    let api = Api::start(backend).await;
    let token = api.token.clone();
    let (first, source) = imported(&api, "Source", 1, "first").await;
    let (second, _) = imported(&api, "Source", 2, "second").await;

    // Creation.
    let created = tool(
        &api,
        &token,
        "create_series",
        json!({"name": " Target ", "source_language": "en", "target_language": "fr",
               "default_provider": "sim"}),
    )
    .await
    .value("create_series");
    assert_eq!(created["name"], "Target", "{created}");
    assert_eq!(created["kind"], "numbered", "{created}");
    assert_eq!(created["volumes"], 0, "{created}");
    assert_eq!(created["volume_list"], json!([]), "{created}");
    let target = created["id"].as_str().expect("id").to_owned();
    tool(&api, &token, "create_series", json!({"name": "Target"}))
        .await
        .refused("conflict", "a name taken");
    tool(&api, &token, "create_series", json!({"name": "  "}))
        .await
        .refused("invalid_name", "a blank name");
    tool(
        &api,
        &token,
        "create_series",
        json!({"name": "X", "default_provider": "nobody"}),
    )
    .await
    .refused("unknown_provider", "an unknown provider");
    tool(
        &api,
        &token,
        "create_series",
        json!({"name": "X", "colour": "red"}),
    )
    .await
    .refused("invalid_payload", "an unknown field");

    // Only the fields given change.
    let renamed = tool(
        &api,
        &token,
        "update_series",
        json!({"series_id": target, "name": "Target II"}),
    )
    .await
    .value("rename");
    assert_eq!(renamed["name"], "Target II", "{renamed}");
    assert_eq!(renamed["source_language"], "en", "{renamed}");
    assert_eq!(renamed["archived"], false, "{renamed}");
    let archived = tool(
        &api,
        &token,
        "update_series",
        json!({"series_id": target, "archived": true}),
    )
    .await
    .value("archive");
    assert_eq!(
        (archived["name"].clone(), archived["archived"].clone()),
        (json!("Target II"), json!(true)),
        "{archived}"
    );
    tool(
        &api,
        &token,
        "attach_volume",
        json!({"book_id": first, "series_id": target, "volume_number": 1}),
    )
    .await
    .refused("series_archived", "an archived series takes no book");
    let reopened = tool(
        &api,
        &token,
        "update_series",
        json!({"series_id": target, "archived": false, "kind": "continuous"}),
    )
    .await
    .value("reopen");
    assert_eq!(reopened["archived"], false, "{reopened}");
    assert_eq!(reopened["kind"], "continuous", "{reopened}");
    assert_eq!(reopened["name"], "Target II", "{reopened}");

    // Books by number and by label; both, or a place taken, refused.
    let by_number = tool(
        &api,
        &token,
        "attach_volume",
        json!({"book_id": first, "series_id": target, "volume_number": 2}),
    )
    .await
    .value("by number");
    assert_eq!(book_ids(&by_number), [first.as_str()], "{by_number}");
    assert_eq!(by_number["volume_list"][0]["volume_number"], 2);
    let both = tool(
        &api,
        &token,
        "attach_volume",
        json!({"book_id": second, "series_id": target, "volume_number": 3,
               "volume_label": "Vol. 0.5"}),
    )
    .await
    .refused("invalid_request", "both places");
    assert_eq!(
        both["issues"][0]["loc"],
        json!(["arguments", "volume_label"]),
        "{both}"
    );
    tool(
        &api,
        &token,
        "attach_volume",
        json!({"book_id": second, "series_id": target}),
    )
    .await
    .refused("invalid_request", "no place");
    tool(
        &api,
        &token,
        "attach_volume",
        json!({"book_id": second, "series_id": target, "volume_number": 2}),
    )
    .await
    .refused("volume_conflict", "a place taken");
    let by_label = tool(
        &api,
        &token,
        "attach_volume",
        json!({"book_id": second, "series_id": target, "volume_label": "Vol. 0.5"}),
    )
    .await
    .value("by label");
    assert_eq!(
        book_ids(&by_label),
        [second.as_str(), first.as_str()],
        "reading order: {by_label}"
    );
    assert_eq!(by_label["volume_list"][0]["volume_label"], "Vol. 0.5");
    tool(
        &api,
        &token,
        "attach_volume",
        json!({"book_id": "no-such-book", "series_id": target, "volume_number": 9}),
    )
    .await
    .refused("volume_not_found", "an unknown book");

    // Where the volumes disagree: nothing translated yet.
    let report = tool(
        &api,
        &token,
        "series_consistency",
        json!({"series_id": target}),
    )
    .await
    .value("consistency");
    assert_eq!(report["series_id"], json!(target), "{report}");
    assert_eq!(report["volumes"]["total"], 2, "{report}");
    assert_eq!(report["terms"]["total"], 0, "{report}");
    assert_eq!(report["unfollowed"]["total"], 0, "{report}");
    tool(
        &api,
        &token,
        "series_consistency",
        json!({"series_id": "no-such-series"}),
    )
    .await
    .refused("series_not_found", "an unknown series");

    // Whole-series actions.
    let session = api.session().await;
    let no_start = session.token("no-start", &NO_START).await.token;
    let refused = tool(
        &api,
        &no_start,
        "control_series",
        json!({"series_id": target, "action": "start"}),
    )
    .await
    .refused("insufficient_scope", "start without pipeline:start");
    assert_eq!(refused["scope"], "pipeline:start", "{refused}");
    let no_control = session.token("no-control", &NO_CONTROL).await.token;
    let refused = tool(
        &api,
        &no_control,
        "control_series",
        json!({"series_id": target, "action": "pause"}),
    )
    .await
    .refused("insufficient_scope", "pause without jobs:control");
    assert_eq!(refused["scope"], "jobs:control", "{refused}");
    tool(
        &api,
        &token,
        "control_series",
        json!({"series_id": target, "action": "stop"}),
    )
    .await
    .refused("invalid_payload", "an unknown action");

    let started = tool(
        &api,
        &token,
        "control_series",
        json!({"series_id": target, "action": "start"}),
    )
    .await
    .value("start");
    assert_eq!(started["action"], "start", "{started}");
    assert_eq!(started["done"], 2, "{started}");
    let requests: Vec<String> = started["volumes"]
        .as_array()
        .expect("volumes")
        .iter()
        .map(|v| v["request_id"].as_str().expect("request").to_owned())
        .collect();
    let paused = tool(
        &api,
        &token,
        "control_series",
        json!({"series_id": target, "action": "pause"}),
    )
    .await
    .value("pause");
    assert_eq!(paused["suspended"], true, "{paused}");
    let resumed = tool(
        &api,
        &token,
        "control_series",
        json!({"series_id": target, "action": "resume"}),
    )
    .await
    .value("resume");
    assert_eq!(resumed["suspended"], false, "{resumed}");
    let cancelled = tool(
        &api,
        &token,
        "control_series",
        json!({"series_id": target, "action": "cancel"}),
    )
    .await
    .value("cancel");
    assert_eq!(cancelled["action"], "cancel", "{cancelled}");
    for id in &requests {
        let done = api.wait_final(id, MINUTE).await;
        assert!(
            ["completed", "completed_with_residuals", "cancelled"]
                .contains(&done["status"].as_str().unwrap_or_default()),
            "{done}"
        );
    }

    // Deleting: refused while volumes remain, and without a true confirm.
    let refused = tool(
        &api,
        &token,
        "delete_series",
        json!({"series_id": target, "confirm": true}),
    )
    .await
    .refused("conflict", "a series with volumes");
    assert_eq!(refused["reason"], "has_volumes", "{refused}");
    tool(&api, &token, "delete_series", json!({"series_id": source}))
        .await
        .refused("invalid_request", "no confirm");
    tool(
        &api,
        &token,
        "delete_series",
        json!({"series_id": source, "confirm": "true"}),
    )
    .await
    .refused("invalid_payload", "a string never confirms");
    let no_delete = session.token("no-delete", &["library:write"]).await.token;
    tool(
        &api,
        &no_delete,
        "delete_series",
        json!({"series_id": source, "confirm": true}),
    )
    .await
    .refused("insufficient_scope", "delete without library:delete");
    let deleted = tool(
        &api,
        &token,
        "delete_series",
        json!({"series_id": source, "confirm": true}),
    )
    .await
    .value("delete");
    assert_eq!(deleted, json!({"deleted": source}));
    tool(&api, &token, "get_series", json!({"series_id": source}))
        .await
        .refused("series_not_found", "a deleted series");
    api.get(&format!("/api/v1/series/{source}"))
        .await
        .expect_error(404, "series_not_found", "deleted, over REST");
}

/// A refusal's detail without its message (REST answers in the caller's
/// language, tools in English) and reference.
fn comparable(detail: &Value) -> Value {
    let mut detail = detail.clone();
    if let Some(map) = detail.as_object_mut() {
        map.remove("message");
        map.remove("reference");
    }
    detail
}

/// What the REST route answered, in the shape of a tool's answer.
fn as_tool(answer: &Answer) -> Result<Value, Value> {
    if answer.status.as_u16() == 200 {
        Ok(answer.json())
    } else {
        Err(comparable(&answer.json()["detail"]))
    }
}

async fn rest_action(api: &Api, token: &str, series: &str, action: &str, resume: bool) -> Answer {
    let query = if resume { "?resume_if_paused=true" } else { "" };
    send(
        api.server
            .client()
            .post(
                api.server
                    .url(&format!("/api/v1/series/{series}/jobs/{action}{query}")),
            )
            .bearer_auth(token),
    )
    .await
}

async fn control_series_answers_as_the_rest_route(backend: Backend) {
    let api = Api::start(backend).await;
    let (_, series) = imported(&api, "Table", 1, "table").await;
    let session = api.session().await;
    let no_start = session.token("no-start", &NO_START).await.token;
    let no_control = session.token("no-control", &NO_CONTROL).await.token;
    let full = api.token.clone();

    // Each situation is asked of both surfaces, REST first; every row
    // leaves the series as the tool found it (pause and resume repeat
    // the same state, refusals change nothing).
    struct Row<'a> {
        situation: &'a str,
        token: &'a str,
        series: &'a str,
        action: &'a str,
        resume_if_paused: bool,
        /// The code of the refusal both give, or none for a report.
        refused: Option<&'a str>,
    }
    let unknown = "no-such-series";
    let rows = [
        Row {
            situation: "an unknown series",
            token: &full,
            series: unknown,
            action: "pause",
            resume_if_paused: false,
            refused: Some("series_not_found"),
        },
        Row {
            situation: "start without pipeline:start",
            token: &no_start,
            series: &series,
            action: "start",
            resume_if_paused: false,
            refused: Some("insufficient_scope"),
        },
        Row {
            situation: "pause without jobs:control",
            token: &no_control,
            series: &series,
            action: "pause",
            resume_if_paused: false,
            refused: Some("insufficient_scope"),
        },
        Row {
            situation: "pause with nothing running",
            token: &full,
            series: &series,
            action: "pause",
            resume_if_paused: false,
            refused: None,
        },
        Row {
            situation: "start on a suspended series",
            token: &full,
            series: &series,
            action: "start",
            resume_if_paused: false,
            refused: Some("conflict"),
        },
        Row {
            situation: "resume a suspended series",
            token: &full,
            series: &series,
            action: "resume",
            resume_if_paused: false,
            refused: None,
        },
        Row {
            situation: "cancel with nothing waiting",
            token: &full,
            series: &series,
            action: "cancel",
            resume_if_paused: false,
            refused: None,
        },
    ];
    for row in &rows {
        let rest = as_tool(
            &rest_action(
                &api,
                row.token,
                row.series,
                row.action,
                row.resume_if_paused,
            )
            .await,
        );
        let mut arguments = json!({"series_id": row.series, "action": row.action});
        if row.resume_if_paused {
            arguments["resume_if_paused"] = json!(true);
        }
        let tool = match tool(&api, row.token, "control_series", arguments).await {
            ToolAnswer::Value(value) => Ok(value),
            ToolAnswer::Refused(detail) => Err(comparable(&detail)),
        };
        assert_eq!(rest, tool, "{}", row.situation);
        match (row.refused, &tool) {
            (Some(code), Err(detail)) => assert_eq!(detail["code"], code, "{}", row.situation),
            (None, Ok(_)) => {}
            _ => panic!("{}: unexpected {tool:?}", row.situation),
        }
    }

    // An archived series refuses a start alike.
    tool(
        &api,
        &full,
        "update_series",
        json!({"series_id": series, "archived": true}),
    )
    .await
    .value("archive");
    let rest = as_tool(&rest_action(&api, &full, &series, "start", false).await);
    let by_tool = match tool(
        &api,
        &full,
        "control_series",
        json!({"series_id": series, "action": "start"}),
    )
    .await
    {
        ToolAnswer::Value(value) => Ok(value),
        ToolAnswer::Refused(detail) => Err(comparable(&detail)),
    };
    assert_eq!(rest, by_tool, "start on an archived series");
    assert_eq!(
        by_tool.expect_err("refused")["code"],
        "series_archived",
        "start on an archived series"
    );
}

/// Every per-volume `code` of a series report is one of spec section 7.
fn codes_are_the_specs(report: &Value) {
    let Some(spec_codes) = dragoman_testing::env::spec_error_codes() else {
        return;
    };
    for volume in report["volumes"].as_array().expect("volumes") {
        if let Some(code) = volume["code"].as_str() {
            assert!(spec_codes.iter().any(|c| c == code), "{code}: {report}");
        }
    }
}

#[tokio::test]
async fn a_refused_volume_answers_a_spec_code_and_its_reason_on_both_surfaces() {
    let api = Api::builder(Backend::Sqlite)
        .simulator(&["--latency-ms", "300"])
        .start()
        .await;
    let summary = api
        .submit_ok(&api.payload("Others", vec![chapter("own", 1, 6)]))
        .await;
    let series = summary["series_id"].as_str().expect("series").to_owned();
    let paused = rest_action(&api, &api.token, &series, "pause", false).await;
    let paused = paused.expect(200);
    assert_eq!(paused["volumes"][0]["changed_jobs"], 1, "{paused}");
    codes_are_the_specs(&paused);

    // Another token of the account resumes the series: the suspension
    // goes, the job another token started stays paused.
    let other = api
        .session()
        .await
        .token("other", &dragoman_e2e::SCOPES)
        .await
        .token;
    let rest = rest_action(&api, &other, &series, "resume", false)
        .await
        .expect(200);
    assert_eq!(rest["suspended"], false, "{rest}");
    let volume = &rest["volumes"][0];
    assert_eq!(
        (&volume["code"], &volume["reason"], &volume["done"]),
        (&json!("conflict"), &json!("not_own_job"), &json!(false)),
        "{rest}"
    );
    assert!(volume["message"].as_str().is_some_and(|m| !m.is_empty()));
    assert_eq!(rest["refused"], 1, "{rest}");
    codes_are_the_specs(&rest);
    // The tool answers the same.
    let by_tool = tool(
        &api,
        &other,
        "control_series",
        json!({"series_id": series, "action": "resume"}),
    )
    .await
    .value("resume by another token");
    assert_eq!(by_tool, rest);

    // Its own token resumes it: no code, no reason.
    let own = rest_action(&api, &api.token, &series, "resume", false)
        .await
        .expect(200);
    let volume = &own["volumes"][0];
    assert_eq!(
        (&volume["code"], &volume["reason"], &volume["done"]),
        (&Value::Null, &Value::Null, &json!(true)),
        "{own}"
    );
    codes_are_the_specs(&own);
    rest_action(&api, &api.token, &series, "cancel", false)
        .await
        .expect(200);
}
