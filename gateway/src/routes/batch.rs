//! A book's provider batch (session routes):
//!
//! * `GET /api/projects/{pid}/batch`: the summary of the latest remote batch
//!   of the book's latest job (state, remote id, key, stage, when it was
//!   submitted and is expected, its counts), or `null` when that job sent
//!   none. The book's owner or an administrator.
//! * `POST /api/projects/{pid}/jobs/{jid}/batch/reconcile`:
//!   `{"remote_id", "submission_key", "confirm": true}`, the owner only. A
//!   batch left `unknown` (its creation may have reached the provider and
//!   could not be found again) is checked with the provider and adopted by
//!   the job (`Pipeline.ReconcileBatch`): 409 `conflict` (`batch_foreign`)
//!   for a batch that is not the job's, (`batch_unfinished`) for one the
//!   provider has not finished, 502 `provider_unavailable`
//!   (`batch_unverified`) when the provider cannot confirm it. Answers the
//!   summary. Logged in the audit log.
//!
//! An absent book and another account's answer `volume_not_found`; a job
//! outside the book `not_found`.

use crate::auth::session::SessionUser;
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::identity::audit;
use crate::state::AppState;
use crate::validate::Checks;
use axum::extract::{Path, State};
use axum::routing::{get, post};
use axum::{Json, Router};
use dragoman_model::documents::batch::BatchSummary;
use dragoman_model::entities::{job, provider_batch};
use dragoman_model::tenancy::{self, Acting};
use dragoman_model::vocab::{AuditAction, ErrorCode, IssueKind};
use dragoman_proto::v1::ReconcileBatchRequest;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, QueryOrder};
use serde::{Deserialize, Serialize};

/// Longest remote id and submission key accepted (providers' ids are far
/// shorter).
const ID_MAX: usize = 200;

/// The routes of this module, mounted under `/api`.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/projects/{project_id}/batch", get(summary))
        .route(
            "/projects/{project_id}/jobs/{job_id}/batch/reconcile",
            post(reconcile),
        )
}

/// The body of a reconcile.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReconcileBody {
    /// The provider's id of the batch (`batch_…`, `msgbatch_…`).
    pub remote_id: String,
    /// The key the job's batch was written down under, as the summary
    /// shows it.
    pub submission_key: String,
    /// Must be the JSON boolean `true`.
    #[serde(default)]
    pub confirm: Option<bool>,
}

/// What the audit log keeps of a reconcile.
#[derive(Serialize)]
struct ReconcileLogged<'a> {
    job_id: &'a str,
    submission_key: &'a str,
    remote_id: &'a str,
}

pub async fn summary(
    State(state): State<AppState>,
    user: SessionUser,
    Path(project_id): Path<String>,
) -> ApiResult<Json<Option<BatchSummary>>> {
    let (book, _) = tenancy::administered_book(&state.db, user.acting(), &project_id).await?;
    let latest_job = job::Entity::find()
        .filter(job::Column::ProjectId.eq(book.id.as_str()))
        .order_by_desc(job::Column::CreatedAt)
        .order_by_desc(job::Column::Id)
        .one(&state.db)
        .await?;
    let Some(latest_job) = latest_job else {
        return Ok(Json(None));
    };
    let latest = provider_batch::Entity::find()
        .filter(provider_batch::Column::JobId.eq(latest_job.id))
        .order_by_desc(provider_batch::Column::CreatedAt)
        .order_by_desc(provider_batch::Column::SubmissionKey)
        .one(&state.db)
        .await?;
    Ok(Json(latest.as_ref().map(BatchSummary::from)))
}

pub async fn reconcile(
    State(state): State<AppState>,
    user: SessionUser,
    Path((project_id, job_id)): Path<(String, String)>,
    JsonBody(body): JsonBody<ReconcileBody>,
) -> ApiResult<Json<BatchSummary>> {
    let mut checks = Checks::new();
    checks.length("remote_id", body.remote_id.trim(), 1, ID_MAX);
    checks.length("submission_key", body.submission_key.trim(), 1, ID_MAX);
    match body.confirm {
        Some(true) => {}
        Some(false) => {
            checks.fail("confirm", IssueKind::ValueError);
        }
        None => {
            checks.fail("confirm", IssueKind::Missing);
        }
    }
    checks.finish()?;
    // The owner only: an administrator's reach over books stops at what
    // the owner pays for.
    let book = tenancy::book(&state.db, Acting::account(&user.account.id), &project_id).await?;
    job::Entity::find_by_id(job_id.clone())
        .filter(job::Column::ProjectId.eq(book.id.as_str()))
        .one(&state.db)
        .await?
        .ok_or_else(|| ApiError::new(ErrorCode::NotFound))?;
    let answer = state
        .pipeline
        .handle
        .reconcile_batch(state.call(
            &user.principal(),
            ReconcileBatchRequest {
                job_id: job_id.clone(),
                submission_key: body.submission_key.clone(),
                remote_id: body.remote_id.clone(),
            },
        ))
        .await?
        .into_inner();
    audit(
        &state.db,
        Some(&user.account.id),
        AuditAction::BatchReconcile,
        Some(&book.id),
        ReconcileLogged {
            job_id: &job_id,
            submission_key: &body.submission_key,
            remote_id: &body.remote_id,
        },
    )
    .await?;
    let row = provider_batch::Entity::find_by_id(answer.batch_id)
        .one(&state.db)
        .await?
        .ok_or_else(|| ApiError::server("the reconciled batch is gone"))?;
    Ok(Json(BatchSummary::from(&row)))
}
