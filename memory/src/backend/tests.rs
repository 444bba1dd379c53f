//! Unit tests of the memory backend.

use super::*;
use crate::external::chroma::testkit;
use crate::external::{ExternalMemory, ExternalSettings};
use crate::testing::{Fixture, analysis, character, decision, found};
use dragoman_model::entities::passage;
use dragoman_model::vocab::{Quality, TermLayer};
use dragoman_simulator::{RunningSimulator, SimulatorConfig};
use dragoman_testing::Chroma;
use sea_orm::EntityTrait;
use std::time::Instant;

/// What the earlier volume of the series holds, translated.
const EARLIER: [(&str, &str); 3] = [
    (
        "Captain Ahab paced the deck of the Pequod at night.",
        "Le capitaine Achab arpentait le pont du Péquod la nuit.",
    ),
    (
        "The white whale rose from the grey sea.",
        "La baleine blanche surgit de la mer grise.",
    ),
    (
        "Ishmael baked bread in the galley.",
        "Ismaël cuisait du pain dans la cuisine.",
    ),
];

/// The batch of the later volume: like the first passage of the
/// earlier one, and naming Starbuck, whom only the earlier volume's
/// memory knows.
const LATER: &str = "Captain Ahab paced the deck of the Pequod again while Starbuck slept.";

struct Story {
    fx: Fixture,
    later_volume: String,
    batch: Vec<String>,
}

/// A series whose first volume is translated (with Starbuck in its
/// memory and `Pequod` in the series glossary) and whose second volume
/// has one passage to translate.
async fn story() -> Story {
    let fx = Fixture::with_settings(MemorySettings {
        context_tokens: 10_000,
    })
    .await;
    let series = fx.series("Moby").await;
    let first = fx.volume(&series, 1).await;
    let sources: Vec<&str> = EARLIER.iter().map(|(s, _)| *s).collect();
    let (_, passages) = fx.chapter(&first, 1, &sources).await;
    for (passage, (_, translation)) in passages.iter().zip(EARLIER) {
        fx.translate(passage, translation, "k", true, 1).await;
    }
    fx.backend
        .record_analysis(
            &first.id,
            &[analysis(
                &passages[0],
                found(
                    vec![character("Starbuck", &["the mate"], Some("Starbuc"))],
                    vec![],
                    "Ahab paces.",
                ),
            )],
            true,
            Quality::Normal,
        )
        .await
        .expect("analysis");
    let mut pequod = decision(TermLayer::Series, &series.id, "Pequod", "Péquod");
    pequod.locked = true;
    fx.backend.put_term(None, &pequod).await.expect("term");
    let second = fx.volume(&series, 2).await;
    let (_, later) = fx.chapter(&second, 1, &[LATER]).await;
    Story {
        fx,
        later_volume: second.id,
        batch: vec![later[0].id.clone()],
    }
}

/// The external memory of `story` on `chroma`, embedding through
/// `simulator`, with the series mirrored.
async fn mirrored(
    story: &Story,
    chroma: &Chroma,
    simulator: &RunningSimulator,
    tune: impl FnOnce(&mut ExternalSettings),
) -> ExternalMemory {
    let mut settings = testkit::settings(&chroma.url(), &simulator.openai_base_url());
    tune(&mut settings);
    let memory = ExternalMemory::new(story.fx.db.clone(), settings).expect("external memory");
    memory.sync_pending().await.expect("mirrored");
    memory
}

async fn database_context(story: &Story) -> String {
    story
        .fx
        .backend
        .build_contexts(&story.later_volume, std::slice::from_ref(&story.batch))
        .await
        .expect("database context")[0]
        .text
        .clone()
}

#[tokio::test]
async fn hybrid_contexts_come_from_chroma_when_it_answers() {
    let Some(chroma) = Chroma::start_or_skip("hybrid answered").await else {
        return;
    };
    let simulator = testkit::simulator().await;
    let story = story().await;
    let memory = mirrored(&story, &chroma, &simulator, |_| {}).await;
    let database = database_context(&story).await;
    assert!(
        database.contains("Pequod => Péquod (locked)") && !database.contains("Starbuck"),
        "{database}"
    );

    let answered = story
        .fx
        .backend
        .build_contexts_with(
            &story.later_volume,
            std::slice::from_ref(&story.batch),
            ContextBackend::Hybrid,
            Some(&memory),
        )
        .await
        .expect("contexts");
    assert_eq!(answered.answered_by, ContextBackend::External);
    assert!(!answered.fell_back);
    let text = &answered.contexts[0].text;
    // The glossary in force is the database's; Starbuck comes from the
    // earlier volume's mirrored memory, found by his name in the batch;
    // the similar earlier passage comes with its translation.
    assert!(
        text.starts_with("Glossary:\n- Pequod => Péquod (locked)"),
        "{text}"
    );
    assert!(
        text.contains("Characters:\n- Starbuck => Starbuc; aliases: the mate"),
        "{text}"
    );
    assert!(
        text.contains(
            "Similar passages:\n- Captain Ahab paced the deck of the Pequod at night. => \
             Le capitaine Achab arpentait le pont du Péquod la nuit."
        ),
        "{text}"
    );
    assert!(
        !text.contains("baked bread"),
        "an unrelated passage is not similar: {text}"
    );
    assert_eq!(answered.contexts[0].tokens, estimate(text));

    // What the database gives always stays; retrieval takes what room
    // is left.
    let tight = InternalBackend::new(
        story.fx.db.clone(),
        MemorySettings {
            context_tokens: estimate(&database),
        },
    );
    let answered = tight
        .build_contexts_with(
            &story.later_volume,
            std::slice::from_ref(&story.batch),
            ContextBackend::Hybrid,
            Some(&memory),
        )
        .await
        .expect("contexts");
    assert_eq!(answered.answered_by, ContextBackend::External);
    assert_eq!(answered.contexts[0].text, database);
}

fn estimate(text: &str) -> usize {
    dragoman_model::tokens::estimate_tokens(text)
}

#[tokio::test]
async fn hybrid_falls_back_to_the_database_within_its_deadline() {
    let Some(mut chroma) = Chroma::start_or_skip("hybrid fallback").await else {
        return;
    };
    let simulator = testkit::simulator().await;
    let story = story().await;
    let memory = mirrored(&story, &chroma, &simulator, |_| {}).await;
    let database = database_context(&story).await;
    let ask = |memory| {
        story.fx.backend.build_contexts_with(
            &story.later_volume,
            std::slice::from_ref(&story.batch),
            ContextBackend::Hybrid,
            Some(memory),
        )
    };

    // Chroma stopped: it refuses at once and the database answers.
    chroma.stop().await;
    let started = Instant::now();
    let answered = ask(&memory).await.expect("contexts");
    let elapsed = started.elapsed();
    assert_eq!(answered.answered_by, ContextBackend::Internal);
    assert!(answered.fell_back);
    assert!(
        answered
            .note
            .as_deref()
            .is_some_and(|n| n.contains("chroma")),
        "{answered:?}"
    );
    assert_eq!(answered.contexts[0].text, database);
    assert!(
        elapsed < Duration::from_millis(800) + Duration::from_secs(2),
        "{elapsed:?}"
    );

    // Chroma up but the external memory slow (its embeddings take 3 s):
    // the database answers when the 800 ms deadline passes, not later.
    chroma.restart().await;
    let slow = testkit::simulator_with(SimulatorConfig {
        latency: Duration::from_secs(3),
        ..SimulatorConfig::default()
    })
    .await;
    let mut settings = testkit::settings(&chroma.url(), &slow.openai_base_url());
    settings.hybrid_deadline = Duration::from_millis(800);
    let late = ExternalMemory::new(story.fx.db.clone(), settings).expect("external memory");
    let started = Instant::now();
    let answered = ask(&late).await.expect("contexts");
    let elapsed = started.elapsed();
    assert_eq!(answered.answered_by, ContextBackend::Internal);
    assert!(answered.fell_back);
    assert!(
        answered.note.as_deref() == Some("the external memory did not answer within 800 ms"),
        "{answered:?}"
    );
    assert_eq!(answered.contexts[0].text, database);
    assert!(elapsed >= Duration::from_millis(800), "{elapsed:?}");
    assert!(
        elapsed < Duration::from_millis(2500),
        "the deadline held: {elapsed:?}"
    );

    // Back: the next call is answered by Chroma again.
    let answered = ask(&memory).await.expect("contexts");
    assert_eq!(answered.answered_by, ContextBackend::External);
}

#[tokio::test]
async fn external_retries_then_falls_back_within_its_deadline() {
    let Some(mut chroma) = Chroma::start_or_skip("external fallback").await else {
        return;
    };
    let simulator = testkit::simulator().await;
    let story = story().await;
    let memory = mirrored(&story, &chroma, &simulator, |s| {
        s.external_deadline = Duration::from_secs(2);
    })
    .await;
    let ask = |backend, memory| {
        story.fx.backend.build_contexts_with(
            &story.later_volume,
            std::slice::from_ref(&story.batch),
            backend,
            Some(memory),
        )
    };
    // Embeddings failing once: with seed 3 and a 500 rate of one half,
    // the simulator's first answer is a 500 and the next two are not.
    let failing_once = || {
        testkit::simulator_with(SimulatorConfig {
            seed: 3,
            rate_500: 0.5,
            ..SimulatorConfig::default()
        })
    };
    let flaky = failing_once().await;
    let settings = testkit::settings(&chroma.url(), &flaky.openai_base_url());
    let once = ExternalMemory::new(story.fx.db.clone(), settings).expect("external memory");
    let answered = ask(ContextBackend::External, &once)
        .await
        .expect("contexts");
    assert_eq!(
        answered.answered_by,
        ContextBackend::External,
        "{answered:?}"
    );
    let stats = flaky.stats();
    assert_eq!(
        (stats.server_errors, stats.embeddings),
        (1, 3),
        "retried once"
    );

    // `hybrid` does not retry: the same failure makes the database answer.
    let flaky = failing_once().await;
    let settings = testkit::settings(&chroma.url(), &flaky.openai_base_url());
    let once = ExternalMemory::new(story.fx.db.clone(), settings).expect("external memory");
    let answered = ask(ContextBackend::Hybrid, &once).await.expect("contexts");
    assert_eq!(answered.answered_by, ContextBackend::Internal);
    assert!(answered.fell_back);
    assert_eq!(flaky.stats().embeddings, 1);

    // Chroma down for good: both attempts fail and the database answers
    // within the 2 s deadline.
    chroma.stop().await;
    let started = Instant::now();
    let answered = ask(ContextBackend::External, &memory)
        .await
        .expect("contexts");
    let elapsed = started.elapsed();
    assert_eq!(answered.answered_by, ContextBackend::Internal);
    assert!(answered.fell_back);
    assert_eq!(answered.contexts[0].text, database_context(&story).await);
    assert!(
        elapsed >= RETRY_PAUSE,
        "the second attempt waited: {elapsed:?}"
    );
    assert!(
        elapsed < Duration::from_secs(2) + Duration::from_secs(2),
        "{elapsed:?}"
    );
}

#[tokio::test]
async fn internal_never_asks_the_external_memory() {
    let Some(chroma) = Chroma::start_or_skip("internal only").await else {
        return;
    };
    let simulator = testkit::simulator().await;
    let story = story().await;
    let memory = mirrored(&story, &chroma, &simulator, |_| {}).await;
    let before = simulator.stats().embeddings;
    let answered = story
        .fx
        .backend
        .build_contexts_with(
            &story.later_volume,
            std::slice::from_ref(&story.batch),
            ContextBackend::Internal,
            Some(&memory),
        )
        .await
        .expect("contexts");
    assert_eq!(answered.answered_by, ContextBackend::Internal);
    assert_eq!((answered.fell_back, answered.note.clone()), (false, None));
    assert_eq!(answered.contexts[0].text, database_context(&story).await);
    assert_eq!(
        simulator.stats().embeddings,
        before,
        "nothing was retrieved"
    );
}

#[tokio::test]
async fn without_an_external_memory_the_database_answers_and_says_why() {
    let story = story().await;
    let answered = story
        .fx
        .backend
        .build_contexts_with(
            &story.later_volume,
            std::slice::from_ref(&story.batch),
            ContextBackend::Hybrid,
            None,
        )
        .await
        .expect("contexts");
    assert_eq!(answered.answered_by, ContextBackend::Internal);
    assert!(!answered.fell_back);
    assert_eq!(answered.note.as_deref(), Some(NOT_CONFIGURED));
}

/// A request of `volume` asking for `backend`, and its job; the job's id.
async fn job_asking(fx: &Fixture, volume: &str, backend: ContextBackend) -> String {
    use dragoman_model::entities::project;
    use dragoman_model::ids;
    use dragoman_model::vocab::{InputKind, JobStatus, Priority, RequestStatus, Stage};
    use sea_orm::ActiveModelTrait;
    use serde_json::json;
    let volume = project::Entity::find_by_id(volume)
        .one(&fx.db)
        .await
        .expect("read")
        .expect("volume");
    let (request_id, job_id) = (ids::new_id(), ids::new_id());
    request::ActiveModel {
        id: Set(request_id.clone()),
        account_id: Set(fx.account.clone()),
        token_id: Set(None),
        external_id: Set(None),
        idempotency_key: Set(None),
        content_hash: Set(String::new()),
        series_id: Set(volume.series_id.clone()),
        project_id: Set(volume.id.clone()),
        job_id: Set(Some(job_id.clone())),
        input: Set(InputKind::Json),
        status: Set(RequestStatus::Running),
        stage: Set(Stage::Translation),
        step: Set(String::new()),
        error: Set(String::new()),
        stop_reason: Set(String::new()),
        priority: Set(Priority::Normal),
        options: Set(dragoman_model::request_options::StoredOptions {
            context_backend: Some(backend),
            ..Default::default()
        }),
        callback_url: Set(None),
        callback_events: Set(json!([])),
        chapters: Set(json!({})),
        result: Set(None),
        report: Set(None),
        next_attempt: Set(0),
        created_at: Set(0),
        updated_at: Set(0),
        finished_at: Set(None),
    }
    .insert(&fx.db)
    .await
    .expect("request");
    job::ActiveModel {
        id: Set(job_id.clone()),
        request_id: Set(request_id),
        project_id: Set(volume.id.clone()),
        account_id: Set(fx.account.clone()),
        token_id: Set(None),
        status: Set(JobStatus::Running),
        priority: Set(Priority::Normal),
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
        created_at: Set(0),
        updated_at: Set(0),
        started_at: Set(None),
        finished_at: Set(None),
    }
    .insert(&fx.db)
    .await
    .expect("job");
    job_id
}

#[tokio::test]
async fn a_job_that_does_not_say_takes_its_requests_choice() {
    let story = story().await;
    let job = job_asking(&story.fx, &story.later_volume, ContextBackend::Hybrid).await;
    assert_eq!(
        job_context_backend(&story.fx.db, &job).await.expect("read"),
        Some(ContextBackend::Hybrid)
    );
    assert_eq!(
        job_context_backend(&story.fx.db, "no-such-job")
            .await
            .expect("read"),
        None
    );
}

#[tokio::test]
async fn retrievals_add_up_per_job() {
    let fx = Fixture::new().await;
    let external = Contexts {
        contexts: vec![],
        answered_by: ContextBackend::External,
        fell_back: false,
        note: None,
    };
    let fallback = Contexts::internal(vec![], Some("late".into()), true);
    record_retrievals(&fx.db, "job-1", "p", &external, 3)
        .await
        .expect("first");
    record_retrievals(&fx.db, "job-1", "p", &fallback, 2)
        .await
        .expect("second");
    record_retrievals(&fx.db, "job-1", "p", &external, 1)
        .await
        .expect("third");
    let row = memory_retrieval::Entity::find_by_id("job-1")
        .one(&fx.db)
        .await
        .expect("read")
        .expect("recorded");
    assert_eq!(
        (row.external_batches, row.internal_batches, row.fallbacks),
        (4, 2, 2)
    );
    assert_eq!(
        row.last_error.as_deref(),
        Some("late"),
        "the last reason is kept"
    );
}

#[tokio::test]
async fn the_service_says_which_memory_answered_and_records_it_per_job() {
    use crate::service::MemoryService;
    use dragoman_proto::Memory;
    use dragoman_proto::principal::InternalCredential;
    use dragoman_proto::v1;
    use dragoman_proto::wire::WireEnum;

    let Some(chroma) = Chroma::start_or_skip("service answered_by").await else {
        return;
    };
    let simulator = testkit::simulator().await;
    let story = story().await;
    let memory = mirrored(&story, &chroma, &simulator, |_| {}).await;
    let credential = InternalCredential::new("secret");
    let service = MemoryService::internal(
        story.fx.db.clone(),
        credential.clone(),
        MemorySettings {
            context_tokens: 10_000,
        },
    )
    .with_external(Arc::new(memory));
    let ask = |backend: ContextBackend| v1::ContextRequest {
        project_id: story.later_volume.clone(),
        batches: vec![
            v1::ContextBatch {
                passage_ids: story.batch.clone(),
            },
            // A batch of titles only: nothing to ask, nothing counted.
            v1::ContextBatch {
                passage_ids: vec![],
            },
        ],
        context_backend: Some(backend.to_wire()),
        job_id: "job-7".into(),
    };
    let answer = service
        .build_contexts(credential.system_request(ask(ContextBackend::Hybrid)))
        .await
        .expect("contexts")
        .into_inner();
    assert_eq!(answer.answered_by, ContextBackend::External.to_wire());
    assert_eq!(answer.contexts.len(), 2);
    assert!(answer.contexts[0].text.contains("Starbuck"));
    assert_eq!(answer.contexts[1].text, "");
    let answer = service
        .build_contexts(credential.system_request(ask(ContextBackend::Internal)))
        .await
        .expect("contexts")
        .into_inner();
    assert_eq!(answer.answered_by, ContextBackend::Internal.to_wire());
    // A worker says only which job asks: its request's choice holds.
    let job = job_asking(&story.fx, &story.later_volume, ContextBackend::Hybrid).await;
    let answer = service
        .build_contexts(credential.system_request(v1::ContextRequest {
            context_backend: None,
            job_id: job.clone(),
            ..ask(ContextBackend::Internal)
        }))
        .await
        .expect("contexts")
        .into_inner();
    assert_eq!(answer.answered_by, ContextBackend::External.to_wire());
    let row = memory_retrieval::Entity::find_by_id("job-7")
        .one(&story.fx.db)
        .await
        .expect("read")
        .expect("recorded");
    assert_eq!(
        (
            row.project_id.as_str(),
            row.external_batches,
            row.internal_batches,
            row.fallbacks
        ),
        (story.later_volume.as_str(), 1, 1, 0)
    );
    // Passages of the batch stay untouched by all this.
    let stored = passage::Entity::find_by_id(story.batch[0].as_str())
        .one(&story.fx.db)
        .await
        .expect("read")
        .expect("passage");
    assert_eq!(stored.translation, None);
}
