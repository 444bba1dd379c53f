//! The dispatch decision against PostgreSQL (docs/benchmarks.md, "Dispatch
//! decision"): how long one `lease` takes with a deep queue, whether what
//! it reads grows with the queue, and how evenly accounts share the running
//! slots.
//!
//! Run with `TEST_DATABASE_URL=postgres://… cargo bench -p
//! dragoman-scheduler --bench dispatch`. Each part runs in a fresh database
//! (created, migrated, then dropped) filled with bulk inserts: accounts,
//! three tokens each, waiting requests with their jobs and, under them,
//! 20,000 finished ones (a table that has served for a while; vacuumed and
//! analysed as autovacuum would). The jobs name
//! no provider, so the job-start checks (budgets, estimate) have nothing to
//! read and the figures are those of the decision and the take.
//!
//! 1. Latency: 10,000 waiting requests over 100 accounts and 300 tokens
//!    (10 % high, 60 % normal, 30 % low priority; tokens allowed 1 to 3
//!    running jobs, accounts 4), 40 running slots: 2,000 leases are timed,
//!    each after releasing the oldest running job once 40 run; then 500
//!    leases each after new work was announced, which makes the decision
//!    read the waiting groups again (the worst case: new requests between
//!    any two leases).
//! 2. Growth: 1,000 to 20,000 waiting requests, 200 timed leases each (and
//!    200 each after new work), with the groups in the summary and the
//!    process's resident memory.
//! 3. Fairness: 19,000 waiting requests, ten accounts holding 1,000 each
//!    and ninety holding 100, equal priority, limits out of the way, 40
//!    running slots, 3,000 rounds of "a running job ends, a worker leases":
//!    each account's share of the running slots against the fair share
//!    (40 / 100). Twice: the oldest job ends each round (jobs of equal
//!    length: the shares show the decisions alone), then a random one
//!    (lengths vary as in life; nothing preempts a long job).

use dragoman_migrations::{Migrator, MigratorTrait};
use dragoman_model::entities::{account, api_token, job, project, request, series};
use dragoman_model::vocab::{
    InputKind, JobStatus, Priority, ProjectKind, RequestStatus, SeriesKind, Stage, VolumeStatus,
};
use dragoman_model::{clock, ids};
use dragoman_scheduler::lifecycle::job_start::StartSettings;
use dragoman_scheduler::lifecycle::queue::QueueSettings;
use dragoman_scheduler::lifecycle::{Dispatcher, lease};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DatabaseConnection, EntityTrait, QueryFilter,
    Set, Statement,
};
use serde_json::json;
use std::collections::{HashMap, VecDeque};
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
    let Some(admin_url) = std::env::var("TEST_DATABASE_URL")
        .ok()
        .filter(|u| !u.trim().is_empty())
    else {
        eprintln!("TEST_DATABASE_URL is not set: the dispatch benchmark needs PostgreSQL");
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        latency(&admin_url).await;
        growth(&admin_url).await;
        fairness(&admin_url, false).await;
        fairness(&admin_url, true).await;
    });
}

/// A fresh database with the schema, dropped by [`World::drop_database`].
struct World {
    admin: DatabaseConnection,
    name: String,
    db: DatabaseConnection,
    accounts: Vec<account::Model>,
    tokens: Vec<api_token::Model>,
    series_id: String,
    project_id: String,
}

impl World {
    async fn create(admin_url: &str, token_running: impl Fn(usize) -> i32) -> World {
        let admin = dragoman_model::db::connect(admin_url)
            .await
            .expect("TEST_DATABASE_URL");
        let name = format!("dragoman_bench_{}", ids::new_id().replace('-', ""));
        admin
            .execute_unprepared(&format!("CREATE DATABASE \"{name}\""))
            .await
            .expect("create database");
        let (server, query) = match admin_url.split_once('?') {
            Some((server, query)) => (server, format!("?{query}")),
            None => (admin_url, String::new()),
        };
        let (server, _) = server.rsplit_once('/').expect("database URL with a path");
        let db = dragoman_model::db::connect(&format!("{server}/{name}{query}"))
            .await
            .expect("bench database");
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
            admin,
            name,
            db,
            accounts,
            tokens,
            series_id,
            project_id,
        }
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
        self.insert(n, token_of, priority, false).await;
    }

    /// Adds `n` finished requests and jobs: the history a queue sits on in
    /// a table that has served for a while.
    async fn history(&self, n: usize) {
        self.insert(n, |i| i, |_| Priority::Normal, true).await;
    }

    async fn insert(
        &self,
        n: usize,
        token_of: impl Fn(usize) -> usize,
        priority: impl Fn(usize) -> Priority,
        finished: bool,
    ) {
        let (request_status, job_status) = if finished {
            (RequestStatus::Completed, JobStatus::Done)
        } else {
            (RequestStatus::Pending, JobStatus::Pending)
        };
        let start = clock::now() - i64::try_from(n).unwrap_or(0) - 10;
        let mut requests = Vec::with_capacity(ROWS_PER_INSERT);
        let mut jobs = Vec::with_capacity(ROWS_PER_INSERT);
        for i in 0..n {
            let token = &self.tokens[token_of(i) % self.tokens.len()];
            let at = start + i64::try_from(i).unwrap_or(0);
            let request_id = ids::new_id();
            let job_id = ids::new_id();
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
                options: Set(json!({})),
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
        // As autovacuum would have it: statistics, and a visibility map
        // that lets the index answer alone.
        for table in ["jobs", "requests"] {
            self.db
                .execute_unprepared(&format!("VACUUM ANALYZE {table}"))
                .await
                .expect("vacuum");
        }
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

    /// Groups of waiting jobs (priority, account, token): what the decision
    /// reads besides the running jobs.
    async fn groups(&self) -> i64 {
        let row = self
            .db
            .query_one_raw(Statement::from_string(
                self.db.get_database_backend(),
                "SELECT COUNT(*) FROM (SELECT 1 FROM jobs WHERE status = 'pending' \
                 GROUP BY priority, account_id, token_id) AS g",
            ))
            .await
            .expect("groups")
            .expect("a row");
        row.try_get_by_index::<i64>(0).expect("count")
    }

    /// Times of `runs` executions of `sql` (one round trip each).
    async fn time_sql(&self, sql: &str, runs: usize) -> Vec<Duration> {
        let mut times = Vec::with_capacity(runs);
        for _ in 0..runs {
            let began = Instant::now();
            self.db
                .query_all_raw(Statement::from_string(
                    self.db.get_database_backend(),
                    sql.to_owned(),
                ))
                .await
                .expect("query");
            times.push(began.elapsed());
        }
        times
    }

    /// The plan PostgreSQL chooses for the grouped query.
    async fn plan(&self) -> Vec<String> {
        let rows = self
            .db
            .query_all_raw(Statement::from_string(
                self.db.get_database_backend(),
                format!("EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) {GROUPED}"),
            ))
            .await
            .expect("explain");
        rows.iter()
            .filter_map(|r| r.try_get_by_index::<String>(0).ok())
            .collect()
    }

    async fn drop_database(self) {
        let _ = self.db.close().await;
        self.admin
            .execute_unprepared(&format!(
                "DROP DATABASE IF EXISTS \"{}\" WITH (FORCE)",
                self.name
            ))
            .await
            .expect("drop database");
    }
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

/// `decisions` timed leases, each after the oldest running job ended once
/// `SLOTS` run; with `announced`, each after the process was told of new
/// work, so that every decision reads the waiting groups again (as when
/// requests arrive between any two leases).
async fn timed_leases(
    world: &World,
    dispatcher: &Dispatcher,
    decisions: usize,
    announced: bool,
) -> Vec<Duration> {
    let start = StartSettings::default();
    let mut running = VecDeque::new();
    fill_slots(world, dispatcher, &mut running).await;
    let mut times = Vec::with_capacity(decisions);
    for _ in 0..decisions {
        if running.len() >= SLOTS
            && let Some((oldest, _)) = running.pop_front()
        {
            world.release(&oldest).await;
        }
        if announced {
            dispatcher.invalidate();
        }
        let began = Instant::now();
        let leased = lease(&world.db, "bench", LEASE_SECONDS, dispatcher, &start)
            .await
            .expect("lease");
        times.push(began.elapsed());
        if let Some(t) = leased.ticket {
            running.push_back((t.job_id, t.account_id));
        }
    }
    times
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

async fn latency(admin_url: &str) {
    let world = World::create(admin_url, |t| 1 + i32::try_from(t % 3).unwrap_or(0)).await;
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
    timed_leases(&world, &dispatcher, 100, false).await;
    let mut times = timed_leases(&world, &dispatcher, 2000, false).await;
    let mut announced = timed_leases(&world, &dispatcher, 500, true).await;
    println!("== latency: 10,000 waiting, 100 accounts, 300 tokens, {SLOTS} slots");
    println!("groups in the summary: {}", world.groups().await);
    println!("2,000 leases: {}", summary(&mut times));
    println!(
        "500 leases, each after new work (the groups read again): {}",
        summary(&mut announced)
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
    println!("plan of the grouped query:");
    for line in world.plan().await {
        println!("    {line}");
    }
    world.drop_database().await;
}

async fn growth(admin_url: &str) {
    println!("== growth: 200 leases per queue size, then 200 each after new work");
    println!(
        "| waiting | groups | p50 | p99 | p50 after new work | p99 after new work | RSS before | RSS after |"
    );
    for size in [1_000, 5_000, 10_000, 20_000] {
        let world = World::create(admin_url, |t| 1 + i32::try_from(t % 3).unwrap_or(0)).await;
        world.history(HISTORY).await;
        world
            .fill(
                size,
                |i| (i * 7919) % (ACCOUNTS * TOKENS_PER_ACCOUNT),
                mixed_priority,
            )
            .await;
        let dispatcher = Dispatcher::new(environment(4));
        timed_leases(&world, &dispatcher, 20, false).await;
        let before = rss_mib();
        let mut times = timed_leases(&world, &dispatcher, 200, false).await;
        let mut announced = timed_leases(&world, &dispatcher, 200, true).await;
        let after = rss_mib();
        times.sort();
        announced.sort();
        println!(
            "| {size} | {} | {} | {} | {} | {} | {before:.1} MiB | {after:.1} MiB |",
            world.groups().await,
            ms(percentile(&times, 0.5)),
            ms(percentile(&times, 0.99)),
            ms(percentile(&announced, 0.5)),
            ms(percentile(&announced, 0.99)),
        );
        world.drop_database().await;
    }
}

/// With `uneven`, a random running job ends each round (job lengths vary
/// as they do in life); otherwise the oldest (every job equally long, so
/// the shares show the decisions alone).
async fn fairness(admin_url: &str, uneven: bool) {
    let world = World::create(admin_url, |_| 1000).await;
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
    let dispatcher = Dispatcher::new(environment(1000));
    let start = StartSettings::default();
    let mut running = VecDeque::new();
    fill_slots(&world, &dispatcher, &mut running).await;
    let index: HashMap<String, usize> = world
        .accounts
        .iter()
        .enumerate()
        .map(|(i, a)| (a.id.clone(), i))
        .collect();
    let rounds = 3000;
    let mut slot_rounds = vec![0u64; ACCOUNTS];
    let mut starts = vec![0u64; ACCOUNTS];
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
        let leased = lease(&world.db, "bench", LEASE_SECONDS, &dispatcher, &start)
            .await
            .expect("lease");
        if let Some(t) = leased.ticket {
            if let Some(i) = index.get(&t.account_id) {
                starts[*i] += 1;
            }
            running.push_back((t.job_id, t.account_id));
        }
        for (_, account) in &running {
            if let Some(i) = index.get(account) {
                slot_rounds[*i] += 1;
            }
        }
    }
    let fair = SLOTS as f64 / ACCOUNTS as f64;
    let shares: Vec<f64> = slot_rounds
        .iter()
        .map(|n| *n as f64 / f64::from(rounds))
        .collect();
    let deviation = |s: &f64| (s - fair) / fair * 100.0;
    let worst = shares
        .iter()
        .map(deviation)
        .fold(0.0_f64, |w, d| if d.abs() > w.abs() { d } else { w });
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
        "== fairness: {rounds} rounds, {SLOTS} slots, 100 accounts (10 with 1,000 waiting, 90 with 100), {lengths}"
    );
    println!("fair share: {fair:.3} running slots per account");
    println!(
        "heavy accounts: {:.3} on average; light accounts: {:.3}",
        mean(0..10),
        mean(10..ACCOUNTS)
    );
    println!(
        "lowest share {:.3}, highest {:.3}, worst deviation {worst:+.1} %",
        shares.iter().copied().fold(f64::INFINITY, f64::min),
        shares.iter().copied().fold(0.0, f64::max),
    );
    println!(
        "starts per account: min {}, max {}",
        starts.iter().min().copied().unwrap_or(0),
        starts.iter().max().copied().unwrap_or(0)
    );
    let within = shares.iter().filter(|s| deviation(s).abs() <= 10.0).count();
    println!("accounts within 10 % of the fair share: {within} of {ACCOUNTS}");
    world.drop_database().await;
}
