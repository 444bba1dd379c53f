//! The owner's reconcile of a batch whose acceptance could not be verified
//! (`unknown`): the remote batch they name is checked with the provider and
//! adopted by the job.
//!
//! Nothing is adopted on the owner's word alone: the job must have a batch
//! under the `submission_key` named, the provider must know the remote id,
//! the batch must carry that key where the protocol keeps one (OpenAI's
//! metadata), it must have ended, and every answer in it must belong to the
//! key (`custom_id` `<key>-<n>`). Then the row becomes `submitted` with the
//! remote id and is due for a poll now: the worker reads its results and
//! applies them as for any batch. Naming the remote id the row already has
//! answers the row again, so a reconcile may be repeated.

use crate::error::PipelineError;
use crate::llm::{LlmClient, ProviderConfig, RemoteStatus};
use dragoman_model::ModelError;
use dragoman_model::clock;
use dragoman_model::entities::{job, provider, provider_batch};
use dragoman_model::tenancy::{self, Acting};
use dragoman_model::vocab::BatchState;
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, DatabaseConnection, EntityTrait, QueryFilter};
use std::time::Duration;

/// How long the provider is given to describe the batch and its results.
const VERIFY_TIMEOUT: Duration = Duration::from_secs(120);

/// What the owner asks: the job, its batch's key, the remote batch.
#[derive(Debug, Clone)]
pub struct Ask<'a> {
    /// Whose job it must be.
    pub account_id: &'a str,
    pub job_id: &'a str,
    pub submission_key: &'a str,
    pub remote_id: &'a str,
}

/// Checks the remote batch `ask` names and hands it to the job's worker;
/// answers the job's batch row as it is then.
pub async fn reconcile(
    db: &DatabaseConnection,
    ask: &Ask<'_>,
) -> Result<provider_batch::Model, PipelineError> {
    let row = owned_row(db, ask).await?;
    match row.remote_id.as_deref() {
        Some(known) if known == ask.remote_id => return Ok(row),
        Some(_) => {
            return Err(refused(
                ask,
                PipelineError::BatchForeign("the job's batch already has another remote id".into()),
            ));
        }
        None => {}
    }
    if row.state != BatchState::Unknown {
        return Err(refused(ask, PipelineError::BatchNotUnknown));
    }
    let provider = provider::Entity::find_by_id(row.provider_id.clone())
        .one(db)
        .await?
        .ok_or_else(|| {
            refused(
                ask,
                PipelineError::BatchUnverified("the batch's provider no longer exists".into()),
            )
        })?;
    let client = LlmClient::new(ProviderConfig::for_provider(&provider, VERIFY_TIMEOUT))
        .map_err(|e| refused(ask, PipelineError::BatchUnverified(e.to_string())))?;
    let remote = client
        .batch_get(ask.remote_id)
        .await
        .map_err(|e| refused(ask, PipelineError::BatchUnverified(e.to_string())))?;
    if remote
        .key
        .as_deref()
        .is_some_and(|key| key != ask.submission_key)
    {
        return Err(refused(
            ask,
            PipelineError::BatchForeign("the remote batch carries another key".into()),
        ));
    }
    if remote.status != RemoteStatus::Ended {
        return Err(refused(ask, PipelineError::BatchUnfinished));
    }
    let answers = client
        .batch_results(&remote)
        .await
        .map_err(|e| refused(ask, PipelineError::BatchUnverified(e.to_string())))?;
    let prefix = format!("{}-", ask.submission_key);
    if answers.iter().any(|a| !a.custom_id.starts_with(&prefix)) {
        return Err(refused(
            ask,
            PipelineError::BatchForeign("the remote batch answers calls of another key".into()),
        ));
    }
    let now = clock::now();
    let moved = provider_batch::Entity::update_many()
        .col_expr(
            provider_batch::Column::RemoteId,
            Expr::value(ask.remote_id.to_owned()),
        )
        .col_expr(
            provider_batch::Column::State,
            Expr::value(BatchState::Submitted.as_str()),
        )
        .col_expr(
            provider_batch::Column::SubmittedAt,
            Expr::value(remote.created_at.unwrap_or(now)),
        )
        .col_expr(
            provider_batch::Column::ExpectedBy,
            Expr::value(remote.expires_at),
        )
        .col_expr(
            provider_batch::Column::NextPollAt,
            Expr::value(clock::now_millis()),
        )
        .col_expr(
            provider_batch::Column::LastError,
            Expr::value(String::new()),
        )
        .col_expr(provider_batch::Column::UpdatedAt, Expr::value(now))
        .filter(provider_batch::Column::Id.eq(row.id.clone()))
        .filter(provider_batch::Column::State.eq(BatchState::Unknown))
        .filter(provider_batch::Column::RemoteId.is_null())
        .exec(db)
        .await?;
    if moved.rows_affected == 0 {
        // Another reconcile of the same batch got there first.
        return Err(refused(ask, PipelineError::BatchNotUnknown));
    }
    tracing::info!(
        job = ask.job_id,
        key = ask.submission_key,
        remote = ask.remote_id,
        "provider batch reconciled: its results are applied by the job's worker"
    );
    provider_batch::Entity::find_by_id(row.id)
        .one(db)
        .await?
        .ok_or(PipelineError::JobNotFound)
}

/// The batch row of one of the caller's jobs under the key asked.
async fn owned_row(
    db: &DatabaseConnection,
    ask: &Ask<'_>,
) -> Result<provider_batch::Model, PipelineError> {
    let job = job::Entity::find_by_id(ask.job_id.to_owned())
        .one(db)
        .await?
        .ok_or(PipelineError::JobNotFound)?;
    match tenancy::book(db, Acting::account(ask.account_id), &job.project_id).await {
        Ok(_) => {}
        Err(ModelError::Db(e)) => return Err(e.into()),
        Err(_) => return Err(PipelineError::JobNotFound),
    }
    provider_batch::Entity::find()
        .filter(provider_batch::Column::JobId.eq(job.id.clone()))
        .filter(provider_batch::Column::SubmissionKey.eq(ask.submission_key))
        .one(db)
        .await?
        .ok_or_else(|| {
            refused(
                ask,
                PipelineError::BatchForeign("the job sent no batch under this key".into()),
            )
        })
}

/// Logs why a reconcile was refused (the owner reads the code; operators
/// the reason) and gives the refusal back.
fn refused(ask: &Ask<'_>, error: PipelineError) -> PipelineError {
    tracing::warn!(
        job = ask.job_id,
        key = ask.submission_key,
        remote = ask.remote_id,
        reason = %error,
        "provider batch reconcile refused"
    );
    error
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ProviderKind;
    use dragoman_model::entities::{account, project, series};
    use dragoman_model::vocab::InputKind;
    use dragoman_model::vocab::{JobOperation, JobStatus, Priority, SeriesKind, UsageStage};
    use dragoman_simulator::{RunningSimulator, SimulatorConfig};
    use sea_orm::{ActiveModelTrait, Set};

    /// A book of `owner`'s with one job on `provider`, whose batch under
    /// `KEY` is `unknown`.
    struct Setup {
        db: DatabaseConnection,
        owner: String,
        job: String,
        client: LlmClient,
    }

    const KEY: &str = "dragoman-job-1";

    async fn setup(sim: &RunningSimulator, kind: ProviderKind) -> Setup {
        // The job's request is not needed here.
        let db = crate::batch_mode::testing::db().await;
        let owner = account::ActiveModel::new_account("owner", String::new(), false)
            .insert(&db)
            .await
            .expect("account");
        let shelf = series::ActiveModel::new_series(
            &owner.id,
            "Saga",
            SeriesKind::Numbered,
            ("en", "fr"),
            None,
        )
        .insert(&db)
        .await
        .expect("series");
        let book = project::ActiveModel::new_volume(
            &shelf,
            "One".into(),
            1,
            InputKind::Json,
            ("en", "fr"),
        )
        .insert(&db)
        .await
        .expect("book");
        let provider = provider::Model {
            id: "provider".into(),
            name: "sim".into(),
            kind,
            model: "m".into(),
            base_url: sim.base_url(kind),
            api_key_env: String::new(),
            price_input: None,
            price_output: None,
            price_cached_input: None,
            capacity: 4,
            batch_discount: 0.5,
            fallback_provider_id: None,
            created_at: 0,
            updated_at: 0,
        };
        let client = LlmClient::new(ProviderConfig::for_provider(&provider, VERIFY_TIMEOUT))
            .expect("client");
        provider::ActiveModel::from(provider)
            .insert(&db)
            .await
            .expect("provider");
        job::ActiveModel {
            id: Set("job".into()),
            request_id: Set("request".into()),
            project_id: Set(book.id.clone()),
            account_id: Set(owner.id.clone()),
            token_id: Set(None),
            status: Set(JobStatus::Running),
            priority: Set(Priority::Normal),
            provider_id: Set(Some("provider".into())),
            lease_holder: Set(None),
            lease_expires_at: Set(None),
            attempts: Set(0),
            progress: Set(serde_json::json!({})),
            estimate: Set(None),
            paused_at: Set(None),
            pause_reason: Set(None),
            provider_switches: Set(0),
            operation: Set(JobOperation::Translate),
            created_at: Set(0),
            updated_at: Set(0),
            started_at: Set(None),
            finished_at: Set(None),
        }
        .insert(&db)
        .await
        .expect("job");
        provider_batch::ActiveModel {
            id: Set("batch-row".into()),
            job_id: Set("job".into()),
            request_id: Set("request".into()),
            project_id: Set(book.id),
            provider_id: Set("provider".into()),
            stage: Set(UsageStage::Translation),
            submission_key: Set(KEY.into()),
            state: Set(BatchState::Unknown),
            remote_id: Set(None),
            input_file_id: Set(None),
            items: Set(1),
            done: Set(0),
            failed: Set(0),
            submitted_at: Set(None),
            expected_by: Set(None),
            next_poll_at: Set(None),
            polls: Set(0),
            applied_at: Set(None),
            expected_cost: Set(None),
            last_error: Set("acceptance could not be verified".into()),
            created_at: Set(0),
            updated_at: Set(0),
        }
        .insert(&db)
        .await
        .expect("batch row");
        Setup {
            db,
            owner: owner.id,
            job: "job".into(),
            client,
        }
    }

    /// Sends a batch of one call under `key` to the provider.
    async fn send(client: &LlmClient, key: &str) -> String {
        let line = client
            .batch_line(&format!("{key}-1"), "Translate.", "Hello.", 100)
            .expect("line");
        let lines = [line];
        let file = client.batch_upload(key, &lines).await.expect("upload");
        client
            .batch_create(key, file.as_deref(), &lines)
            .await
            .expect("created")
            .id
    }

    async fn ended(client: &LlmClient, remote_id: &str) {
        for _ in 0..100 {
            let remote = client.batch_get(remote_id).await.expect("described");
            if remote.status == RemoteStatus::Ended {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("the simulator's batch never ended");
    }

    fn ask<'a>(s: &'a Setup, key: &'a str, remote_id: &'a str) -> Ask<'a> {
        Ask {
            account_id: &s.owner,
            job_id: &s.job,
            submission_key: key,
            remote_id,
        }
    }

    #[tokio::test]
    async fn only_the_jobs_own_ended_batch_is_adopted() {
        for kind in [ProviderKind::OpenAi, ProviderKind::Anthropic] {
            let sim = RunningSimulator::start(SimulatorConfig {
                batch_delay: Duration::from_millis(1500),
                ..SimulatorConfig::default()
            })
            .await
            .expect("simulator");
            let s = setup(&sim, kind).await;
            let own = send(&s.client, KEY).await;
            let foreign = send(&s.client, "dragoman-other-1").await;

            let unfinished = reconcile(&s.db, &ask(&s, KEY, &own)).await;
            assert!(
                matches!(unfinished, Err(PipelineError::BatchUnfinished)),
                "{kind}: {unfinished:?}"
            );
            let unknown = reconcile(&s.db, &ask(&s, KEY, "batch_nobody")).await;
            assert!(
                matches!(unknown, Err(PipelineError::BatchUnverified(_))),
                "{kind}: {unknown:?}"
            );
            let no_such_key = reconcile(&s.db, &ask(&s, "dragoman-job-9", &own)).await;
            assert!(
                matches!(no_such_key, Err(PipelineError::BatchForeign(_))),
                "{kind}: {no_such_key:?}"
            );
            let stranger = Ask {
                account_id: "someone-else",
                ..ask(&s, KEY, &own)
            };
            assert!(matches!(
                reconcile(&s.db, &stranger).await,
                Err(PipelineError::JobNotFound)
            ));

            ended(&s.client, &foreign).await;
            let theirs = reconcile(&s.db, &ask(&s, KEY, &foreign)).await;
            assert!(
                matches!(theirs, Err(PipelineError::BatchForeign(_))),
                "{kind}: {theirs:?}"
            );

            ended(&s.client, &own).await;
            let adopted = reconcile(&s.db, &ask(&s, KEY, &own))
                .await
                .expect("adopted");
            assert_eq!(adopted.state, BatchState::Submitted, "{kind}");
            assert_eq!(adopted.remote_id.as_deref(), Some(own.as_str()));
            assert!(adopted.submitted_at.is_some());
            assert!(
                adopted
                    .next_poll_at
                    .is_some_and(|at| at <= clock::now_millis())
            );
            assert_eq!(adopted.last_error, "");

            let again = reconcile(&s.db, &ask(&s, KEY, &own))
                .await
                .expect("the same answer");
            assert_eq!(again, adopted);
            let other = reconcile(&s.db, &ask(&s, KEY, &foreign)).await;
            assert!(
                matches!(other, Err(PipelineError::BatchForeign(_))),
                "{kind}: {other:?}"
            );
        }
    }
}
