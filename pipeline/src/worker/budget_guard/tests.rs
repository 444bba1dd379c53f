//! Unit tests of the budget guard: what a job may spend, when it pauses
//! and when it switches provider.

use super::*;
use crate::llm::{LlmClient, ProviderConfig, ProviderKind as Protocol};
use dragoman_migrations::{Migrator, MigratorTrait};
use dragoman_model::coordination::LocalCoordination;
use dragoman_model::entities::{
    account, api_token, project, provider_batch, provider_call, request, series,
};
use dragoman_model::vocab::{
    BatchState, BudgetPeriod, InputKind, Priority, ProjectKind, ProviderKind, RequestStatus,
    SeriesKind, Stage, VolumeStatus,
};
use sea_orm::{ActiveModelTrait, ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, Set};
use serde_json::json;

/// A token with a cap over its life, a book, two providers, and the
/// guard of a worker with the default threshold.
struct Bench {
    db: DatabaseConnection,
    coordination: LocalCoordination,
    account_id: String,
    token_id: String,
    project_id: String,
}

impl Bench {
    async fn new(token_cap: Option<f64>, book_cap: Option<f64>) -> Bench {
        let db = dragoman_model::db::connect("sqlite::memory:")
            .await
            .expect("in-memory database");
        Migrator::up(&db, None).await.expect("migrations");
        let account = account::ActiveModel::new_account("reader", String::new(), false)
            .insert(&db)
            .await
            .expect("account");
        let now = clock::now();
        let token = api_token::ActiveModel {
            id: Set(ids::new_id()),
            account_id: Set(account.id.clone()),
            name: Set("ci".into()),
            prefix: Set(ids::new_id()),
            secret_hash: Set(String::new()),
            scopes: Set(json!([])),
            created_at: Set(now),
            max_priority: Set(Priority::Normal),
            max_running: Set(10),
            max_queued: Set(100),
            budget_amount: Set(token_cap),
            budget_period: Set(token_cap.map(|_| BudgetPeriod::Total)),
            ..Default::default()
        }
        .insert(&db)
        .await
        .expect("token");
        let series = series::ActiveModel {
            id: Set(ids::new_id()),
            account_id: Set(account.id.clone()),
            name: Set("Saga".into()),
            kind: Set(SeriesKind::Numbered),
            archived: Set(false),
            suspended: Set(false),
            created_at: Set(now),
            updated_at: Set(now),
            ..Default::default()
        }
        .insert(&db)
        .await
        .expect("series");
        let project = project::ActiveModel {
            id: Set(ids::new_id()),
            series_id: Set(series.id),
            account_id: Set(account.id.clone()),
            title: Set("Saga 1".into()),
            volume_number: Set(Some(1)),
            project_kind: Set(ProjectKind::Volume),
            status: Set(VolumeStatus::Imported),
            source_language: Set("en".into()),
            target_language: Set("fr".into()),
            archived: Set(false),
            licence_counted: Set(true),
            budget_amount: Set(book_cap),
            created_at: Set(now),
            updated_at: Set(now),
            ..Default::default()
        }
        .insert(&db)
        .await
        .expect("book");
        Bench {
            db,
            coordination: LocalCoordination::new(),
            account_id: account.id,
            token_id: token.id,
            project_id: project.id,
        }
    }

    fn guard(&self) -> Guard<'_> {
        Guard {
            db: &self.db,
            coordination: &self.coordination,
            switch_percent: budget::DEFAULT_SWITCH_PERCENT,
            ttl: Duration::from_secs(60),
        }
    }

    fn purse(&self, provider: &provider::Model, switches: i32) -> Purse {
        let ticket = JobTicket {
            job_id: "job".into(),
            token_id: Some(self.token_id.clone()),
            project_id: self.project_id.clone(),
            provider_id: provider.id.clone(),
            provider_switches: switches,
            ..JobTicket::default()
        };
        Purse::new(&ticket, "w1")
    }

    async fn provider(
        &self,
        name: &str,
        prices: Option<(f64, f64)>,
        fallback: Option<&provider::Model>,
    ) -> provider::Model {
        let now = clock::now();
        provider::ActiveModel {
            id: Set(ids::new_id()),
            name: Set(name.into()),
            kind: Set(ProviderKind::OpenAi),
            model: Set("m".into()),
            base_url: Set("http://127.0.0.1:9/v1".into()),
            api_key_env: Set(String::new()),
            price_input: Set(prices.map(|p| p.0)),
            price_output: Set(prices.map(|p| p.1)),
            price_cached_input: Set(None),
            capacity: Set(4),
            batch_discount: Set(0.5),
            fallback_provider_id: Set(fallback.map(|f| f.id.clone())),
            created_at: Set(now),
            updated_at: Set(now),
        }
        .insert(&self.db)
        .await
        .expect("provider")
    }

    /// A call of the token already recorded, outside any request.
    async fn spent(&self, provider: &provider::Model, cost: f64) {
        provider_call::ActiveModel {
            id: Set(ids::new_id()),
            provider_id: Set(provider.id.clone()),
            account_id: Set(self.account_id.clone()),
            token_id: Set(Some(self.token_id.clone())),
            request_id: Set(None),
            job_id: Set(None),
            prompt_tokens: Set(1),
            completion_tokens: Set(1),
            cached: Set(false),
            cached_prompt_tokens: Set(0),
            cache_write_tokens: Set(0),
            stage: Set(UsageStage::Translation),
            batch: Set(false),
            cost: Set(Some(cost)),
            duration_ms: Set(1),
            status: Set("ok".into()),
            error: Set(String::new()),
            created_at: Set(clock::now()),
        }
        .insert(&self.db)
        .await
        .expect("call");
    }

    async fn reserved(&self, pool: &str) -> f64 {
        self.coordination.reserved(pool).await.expect("reserved")
    }

    fn token_pool(&self) -> String {
        format!("budget:token:{}", self.token_id)
    }
}

fn engine(provider: &provider::Model) -> Arc<Engine> {
    let client = LlmClient::new(ProviderConfig {
        kind: Protocol::OpenAi,
        base_url: provider.base_url.clone(),
        model: provider.model.clone(),
        api_key: None,
        ids: Default::default(),
        timeout: Duration::from_secs(1),
        price_input: provider.price_input,
        price_output: provider.price_output,
        price_cached_input: None,
    })
    .expect("client");
    Arc::new(Engine {
        provider: provider.clone(),
        client: Arc::new(client),
        capacity: 1,
    })
}

/// 10 000 tokens each way: 0.4 at 10 + 30 per million, 0.02 at 1 + 1;
/// 0.7 and 0.03 with the answer at its ceiling.
const SIZE: CallSize = CallSize {
    kind: CallKind::Translation,
    prompt_tokens: 10_000,
    completion_tokens: 10_000,
    ceiling_tokens: 20_000,
};

/// What a call of [`SIZE`] is expected to cost on `provider`.
fn at(provider: &provider::Model) -> f64 {
    SIZE.cost(provider).expect("priced")
}

fn reserved(room: Room) -> Hold {
    match room {
        Room::Reserved(hold) => hold,
        Room::Refused => panic!("refused"),
    }
}

fn refused(room: Room) {
    assert!(matches!(room, Room::Refused), "{room:?}");
}

/// A call of the job that came back having cost `cost`.
fn record(cost: Option<f64>) -> CallRecord {
    CallRecord {
        passages: 1,
        prompt_tokens: 1,
        completion_tokens: 1,
        cached: false,
        cached_prompt_tokens: 0,
        cache_write_tokens: 0,
        cost,
        duration_ms: 1,
        outcome: "ok".into(),
        error: String::new(),
    }
}

#[test]
fn estimates_follow_what_is_sent_at_the_providers_prices() {
    let job = TranslateJob {
        source_language: "en".into(),
        target_language: "fr".into(),
        passages: vec![PassageIn {
            id: "c1.p0".into(),
            text: "It was a bright cold day in April.".into(),
        }],
        context: Some("Glossary: April => avril".into()),
    };
    let size = CallSize::translation(&job);
    let passages = passage_tokens(&job.passages[0]);
    assert_eq!(size.kind, CallKind::Translation);
    assert_eq!(
        size.completion_tokens,
        scaled(passages, TRANSLATION_COMPLETION_RATIO)
    );
    assert_eq!(size.ceiling_tokens, passages * TRANSLATION_ANSWER_FACTOR);
    assert!(size.prompt_tokens > estimate_tokens(SYSTEM_PROMPT) + passages);
    let mut without = job.clone();
    without.context = None;
    assert!(CallSize::translation(&without).prompt_tokens < size.prompt_tokens);

    let languages = Languages {
        source: "en",
        target: "fr",
    };
    let analysis = CallSize::analysis(languages, &job.passages);
    assert_eq!(analysis.kind, CallKind::Analysis);
    assert_eq!(
        analysis.completion_tokens,
        scaled(passages, ANALYSIS_COMPLETION_SHARE)
    );
    assert_eq!(analysis.ceiling_tokens, passages * ANALYSIS_ANSWER_FACTOR);
    let review = CallSize::review(
        languages,
        &[],
        &[],
        &[ReviewPassage {
            id: "c1.p0".into(),
            source: "Hello".into(),
            translation: "Bonjour".into(),
        }],
    );
    assert_eq!(review.kind, CallKind::Review);
    assert_eq!(
        review.completion_tokens,
        scaled(
            estimate_tokens("c1.p0") + estimate_tokens("Bonjour") + PASSAGE_OVERHEAD_TOKENS,
            REVIEW_COMPLETION_SHARE
        )
    );

    let mut priced = provider::Model {
        id: "p".into(),
        name: "p".into(),
        kind: ProviderKind::OpenAi,
        model: "m".into(),
        base_url: String::new(),
        api_key_env: String::new(),
        price_input: Some(10.0),
        price_output: Some(30.0),
        price_cached_input: None,
        capacity: 1,
        batch_discount: 0.5,
        fallback_provider_id: None,
        created_at: 0,
        updated_at: 0,
    };
    let cost = SIZE.cost(&priced).expect("priced");
    assert!((cost - 0.4).abs() < 1e-12);
    let ceiling = SIZE.ceiling(&priced).expect("priced");
    assert!((ceiling - 0.7).abs() < 1e-12);
    priced.price_output = None;
    assert_eq!(SIZE.cost(&priced), None);
}

#[tokio::test]
async fn expected_costs_follow_what_the_jobs_calls_cost() {
    let bench = Bench::new(None, None).await;
    let dear = bench.provider("dear", Some((10.0, 30.0)), None).await;
    let purse = bench.purse(&dear, 0);
    // Nothing measured yet: the answer counts at its ceiling.
    assert_eq!(purse.expected_cost(&SIZE, &dear), Some((0.7, 0.4)));

    // A translation came back costing twice its estimate (a retry, a
    // longer answer): the next translation is expected to as well.
    let flight = InFlight::new(&purse.calls, CallKind::Translation, Some(0.4));
    flight.came_back(&[record(Some(0.5)), record(Some(0.3)), record(None)]);
    drop(flight);
    let (corrected, estimated) = purse.expected_cost(&SIZE, &dear).expect("priced");
    assert!((corrected - 0.8).abs() < 1e-12, "{corrected}");
    assert!((estimated - 0.4).abs() < 1e-12);

    // Other kinds keep their own measure; a call that cost nothing
    // (failed before any usage) teaches nothing.
    let review = CallSize {
        kind: CallKind::Review,
        ..SIZE
    };
    assert_eq!(purse.expected_cost(&review, &dear), Some((0.7, 0.4)));
    let failed = InFlight::new(&purse.calls, CallKind::Review, Some(0.4));
    failed.came_back(&[record(Some(0.0))]);
    drop(failed);
    assert_eq!(purse.expected_cost(&review, &dear), Some((0.7, 0.4)));

    // Unpriced: nothing is expected.
    let local = bench.provider("local", None, None).await;
    assert_eq!(purse.expected_cost(&SIZE, &local), None);
}

#[tokio::test]
async fn a_call_refused_at_the_cap_waits_for_the_calls_in_flight() {
    let ticket = JobTicket::default();
    let purse = Purse::new(&ticket, "w1");
    assert!(purse.call_back().is_none(), "nothing in flight");
    let first = InFlight::new(&purse.calls, CallKind::Translation, None);
    let second = InFlight::new(&purse.calls, CallKind::Translation, None);
    let returned = purse.call_back().expect("calls in flight");
    let waiting = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        drop(first);
    });
    tokio::time::timeout(Duration::from_secs(5), returned)
        .await
        .expect("woken when a call came back");
    waiting.await.expect("dropped");
    assert!(purse.call_back().is_some(), "one call still in flight");
    drop(second);
    assert!(purse.call_back().is_none());
}

#[tokio::test]
async fn a_budget_pause_lets_the_calls_in_flight_finish() {
    use std::sync::atomic::AtomicUsize;
    let ticket = JobTicket::default();
    for paused in [false, true] {
        let purse = Purse::new(&ticket, "w1");
        purse.paused.store(paused, Ordering::SeqCst);
        let finished = AtomicUsize::new(0);
        let finished = &finished;
        let mut runs = futures::stream::iter((0..3).map(|i| async move {
            if i == 0 {
                return Err(Stop::Released);
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
            finished.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }))
        .buffer_unordered(3);
        let first = runs.next().await.expect("an outcome");
        let stop = first.expect_err("the first stops the job");
        let stop = purse.wind_down(&mut runs, stop).await;
        assert!(matches!(stop, Stop::Released));
        let expected = if paused { 2 } else { 0 };
        assert_eq!(
            finished.load(Ordering::SeqCst),
            expected,
            "paused: {paused}"
        );
    }
}

#[tokio::test]
async fn a_drain_lets_the_calls_in_flight_finish() {
    use std::sync::atomic::AtomicUsize;
    let ticket = JobTicket::default();
    let (drain, draining) = watch::channel(false);
    let purse = Purse::new(&ticket, "w1").drained_by(draining);
    assert!(!purse.draining());
    drain.send_replace(true);
    assert!(purse.draining());
    let finished = AtomicUsize::new(0);
    let finished = &finished;
    let mut runs = futures::stream::iter((0..3).map(|i| async move {
        if i == 0 {
            return Err(Stop::Drained);
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        finished.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }))
    .buffer_unordered(3);
    let first = runs.next().await.expect("an outcome");
    let stop = first.expect_err("the first stops the job");
    let stop = purse.wind_down(&mut runs, stop).await;
    assert!(matches!(stop, Stop::Drained));
    assert_eq!(finished.load(Ordering::SeqCst), 2);
}

#[test]
fn a_reservation_outlives_every_attempt_of_its_call() {
    let ttl = reservation_ttl(Duration::from_secs(30), Duration::from_secs(60), 4);
    assert_eq!(ttl, Duration::from_secs(4 * 90) + TTL_MARGIN);
    let once = reservation_ttl(Duration::from_secs(30), Duration::from_secs(60), 0);
    assert_eq!(once, Duration::from_secs(90) + TTL_MARGIN);
    assert_eq!(
        reservation_ttl(Duration::MAX, Duration::MAX, 4),
        Duration::MAX
    );
}

#[tokio::test]
async fn a_job_moves_at_the_threshold_then_reaches_the_cap() {
    let bench = Bench::new(Some(1.0), None).await;
    let cheap = bench.provider("cheap", Some((1.0, 1.0)), None).await;
    let dear = bench
        .provider("dear", Some((10.0, 30.0)), Some(&cheap))
        .await;
    let guard = bench.guard();
    let purse = bench.purse(&dear, 0);
    assert_eq!(purse.limit(), Limit::Threshold);
    let pool = bench.token_pool();

    // Below the threshold calls must fit whole, those in flight
    // counted: two fit below 90% of the cap, a third not.
    let first = reserved(
        guard
            .reserve(&purse, at(&dear), Limit::Threshold)
            .await
            .expect("ok"),
    );
    let second = reserved(
        guard
            .reserve(&purse, at(&dear), Limit::Threshold)
            .await
            .expect("ok"),
    );
    assert!((bench.reserved(&pool).await - 0.8).abs() < 1e-9);
    refused(
        guard
            .reserve(&purse, at(&dear), Limit::Threshold)
            .await
            .expect("ok"),
    );
    assert!((bench.reserved(&pool).await - 0.8).abs() < 1e-9);

    // Refused on its original provider: it moves to the cheaper one.
    let next = guard
        .next(&purse, &dear, Limit::Threshold)
        .await
        .expect("next");
    let Next::Move(to) = next else {
        panic!("expected a move, got {next:?}")
    };
    assert_eq!(to.id, cheap.id);
    purse.moved_to(engine(&to)).await;
    assert!(purse.switched());
    assert_eq!(purse.limit(), Limit::Cap);
    // A call refused before the move asks again on the new provider.
    assert!(matches!(
        guard.next(&purse, &cheap, Limit::Threshold).await,
        Ok(Next::Retry)
    ));

    // After the move the room is the cap itself.
    let third = reserved(
        guard
            .reserve(&purse, at(&cheap), Limit::Cap)
            .await
            .expect("ok"),
    );
    assert!((bench.reserved(&pool).await - 0.82).abs() < 1e-9);
    for hold in [first, second, third] {
        guard.release(hold).await;
    }
    assert_eq!(bench.reserved(&pool).await, 0.0);

    // Recorded spending leaves 0.01: a call expected at 0.02 still
    // starts and crosses the cap; the next one finds it used up.
    bench.spent(&dear, 0.99).await;
    let last = reserved(
        guard
            .reserve(&purse, at(&cheap), Limit::Cap)
            .await
            .expect("ok"),
    );
    refused(
        guard
            .reserve(&purse, at(&cheap), Limit::Cap)
            .await
            .expect("ok"),
    );
    guard.release(last).await;
    bench.spent(&cheap, 0.02).await;
    refused(
        guard
            .reserve(&purse, at(&cheap), Limit::Cap)
            .await
            .expect("ok"),
    );
    assert!(matches!(
        guard.next(&purse, &cheap, Limit::Cap).await,
        Ok(Next::Pause)
    ));
    purse.paused.store(true, Ordering::SeqCst);
    assert!(matches!(
        guard.next(&purse, &cheap, Limit::Cap).await,
        Err(Stop::Released)
    ));
}

#[tokio::test]
async fn with_nothing_cheaper_a_job_goes_on_up_to_the_cap() {
    let bench = Bench::new(Some(1.0), None).await;
    let cheap = bench.provider("cheap", Some((1.0, 1.0)), None).await;
    bench.spent(&cheap, 0.95).await;
    let guard = bench.guard();
    // Leased again on the provider it moved to: up to the cap.
    let moved = bench.purse(&cheap, 1);
    assert_eq!(moved.limit(), Limit::Cap);
    let hold = reserved(
        guard
            .reserve(&moved, at(&cheap), moved.limit())
            .await
            .expect("ok"),
    );
    guard.release(hold).await;
    // Not moved, nothing cheaper than the cheapest: past the threshold
    // it goes on, up to the cap.
    let fresh = bench.purse(&cheap, 0);
    refused(
        guard
            .reserve(&fresh, at(&cheap), fresh.limit())
            .await
            .expect("ok"),
    );
    assert!(matches!(
        guard.next(&fresh, &cheap, Limit::Threshold).await,
        Ok(Next::UpToCap)
    ));
    fresh.nowhere_cheaper.store(true, Ordering::SeqCst);
    assert_eq!(fresh.limit(), Limit::Cap);
    let hold = reserved(
        guard
            .reserve(&fresh, at(&cheap), fresh.limit())
            .await
            .expect("ok"),
    );
    guard.release(hold).await;
}

#[tokio::test]
async fn every_cap_must_take_the_reservation() {
    let bench = Bench::new(Some(100.0), Some(0.15)).await;
    let dear = bench.provider("dear", Some((10.0, 30.0)), None).await;
    let guard = bench.guard();
    let purse = bench.purse(&dear, 0);
    // The token has room; calls in flight elsewhere hold all the book's
    // cap: the token's reservation, taken first, is given back.
    let book_pool = format!("budget:book:{}", bench.project_id);
    assert!(
        bench
            .coordination
            .reserve(&book_pool, "elsewhere", 0.2, 1.0, Duration::from_secs(60))
            .await
            .expect("reserve")
    );
    refused(
        guard
            .reserve(&purse, at(&dear), Limit::Cap)
            .await
            .expect("ok"),
    );
    assert_eq!(bench.reserved(&bench.token_pool()).await, 0.0);
    assert!((bench.reserved(&book_pool).await - 0.2).abs() < 1e-9);

    let small = CallSize {
        prompt_tokens: 1_000,
        completion_tokens: 1_000,
        ..SIZE
    };
    // A cap with some room left takes a call, even one that crosses it.
    let bench = Bench::new(Some(100.0), Some(0.15)).await;
    let dear = bench.provider("dear", Some((10.0, 30.0)), None).await;
    let guard = bench.guard();
    let purse = bench.purse(&dear, 0);
    let book_pool = format!("budget:book:{}", bench.project_id);
    let big = reserved(
        guard
            .reserve(&purse, at(&dear), Limit::Cap)
            .await
            .expect("ok"),
    );
    assert!(at(&dear) > 0.15);
    guard.release(big).await;
    let hold = reserved(
        guard
            .reserve(&purse, small.cost(&dear).expect("priced"), Limit::Cap)
            .await
            .expect("ok"),
    );
    assert!((bench.reserved(&bench.token_pool()).await - 0.04).abs() < 1e-9);
    assert!((bench.reserved(&book_pool).await - 0.04).abs() < 1e-9);
    guard.release(hold).await;
    assert_eq!(bench.reserved(&book_pool).await, 0.0);
}

#[tokio::test]
async fn unpriced_calls_reserve_nothing() {
    let bench = Bench::new(Some(0.0), Some(0.0)).await;
    let unpriced = bench.provider("local", None, None).await;
    let guard = bench.guard();
    let purse = bench.purse(&unpriced, 0);
    assert_eq!(purse.expected_cost(&SIZE, &unpriced), None);
    let hold = reserved(
        guard
            .reserve(&purse, 0.0, Limit::Threshold)
            .await
            .expect("ok"),
    );
    assert!(hold.pools.is_empty());
    // Without caps a priced call reserves nothing either.
    let free = Bench::new(None, None).await;
    let dear = free.provider("dear", Some((10.0, 30.0)), None).await;
    let purse = free.purse(&dear, 0);
    let hold = reserved(
        free.guard()
            .reserve(&purse, at(&dear), Limit::Threshold)
            .await
            .expect("ok"),
    );
    assert!(hold.pools.is_empty());
}

/// A running request of the bench's token on its book, with a provider
/// batch written down and expected to cost `expected`; the batch's id.
async fn waiting_batch(bench: &Bench, provider: &provider::Model, expected: f64) -> String {
    // The batch's job is not needed here.
    bench
        .db
        .execute_unprepared("PRAGMA foreign_keys = OFF")
        .await
        .expect("pragma");
    let now = clock::now();
    let request_id = ids::new_id();
    let book = project::Entity::find_by_id(bench.project_id.clone())
        .one(&bench.db)
        .await
        .expect("book")
        .expect("book");
    request::ActiveModel {
        id: Set(request_id.clone()),
        account_id: Set(bench.account_id.clone()),
        token_id: Set(Some(bench.token_id.clone())),
        external_id: Set(None),
        idempotency_key: Set(None),
        content_hash: Set(String::new()),
        series_id: Set(book.series_id),
        project_id: Set(bench.project_id.clone()),
        job_id: Set(Some("job".into())),
        input: Set(InputKind::Json),
        status: Set(RequestStatus::Running),
        stage: Set(Stage::Translation),
        step: Set(String::new()),
        error: Set(String::new()),
        stop_reason: Set(String::new()),
        priority: Set(Priority::Normal),
        options: Set(Default::default()),
        callback_url: Set(None),
        callback_events: Set(json!([])),
        chapters: Set(json!({})),
        result: Set(None),
        report: Set(None),
        next_attempt: Set(0),
        created_at: Set(now),
        updated_at: Set(now),
        finished_at: Set(None),
    }
    .insert(&bench.db)
    .await
    .expect("request");
    let id = ids::new_id();
    provider_batch::ActiveModel {
        id: Set(id.clone()),
        job_id: Set("job".into()),
        request_id: Set(request_id),
        project_id: Set(bench.project_id.clone()),
        provider_id: Set(provider.id.clone()),
        stage: Set(UsageStage::Translation),
        submission_key: Set(format!("dragoman-job-{id}")),
        state: Set(BatchState::Submitted),
        remote_id: Set(Some("batch_1".into())),
        input_file_id: Set(None),
        items: Set(1),
        done: Set(0),
        failed: Set(0),
        submitted_at: Set(Some(now)),
        expected_by: Set(None),
        next_poll_at: Set(None),
        polls: Set(0),
        applied_at: Set(None),
        expected_cost: Set(Some(expected)),
        last_error: Set(String::new()),
        created_at: Set(now),
        updated_at: Set(now),
    }
    .insert(&bench.db)
    .await
    .expect("batch");
    id
}

#[tokio::test]
async fn a_waiting_batch_holds_its_room_until_its_answers_are_recorded() {
    let bench = Bench::new(Some(10.0), None).await;
    let dear = bench.provider("dear", Some((10.0, 30.0)), None).await;
    let guard = bench.guard();
    let purse = bench.purse(&dear, 0);
    let batch = waiting_batch(&bench, &dear, 9.5).await;
    // 9.5 of 10 committed: nothing left below the threshold.
    refused(
        guard
            .reserve(&purse, at(&dear), Limit::Threshold)
            .await
            .expect("ok"),
    );
    // Its answers recorded, the room is free again.
    provider_batch::Entity::update_many()
        .col_expr(
            provider_batch::Column::AppliedAt,
            sea_orm::sea_query::Expr::value(clock::now()),
        )
        .filter(provider_batch::Column::Id.eq(batch))
        .exec(&bench.db)
        .await
        .expect("applied");
    let hold = reserved(
        guard
            .reserve(&purse, at(&dear), Limit::Threshold)
            .await
            .expect("ok"),
    );
    guard.release(hold).await;
    // A batch of a request that ended holds nothing either.
    waiting_batch(&bench, &dear, 9.5).await;
    request::Entity::update_many()
        .col_expr(
            request::Column::FinishedAt,
            sea_orm::sea_query::Expr::value(clock::now()),
        )
        .filter(request::Column::Status.eq(RequestStatus::Running))
        .exec(&bench.db)
        .await
        .expect("finished");
    let hold = reserved(
        guard
            .reserve(&purse, at(&dear), Limit::Threshold)
            .await
            .expect("ok"),
    );
    guard.release(hold).await;
}
