//! Work on the caller's books as the tool protocol sees it (spec 4.10):
//! starting a job on a stored book, listing the caller's requests, the
//! estimate of a job not started yet, and the licence's standing.
//!
//! - `start_job` starts the book the way a series `start` starts one of
//!   its volumes ([`Starter::start_volume`]: provider in force, priority
//!   under the ceilings, the token's budget, licence words, the account's
//!   allowance, waiting quotas, and the series order: a later volume waits
//!   `queued` while an earlier one works). Where a series `start` skips a
//!   volume silently, `start_job` refuses: a shelved book with
//!   `volume_archived`, an archived series with `series_archived`, a book
//!   with a request that has not ended with `conflict`, and a book with
//!   nothing left to translate with `conflict` (`reason`
//!   `nothing_to_translate`). A provider is named; an unknown name is
//!   `unknown_provider`.
//!   With the operation `translator_notes` (spec 4.9) the job proposes
//!   reader notes for the book's glossary terms instead of translating: it
//!   passes the same admission, but needs a translation to read (a book
//!   with no passage translated is `conflict`, `reason`
//!   `nothing_translated`) and counts the words of the translated passages
//!   it reads against the licence.
//! - `list_jobs` lists the requests of the caller's account, newest first,
//!   one page at a time with the total.
//! - `estimate_job` estimates what a job on the book would take now
//!   ([`job_start::estimate_chapters`], the function a job's own estimate
//!   is made with), with the provider named or the one a job would use.
//! - `licence_status` shows the licence in force and its use this cycle,
//!   and the caller's account allowance.

use super::provider_named;
use crate::error::SchedulerError;
use crate::intake::{self, Allowance, IntakeLimits};
use crate::lifecycle::control::{check_resumer, is_paid};
use crate::lifecycle::job_start::{StartSettings, estimate_chapters};
use crate::lifecycle::series_control::{Skip, Started, Starter};
use dragoman_model::clock;
use dragoman_model::documents::job_list::{JobList, JobListItem, JobProgress, StartedBy};
use dragoman_model::documents::licence_status::{AccountAllowance, LicenceStatus};
use dragoman_model::documents::request::{JobEstimate, RequestSummary};
use dragoman_model::entities::{account, api_token, chapter, job, passage, project, provider};
use dragoman_model::entities::{request, series};
use dragoman_model::licence::{self, LicenceSettings, LicenceSource};
use dragoman_model::request_options::StoredOptions;
use dragoman_model::tenancy::{self, Acting};
use dragoman_model::vocab::{JobOperation, JobStatus, PassageStatus, Priority, RequestStatus};
use dragoman_proto::principal::Principal;
use sea_orm::{
    ColumnTrait, Condition, ConnectionTrait, DatabaseConnection, EntityTrait, PaginatorTrait,
    QueryFilter, QueryOrder, QuerySelect,
};
use std::collections::HashMap;

/// Largest page of `list_jobs`.
pub const MAX_LIMIT: u64 = 200;

/// The caller's account and token, as admission reads them.
async fn caller(
    db: &impl ConnectionTrait,
    who: &Principal,
) -> Result<(account::Model, Option<api_token::Model>), SchedulerError> {
    let owner = account::Entity::find_by_id(who.account_id.clone())
        .one(db)
        .await?
        .ok_or(SchedulerError::VolumeNotFound)?;
    let token = match &who.token_id {
        Some(id) => api_token::Entity::find_by_id(id.clone()).one(db).await?,
        None => None,
    };
    Ok((owner, token))
}

/// What a started job is to do on which book, and how.
#[derive(Debug, Clone, Copy)]
pub struct JobAsk<'a> {
    pub project_id: &'a str,
    /// A provider's name; none: the one in force.
    pub provider: Option<&'a str>,
    pub priority: Option<Priority>,
    pub operation: JobOperation,
    /// The provider's batch mode; none: the book's default, else the
    /// installation's.
    pub batch: Option<bool>,
}

/// Starts work on one of the caller's books: a new request with its job
/// (or `queued` behind an earlier volume of its series).
pub async fn start_job(
    db: &DatabaseConnection,
    who: &Principal,
    ask: JobAsk<'_>,
    limits: &IntakeLimits,
) -> Result<request::Model, SchedulerError> {
    let JobAsk {
        project_id,
        provider,
        priority,
        operation,
        batch,
    } = ask;
    let (owner, token) = caller(db, who).await?;
    let txn = dragoman_model::db::begin_write(db).await?;
    let book = tenancy::book(&txn, Acting::account(&owner.id), project_id).await?;
    let provider_id = match provider {
        Some(name) => Some(provider_named(&txn, name).await?.id),
        None => None,
    };
    let starter = Starter {
        owner: &owner,
        token: token.as_ref(),
        limits,
        provider_id,
        priority,
        operation,
        batch,
    };
    let mut allowance = Allowance::new(&owner, token.as_ref(), &limits.queue, &limits.licence);
    let outcome = starter.start_volume(&txn, &book, &mut allowance).await;
    let refusal = match outcome {
        Ok(Started::Request(row)) => {
            txn.commit().await?;
            return Ok(*row);
        }
        Ok(Started::Skipped(skip)) => match skip {
            Skip::Gone => SchedulerError::VolumeNotFound,
            Skip::Archived => SchedulerError::VolumeArchived,
            Skip::Working => SchedulerError::BookWorking("start a job"),
            Skip::NothingLeft => SchedulerError::NothingToTranslate,
            Skip::NothingTranslated => SchedulerError::NothingTranslated,
        },
        Err(e) => e,
    };
    txn.rollback().await?;
    Err(refusal)
}

/// What `list_jobs` keeps.
#[derive(Debug, Clone, Default)]
pub struct JobFilter {
    pub project_id: Option<String>,
    pub status: Option<RequestStatus>,
    /// 1 to [`MAX_LIMIT`] (the gateway checks the range).
    pub limit: u64,
    pub offset: u64,
}

/// One page of the requests of the caller's account, newest first, with
/// the total: `{items, total, limit, offset}`. A book that is not the
/// caller's is `volume_not_found`.
pub async fn list_jobs(
    db: &DatabaseConnection,
    who: &Principal,
    filter: &JobFilter,
) -> Result<JobList, SchedulerError> {
    let mut query = request::Entity::find().filter(request::Column::AccountId.eq(&who.account_id));
    if let Some(project_id) = &filter.project_id {
        tenancy::book(db, who.acting(), project_id).await?;
        query = query.filter(request::Column::ProjectId.eq(project_id));
    }
    if let Some(status) = filter.status {
        query = query.filter(request::Column::Status.eq(status));
    }
    let total = query.clone().count(db).await?;
    let limit = filter.limit.clamp(1, MAX_LIMIT);
    let rows = query
        .order_by_desc(request::Column::CreatedAt)
        .order_by_desc(request::Column::Id)
        .offset(filter.offset)
        .limit(limit)
        .all(db)
        .await?;
    let books = titles(db, &rows).await?;
    let tokens = token_names(db, &rows).await?;
    let mut items = Vec::with_capacity(rows.len());
    for row in &rows {
        let (segments, translated) = progress(db, row).await?;
        let job_row = match &row.job_id {
            Some(id) => job::Entity::find_by_id(id.clone()).one(db).await?,
            None => None,
        };
        let paused = job_row
            .as_ref()
            .is_some_and(|j| j.status == JobStatus::Paused)
            && !row.status.is_final()
            && row.status != RequestStatus::Queued;
        let may_resume = paused
            && match check_resumer(db, who, row).await {
                Ok(()) => true,
                Err(e) if e.is_refusal() => false,
                Err(e) => return Err(e),
            };
        let paid = match &job_row {
            Some(j) => Some(is_paid(db, row, j).await?),
            None => None,
        };
        let token_name = row.token_id.as_ref().and_then(|id| tokens.get(id));
        items.push(JobListItem {
            book_id: row.project_id.clone(),
            book_title: books.get(&row.project_id).cloned(),
            created_at: row.created_at,
            finished_at: row.finished_at,
            may_resume,
            paid,
            paused,
            priority: row.priority,
            progress: JobProgress {
                percent: (translated * 100).checked_div(segments).unwrap_or(100),
                segments,
                translated,
            },
            request_id: row.id.clone(),
            series_id: row.series_id.clone(),
            stage: row.stage,
            started_by: StartedBy {
                this_token: who.token_id.is_some() && row.token_id == who.token_id,
                token_id: row.token_id.clone(),
                token_name: token_name.cloned(),
            },
            status: row.status,
            status_url: RequestSummary::status_url(&row.id),
            step: row.step.clone(),
        });
    }
    Ok(JobList {
        items,
        limit,
        offset: filter.offset,
        total,
    })
}

/// The titles of the books of `rows`.
async fn titles(
    db: &impl ConnectionTrait,
    rows: &[request::Model],
) -> Result<HashMap<String, String>, SchedulerError> {
    let ids: Vec<String> = rows.iter().map(|r| r.project_id.clone()).collect();
    let found: Vec<(String, String)> = project::Entity::find()
        .select_only()
        .column(project::Column::Id)
        .column(project::Column::Title)
        .filter(project::Column::Id.is_in(ids))
        .into_tuple()
        .all(db)
        .await?;
    Ok(found.into_iter().collect())
}

/// The names of the tokens that started `rows`.
async fn token_names(
    db: &impl ConnectionTrait,
    rows: &[request::Model],
) -> Result<HashMap<String, String>, SchedulerError> {
    let ids: Vec<String> = rows.iter().filter_map(|r| r.token_id.clone()).collect();
    if ids.is_empty() {
        return Ok(HashMap::new());
    }
    let found: Vec<(String, String)> = api_token::Entity::find()
        .select_only()
        .column(api_token::Column::Id)
        .column(api_token::Column::Name)
        .filter(api_token::Column::Id.is_in(ids))
        .into_tuple()
        .all(db)
        .await?;
    Ok(found.into_iter().collect())
}

/// The request's passages and those with a usable translation, as the
/// status document counts them.
async fn progress(
    db: &impl ConnectionTrait,
    row: &request::Model,
) -> Result<(u64, u64), SchedulerError> {
    let ids = row.chapter_ids();
    if ids.is_empty() {
        return Ok((0, 0));
    }
    let total = passage::Entity::find()
        .filter(passage::Column::ChapterId.is_in(ids.clone()))
        .count(db)
        .await?;
    let translated = passage::Entity::find()
        .filter(passage::Column::ChapterId.is_in(ids))
        .filter(passage::Column::Translation.is_not_null())
        .filter(passage::Column::Status.is_in(PassageStatus::USABLE))
        .count(db)
        .await?;
    Ok((total, translated))
}

/// What a job on one of the caller's books would take now: passages,
/// calls, tokens, cost and duration ranges (the shape of the status
/// document's `estimate`), with the provider and the licence words it
/// would count.
pub async fn estimate_job(
    db: &DatabaseConnection,
    who: &Principal,
    project_id: &str,
    provider: Option<&str>,
    batch: Option<bool>,
    limits: &IntakeLimits,
    settings: &StartSettings,
) -> Result<JobEstimate, SchedulerError> {
    let book = tenancy::book(db, who.acting(), project_id).await?;
    let chosen = match provider {
        Some(name) => provider_named(db, name).await?,
        None => {
            let series = series::Entity::find_by_id(book.series_id.clone())
                .one(db)
                .await?;
            let id = intake::provider_in_force(db, Some(&book), series.as_ref(), true)
                .await?
                .ok_or(SchedulerError::ProviderRequired)?;
            provider::Entity::find_by_id(id)
                .one(db)
                .await?
                .ok_or(SchedulerError::UnknownProvider)?
        }
    };
    let chapter_ids: Vec<String> = chapter::Entity::find()
        .select_only()
        .column(chapter::Column::Id)
        .filter(chapter::Column::ProjectId.eq(book.id.clone()))
        .order_by_asc(chapter::Column::Position)
        .into_tuple()
        .all(db)
        .await?;
    // The options a job started now would run with (see `start_job`).
    let options = StoredOptions {
        final_review: Some(limits.final_review),
        batch,
        batch_in_force: Some(batch.or(book.batch).unwrap_or(limits.batch)),
        ..StoredOptions::default()
    };
    let made = estimate_chapters(db, &chapter_ids, &book.id, &options, &chosen, settings).await?;
    Ok(JobEstimate {
        estimate: made,
        licence_words: crate::licence::words_to_start(db, &book).await?,
        passages_without_translation: untranslated(db, &book.id).await?,
        book_id: book.id,
        provider: chosen.name,
    })
}

/// Passages of the book without a usable translation (what `start_job`
/// looks at to decide there is work left).
async fn untranslated(db: &impl ConnectionTrait, project_id: &str) -> Result<u64, SchedulerError> {
    Ok(passage::Entity::find()
        .filter(passage::Column::ProjectId.eq(project_id))
        .filter(
            Condition::any()
                .add(passage::Column::Translation.is_null())
                .add(passage::Column::Status.is_not_in(PassageStatus::USABLE)),
        )
        .count(db)
        .await?)
}

/// The licence in force and its use this cycle, and the caller's account
/// allowance. An unlicensed installation says so: every feature open and
/// no word limit.
pub async fn licence_status(
    db: &DatabaseConnection,
    who: &Principal,
    settings: &LicenceSettings,
) -> Result<LicenceStatus, SchedulerError> {
    let owner = account::Entity::find_by_id(who.account_id.clone())
        .one(db)
        .await?
        .ok_or(SchedulerError::RequestNotFound)?;
    let now = clock::now();
    let in_force = settings.in_force(db).await?;
    let standing = licence::standing(db, &in_force, now).await?;
    let allowance = licence::allowance_standing(db, &in_force, &owner, now).await?;
    let licensed = standing.source != LicenceSource::None;
    let summary = if licensed {
        "A licence is in force: its plan opens the features listed, and its word limit (if \
         any) counts the source words added each cycle."
    } else {
        "No licence is installed (unlicensed self-hosting): every feature is open and no word \
         limit applies."
    };
    Ok(LicenceStatus {
        account: AccountAllowance {
            allowance: allowance.allowance,
            cycle_end: allowance.cycle_end,
            cycle_start: allowance.cycle_start,
            left: allowance.left,
            used: allowance.used,
        },
        carried: standing.carried,
        cycle_end: standing.cycle_end,
        cycle_start: standing.cycle_start,
        features: standing.features,
        left: standing.left,
        licensed,
        margin: standing.margin,
        plan: standing.plan,
        source: standing.source,
        summary: summary.to_owned(),
        used: standing.used,
        word_limit: standing.word_limit,
    })
}

#[cfg(test)]
mod tests;
