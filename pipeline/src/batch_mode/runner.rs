//! Drives one batch row to its results, from whatever state a crash left
//! it in:
//!
//! - `collecting`, `uploading`: the input is (re)uploaded (an upload that
//!   is not followed by a batch costs nothing), then `submitting`;
//! - `submitting`: a row found in that state may have been accepted just
//!   before a crash, so the provider is first searched by its
//!   `submission_key`: a batch found is adopted, none found is created, an
//!   answer that cannot tell (a protocol without metadata) makes it
//!   `unknown` — never created again, it waits for the owner's reconcile;
//! - `submitted`, `canceling`: the provider is asked where it stands at
//!   `next_poll_at`, waits doubling from the first to the longest; an
//!   error is noted and asked again later, never the job's end;
//! - `ready`: the results are read (again, after a restart) and handed to
//!   the stage, which applies them and sets `applied_at`.
//!
//! A provider that gives no answer at all (refused connections, timeouts,
//! server errors) to every step for longer than the provider outage limit
//! interrupts the run: the job fails with that reason, as a job whose
//! ordinary calls find its provider away does, and the row stays where it
//! was for a later run.
//!
//! Only answers whose `custom_id` is one of this row's items are kept;
//! any other is logged and ignored, so an answer never reaches another
//! call's passages.

use super::BatchPoll;
use super::store;
use crate::llm::{Completion, Found, LlmClient, LlmError, RemoteBatch, RemoteStatus};
use dragoman_model::clock;
use dragoman_model::entities::{provider_batch, provider_batch_item};
use dragoman_model::vocab::BatchState;
use sea_orm::{DatabaseConnection, DbErr, Set};
use serde_json::Value;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// How far before a row's creation the provider's batches are searched
/// for its key: the provider's clock may differ from ours.
const FIND_MARGIN_SECONDS: i64 = 300;

/// Reads of an ended batch's results that may fail before its calls are
/// taken as failed (a result file that cannot be read stays so).
const RESULT_READS: u32 = 5;

/// The longest a wait sleeps before it looks whether the job must stop.
const HALT_CHECK: Duration = Duration::from_millis(500);

/// Why the runner stopped waiting before the batch's results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Halt {
    /// The job is not this worker's any more (lease lost, paused,
    /// cancelled).
    Lost,
    /// The process drains: the job is handed back, the batch left as it is
    /// for the next worker.
    Drained,
}

/// Why [`Runner::drive`] came back without results.
#[derive(Debug)]
pub enum Interrupted {
    Halt(Halt),
    Db(DbErr),
    /// The provider answered none of the steps for longer than the
    /// outage limit.
    Unreachable,
}

impl From<DbErr> for Interrupted {
    fn from(e: DbErr) -> Interrupted {
        Interrupted::Db(e)
    }
}

/// A batch's results: each item with its answer, or why it has none.
#[derive(Debug)]
pub struct Answered {
    pub row: provider_batch::Model,
    pub items: Vec<(provider_batch_item::Model, Result<Completion, LlmError>)>,
}

/// What tells the runner to stop waiting.
pub type HaltCheck<'a> = &'a (dyn Fn() -> Option<Halt> + Send + Sync);

pub struct Runner<'a> {
    pub db: &'a DatabaseConnection,
    pub client: &'a LlmClient,
    pub poll: BatchPoll,
    /// How long the provider may answer nothing before the run gives up
    /// (`DRAGOMAN_PROVIDER_OUTAGE_MINUTES`).
    pub outage: Duration,
}

/// Whether a failed creation certainly created nothing: the provider
/// refused the request itself.
fn refused(e: &LlmError) -> bool {
    matches!(e, LlmError::Client(status, _) if !matches!(status, 408 | 409 | 429))
        || matches!(e, LlmError::Config(_) | LlmError::Refused(_))
}

impl Runner<'_> {
    /// Drives `row` to its results (see the module doc).
    pub async fn drive(
        &self,
        row: provider_batch::Model,
        halt: HaltCheck<'_>,
    ) -> Result<Answered, Interrupted> {
        let mut row = row;
        // Whether this run moved the row to `submitting` itself, so no
        // creation of it can have reached the provider yet.
        let mut fresh = false;
        let mut attempt: i32 = 0;
        let mut result_reads: u32 = 0;
        // Since when every step found the provider away.
        let mut away_since: Option<Instant> = None;
        loop {
            if let Some(stop) = halt() {
                return Err(Interrupted::Halt(stop));
            }
            let step = match row.state {
                BatchState::Collecting => {
                    self.advance(&row, BatchState::Uploading, Default::default())
                        .await?
                }
                BatchState::Uploading => match self.upload(&row).await? {
                    Ok(file) => {
                        fresh = true;
                        let change = provider_batch::ActiveModel {
                            input_file_id: Set(file),
                            ..Default::default()
                        };
                        self.advance(&row, BatchState::Submitting, change).await?
                    }
                    Err(e) if e.is_retryable() => Step::Retry(e),
                    Err(e) => Step::Fail(e),
                },
                BatchState::Submitting => self.submit(&row, fresh).await?,
                BatchState::Submitted | BatchState::Canceling => {
                    self.wait(row.next_poll_at.unwrap_or(0), halt).await?;
                    self.poll_once(&row).await?
                }
                BatchState::Ready => match self.results_of(&row).await {
                    Ok(items) => return Ok(Answered { row, items }),
                    Err(e) if result_reads + 1 < RESULT_READS => {
                        result_reads += 1;
                        Step::Retry(e)
                    }
                    Err(e) => {
                        tracing::warn!(batch = %row.submission_key, error = %e, "the batch's results cannot be read: its calls go one by one");
                        let items = store::items(self.db, &row.id).await?;
                        let failed = items.into_iter().map(|i| (i, Err(e.clone()))).collect();
                        return Ok(Answered { row, items: failed });
                    }
                },
                BatchState::Unknown => {
                    // Only the owner's reconcile moves it on.
                    let wake = clock::now_millis() + millis(self.poll.first);
                    self.wait(wake, halt).await?;
                    moved(store::reread(self.db, &row.id).await?)
                }
                BatchState::Unsupported => {
                    return Ok(Answered {
                        row,
                        items: Vec::new(),
                    });
                }
            };
            match &step {
                Step::Retry(e) if unanswered(e) => {
                    let since = *away_since.get_or_insert_with(Instant::now);
                    if since.elapsed() >= self.outage {
                        tracing::warn!(batch = %row.submission_key, state = %row.state, error = %e, "the provider has answered no step of the batch for the outage limit");
                        return Err(Interrupted::Unreachable);
                    }
                }
                _ => away_since = None,
            }
            match step {
                Step::Moved(Some(moved)) => {
                    if moved.state != row.state {
                        attempt = 0;
                    }
                    row = *moved;
                }
                Step::Moved(None) => match store::reread(self.db, &row.id).await? {
                    Some(now) => row = now,
                    None => {
                        return Ok(Answered {
                            row,
                            items: Vec::new(),
                        });
                    }
                },
                Step::Retry(e) => {
                    // A creation that failed may still have reached the
                    // provider: the next attempt looks for it first.
                    fresh = false;
                    tracing::warn!(batch = %row.submission_key, state = %row.state, error = %e, "a step with the provider's batch failed; asked again later");
                    let next = clock::now_millis() + millis(self.poll.delay(attempt));
                    attempt = attempt.saturating_add(1);
                    store::note_poll(self.db, &row.id, next, row.polls, &e.to_string()).await?;
                    self.wait(next, halt).await?;
                    if let Some(now) = store::reread(self.db, &row.id).await? {
                        row = now;
                    }
                }
                Step::Fail(e) => {
                    tracing::warn!(batch = %row.submission_key, error = %e, "the provider refused the batch: its calls go one by one");
                    let change = provider_batch::ActiveModel {
                        failed: Set(row.items),
                        last_error: Set(e.to_string()),
                        ..Default::default()
                    };
                    if let Some(ready) =
                        self.advance(&row, BatchState::Ready, change).await?.moved()
                    {
                        row = ready;
                    }
                }
            }
        }
    }

    /// Moves the row from its state to `to` with `change`.
    async fn advance(
        &self,
        row: &provider_batch::Model,
        to: BatchState,
        mut change: provider_batch::ActiveModel,
    ) -> Result<Step, DbErr> {
        change.state = Set(to);
        Ok(moved(
            store::advance(self.db, row, row.state, change).await?,
        ))
    }

    /// Sends the row's input; the uploaded file's id, if the protocol
    /// has one.
    async fn upload(
        &self,
        row: &provider_batch::Model,
    ) -> Result<Result<Option<String>, LlmError>, DbErr> {
        let lines = self.lines(row).await?;
        Ok(self.client.batch_upload(&row.submission_key, &lines).await)
    }

    async fn lines(&self, row: &provider_batch::Model) -> Result<Vec<Value>, DbErr> {
        let items = store::items(self.db, &row.id).await?;
        Ok(items
            .iter()
            .filter_map(|i| match serde_json::from_str::<Value>(&i.line) {
                Ok(line) => Some(line),
                Err(e) => {
                    tracing::error!(item = %i.custom_id, error = %e, "a stored batch line cannot be read; left out");
                    None
                }
            })
            .collect())
    }

    /// Creates the batch, after looking for it by its key when a creation
    /// may already have reached the provider.
    async fn submit(&self, row: &provider_batch::Model, fresh: bool) -> Result<Step, DbErr> {
        if !fresh {
            let since = row.created_at - FIND_MARGIN_SECONDS;
            match self.client.batch_find(&row.submission_key, since).await {
                Ok(Found::Batch(remote)) => {
                    tracing::info!(batch = %row.submission_key, remote = %remote.id, "the batch was accepted before the restart: adopted, not sent again");
                    return self.accepted(row, &remote).await;
                }
                Ok(Found::Nothing) => {}
                Ok(Found::Uncertain(candidates)) => {
                    tracing::warn!(batch = %row.submission_key, candidates = candidates.len(), "whether the provider accepted the batch cannot be verified: it waits for the owner's reconcile");
                    let change = provider_batch::ActiveModel {
                        last_error: Set(
                            "the provider's acceptance of the batch could not be verified".into(),
                        ),
                        ..Default::default()
                    };
                    return self.advance(row, BatchState::Unknown, change).await;
                }
                Err(e) => return Ok(Step::Retry(e)),
            }
        }
        let lines = self.lines(row).await?;
        match self
            .client
            .batch_create(&row.submission_key, row.input_file_id.as_deref(), &lines)
            .await
        {
            Ok(remote) => self.accepted(row, &remote).await,
            Err(e) if refused(&e) => Ok(Step::Fail(e)),
            // It may have been accepted: the next attempt looks first.
            Err(e) => Ok(Step::Retry(e)),
        }
    }

    /// The provider holds the batch as `remote`: `submitted`.
    async fn accepted(
        &self,
        row: &provider_batch::Model,
        remote: &RemoteBatch,
    ) -> Result<Step, DbErr> {
        let now = clock::now();
        let change = provider_batch::ActiveModel {
            remote_id: Set(Some(remote.id.clone())),
            submitted_at: Set(Some(remote.created_at.unwrap_or(now))),
            expected_by: Set(remote.expires_at),
            next_poll_at: Set(Some(clock::now_millis() + millis(self.poll.delay(0)))),
            polls: Set(0),
            last_error: Set(String::new()),
            ..Default::default()
        };
        self.advance(row, BatchState::Submitted, change).await
    }

    /// Asks the provider once where the batch stands.
    async fn poll_once(&self, row: &provider_batch::Model) -> Result<Step, DbErr> {
        let Some(remote_id) = row.remote_id.clone() else {
            return Ok(Step::Fail(LlmError::Config(
                "a submitted batch without its provider id".into(),
            )));
        };
        let remote = match self.client.batch_get(&remote_id).await {
            Ok(remote) => remote,
            Err(e) => return Ok(Step::Retry(e)),
        };
        let polls = row.polls.saturating_add(1);
        let counts = provider_batch::ActiveModel {
            done: Set(i32::try_from(remote.done).unwrap_or(i32::MAX)),
            failed: Set(i32::try_from(remote.failed).unwrap_or(i32::MAX)),
            polls: Set(polls),
            last_error: Set(String::new()),
            ..Default::default()
        };
        match &remote.status {
            RemoteStatus::InProgress | RemoteStatus::Cancelling => {
                let change = provider_batch::ActiveModel {
                    state: Set(row.state),
                    next_poll_at: Set(Some(clock::now_millis() + millis(self.poll.delay(polls)))),
                    ..counts
                };
                Ok(moved(
                    store::advance(self.db, row, row.state, change).await?,
                ))
            }
            RemoteStatus::Ended => self.advance(row, BatchState::Ready, counts).await,
            RemoteStatus::Failed(reason) => {
                let change = provider_batch::ActiveModel {
                    failed: Set(row.items),
                    last_error: Set(format!("the provider failed the batch: {reason}")),
                    ..counts
                };
                self.advance(row, BatchState::Ready, change).await
            }
        }
    }

    /// The answers of a `ready` row, one per item.
    async fn results_of(
        &self,
        row: &provider_batch::Model,
    ) -> Result<Vec<(provider_batch_item::Model, Result<Completion, LlmError>)>, LlmError> {
        let items = store::items(self.db, &row.id)
            .await
            .map_err(|e| LlmError::Network(format!("database: {e}")))?;
        let none = |why: &str| LlmError::Failed {
            code: "batch_failed".into(),
            message: why.to_owned(),
        };
        let Some(remote_id) = row.remote_id.as_deref() else {
            let why = none(&row.last_error);
            return Ok(items.into_iter().map(|i| (i, Err(why.clone()))).collect());
        };
        let remote = self.client.batch_get(remote_id).await?;
        if let RemoteStatus::Failed(reason) = &remote.status {
            let why = none(reason);
            return Ok(items.into_iter().map(|i| (i, Err(why.clone()))).collect());
        }
        let answers = self.client.batch_results(&remote).await?;
        Ok(matched(&row.submission_key, items, answers))
    }

    /// Sleeps until `until` (Unix milliseconds), looking whether the job
    /// must stop meanwhile.
    async fn wait(&self, until: i64, halt: HaltCheck<'_>) -> Result<(), Interrupted> {
        loop {
            if let Some(stop) = halt() {
                return Err(Interrupted::Halt(stop));
            }
            let left = until - clock::now_millis();
            if left <= 0 {
                return Ok(());
            }
            let left = Duration::from_millis(u64::try_from(left).unwrap_or(0));
            tokio::time::sleep(left.min(HALT_CHECK)).await;
        }
    }
}

/// An error that got no answer from the provider at all.
fn unanswered(e: &LlmError) -> bool {
    matches!(
        e,
        LlmError::Network(_) | LlmError::Timeout | LlmError::Server(_)
    )
}

/// Pairs the answers with the row's items by `custom_id`: an answer for an
/// id the row never sent, or a second answer for one, is logged and left
/// out; an item without an answer has an error.
pub fn matched(
    key: &str,
    items: Vec<provider_batch_item::Model>,
    answers: Vec<crate::llm::ItemAnswer>,
) -> Vec<(provider_batch_item::Model, Result<Completion, LlmError>)> {
    let mut by_id: HashMap<String, Result<Completion, LlmError>> = HashMap::new();
    let known: std::collections::HashSet<&str> =
        items.iter().map(|i| i.custom_id.as_str()).collect();
    for answer in answers {
        if !known.contains(answer.custom_id.as_str()) {
            tracing::warn!(batch = %key, custom_id = %answer.custom_id, "a batch result for a call this batch never sent: ignored");
            continue;
        }
        if by_id.contains_key(&answer.custom_id) {
            tracing::warn!(batch = %key, custom_id = %answer.custom_id, "a second batch result for the same call: ignored");
            continue;
        }
        by_id.insert(answer.custom_id, answer.answer);
    }
    items
        .into_iter()
        .map(|item| {
            let answer = by_id.remove(&item.custom_id).unwrap_or_else(|| {
                Err(LlmError::Failed {
                    code: "missing".into(),
                    message: "the batch's results hold no answer for this call".into(),
                })
            });
            (item, answer)
        })
        .collect()
}

/// What one step did to the row.
enum Step {
    /// The row as it is now; `None` when another step moved it first.
    Moved(Option<Box<provider_batch::Model>>),
    /// A step that may succeed later.
    Retry(LlmError),
    /// The provider refused the batch: its calls go one by one.
    Fail(LlmError),
}

impl Step {
    fn moved(self) -> Option<provider_batch::Model> {
        match self {
            Step::Moved(row) => row.map(|row| *row),
            _ => None,
        }
    }
}

fn moved(row: Option<provider_batch::Model>) -> Step {
    Step::Moved(row.map(Box::new))
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch_mode::store::{Call, Owner};
    use crate::batch_mode::testing::{self, db};
    use crate::llm::{ItemAnswer, ProviderKind};
    use dragoman_model::vocab::UsageStage;
    use dragoman_simulator::{RunningSimulator, SimulatorConfig};
    use serde_json::json;

    fn client(base_url: String) -> LlmClient {
        testing::client(ProviderKind::OpenAi, base_url)
    }

    fn translation(id: &str) -> Call {
        let user = json!({
            "source_language": "en",
            "target_language": "fr",
            "context": null,
            "passages": [{"id": id, "text": format!("The text of {id}.")}],
        });
        Call {
            subject: json!({ "passages": [id] }),
            system: crate::translate::SYSTEM_PROMPT.to_owned(),
            user: user.to_string(),
            max_tokens: 256,
            cost: None,
        }
    }

    #[tokio::test]
    async fn a_batch_accepted_before_a_crash_is_adopted_not_sent_again() {
        let sim = RunningSimulator::start(SimulatorConfig {
            batch_delay: Duration::from_millis(200),
            ..SimulatorConfig::default()
        })
        .await
        .expect("simulator");
        let db = db().await;
        let client = client(sim.openai_base_url());
        let owner = Owner {
            job_id: "job".into(),
            request_id: "request".into(),
            project_id: "project".into(),
            provider_id: "provider".into(),
            stage: UsageStage::Translation,
        };
        let calls = [translation("c1.p1"), translation("c1.p2")];
        let rows = store::open(&db, &owner, &client, &calls)
            .await
            .expect("open");
        let row = rows.into_iter().next().expect("a batch");
        // The worker uploaded and created the batch, then died before it
        // could note that the provider accepted it.
        let lines: Vec<Value> = store::items(&db, &row.id)
            .await
            .expect("items")
            .iter()
            .map(|i| serde_json::from_str(&i.line).expect("line"))
            .collect();
        let file = client
            .batch_upload(&row.submission_key, &lines)
            .await
            .expect("upload");
        client
            .batch_create(&row.submission_key, file.as_deref(), &lines)
            .await
            .expect("create");
        let change = provider_batch::ActiveModel {
            state: Set(BatchState::Submitting),
            input_file_id: Set(file),
            ..Default::default()
        };
        let row = store::advance(&db, &row, BatchState::Collecting, change)
            .await
            .expect("advance")
            .expect("moved");

        let runner = Runner {
            db: &db,
            client: &client,
            poll: BatchPoll {
                first: Duration::from_millis(50),
                longest: Duration::from_millis(200),
            },
            outage: Duration::from_secs(60),
        };
        let answered = runner.drive(row, &|| None).await.expect("results");
        assert_eq!(answered.row.state, BatchState::Ready);
        assert_eq!(answered.items.len(), 2);
        assert!(
            answered.items.iter().all(|(_, a)| a.is_ok()),
            "{:?}",
            answered.items
        );
        // Two calls received once each: the batch was not created again.
        assert_eq!(sim.batch_items().len(), 2);
    }

    #[tokio::test]
    async fn a_waiting_batch_stops_when_the_job_is_let_go() {
        let sim = RunningSimulator::start(SimulatorConfig {
            batch_delay: Duration::from_secs(60),
            ..SimulatorConfig::default()
        })
        .await
        .expect("simulator");
        let db = db().await;
        let client = client(sim.openai_base_url());
        let owner = Owner {
            job_id: "job".into(),
            request_id: "request".into(),
            project_id: "project".into(),
            provider_id: "provider".into(),
            stage: UsageStage::Translation,
        };
        let rows = store::open(&db, &owner, &client, &[translation("c1.p1")])
            .await
            .expect("open");
        let row = rows.into_iter().next().expect("a batch");
        let runner = Runner {
            db: &db,
            client: &client,
            poll: BatchPoll {
                first: Duration::from_millis(50),
                longest: Duration::from_millis(100),
            },
            outage: Duration::from_secs(60),
        };
        let polled = std::sync::atomic::AtomicBool::new(false);
        let halt = || {
            let submitted = polled.load(std::sync::atomic::Ordering::SeqCst);
            submitted.then_some(Halt::Lost)
        };
        let driving = runner.drive(row.clone(), &halt);
        let watching = async {
            loop {
                let now = store::reread(&db, &row.id)
                    .await
                    .expect("row")
                    .expect("row");
                if now.polls >= 2 {
                    polled.store(true, std::sync::atomic::Ordering::SeqCst);
                    return now;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        };
        let (driven, seen) = tokio::join!(driving, watching);
        assert!(matches!(driven, Err(Interrupted::Halt(Halt::Lost))));
        assert_eq!(seen.state, BatchState::Submitted);
        assert!(seen.remote_id.is_some() && seen.next_poll_at.is_some());
        // Left submitted for the next run, which polls it again.
        assert_eq!(store::to_cancel(&db, "job").await.expect("cancel").len(), 1);
    }

    #[tokio::test]
    async fn a_provider_away_past_the_outage_limit_interrupts_the_run() {
        let db = db().await;
        // Nothing listens there: every step is refused.
        let client = client("http://127.0.0.1:9".into());
        let owner = Owner {
            job_id: "job".into(),
            request_id: "request".into(),
            project_id: "project".into(),
            provider_id: "provider".into(),
            stage: UsageStage::Translation,
        };
        let rows = store::open(&db, &owner, &client, &[translation("c1.p1")])
            .await
            .expect("open");
        let row = rows.into_iter().next().expect("a batch");
        let change = provider_batch::ActiveModel {
            state: Set(BatchState::Submitted),
            remote_id: Set(Some("batch_1".into())),
            next_poll_at: Set(Some(0)),
            ..Default::default()
        };
        let row = store::advance(&db, &row, BatchState::Collecting, change)
            .await
            .expect("advance")
            .expect("moved");
        let runner = Runner {
            db: &db,
            client: &client,
            poll: BatchPoll {
                first: Duration::from_millis(20),
                longest: Duration::from_millis(50),
            },
            outage: Duration::from_millis(300),
        };
        let driven = runner.drive(row.clone(), &|| None).await;
        assert!(
            matches!(driven, Err(Interrupted::Unreachable)),
            "{driven:?}"
        );
        // Left as it was, with what went wrong, for a later run.
        let left = store::reread(&db, &row.id)
            .await
            .expect("row")
            .expect("row");
        assert_eq!(left.state, BatchState::Submitted);
        assert_eq!(left.remote_id.as_deref(), Some("batch_1"));
        assert!(!left.last_error.is_empty());
    }

    fn item(custom_id: &str) -> provider_batch_item::Model {
        provider_batch_item::Model {
            id: custom_id.into(),
            batch_id: "b".into(),
            custom_id: custom_id.into(),
            subject: "{}".into(),
            line: "{}".into(),
            outcome: None,
        }
    }

    fn answer(custom_id: &str, text: &str) -> ItemAnswer {
        ItemAnswer {
            custom_id: custom_id.into(),
            answer: Ok(Completion {
                text: text.into(),
                prompt_tokens: 1,
                completion_tokens: 1,
                cached_prompt_tokens: 0,
                cache_write_tokens: 0,
                refusal: false,
                truncated: false,
            }),
        }
    }

    #[test]
    fn answers_reach_only_the_items_they_name() {
        let items = vec![item("k-1"), item("k-2"), item("k-3")];
        let answers = vec![
            answer("k-2", "two"),
            answer("other-1", "foreign"),
            answer("k-1", "one"),
            answer("k-1", "again"),
        ];
        let matched = matched("k", items, answers);
        let texts: Vec<(&str, Option<&str>)> = matched
            .iter()
            .map(|(i, a)| {
                (
                    i.custom_id.as_str(),
                    a.as_ref().ok().map(|c| c.text.as_str()),
                )
            })
            .collect();
        assert_eq!(
            texts,
            [("k-1", Some("one")), ("k-2", Some("two")), ("k-3", None)]
        );
    }

    #[test]
    fn only_a_refused_request_certainly_created_nothing() {
        assert!(refused(&LlmError::Client(400, "bad".into())));
        assert!(!refused(&LlmError::Client(429, "slow".into())));
        assert!(!refused(&LlmError::Timeout));
        assert!(!refused(&LlmError::Server(502)));
    }
}
