//! The provider's batch mode as users choose, see and pay for it:
//! `pipeline.batch` in JSON and the `batch` upload field are echoed in the
//! status document's options (a non-boolean is refused 422); the estimate
//! says which mode it counted and costs about half in batch mode; a book's
//! default (`configure_book`) applies when the request says nothing; a
//! provider's batch discount is set when it is added and refused outside
//! 0 to below 1. `GET /api/projects/{pid}/batch` is null before any batch
//! and 404 for another account's book; the reconcile route refuses
//! `confirm` unless it is the JSON boolean `true`, a key the job never
//! used (409), and a remote id the provider does not know (502).

use dragoman_e2e::books::file_part;
use dragoman_e2e::mcp::call;
use dragoman_e2e::translation::chapter;
use dragoman_e2e::{Api, Backend, Session, on_both_backends};
use sea_orm::{ConnectionTrait, Statement};
use serde_json::{Value, json};
use std::time::Duration;

on_both_backends!(
    batch_is_chosen_echoed_and_estimated_at_the_discount,
    the_batch_summary_and_its_reconcile_answer_only_their_owner
);

const MINUTE: Duration = Duration::from_secs(60);

fn text(value: &Value, field: &str) -> String {
    value[field]
        .as_str()
        .unwrap_or_else(|| panic!("{field} in {value}"))
        .to_owned()
}

/// The location of the first issue of a 422.
fn first_loc(detail: &Value) -> Value {
    detail["issues"][0]["loc"].clone()
}

/// `estimate_job` on `book`, with `batch` unless it is null.
async fn estimate(api: &Api, book: &str, batch: Value) -> Value {
    let mut arguments = json!({"book_id": book});
    if !batch.is_null() {
        arguments["batch"] = batch;
    }
    call(&api.server, &api.token, "estimate_job", arguments)
        .await
        .value("estimate_job")
}

async fn batch_is_chosen_echoed_and_estimated_at_the_discount(backend: Backend) {
    let api = Api::start(backend).await;

    // JSON: a boolean only, echoed in the options.
    let mut body = api.payload("Batch Json", vec![chapter("Batch", 1, 3)]);
    body["pipeline"] = json!({"batch": "yes", "start": false});
    let detail = api.submit(&body, None).await.expect_error(
        422,
        "invalid_payload",
        "a batch that is not a boolean",
    );
    assert_eq!(
        first_loc(&detail),
        json!(["body", "pipeline", "batch"]),
        "{detail}"
    );
    body["pipeline"] = json!({"batch": true, "start": false});
    let imported = api.submit_ok(&body).await;
    let doc = api.status(&text(&imported, "request_id")).await;
    assert_eq!(doc["status"], "imported", "{doc}");
    assert_eq!(doc["options"]["batch"], true, "{doc}");
    let book = text(&imported, "project_id");

    // Without a choice: the server's default, false.
    let mut plain = api.payload("Batch Plain", vec![chapter("Plain", 1, 2)]);
    plain["pipeline"] = json!({"start": false});
    let plain = api.submit_ok(&plain).await;
    let doc = api.status(&text(&plain, "request_id")).await;
    assert_eq!(doc["options"]["batch"], false, "{doc}");

    // The upload field, then a value that is not a boolean.
    let fields = [
        ("series", "Batch Upload"),
        ("volume", "1"),
        ("source_language", "en"),
        ("start", "false"),
    ];
    let txt = || file_part("001.txt", b"One.\n\nTwo.".to_vec());
    let uploaded = api
        .upload(api.form(&fields).text("batch", "true").part("files", txt()))
        .await
        .expect(202);
    let doc = api.status(&text(&uploaded, "request_id")).await;
    assert_eq!(doc["options"]["batch"], true, "{doc}");
    let detail = api
        .upload(
            api.form(&fields)
                .text("batch", "maybe")
                .part("files", txt()),
        )
        .await
        .expect_error(
            422,
            "invalid_payload",
            "an upload batch that is not a boolean",
        );
    assert_eq!(first_loc(&detail), json!(["body", "batch"]), "{detail}");

    // The estimate says its mode and costs about half by batch.
    let full = estimate(&api, &book, json!(false)).await;
    let half = estimate(&api, &book, json!(true)).await;
    assert_eq!(full["batch"], false, "{full}");
    assert_eq!(half["batch"], true, "{half}");
    let (full_cost, half_cost) = (
        full["cost"]["expected"].as_f64().expect("priced"),
        half["cost"]["expected"].as_f64().expect("priced"),
    );
    assert!(
        (half_cost - full_cost * 0.5).abs() <= full_cost * 1e-9,
        "{full} / {half}"
    );
    assert_eq!(half["calls"], full["calls"]);
    // The book's own default applies when the request says nothing.
    assert_eq!(estimate(&api, &book, Value::Null).await["batch"], false);
    let configured = call(
        &api.server,
        &api.token,
        "configure_book",
        json!({"book_id": book, "batch": true}),
    )
    .await
    .value("configure_book");
    assert_eq!(configured["batch"], true, "{configured}");
    assert_eq!(estimate(&api, &book, Value::Null).await["batch"], true);

    // A provider's discount: stored when added, refused out of range.
    let owner = api.session().await;
    let provider = |name: &str, discount: Value| {
        json!({"name": name, "kind": "anthropic", "model": "m",
               "price_input": 3.0, "price_output": 15.0, "batch_discount": discount})
    };
    let added = owner
        .post("/api/providers", &provider("cheap-batch", json!(0.4)))
        .await
        .expect(201);
    assert_eq!(added["batch_discount"], 0.4, "{added}");
    for wrong in [json!(1.0), json!(-0.1)] {
        let detail = owner
            .post("/api/providers", &provider("wrong-batch", wrong))
            .await
            .expect_error(422, "invalid_payload", "a discount out of range");
        assert_eq!(
            first_loc(&detail),
            json!(["body", "batch_discount"]),
            "{detail}"
        );
    }
    let listed = owner.get("/api/providers").await.expect(200);
    let sim = listed
        .as_array()
        .expect("providers")
        .iter()
        .find(|p| p["name"] == "sim")
        .cloned()
        .expect("the simulator");
    assert_eq!(sim["batch_discount"], 0.5, "the default: {sim}");
}

/// Writes down a batch of `job_id` left `unknown` under `key`, as a worker
/// does when it cannot verify a creation.
async fn unknown_batch(api: &Api, doc: &Value, key: &str) {
    let db = api.server.installation.sql().await;
    let postgres = db.get_database_backend() == sea_orm::DbBackend::Postgres;
    let sql = if postgres {
        "INSERT INTO provider_batches (id, job_id, request_id, project_id, provider_id, stage, \
         submission_key, state, remote_id, input_file_id, items, done, failed, submitted_at, \
         expected_by, next_poll_at, polls, applied_at, last_error, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, 'translation', $6, 'unknown', NULL, NULL, 2, 0, 0, NULL, \
         NULL, NULL, 0, NULL, 'acceptance could not be verified', 1, 1)"
    } else {
        "INSERT INTO provider_batches (id, job_id, request_id, project_id, provider_id, stage, \
         submission_key, state, remote_id, input_file_id, items, done, failed, submitted_at, \
         expected_by, next_poll_at, polls, applied_at, last_error, created_at, updated_at) \
         VALUES (?, ?, ?, ?, ?, 'translation', ?, 'unknown', NULL, NULL, 2, 0, 0, NULL, NULL, \
         NULL, 0, NULL, 'acceptance could not be verified', 1, 1)"
    };
    db.execute_raw(Statement::from_sql_and_values(
        db.get_database_backend(),
        sql,
        [
            format!("row-{key}").into(),
            text(doc, "job_id").into(),
            text(doc, "request_id").into(),
            text(doc, "project_id").into(),
            api.provider_id.clone().into(),
            key.into(),
        ],
    ))
    .await
    .expect("batch row");
}

async fn reconcile(session: &Session, doc: &Value, body: &Value) -> dragoman_e2e::Answer {
    session
        .post(
            &format!(
                "/api/projects/{}/jobs/{}/batch/reconcile",
                text(doc, "project_id"),
                text(doc, "job_id")
            ),
            body,
        )
        .await
}

async fn the_batch_summary_and_its_reconcile_answer_only_their_owner(backend: Backend) {
    let api = Api::start(backend).await;
    let owner = api.session().await;
    let body = api.payload("Reconciled", vec![chapter("Reconciled", 1, 2)]);
    let submitted = api.submit_ok(&body).await;
    let doc = api
        .wait_final(&text(&submitted, "request_id"), MINUTE)
        .await;
    assert_eq!(doc["status"], "completed", "{doc}");
    let book = text(&doc, "project_id");
    let path = format!("/api/projects/{book}/batch");

    // A job that went by ordinary calls has no batch.
    assert_eq!(owner.get(&path).await.expect(200), Value::Null);
    let other = api.server.create_user("stranger", false).await;
    let stranger = Session::login(&api.server, &other).await;
    stranger
        .get(&path)
        .await
        .expect_error(404, "volume_not_found", "another account's book");

    let key = format!("dragoman-{}-1", text(&doc, "job_id"));
    unknown_batch(&api, &doc, &key).await;
    let summary = owner.get(&path).await.expect(200);
    assert_eq!(summary["state"], "unknown", "{summary}");
    assert_eq!(summary["submission_key"], key.as_str(), "{summary}");
    assert_eq!(summary["remote_id"], Value::Null, "{summary}");
    assert_eq!(summary["items"], 2, "{summary}");
    assert_eq!(summary["job_id"], doc["job_id"], "{summary}");

    // `confirm` is the JSON boolean true, nothing else.
    for confirm in [json!("true"), json!(1), json!(false), Value::Null] {
        let mut ask = json!({"remote_id": "batch_x", "submission_key": key});
        if !confirm.is_null() {
            ask["confirm"] = confirm.clone();
        }
        let detail = reconcile(&owner, &doc, &ask).await.expect_error(
            422,
            "invalid_payload",
            &format!("confirm {confirm}"),
        );
        assert_eq!(first_loc(&detail), json!(["body", "confirm"]), "{detail}");
    }
    let detail = reconcile(
        &owner,
        &doc,
        &json!({"remote_id": "batch_x", "submission_key": "dragoman-other-1", "confirm": true}),
    )
    .await
    .expect_error(409, "conflict", "a key the job never used");
    assert_eq!(detail["reason"], "batch_foreign", "{detail}");
    let detail = reconcile(
        &owner,
        &doc,
        &json!({"remote_id": "batch_nobody_knows", "submission_key": key, "confirm": true}),
    )
    .await
    .expect_error(
        502,
        "provider_unavailable",
        "a remote id the provider does not know",
    );
    assert_eq!(detail["reason"], "batch_unverified", "{detail}");
    reconcile(
        &stranger,
        &doc,
        &json!({"remote_id": "batch_x", "submission_key": key, "confirm": true}),
    )
    .await
    .expect_error(404, "volume_not_found", "another account's reconcile");
    // Nothing was adopted.
    let summary = owner.get(&path).await.expect(200);
    assert_eq!(summary["state"], "unknown", "{summary}");
    assert_eq!(summary["remote_id"], Value::Null, "{summary}");
}
