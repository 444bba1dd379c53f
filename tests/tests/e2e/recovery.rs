//! A translation request through provider faults and a crash (issue #3):
//! with the simulator failing a fifth of the calls in every way it knows,
//! every request still ends, residuals keep their source text and are
//! reported with a reason, and usage counts every call the provider saw;
//! after SIGKILL of the server in the middle of a job, a new process on the
//! same installation finishes it without sending a translated passage again.

use crate::requests::{RESIDUAL, check_json_result, check_report, check_types};
use dragoman_e2e::translation::{chapter_from, paragraphs};
use dragoman_e2e::{Api, Backend, on_both_backends};
use sea_orm::{ConnectionTrait, Statement};
use serde_json::Value;
use std::time::Duration;

on_both_backends!(sigkill_resumes_without_resending);

#[tokio::test]
async fn faults_end_with_reported_residuals() {
    let api = Api::builder(Backend::Sqlite)
        .env("DRAGOMAN_PROVIDER_TIMEOUT_SECONDS", "2")
        .env("DRAGOMAN_PROVIDER_RETRY_MAX_SECONDS", "1")
        .env("DRAGOMAN_PROVIDER_MAX_ATTEMPTS", "2")
        .env("DRAGOMAN_WORKERS", "3")
        // One passage per call: every passage meets the faults on its own.
        .env("DRAGOMAN_BATCH_TOKENS", "1")
        .simulator(&[
            "--seed",
            "20240601",
            "--retry-after-secs",
            "1",
            "--rate-429",
            "0.2",
            "--rate-500",
            "0.2",
            "--rate-hang",
            "0.2",
            "--rate-malformed",
            "0.2",
            "--rate-truncated",
            "0.2",
            "--rate-drop-placeholder",
            "0.2",
            "--rate-refusal",
            "0.2",
        ])
        .start()
        .await;
    // Three requests of four chapters (three passages each), on three series
    // so that they run side by side.
    let mut sources: Vec<Vec<Vec<String>>> = Vec::new();
    let mut ids = Vec::new();
    for r in 1..=3 {
        let tag = format!("Fault{r}");
        let texts: Vec<Vec<String>> = (1..=4).map(|n| paragraphs(&tag, n, 3)).collect();
        let chapters = texts
            .iter()
            .zip(1..)
            .map(|(p, n)| chapter_from(n, p))
            .collect();
        let body = api.payload(&format!("Faulty {r}"), chapters);
        let summary = api.submit_ok(&body).await;
        ids.push(summary["request_id"].as_str().expect("id").to_owned());
        sources.push(texts);
    }
    let mut calls = 0;
    let mut residual_total = 0;
    for (id, texts) in ids.iter().zip(&sources) {
        let doc = api.wait_final(id, Duration::from_secs(120)).await;
        let status = doc["status"].as_str().unwrap_or("");
        let report = &doc["report"];
        check_report(report);
        let residuals = report["residuals"].as_array().expect("residuals");
        let total = report["residual_total"].as_u64().expect("residual_total");
        assert_eq!(total, residuals.len() as u64, "{report}");
        assert_eq!(
            status,
            if total > 0 {
                "completed_with_residuals"
            } else {
                "completed"
            },
            "{doc}"
        );
        assert_eq!(report["outcome"], status);
        let passages = &report["passages"];
        assert_eq!(passages["total"], 12);
        assert_eq!(
            passages["translated"].as_u64().map(|t| t + total),
            Some(12),
            "{passages}"
        );
        residual_total += total;
        calls += report["usage"]["calls"].as_u64().expect("calls");

        let answer = api.result(id, "format=json").await;
        let result = answer.expect(200);
        check_json_result(&result);
        assert_eq!(
            answer.header("x-service-complete"),
            Some(if total > 0 { "false" } else { "true" })
        );
        assert_eq!(answer.header("x-service-status"), Some(status));
        let txt = api.result(id, "format=txt").await;
        assert_eq!(txt.status, 200, "{}", txt.text);
        for residual in residuals {
            check_types("residual", residual, RESIDUAL);
            assert!(
                residual["reason"].as_str().is_some_and(|r| !r.is_empty()),
                "{residual}"
            );
            assert_eq!(residual["kept"], "source");
            let external = residual["chapter_external_id"].as_str().expect("ext id");
            let number: usize = external.trim_start_matches("ch-").parse().expect("ch-<n>");
            let position = residual["position"].as_u64().expect("position") as usize;
            let source = &texts[number - 1][position - 1];
            let chapter = result["chapters"]
                .as_array()
                .expect("chapters")
                .iter()
                .find(|c| c["external_id"] == external)
                .expect("chapter of the residual");
            let kept: Vec<&str> = chapter["translation"]
                .as_str()
                .expect("translation")
                .split("\n\n")
                .collect();
            assert_eq!(kept[position - 1], source, "JSON keeps the source text");
            assert!(chapter["missing_segments"].as_u64() > Some(0));
            assert!(
                txt.text.contains(source.as_str()),
                "TXT keeps the source text of {residual}"
            );
        }
    }
    let stats = api.simulator.stats().await;
    let faults: u64 = [
        "rate_limited",
        "server_errors",
        "hangs",
        "malformed",
        "truncated",
        "refusals",
    ]
    .iter()
    .map(|k| stats[*k].as_u64().unwrap_or(0))
    .sum();
    assert!(faults > 0, "no fault was served: {stats}");
    assert!(residual_total > 0, "no residual at all: {stats}");
    assert_eq!(
        calls,
        stats["requests"].as_u64().expect("requests"),
        "usage.calls of the three requests vs calls the provider received: {stats}"
    );
}

async fn count(api: &Api, sql: &str) -> u64 {
    let db = api.server.installation.sql().await;
    let statement = Statement::from_string(db.get_database_backend(), sql.to_owned());
    let row = db
        .query_one_raw(statement)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .expect("one row");
    let n: i64 = row.try_get_by_index(0).expect("a count");
    let _ = db.close().await;
    u64::try_from(n).expect("a count is not negative")
}

async fn sigkill_resumes_without_resending(backend: Backend) {
    let mut api = Api::builder(backend)
        .env("DRAGOMAN_WORKERS", "1")
        .env("DRAGOMAN_LEASE_SECONDS", "3")
        // One passage per call: calls count the passages sent.
        .env("DRAGOMAN_BATCH_TOKENS", "1")
        .simulator(&["--latency-ms", "400"])
        .start()
        .await;
    let chapters: Vec<Value> = (1..=4)
        .map(|n| chapter_from(n, &paragraphs("Crash", n, 10)))
        .collect();
    let mut body = api.payload("Crash", chapters);
    body["pipeline"] = serde_json::json!({"threads": 2});
    let id = api.submit_ok(&body).await["request_id"]
        .as_str()
        .expect("id")
        .to_owned();
    api.wait_until(&id, Duration::from_secs(60), "passages translated", |d| {
        d["progress"]["translated"].as_u64() >= Some(4)
    })
    .await;

    api.server.kill().await;
    let translated_at_kill = count(
        &api,
        "SELECT COUNT(*) FROM passages WHERE translation IS NOT NULL",
    )
    .await;
    let sent_at_kill = api.simulator.requests().await;
    assert!(
        (4..40).contains(&translated_at_kill),
        "killed too late: {translated_at_kill} passages translated"
    );
    assert!(sent_at_kill >= translated_at_kill);

    api.restart().await;
    let done = api.wait_final(&id, Duration::from_secs(90)).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["progress"]["translated"], 40);
    assert_eq!(done["report"]["passages"]["translated"], 40);
    let sent_after = api.simulator.requests().await - sent_at_kill;
    assert_eq!(
        sent_after,
        40 - translated_at_kill,
        "after the restart only the passages without a translation are sent \
         ({translated_at_kill} were translated before SIGKILL)"
    );
    let result = api.result(&id, "format=json").await.expect(200);
    check_json_result(&result);
    assert_eq!(result["complete"], true);
}
