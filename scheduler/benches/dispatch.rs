//! The dispatch decision on PostgreSQL or SQLite (docs/benchmarks.md,
//! "Dispatch decision"): how long one `lease` takes with a deep queue, also
//! right after new work arrived, whether what it reads grows with the queue,
//! and whether accounts get the fair share of running slots the queue
//! promises (docs/decisions.md, "Queue order and limits").
//!
//! `TEST_DATABASE_URL` selects the database: a `postgres://` URL runs each
//! part in a fresh database on that server (created, migrated, then
//! dropped); `sqlite:` runs each part in a fresh SQLite file under the
//! system's temporary directory (deleted after), as in
//! `TEST_DATABASE_URL=sqlite: cargo bench -p dragoman-scheduler --bench
//! dispatch`. `DISPATCH_PARTS=latency` (or `growth`, `fairness`, several
//! joined by commas) runs those parts only. Each database is filled with
//! bulk inserts: accounts, three tokens each, waiting requests with their
//! jobs and, under them, 20,000 finished ones (a table that has served for
//! a while; vacuumed and analysed as autovacuum would). The jobs name no
//! provider, so the job-start checks (budgets, estimate) have nothing to
//! read and the figures are those of the decision and the take.
//!
//! 1. Latency: 10,000 waiting requests over 100 accounts and 300 tokens
//!    (10 % high, 60 % normal, 30 % low priority; tokens allowed 1 to 3
//!    running jobs, accounts 4), 40 running slots: 2,000 leases are timed,
//!    each after releasing the oldest running job once 40 run; then 500
//!    leases each right after a new request arrived (a new job, of a random
//!    token and priority, often of a group the summary does not have),
//!    read by its id as any new job is; 500 after a new request announced
//!    to the leasing process as a resume or a promoted volume is (full reads
//!    of the waiting groups then run beside the leases every second); and
//!    200 after the
//!    summary was voided, so that the grouped read is in the way (what a
//!    process's first lease costs, and the old behaviour after new work).
//!    Each series begins on a vacuumed table (see [`Table`]); a last one of
//!    500 leases after new requests follows 2,500 leases with no vacuum, to
//!    show what the dead row versions of such a burst cost.
//! 2. Growth: 1,000 to 20,000 waiting requests, 200 timed leases each, 200
//!    each after a new request, 50 each with the grouped read in the way,
//!    with the groups in the summary and the process's resident memory.
//! 3. Fairness: 19,000 waiting requests, ten accounts holding 1,000 each
//!    and ninety holding 100, equal priority, limits out of the way, 40
//!    running slots, 3,000 rounds of "a running job ends, a worker leases".
//!    The promise is a fair share of the running slots at each decision:
//!    the slot goes to an account running the fewest jobs among those with
//!    a job waiting, so that after it each such account runs the fair share
//!    (40 / 100) rounded down or up. Reported: the decisions that kept it,
//!    the accounts held to it at every decision, and, as the measure it
//!    does not promise, each account's share of slot-time (its running jobs
//!    summed over the rounds, over the rounds). Twice: the oldest job ends
//!    each round (jobs of equal length), then a random one (lengths vary as
//!    in life; nothing preempts a long job).

use dragoman_migrations::{Migrator, MigratorTrait};
use dragoman_model::entities::{account, api_token, job, project, request, series};
use dragoman_model::vocab::{
    InputKind, JobStatus, Priority, ProjectKind, RequestStatus, SeriesKind, Stage, VolumeStatus,
};
use dragoman_model::{clock, ids};
use dragoman_scheduler::lifecycle::job_start::StartSettings;
use dragoman_scheduler::lifecycle::queue::QueueSettings;
use dragoman_scheduler::lifecycle::{Dispatcher, lease};
use dragoman_testing::TestDatabase;
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DatabaseConnection, DbBackend, EntityTrait,
    QueryFilter, Set, Statement,
};
use serde_json::json;
use std::collections::{HashMap, HashSet, VecDeque};
use std::path::PathBuf;
use std::time::{Duration, Instant};

const ACCOUNTS: usize = 100;
const TOKENS_PER_ACCOUNT: usize = 3;
const SLOTS: usize = 40;
const LEASE_SECONDS: i64 = 3600;
const ROWS_PER_INSERT: usize = 1000;
/// Finished jobs under the queue in the latency and growth parts.
const HISTORY: usize = 20_000;
/// The grouping the decision makes (without the join to the limits).
const GROUPED: &str = "SELECT priority, account_id, token_id, MIN(created_at) FROM jobs \
                       WHERE status = 'pending' GROUP BY priority, account_id, token_id";

fn main() {
    let Some(url) = dragoman_testing::env::test_database_url() else {
        eprintln!(
            "TEST_DATABASE_URL is not set: the dispatch benchmark needs a postgres:// URL or sqlite:"
        );
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    // `DISPATCH_PARTS` (say `latency,fairness`) runs some parts only.
    let parts = std::env::var("DISPATCH_PARTS").unwrap_or_default();
    let runs = |part: &str| parts.trim().is_empty() || parts.split(',').any(|p| p.trim() == part);
    runtime.block_on(async {
        if runs("latency") {
            latency(&url).await;
        }
        if runs("growth") {
            growth(&url).await;
        }
        if runs("fairness") {
            fairness(&url, false).await;
            fairness(&url, true).await;
        }
    });
}

/// Where a part's database lives, to drop it after.
enum Home {
    /// A throwaway PostgreSQL database, dropped with its handle.
    Postgres(TestDatabase),
    /// A SQLite file.
    Sqlite(PathBuf),
}

/// A fresh database with the schema, dropped by [`World::drop_database`].
struct World {
    home: Home,
    db: DatabaseConnection,
    accounts: Vec<account::Model>,
    tokens: Vec<api_token::Model>,
    series_id: String,
    project_id: String,
    /// Requests added one at a time while leases are timed.
    arrivals: usize,
}

/// A fresh database named after `url`'s server (PostgreSQL) or a fresh
/// file (SQLite).
async fn fresh_database(url: &str) -> (Home, DatabaseConnection) {
    let name = format!("dragoman_bench_{}", ids::new_id().replace('-', ""));
    if url.starts_with("sqlite:") {
        let path = std::env::temp_dir().join(format!("{name}.db"));
        let db = dragoman_model::db::connect(&format!("sqlite://{}", path.display()))
            .await
            .expect("bench database");
        return (Home::Sqlite(path), db);
    }
    let database = TestDatabase::create(url, "dragoman_bench").await;
    let db = dragoman_model::db::connect(database.url())
        .await
        .expect("bench database");
    (Home::Postgres(database), db)
}

impl World {
    async fn create(url: &str, token_running: impl Fn(usize) -> i32) -> World {
        let (home, db) = fresh_database(url).await;
        Migrator::up(&db, None).await.expect("migrations");
        let now = clock::now();
        let mut accounts = Vec::new();
        let mut tokens = Vec::new();
        for a in 0..ACCOUNTS {
            let owner =
                account::ActiveModel::new_account(&format!("account-{a}"), String::new(), false)
                    .insert(&db)
                    .await
                    .expect("account");
            for t in 0..TOKENS_PER_ACCOUNT {
                let index = a * TOKENS_PER_ACCOUNT + t;
                tokens.push(
                    api_token::ActiveModel {
                        id: Set(ids::new_id()),
                        account_id: Set(owner.id.clone()),
                        name: Set(format!("token-{index}")),
                        prefix: Set(ids::new_id()),
                        secret_hash: Set(String::new()),
                        scopes: Set(json!([])),
                        created_at: Set(now),
                        expires_at: Set(None),
                        revoked_at: Set(None),
                        last_used_at: Set(None),
                        webhook_secret_enc: Set(None),
                        max_priority: Set(Priority::High),
                        max_running: Set(token_running(index)),
                        max_queued: Set(100_000),
                        budget_amount: Set(None),
                        budget_period: Set(None),
                    }
                    .insert(&db)
                    .await
                    .expect("token"),
                );
            }
            accounts.push(owner);
        }
        let series_id = ids::new_id();
        series::ActiveModel {
            id: Set(series_id.clone()),
            account_id: Set(accounts[0].id.clone()),
            name: Set("Bench".into()),
            kind: Set(SeriesKind::Numbered),
            source_language: Set(Some("en".into())),
            target_language: Set(Some("fr".into())),
            archived: Set(false),
            default_provider_id: Set(None),
            shared_glossary_id: Set(None),
            suspended: Set(false),
            created_at: Set(now),
            updated_at: Set(now),
        }
        .insert(&db)
        .await
        .expect("series");
        let project_id = ids::new_id();
        project::ActiveModel {
            id: Set(project_id.clone()),
            series_id: Set(series_id.clone()),
            account_id: Set(accounts[0].id.clone()),
            title: Set("Bench 1".into()),
            volume_number: Set(Some(1)),
            volume_label: Set(None),
            external_id: Set(None),
            source_format: Set(Some(InputKind::Json)),
            project_kind: Set(ProjectKind::Volume),
            status: Set(VolumeStatus::Imported),
            provider_id: Set(None),
            source_language: Set("en".into()),
            target_language: Set("fr".into()),
            author: Set(None),
            original_blob: Set(None),
            analysis_mode: Set(None),
            threads: Set(None),
            batch: Set(None),
            archived: Set(false),
            ai_disclosure: Set(None),
            licence_counted: Set(true),
            budget_amount: Set(None),
            created_at: Set(now),
            updated_at: Set(now),
        }
        .insert(&db)
        .await
        .expect("volume");
        World {
            home,
            db,
            accounts,
            tokens,
            series_id,
            project_id,
            arrivals: 0,
        }
    }

    fn backend(&self) -> DbBackend {
        self.db.get_database_backend()
    }

    /// Adds `n` waiting requests and their jobs; `token_of(i)` gives the
    /// token index of the i-th, `priority(i)` its priority. Arrivals are one
    /// second apart, oldest first.
    async fn fill(
        &self,
        n: usize,
        token_of: impl Fn(usize) -> usize,
        priority: impl Fn(usize) -> Priority,
    ) {
        let start = clock::now() - i64::try_from(n).unwrap_or(0) - 10;
        self.insert(n, token_of, priority, false, start).await;
        self.analyse().await;
    }

    /// Adds `n` finished requests and jobs: the history a queue sits on in
    /// a table that has served for a while.
    async fn history(&self, n: usize) {
        let start = clock::now() - i64::try_from(n).unwrap_or(0) - 10;
        self.insert(n, |i| i, |_| Priority::Normal, true, start)
            .await;
        self.analyse().await;
    }

    /// One new waiting request and its job, made now, of a token and a
    /// priority that vary from one to the next; returns the job's id and
    /// its group (priority, token).
    async fn arrive(&mut self) -> (String, (Priority, String)) {
        let k = self.arrivals;
        self.arrivals += 1;
        let token = (k * 7919 + 13) % self.tokens.len();
        let priority = mixed_priority(k * 3 + 1);
        let ids = self
            .insert(1, |_| token, |_| priority, false, clock::now())
            .await;
        let id = ids.into_iter().next().unwrap_or_default();
        (id, (priority, self.tokens[token].id.clone()))
    }

    /// As autovacuum would have it: statistics, and (PostgreSQL) a
    /// visibility map that lets the index answer alone.
    async fn analyse(&self) {
        let statements: &[&str] = match self.backend() {
            DbBackend::Sqlite => &["ANALYZE"],
            _ => &["VACUUM ANALYZE jobs", "VACUUM ANALYZE requests"],
        };
        for sql in statements {
            self.db.execute_unprepared(sql).await.expect("analyse");
        }
    }

    /// Inserts `n` requests with their jobs, made one second apart from
    /// `start`; returns the jobs' ids.
    async fn insert(
        &self,
        n: usize,
        token_of: impl Fn(usize) -> usize,
        priority: impl Fn(usize) -> Priority,
        finished: bool,
        start: i64,
    ) -> Vec<String> {
        let (request_status, job_status) = if finished {
            (RequestStatus::Completed, JobStatus::Done)
        } else {
            (RequestStatus::Pending, JobStatus::Pending)
        };
        let mut made = Vec::with_capacity(n);
        let mut requests = Vec::with_capacity(ROWS_PER_INSERT);
        let mut jobs = Vec::with_capacity(ROWS_PER_INSERT);
        for i in 0..n {
            let token = &self.tokens[token_of(i) % self.tokens.len()];
            let at = start + i64::try_from(i).unwrap_or(0);
            let request_id = ids::new_id();
            let job_id = ids::new_id();
            made.push(job_id.clone());
            requests.push(request::ActiveModel {
                id: Set(request_id.clone()),
                account_id: Set(token.account_id.clone()),
                token_id: Set(Some(token.id.clone())),
                external_id: Set(None),
                idempotency_key: Set(None),
                content_hash: Set(String::new()),
                series_id: Set(self.series_id.clone()),
                project_id: Set(self.project_id.clone()),
                job_id: Set(Some(job_id.clone())),
                input: Set(InputKind::Json),
                status: Set(request_status),
                stage: Set(Stage::Import),
                step: Set("waiting for a worker".into()),
                error: Set(String::new()),
                stop_reason: Set(String::new()),
                priority: Set(priority(i)),
                options: Set(Default::default()),
                callback_url: Set(None),
                callback_events: Set(json!([])),
                chapters: Set(json!({"ids": []})),
                result: Set(None),
                report: Set(None),
                next_attempt: Set(0),
                created_at: Set(at),
                updated_at: Set(at),
                finished_at: Set(None),
            });
            jobs.push(job::ActiveModel {
                id: Set(job_id),
                request_id: Set(request_id),
                project_id: Set(self.project_id.clone()),
                account_id: Set(token.account_id.clone()),
                token_id: Set(Some(token.id.clone())),
                status: Set(job_status),
                priority: Set(priority(i)),
                provider_id: Set(None),
                lease_holder: Set(None),
                lease_expires_at: Set(None),
                attempts: Set(0),
                progress: Set(json!({})),
                estimate: Set(None),
                paused_at: Set(None),
                pause_reason: Set(None),
                provider_switches: Set(0),
                operation: Set(dragoman_model::vocab::JobOperation::Translate),
                created_at: Set(at),
                updated_at: Set(at),
                started_at: Set(finished.then_some(at)),
                finished_at: Set(finished.then_some(at)),
            });
            if requests.len() == ROWS_PER_INSERT || i + 1 == n {
                request::Entity::insert_many(std::mem::take(&mut requests))
                    .exec(&self.db)
                    .await
                    .expect("requests");
                job::Entity::insert_many(std::mem::take(&mut jobs))
                    .exec(&self.db)
                    .await
                    .expect("jobs");
            }
        }
        made
    }

    /// Ends a running job, freeing its slot.
    async fn release(&self, job_id: &str) {
        job::Entity::update_many()
            .col_expr(job::Column::Status, Expr::value(JobStatus::Done))
            .col_expr(job::Column::FinishedAt, Expr::value(clock::now()))
            .filter(job::Column::Id.eq(job_id))
            .exec(&self.db)
            .await
            .expect("release");
    }

    /// The groups of waiting jobs, as (priority, token): what the decision
    /// reads besides the running jobs.
    async fn groups(&self) -> HashSet<(Priority, String)> {
        let rows = job::Entity::find()
            .filter(job::Column::Status.eq(JobStatus::Pending))
            .all(&self.db)
            .await
            .expect("groups");
        rows.into_iter()
            .filter_map(|j| j.token_id.map(|t| (j.priority, t)))
            .collect()
    }

    /// Times of `runs` executions of `sql` (one round trip each).
    async fn time_sql(&self, sql: &str, runs: usize) -> Vec<Duration> {
        let mut times = Vec::with_capacity(runs);
        for _ in 0..runs {
            let began = Instant::now();
            self.db
                .query_all_raw(Statement::from_string(self.backend(), sql.to_owned()))
                .await
                .expect("query");
            times.push(began.elapsed());
        }
        times
    }

    /// The highest job id: the mark the arrivals are read above.
    async fn newest(&self) -> String {
        let row = self
            .db
            .query_one_raw(Statement::from_string(
                self.backend(),
                "SELECT MAX(id) FROM jobs",
            ))
            .await
            .expect("newest")
            .expect("a row");
        row.try_get_by_index::<String>(0).expect("an id")
    }

    /// The plan the database chooses for `sql`.
    async fn plan(&self, sql: &str) -> Vec<String> {
        let (explain, column) = match self.backend() {
            DbBackend::Sqlite => (format!("EXPLAIN QUERY PLAN {sql}"), 3),
            _ => (format!("EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) {sql}"), 0),
        };
        let rows = self
            .db
            .query_all_raw(Statement::from_string(self.backend(), explain))
            .await
            .expect("explain");
        rows.iter()
            .filter_map(|r| r.try_get_by_index::<String>(column).ok())
            .collect()
    }

    async fn drop_database(self) {
        let _ = self.db.close().await;
        match self.home {
            Home::Postgres(database) => drop(database),
            Home::Sqlite(path) => {
                for suffix in ["", "-wal", "-shm"] {
                    let mut file = path.clone().into_os_string();
                    file.push(suffix);
                    let _ = std::fs::remove_file(file);
                }
            }
        }
    }
}

/// The running jobs, as every decision reads them.
const RUNNING: &str = "SELECT 0 AS arrived, id, status, priority, account_id, token_id, \
                       created_at, lease_expires_at, attempts FROM jobs WHERE status = 'running'";

/// The running jobs read with the arrivals above the mark `newest`, as
/// the first decision of a lease reads them.
fn with_arrivals_sql(newest: &str) -> String {
    format!(
        "{RUNNING} UNION ALL SELECT 1, a.id, a.status, a.priority, a.account_id, a.token_id, \
         a.created_at, a.lease_expires_at, a.attempts FROM (SELECT id, status, priority, \
         account_id, token_id, created_at, lease_expires_at, attempts FROM jobs \
         WHERE id > '{newest}' ORDER BY id LIMIT 256) AS a"
    )
}

/// 10 % high, 60 % normal, 30 % low.
fn mixed_priority(i: usize) -> Priority {
    match i % 10 {
        0 => Priority::High,
        1..=3 => Priority::Low,
        _ => Priority::Normal,
    }
}

/// Leases until `SLOTS` run or nothing more may start, untimed.
async fn fill_slots(
    world: &World,
    dispatcher: &Dispatcher,
    running: &mut VecDeque<(String, String)>,
) {
    let start = StartSettings::default();
    while running.len() < SLOTS {
        let leased = lease(&world.db, "bench", LEASE_SECONDS, dispatcher, &start)
            .await
            .expect("lease");
        match leased.ticket {
            Some(t) => running.push_back((t.job_id, t.account_id)),
            None => break,
        }
    }
}

/// What happens before each timed lease.
#[derive(Clone, Copy, PartialEq)]
enum Before {
    /// Nothing: only the slot freed.
    Nothing,
    /// A new request arrives, and the leasing process is also told work was
    /// added, as a resume or a promoted volume tells it: a full read of the
    /// waiting groups follows within `REREAD_GAP` instead of `REREAD_AFTER`.
    Announced,
    /// A new request arrives, in this process or another: the lease reads
    /// its job by its id (a new request announces nothing more).
    Arrival,
    /// The summary is voided: the lease reads every group first.
    Voided,
}

/// What a series of timed leases measured.
struct Timed {
    times: Vec<Duration>,
    /// Arrivals that opened a group the queue did not have.
    new_groups: usize,
    /// Arrivals leased during the series.
    arrivals_leased: usize,
}

/// How the jobs table is when a timed series begins.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Table {
    /// Vacuumed, as autovacuum keeps it: a series runs hundreds of leases
    /// a second, a churn no installation makes between two autovacuum
    /// runs (its jobs are books that take minutes).
    Vacuumed,
    /// As the series before left it, dead row versions included.
    AsLeft,
}

/// `decisions` timed leases, each after the oldest running job ended once
/// `SLOTS` run, and after `before`.
async fn timed_leases(
    world: &mut World,
    dispatcher: &Dispatcher,
    decisions: usize,
    before: Before,
    table: Table,
) -> Timed {
    let start = StartSettings::default();
    let mut running = VecDeque::new();
    fill_slots(world, dispatcher, &mut running).await;
    if table == Table::Vacuumed {
        world.analyse().await;
    }
    let mut groups = if before == Before::Nothing {
        HashSet::new()
    } else {
        world.groups().await
    };
    let mut arrived = HashSet::new();
    let mut timed = Timed {
        times: Vec::with_capacity(decisions),
        new_groups: 0,
        arrivals_leased: 0,
    };
    for _ in 0..decisions {
        if running.len() >= SLOTS
            && let Some((oldest, _)) = running.pop_front()
        {
            world.release(&oldest).await;
        }
        match before {
            Before::Nothing => {}
            Before::Announced | Before::Arrival => {
                let (job_id, group) = world.arrive().await;
                arrived.insert(job_id);
                if groups.insert(group) {
                    timed.new_groups += 1;
                }
                if before == Before::Announced {
                    dispatcher.work_added();
                }
            }
            Before::Voided => dispatcher.invalidate(),
        }
        let began = Instant::now();
        let leased = lease(&world.db, "bench", LEASE_SECONDS, dispatcher, &start)
            .await
            .expect("lease");
        timed.times.push(began.elapsed());
        if let Some(t) = leased.ticket {
            if arrived.contains(&t.job_id) {
                timed.arrivals_leased += 1;
            }
            running.push_back((t.job_id, t.account_id));
        }
    }
    timed
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn summary(times: &mut [Duration]) -> String {
    times.sort();
    format!(
        "p50 {}, p95 {}, p99 {}, max {}",
        ms(percentile(times, 0.50)),
        ms(percentile(times, 0.95)),
        ms(percentile(times, 0.99)),
        ms(percentile(times, 1.0)),
    )
}

/// Resident memory of this process, in MiB (Linux).
fn rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

fn environment(max_running: u32) -> QueueSettings {
    QueueSettings {
        max_running_per_account: max_running,
        max_queued_per_account: None,
    }
}

fn backend_name(world: &World) -> &'static str {
    match world.backend() {
        DbBackend::Sqlite => "SQLite",
        _ => "PostgreSQL",
    }
}

async fn latency(url: &str) {
    let mut world = World::create(url, |t| 1 + i32::try_from(t % 3).unwrap_or(0)).await;
    world.history(HISTORY).await;
    world
        .fill(
            10_000,
            |i| (i * 7919) % (ACCOUNTS * TOKENS_PER_ACCOUNT),
            mixed_priority,
        )
        .await;
    let dispatcher = Dispatcher::new(environment(4));
    // Warm the pool and the caches.
    timed_leases(
        &mut world,
        &dispatcher,
        100,
        Before::Nothing,
        Table::Vacuumed,
    )
    .await;
    let mut steady = timed_leases(
        &mut world,
        &dispatcher,
        2000,
        Before::Nothing,
        Table::Vacuumed,
    )
    .await;
    let mut announced = timed_leases(
        &mut world,
        &dispatcher,
        500,
        Before::Announced,
        Table::Vacuumed,
    )
    .await;
    let mut arrival = timed_leases(
        &mut world,
        &dispatcher,
        500,
        Before::Arrival,
        Table::Vacuumed,
    )
    .await;
    let mut voided = timed_leases(
        &mut world,
        &dispatcher,
        200,
        Before::Voided,
        Table::Vacuumed,
    )
    .await;
    // Churn: 2,500 leases and as many ended jobs, with no vacuum after.
    timed_leases(
        &mut world,
        &dispatcher,
        2500,
        Before::Nothing,
        Table::AsLeft,
    )
    .await;
    let mut churned =
        timed_leases(&mut world, &dispatcher, 500, Before::Arrival, Table::AsLeft).await;
    println!(
        "== latency ({}): 10,000 waiting, 100 accounts, 300 tokens, {SLOTS} slots",
        backend_name(&world)
    );
    println!(
        "groups left after the series: {}",
        world.groups().await.len()
    );
    println!("2,000 leases: {}", summary(&mut steady.times));
    for (what, timed) in [
        ("a new request", &mut arrival),
        ("a new request, announced as a resume is", &mut announced),
    ] {
        println!(
            "500 leases, each after {what}: {} ({} arrivals opened a new group, {} arrivals leased)",
            summary(&mut timed.times),
            timed.new_groups,
            timed.arrivals_leased,
        );
    }
    println!(
        "200 leases, each with the grouped read in the way: {}",
        summary(&mut voided.times)
    );
    println!(
        "500 leases, each after a new request, with no vacuum since 2,500 leases before them (about 5,000 waiting then): {}",
        summary(&mut churned.times)
    );
    let mut trip = world.time_sql("SELECT 1", 1000).await;
    println!(
        "one round trip (SELECT 1, 1,000 times): {}",
        summary(&mut trip)
    );
    let mut grouped = world.time_sql(GROUPED, 200).await;
    println!(
        "the grouped query alone (200 times): {}",
        summary(&mut grouped)
    );
    let mut running = world.time_sql(RUNNING, 1000).await;
    println!(
        "the running jobs alone (1,000 times): {}",
        summary(&mut running)
    );
    let arrivals = with_arrivals_sql(&world.newest().await);
    let mut read = world.time_sql(&arrivals, 1000).await;
    println!(
        "the running jobs with the arrivals, nothing new (1,000 times): {}",
        summary(&mut read)
    );
    println!("plan of the grouped query:");
    for line in world.plan(GROUPED).await {
        println!("    {line}");
    }
    println!("plan of the running jobs with the arrivals:");
    for line in world.plan(&arrivals).await {
        println!("    {line}");
    }
    world.drop_database().await;
}

async fn growth(url: &str) {
    println!(
        "== growth: 200 leases per queue size, 200 each after a new request, 50 each with the grouped read in the way"
    );
    println!(
        "| waiting | groups | p50 | p99 | p50 after a new request | p99 after a new request | p50 grouped read in the way | RSS before | RSS after |"
    );
    for size in [1_000, 5_000, 10_000, 20_000] {
        let mut world = World::create(url, |t| 1 + i32::try_from(t % 3).unwrap_or(0)).await;
        world.history(HISTORY).await;
        world
            .fill(
                size,
                |i| (i * 7919) % (ACCOUNTS * TOKENS_PER_ACCOUNT),
                mixed_priority,
            )
            .await;
        let groups = world.groups().await.len();
        let dispatcher = Dispatcher::new(environment(4));
        timed_leases(
            &mut world,
            &dispatcher,
            20,
            Before::Nothing,
            Table::Vacuumed,
        )
        .await;
        let before = rss_mib();
        let mut steady = timed_leases(
            &mut world,
            &dispatcher,
            200,
            Before::Nothing,
            Table::Vacuumed,
        )
        .await
        .times;
        let mut arrival = timed_leases(
            &mut world,
            &dispatcher,
            200,
            Before::Arrival,
            Table::Vacuumed,
        )
        .await
        .times;
        let mut voided = timed_leases(&mut world, &dispatcher, 50, Before::Voided, Table::Vacuumed)
            .await
            .times;
        let after = rss_mib();
        steady.sort();
        arrival.sort();
        voided.sort();
        println!(
            "| {size} | {groups} | {} | {} | {} | {} | {} | {before:.1} MiB | {after:.1} MiB |",
            ms(percentile(&steady, 0.5)),
            ms(percentile(&steady, 0.99)),
            ms(percentile(&arrival, 0.5)),
            ms(percentile(&arrival, 0.99)),
            ms(percentile(&voided, 0.5)),
        );
        world.drop_database().await;
    }
}

/// With `uneven`, a random running job ends each round (job lengths vary
/// as they do in life); otherwise the oldest (every job equally long, so
/// the shares show the decisions alone).
async fn fairness(url: &str, uneven: bool) {
    let world = World::create(url, |_| 1000).await;
    // Ten heavy accounts with 1,000 requests each, ninety with 100, mixed
    // in arrival order so that no account is first in line.
    let mut owners = Vec::new();
    for a in 0..ACCOUNTS {
        let count = if a < 10 { 1000 } else { 100 };
        owners.extend(std::iter::repeat_n(a, count));
    }
    let shuffled: Vec<usize> = (0..owners.len())
        .map(|i| owners[(i * 7919) % owners.len()])
        .collect();
    let tokens: Vec<usize> = shuffled
        .iter()
        .enumerate()
        .map(|(i, a)| a * TOKENS_PER_ACCOUNT + i % TOKENS_PER_ACCOUNT)
        .collect();
    world
        .fill(tokens.len(), |i| tokens[i], |_| Priority::Normal)
        .await;
    let mut waiting = vec![0u64; ACCOUNTS];
    for a in &shuffled {
        waiting[*a] += 1;
    }
    let dispatcher = Dispatcher::new(environment(1000));
    let start = StartSettings::default();
    let mut running = VecDeque::new();
    let index: HashMap<String, usize> = world
        .accounts
        .iter()
        .enumerate()
        .map(|(i, a)| (a.id.clone(), i))
        .collect();
    fill_slots(&world, &dispatcher, &mut running).await;
    for (_, account) in &running {
        if let Some(i) = index.get(account) {
            waiting[*i] -= 1;
        }
    }
    let rounds = 3000;
    let fair = SLOTS as f64 / ACCOUNTS as f64;
    let (floor, ceil) = (fair.floor() as u64, fair.ceil() as u64);
    let mut slot_rounds = vec![0u64; ACCOUNTS];
    let mut starts = vec![0u64; ACCOUNTS];
    let mut kept = 0u64;
    let mut decisions = 0u64;
    let mut held = [true; ACCOUNTS];
    let (mut fewest_after, mut most_after) = (u64::MAX, 0u64);
    // xorshift64: the same sequence at every run.
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut random = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..rounds {
        let ending = if uneven && !running.is_empty() {
            usize::try_from(random() % running.len() as u64).unwrap_or(0)
        } else {
            0
        };
        if let Some((job_id, _)) = running.remove(ending) {
            world.release(&job_id).await;
        }
        let mut load = vec![0u64; ACCOUNTS];
        for (_, account) in &running {
            if let Some(i) = index.get(account) {
                load[*i] += 1;
            }
        }
        let fewest = (0..ACCOUNTS)
            .filter(|a| waiting[*a] > 0)
            .map(|a| load[a])
            .min();
        let leased = lease(&world.db, "bench", LEASE_SECONDS, &dispatcher, &start)
            .await
            .expect("lease");
        if let Some(t) = leased.ticket {
            if let Some(i) = index.get(&t.account_id) {
                decisions += 1;
                if Some(load[*i]) == fewest {
                    kept += 1;
                }
                starts[*i] += 1;
                waiting[*i] = waiting[*i].saturating_sub(1);
                load[*i] += 1;
            }
            running.push_back((t.job_id, t.account_id));
        }
        // After the decision, every account with a job waiting runs its
        // fair share, rounded down or up.
        for a in (0..ACCOUNTS).filter(|a| waiting[*a] > 0) {
            fewest_after = fewest_after.min(load[a]);
            most_after = most_after.max(load[a]);
            if load[a] < floor || load[a] > ceil {
                held[a] = false;
            }
        }
        for (a, n) in load.iter().enumerate() {
            slot_rounds[a] += n;
        }
    }
    let shares: Vec<f64> = slot_rounds
        .iter()
        .map(|n| *n as f64 / f64::from(rounds))
        .collect();
    let deviation = |s: &f64| (s - fair) / fair * 100.0;
    let mean = |range: std::ops::Range<usize>| {
        let n = range.len() as f64;
        shares[range].iter().sum::<f64>() / n
    };
    let lengths = if uneven {
        "a random running job ends each round"
    } else {
        "the oldest running job ends each round"
    };
    println!(
        "== fairness ({}): {rounds} rounds, {SLOTS} slots, 100 accounts (10 with 1,000 waiting, 90 with 100), {lengths}",
        backend_name(&world)
    );
    println!("fair share: {fair:.3} running slots per account, so {floor} or {ceil}");
    println!(
        "decisions that started a job of an account running the fewest among those with a job waiting: {kept} of {decisions}"
    );
    println!(
        "running slots of an account with a job waiting, after each decision: {fewest_after} to {most_after}"
    );
    println!(
        "accounts at their fair share (rounded down or up) after every decision: {} of {ACCOUNTS}",
        held.iter().filter(|h| **h).count()
    );
    println!(
        "slot-time share (not promised): heavy accounts {:.3} on average, light accounts {:.3}; lowest {:.3}, highest {:.3}; within 10 % of the fair share: {} of {ACCOUNTS}",
        mean(0..10),
        mean(10..ACCOUNTS),
        shares.iter().copied().fold(f64::INFINITY, f64::min),
        shares.iter().copied().fold(0.0, f64::max),
        shares.iter().filter(|s| deviation(s).abs() <= 10.0).count(),
    );
    println!(
        "starts per account: min {}, max {}",
        starts.iter().min().copied().unwrap_or(0),
        starts.iter().max().copied().unwrap_or(0)
    );
    world.drop_database().await;
}
