//! Budgets while jobs run (spec 3, 8 "Token budget rules"): calls in flight
//! reserve room under the token's cap, so twenty requests racing for one
//! small cap never spend more than it plus what was already sent upstream,
//! and some of them pause with `budget_exceeded`; a request near its cap
//! moves to the cheaper fallback of its provider, then pauses at the cap,
//! cannot be resumed until the cap is raised, and completes after; with
//! nowhere cheaper to go a request spends up to its cap (the last calls may
//! cross it) before it pauses, even a cap of a few calls, and the cap
//! reached refuses new work at intake.

use dragoman_e2e::translation::chapter;
use dragoman_e2e::{Api, Backend, eventually, on_both_backends};
use sea_orm::{ConnectionTrait, DatabaseConnection, QueryResult, Statement, Value as SqlValue};
use serde_json::{Value, json};
use std::time::Duration;

on_both_backends!(
    racing_requests_stay_within_the_cap,
    a_request_moves_then_pauses_then_resumes,
    a_small_cap_is_reached_then_refuses_new_work,
    a_cap_smaller_than_one_call_is_reached_by_it
);

const MINUTE: Duration = Duration::from_secs(60);

/// One passage per call: many small calls, so the caps are met call by
/// call rather than by one big batch.
const BATCH_TOKENS: &str = "200";

/// Concurrent calls the priced providers accept from the installation:
/// no more calls than this are ever in flight at once.
const CAPACITY: &str = "8";

/// Prices per million tokens of the dear provider and of its cheaper
/// fallback (twenty to sixty times cheaper per token).
const DEAR: [&str; 2] = ["200", "600"];
const CHEAP: [&str; 2] = ["10", "10"];

fn id_of(summary: &Value) -> String {
    summary["request_id"]
        .as_str()
        .unwrap_or_else(|| panic!("request_id: {summary}"))
        .to_owned()
}

/// The id of the token the [`Api`] submits with.
async fn token_id(api: &Api) -> String {
    let (text, tokens) = api.session().await.list_tokens().await;
    tokens
        .iter()
        .find(|t| t["name"] == "automation")
        .and_then(|t| t["id"].as_str())
        .unwrap_or_else(|| panic!("the automation token: {text}"))
        .to_owned()
}

/// Sets the token's cap over its life (`PUT /api/tokens/{id}/budget`).
async fn set_cap(api: &Api, token_id: &str, amount: f64) -> Value {
    api.session()
        .await
        .put(
            &format!("/api/tokens/{token_id}/budget"),
            &json!({"amount": amount, "period": "total"}),
        )
        .await
        .expect(200)
}

/// `dragoman provider add` of the simulator under `name` with `prices` and
/// the extra flags; answers its id.
async fn add_provider(api: &Api, name: &str, prices: [&str; 2], extra: &[&str]) -> String {
    let base_url = api.simulator.openai_base_url();
    let mut args = vec![
        "provider",
        "add",
        "--name",
        name,
        "--kind",
        "openai",
        "--model",
        "sim-model",
        "--base-url",
        &base_url,
        "--price-input",
        prices[0],
        "--price-output",
        prices[1],
        "--capacity",
        CAPACITY,
    ];
    args.extend_from_slice(extra);
    let output = api.server.cli_ok(&args).await;
    output
        .trim()
        .strip_prefix("added provider ")
        .unwrap_or_else(|| panic!("unexpected `provider add` output: {output}"))
        .to_owned()
}

/// A book of `chapters` chapters of `per_chapter` paragraphs, translated
/// `fast` (no analysis, no review) so every call is a translation call.
fn book(api: &Api, series: &str, chapters: u32, per_chapter: usize) -> Value {
    let mut body = api.payload(
        series,
        (1..=chapters)
            .map(|n| chapter(series, n, per_chapter))
            .collect(),
    );
    body["pipeline"] = json!({"quality": "fast", "threads": 4});
    body
}

fn placeholder(db: &DatabaseConnection, n: usize) -> String {
    match db.get_database_backend() {
        sea_orm::DatabaseBackend::Postgres => format!("${n}"),
        _ => "?".to_owned(),
    }
}

/// The sum and the largest cost of the calls matching `column = value`.
async fn spent_by(db: &DatabaseConnection, column: &str, value: &str) -> (f64, f64) {
    let sql = format!(
        "SELECT CAST(COALESCE(SUM(cost), 0) AS DOUBLE PRECISION), \
                CAST(COALESCE(MAX(cost), 0) AS DOUBLE PRECISION) \
         FROM provider_calls WHERE {column} = {}",
        placeholder(db, 1)
    );
    let sql = match db.get_database_backend() {
        sea_orm::DatabaseBackend::Postgres => sql,
        _ => sql.replace("DOUBLE PRECISION", "REAL"),
    };
    let row = db
        .query_one_raw(Statement::from_sql_and_values(
            db.get_database_backend(),
            sql,
            [SqlValue::from(value)],
        ))
        .await
        .expect("sum of costs")
        .expect("one row");
    (
        row.try_get_by_index(0).expect("sum"),
        row.try_get_by_index(1).expect("max"),
    )
}

/// Calls of the request on each provider: (provider_id, calls).
async fn calls_by_provider(db: &DatabaseConnection, request_id: &str) -> Vec<(String, i64)> {
    let sql = format!(
        "SELECT provider_id, COUNT(*) FROM provider_calls WHERE request_id = {} \
         GROUP BY provider_id",
        placeholder(db, 1)
    );
    db.query_all_raw(Statement::from_sql_and_values(
        db.get_database_backend(),
        sql,
        [SqlValue::from(request_id)],
    ))
    .await
    .expect("calls by provider")
    .iter()
    .map(|r| {
        (
            r.try_get_by_index(0).expect("provider_id"),
            r.try_get_by_index(1).expect("count"),
        )
    })
    .collect()
}

/// The calls recorded for `column = value`.
async fn calls_by(db: &DatabaseConnection, column: &str, value: &str) -> u64 {
    let sql = format!(
        "SELECT COUNT(*) FROM provider_calls WHERE {column} = {}",
        placeholder(db, 1)
    );
    let row = db
        .query_one_raw(Statement::from_sql_and_values(
            db.get_database_backend(),
            sql,
            [SqlValue::from(value)],
        ))
        .await
        .expect("count of calls")
        .expect("one row");
    let count: i64 = row.try_get_by_index(0).expect("count");
    u64::try_from(count).expect("a count")
}

/// The outcomes of the simulator's `/stats`, each request counting in
/// exactly one once answered.
const OUTCOMES: [&str; 10] = [
    "bad_requests",
    "ok",
    "cut_at_max_tokens",
    "rate_limited",
    "server_errors",
    "hangs",
    "malformed",
    "truncated",
    "refusals",
    "dropped_placeholders",
];

/// Returns once every call the simulator received was answered and
/// recorded as a call of `column = value` (each call, retries included, is
/// one row): no call is in flight any more, and what was spent is final.
/// The simulator serves this one test, and every call it receives is made
/// for `column = value`.
async fn calls_settled(api: &Api, db: &DatabaseConnection, column: &str, value: &str) {
    eventually(MINUTE, "every call answered and recorded", || async {
        let stats = api.simulator.stats().await;
        let received = stats["requests"].as_u64().expect("stats.requests");
        let answered: u64 = OUTCOMES
            .iter()
            .map(|k| stats[*k].as_u64().unwrap_or(0))
            .sum();
        let recorded = calls_by(db, column, value).await;
        (answered == received && recorded == received).then_some(())
    })
    .await;
}

/// The `columns` of the job `job_id`'s row.
async fn job_columns(db: &DatabaseConnection, columns: &str, job_id: &str) -> QueryResult {
    let sql = format!(
        "SELECT {columns} FROM jobs WHERE id = {}",
        placeholder(db, 1)
    );
    db.query_one_raw(Statement::from_sql_and_values(
        db.get_database_backend(),
        sql,
        [SqlValue::from(job_id)],
    ))
    .await
    .expect("job")
    .expect("one job")
}

/// The job's (status, updated_at): every move of its lifecycle stamps the
/// second it happened.
async fn job_lifecycle(db: &DatabaseConnection, job_id: &str) -> (String, i64) {
    let row = job_columns(db, "status, updated_at", job_id).await;
    (
        row.try_get_by_index(0).expect("status"),
        row.try_get_by_index(1).expect("updated_at"),
    )
}

/// The job's (provider_id, provider_switches, pause_reason).
async fn job_row(db: &DatabaseConnection, job_id: &str) -> (String, i32, Option<String>) {
    let row = job_columns(db, "provider_id, provider_switches, pause_reason", job_id).await;
    (
        row.try_get_by_index(0).expect("provider_id"),
        row.try_get_by_index(1).expect("provider_switches"),
        row.try_get_by_index(2).expect("pause_reason"),
    )
}

/// Paused by a budget: `pending`, step `paused`, stop reason
/// `budget_exceeded`.
fn paused_for_budget(doc: &Value) -> bool {
    doc["status"] == "pending" && doc["step"] == "paused" && doc["stop_reason"] == "budget_exceeded"
}

fn is_final(doc: &Value) -> bool {
    doc["status"]
        .as_str()
        .is_some_and(|s| dragoman_e2e::translation::FINAL_STATUSES.contains(&s))
}

async fn racing_requests_stay_within_the_cap(backend: Backend) {
    let mut api = Api::builder(backend)
        .without_provider()
        .simulator(&["--latency-ms", "300"])
        .env("DRAGOMAN_BATCH_TOKENS", BATCH_TOKENS)
        .env("QUEUE_MAX_RUNNING_PER_ACCOUNT", "10")
        .start()
        .await;
    // No cheaper provider: near the cap a job can only pause.
    api.provider_id = add_provider(&api, "sim", DEAR, &[]).await;
    let token = token_id(&api).await;
    let db = api.server.installation.sql().await;

    // One request of 9 calls costs about 1 at these prices: the cap holds
    // about three of twenty.
    let cap = 3.0;
    set_cap(&api, &token, cap).await;
    let bodies: Vec<Value> = (1..=20)
        .map(|i| book(&api, &format!("Race {i}"), 1, 8))
        .collect();
    let submitted = futures::future::join_all(bodies.iter().map(|b| api.submit(b, None))).await;
    let ids: Vec<String> = submitted.iter().map(|a| id_of(&a.expect(202))).collect();

    // Every request ends, or waits paused by the budget.
    let mut docs = Vec::new();
    for id in &ids {
        let doc = api
            .wait_until(id, 3 * MINUTE, "ended or paused by the budget", |doc| {
                is_final(doc) || paused_for_budget(doc)
            })
            .await;
        docs.push(doc);
    }
    // Calls of the other requests may still be in flight when the last
    // request ended or paused: what was spent is read once they came back.
    calls_settled(&api, &db, "token_id", &token).await;

    let stopped = docs
        .iter()
        .filter(|d| d["stop_reason"] == "budget_exceeded")
        .count();
    assert!(
        stopped > 0,
        "no request stopped for its budget: {:?}",
        docs.iter()
            .map(|d| (&d["status"], &d["step"], &d["stop_reason"]))
            .collect::<Vec<_>>()
    );
    assert!(
        docs.iter().filter(|d| !is_final(d)).all(paused_for_budget),
        "a request neither ended nor paused by the budget"
    );

    let (spent, largest) = spent_by(&db, "token_id", &token).await;
    let in_flight: f64 = CAPACITY.parse().expect("capacity");
    assert!(spent > 0.0, "nothing was spent");
    assert!(
        spent <= cap + in_flight * largest + 1e-9,
        "spent {spent} over the cap {cap} by more than {in_flight} calls of {largest}"
    );
    // The token's view counts the same calls.
    let (_, tokens) = api.session().await.list_tokens().await;
    let view = tokens
        .iter()
        .find(|t| t["id"] == token.as_str())
        .expect("the token");
    let shown = view["budget"]["spent"].as_f64().expect("budget.spent");
    assert!(
        (shown - spent).abs() < 1e-6,
        "shown {shown}, recorded {spent}"
    );
}

async fn a_request_moves_then_pauses_then_resumes(backend: Backend) {
    let mut api = Api::builder(backend)
        .without_provider()
        .simulator(&["--latency-ms", "20"])
        .env("DRAGOMAN_BATCH_TOKENS", BATCH_TOKENS)
        .start()
        .await;
    let cheap = add_provider(&api, "cheap", CHEAP, &[]).await;
    api.provider_id = add_provider(&api, "sim", DEAR, &["--fallback", "cheap"]).await;
    let listed = api.session().await.get("/api/providers").await.expect(200);
    let dear_view = listed
        .as_array()
        .and_then(|all| all.iter().find(|p| p["name"] == "sim"))
        .unwrap_or_else(|| panic!("the dear provider: {listed}"));
    assert_eq!(dear_view["fallback"], "cheap", "{dear_view}");
    let token = token_id(&api).await;
    let db = api.server.installation.sql().await;

    // What the book costs on the dear provider, with a token without cap.
    let calibration = api
        .session()
        .await
        .token("calibration", &dragoman_e2e::SCOPES)
        .await;
    let measured = api
        .submit_with(&calibration.token, &book(&api, "Calibration", 3, 20))
        .await
        .expect(202);
    let measured = api.wait_final(&id_of(&measured), 2 * MINUTE).await;
    let (whole, _) = spent_by(&db, "request_id", &id_of(&measured)).await;
    assert!(whole > 0.0, "the calibration cost nothing: {measured}");

    // A fortieth of it: past 90% of the cap on the dear provider the job
    // moves to the cheaper one, which the rest of the cap cannot pay for
    // the whole book either.
    let cap = whole / 40.0;
    set_cap(&api, &token, cap).await;
    let summary = api.submit_ok(&book(&api, "Moving", 3, 20)).await;
    let id = id_of(&summary);
    let paused = api
        .wait_until(&id, 2 * MINUTE, "paused by the budget", paused_for_budget)
        .await;
    assert!(paused["report"].is_null(), "{paused}");
    let job_id = paused["job_id"].as_str().expect("job_id").to_owned();
    let (provider, switches, reason) = job_row(&db, &job_id).await;
    assert_eq!(provider, cheap, "the job moved to the cheaper provider");
    assert_eq!(switches, 1);
    assert_eq!(reason.as_deref(), Some("budget_exceeded"));
    let calls = calls_by_provider(&db, &id).await;
    assert!(
        calls.iter().any(|(p, n)| p == &cheap && *n > 0),
        "no call on the cheaper provider: {calls:?}"
    );

    // Nothing resumes it on its own: once a request submitted after the
    // pause went through the queue and a worker to its end, the paused one
    // still is, and its job was not taken, released or resumed since (each
    // of which stamps it).
    let paused_job = job_lifecycle(&db, &job_id).await;
    assert_eq!(paused_job.0, "paused");
    let after = api
        .submit_with(&calibration.token, &book(&api, "After the pause", 1, 2))
        .await
        .expect(202);
    let after = api.wait_final(&id_of(&after), 2 * MINUTE).await;
    assert!(
        matches!(
            after["status"].as_str(),
            Some("completed" | "completed_with_residuals")
        ),
        "{after}"
    );
    let still = api.status(&id).await;
    assert!(paused_for_budget(&still), "{still}");
    assert_eq!(job_lifecycle(&db, &job_id).await, paused_job, "the job");
    // The cap is reached; the last calls, on the cheaper provider, may
    // cross it.
    let (spent, _) = spent_by(&db, "token_id", &token).await;
    let (_, largest) = spent_by(&db, "request_id", &id).await;
    assert!(spent >= cap, "paused having spent {spent} of {cap}");
    assert!(
        spent <= cap + 2.0 * largest + 1e-9,
        "spent {spent} over the cap {cap} by more than two calls of {largest}"
    );
    // A resume is refused while the cap holds.
    api.act(&id, "resume")
        .await
        .expect_error(409, "budget_exceeded", "resume under the cap");

    // Raised, the cap lets it go on to the end, on the cheaper provider.
    set_cap(&api, &token, whole * 10.0).await;
    api.act(&id, "resume").await.expect(200);
    let done = api.wait_final(&id, 2 * MINUTE).await;
    assert!(
        matches!(
            done["status"].as_str(),
            Some("completed" | "completed_with_residuals")
        ),
        "{done}"
    );
    let cost = &done["report"]["cost"];
    assert!(
        cost["provider_switches"].as_i64().is_some_and(|n| n >= 1),
        "report.cost: {cost}"
    );
    let (provider, switches, _) = job_row(&db, &job_id).await;
    assert_eq!(
        (provider, switches),
        (cheap, 1),
        "one move, kept after the resume"
    );
}

/// The token's `budget.spent` as `GET /api/tokens` shows it.
async fn shown_spent(api: &Api, token_id: &str) -> f64 {
    let (text, tokens) = api.session().await.list_tokens().await;
    tokens
        .iter()
        .find(|t| t["id"] == token_id)
        .and_then(|t| t["budget"]["spent"].as_f64())
        .unwrap_or_else(|| panic!("the budget of token {token_id}: {text}"))
}

/// A book of 120 short paragraphs in 12 chapters, at the default quality:
/// about 0.05 at the simulator's prices (1 and 2 per million tokens).
fn novel(api: &Api, series: &str) -> Value {
    api.payload(series, (1..=12).map(|n| chapter(series, n, 10)).collect())
}

/// Submits [`novel`] with `token` under a cap of `cap` over its life and
/// waits for the budget to pause it; answers the status document then and
/// what the token spent once the calls in flight came back, checked
/// against the cap: reached, and crossed by about a call at most.
async fn spend_up_to(api: &Api, token: &dragoman_e2e::CreatedToken, cap: f64) -> (Value, f64) {
    set_cap(api, &token.id, cap).await;
    let summary = api
        .submit_with(&token.token, &novel(api, &format!("Capped {}", token.id)))
        .await
        .expect(202);
    let id = id_of(&summary);
    let paused = api
        .wait_until(&id, 2 * MINUTE, "paused by the budget", |doc| {
            assert!(
                !is_final(doc),
                "the request ended instead of pausing: {doc}"
            );
            paused_for_budget(doc)
        })
        .await;
    let estimated = paused["estimate"]["cost"]["expected"]
        .as_f64()
        .unwrap_or_else(|| panic!("estimate: {paused}"));
    assert!(estimated > 3.0 * cap, "the book costs {estimated}");
    // The job pauses once none of its calls is in flight, each recorded
    // before it stops counting in flight; checked all the same.
    let db = api.server.installation.sql().await;
    calls_settled(api, &db, "request_id", &id).await;
    let spent = shown_spent(api, &token.id).await;
    let (recorded, largest) = spent_by(&db, "request_id", &id).await;
    assert!(
        (recorded - spent).abs() < 1e-6,
        "shown {spent}, recorded {recorded}"
    );
    assert!(
        spent >= cap,
        "paused having spent {spent} of a cap of {cap} (calls up to {largest})"
    );
    assert!(
        spent <= cap + 2.0 * largest + 1e-9,
        "spent {spent} over the cap {cap} by more than two calls of {largest}"
    );
    (paused, spent)
}

async fn a_small_cap_is_reached_then_refuses_new_work(backend: Backend) {
    // The simulator at 1 and 2 per million tokens, nothing cheaper, the
    // default batches (a call costs about 0.008).
    let api = Api::start(backend).await;
    let token = api
        .session()
        .await
        .token("capped", &dragoman_e2e::SCOPES)
        .await;
    spend_up_to(&api, &token, 0.01).await;
    // The cap reached refuses work at intake; an import is still taken.
    let mut next = novel(&api, "After the cap");
    api.submit_with(&token.token, &next).await.expect_error(
        402,
        "budget_exceeded",
        "a new request past the cap",
    );
    next["pipeline"] = json!({"start": false});
    api.submit_with(&token.token, &next).await.expect(202);
}

async fn a_cap_smaller_than_one_call_is_reached_by_it(backend: Backend) {
    // The default batches: one call (about 0.008) costs more than the cap,
    // and still goes (spec 8, rule 5: a single call can cross the cap).
    let api = Api::start(backend).await;
    let token = api
        .session()
        .await
        .token("capped", &dragoman_e2e::SCOPES)
        .await;
    let (_, spent) = spend_up_to(&api, &token, 0.003).await;
    assert!(spent > 0.003, "{spent}");
}
