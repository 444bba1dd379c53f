//! Whole-series job actions (spec 4.7, 4.10 `control_series`): `start`,
//! `pause`, `resume` and `cancel` for every volume of a series, answered
//! with a report per volume in reading order.
//!
//! Only the series' owner acts; another account's series, or an unknown
//! one, is `series_not_found`.
//!
//! - `pause` suspends the series (`series.suspended`, kept until `resume`)
//!   and pauses every job of it that waits for a worker or runs, with the
//!   per-request rules ([`control::apply`]): the request stays `pending`
//!   with step `paused`. A request waiting `queued` (no job yet, or a job
//!   resumed while another volume ran) stays queued, but nothing of a
//!   suspended series starts ([`series_queue::promote_in`]), so it waits
//!   for the `resume`. While suspended, a request that starts work and a
//!   per-request resume are refused with `series_suspended`; import-only
//!   requests, reading and exports go on.
//! - `resume` clears the suspension, then resumes the paused jobs in
//!   reading order with the per-request rules: the first one takes the
//!   series, the later ones wait `queued`. A caller that is a token resumes
//!   only the paid jobs that token started, as for one request
//!   ([`control::check_resumer`]); the others are refused with
//!   `not_own_job` and stay paused. A session or an internal caller (no
//!   token) resumes all. Each resume counts as a new queue entry: one
//!   that would go over a waiting quota is refused with `queue_full` and
//!   stays paused, the next volumes go on. When no paused job took the
//!   series, its next queued request starts, as when a volume ends.
//! - `cancel` cancels every request of the series that has not ended
//!   (waiting, running, paused, queued) with the per-request rules. The
//!   suspension is left as it is.
//! - `start` is refused whole on an archived series (`series_archived`) and
//!   on a suspended one (`series_suspended`) unless `resume_if_paused`,
//!   which first does what `resume` does. Then each volume in reading order
//!   gets a new request for all its chapters ([`intake::store_request`]), except
//!   archived volumes, volumes already working (a request that has not
//!   ended) and volumes with nothing left to translate (every passage has a
//!   usable translation, or there is none), which are skipped: not done, no
//!   code. Each volume passes admission after the ones started before it in
//!   the same call (provider, priority, then the [`Allowance`]: budget,
//!   licence words — nothing for a volume already counted, the words
//!   still to translate of one stored before the ledger —, waiting
//!   quotas), in its own write transaction: a refusal of one volume
//!   leaves the ones before it started and the call goes on with the next.
//!   The first volume started gets its job when the series is free; the
//!   others wait `queued` (`deferred`).
//!
//! Report per volume: `changed_jobs` counts the volume's requests the
//! action changed (created, paused, resumed, started or cancelled);
//! `done` says it changed at least one; `deferred` that a request it
//! started or resumed waits `queued` for an earlier volume; a refusal
//! carries its error code and an English message. Totals count volumes:
//! done, refused (with a code), deferred.

use super::control;
use super::series_queue;
use crate::error::SchedulerError;
use crate::intake::{self, Allowance, IntakeLimits, NewRequest};
use dragoman_model::clock;
use dragoman_model::entities::{
    account, api_token, chapter, job, passage, project, request, series,
};
use dragoman_model::ids;
use dragoman_model::payload::PipelineOptions;
use dragoman_model::reading_order;
use dragoman_model::tenancy::{self, Acting};
use dragoman_model::vocab::{
    ControlAction, ErrorCode, InputKind, JobOperation, JobStatus, PassageStatus, Priority,
    RequestStatus, SeriesAction,
};
use dragoman_proto::api_status::ServiceError;
use dragoman_proto::principal::Principal;
use sea_orm::sea_query::Expr;
use sea_orm::{
    ColumnTrait, Condition, ConnectionTrait, DatabaseConnection, DatabaseTransaction, EntityTrait,
    PaginatorTrait, QueryFilter, QueryOrder, QuerySelect,
};
use std::cmp::Ordering;
use std::collections::HashSet;

/// A refusal of one volume: the error code, the detail its spec code leaves
/// out, and an English message.
#[derive(Debug, Clone, PartialEq)]
pub struct VolumeRefusal {
    pub code: ErrorCode,
    /// The refusal's own `reason` when it carries one (as in an error
    /// envelope), else the variant's name when its spec code is shared
    /// (`not_own_job` behind `conflict`).
    pub reason: Option<String>,
    pub message: String,
}

impl From<SchedulerError> for VolumeRefusal {
    fn from(error: SchedulerError) -> VolumeRefusal {
        let sent = ServiceError::from(error);
        let own = sent.extra.get("reason").and_then(|r| r.as_str());
        VolumeRefusal {
            code: sent.code,
            reason: own.or(sent.code.reason()).map(str::to_owned),
            message: sent.message,
        }
    }
}

/// What the action did to one volume.
#[derive(Debug, Clone, PartialEq)]
pub struct VolumeReport {
    pub project_id: String,
    pub title: String,
    pub volume_number: Option<i32>,
    pub volume_label: Option<String>,
    pub changed_jobs: i32,
    pub done: bool,
    pub deferred: bool,
    pub refusal: Option<VolumeRefusal>,
    /// The request a `start` created.
    pub request_id: Option<String>,
}

impl VolumeReport {
    fn changed(&mut self) {
        self.changed_jobs += 1;
        self.done = true;
    }
}

/// The answer of a series action.
#[derive(Debug, Clone, PartialEq)]
pub struct SeriesReport {
    pub series_id: String,
    pub action: SeriesAction,
    /// Whether the series is suspended after the action.
    pub suspended: bool,
    /// Every volume of the series, in reading order.
    pub volumes: Vec<VolumeReport>,
}

impl SeriesReport {
    fn new(series: &series::Model, action: SeriesAction, volumes: &[project::Model]) -> Self {
        SeriesReport {
            series_id: series.id.clone(),
            action,
            suspended: series.suspended,
            volumes: volumes
                .iter()
                .map(|v| VolumeReport {
                    project_id: v.id.clone(),
                    title: v.title.clone(),
                    volume_number: v.volume_number,
                    volume_label: v.volume_label.clone(),
                    changed_jobs: 0,
                    done: false,
                    deferred: false,
                    refusal: None,
                    request_id: None,
                })
                .collect(),
        }
    }

    fn volume(&mut self, project_id: &str) -> Option<&mut VolumeReport> {
        self.volumes.iter_mut().find(|v| v.project_id == project_id)
    }

    /// Volumes done, refused (with a code) and deferred.
    pub fn totals(&self) -> (i32, i32, i32) {
        let count = |keep: fn(&VolumeReport) -> bool| {
            i32::try_from(self.volumes.iter().filter(|v| keep(v)).count()).unwrap_or(i32::MAX)
        };
        (
            count(|v| v.done),
            count(|v| v.refusal.is_some()),
            count(|v| v.deferred),
        )
    }
}

/// A series action's report and what the caller must announce after it.
#[derive(Debug)]
pub struct SeriesControlled {
    pub report: SeriesReport,
    /// Requests the action ended (a `cancel`): their waiters, final
    /// webhooks and series follow as for any end.
    pub ended: Vec<request::Model>,
    /// Other requests whose status changed, for their long polls.
    pub changed: Vec<String>,
    /// Whether a job now waits for a worker.
    pub wake_workers: bool,
}

impl SeriesControlled {
    fn new(report: SeriesReport) -> Self {
        SeriesControlled {
            report,
            ended: Vec::new(),
            changed: Vec::new(),
            wake_workers: false,
        }
    }
}

/// Applies `action` to every volume of the caller's series.
/// `resume_if_paused` lets a `start` resume a suspended series first.
pub async fn control_series(
    db: &DatabaseConnection,
    who: &Principal,
    series_id: &str,
    action: SeriesAction,
    resume_if_paused: bool,
    limits: &IntakeLimits,
) -> Result<SeriesControlled, SchedulerError> {
    match action {
        SeriesAction::Pause => pause(db, who, series_id, limits).await,
        SeriesAction::Resume => resume(db, who, series_id, limits).await,
        SeriesAction::Cancel => cancel(db, who, series_id, limits).await,
        SeriesAction::Start => start(db, who, series_id, resume_if_paused, limits).await,
    }
}

async fn pause(
    db: &DatabaseConnection,
    who: &Principal,
    series_id: &str,
    limits: &IntakeLimits,
) -> Result<SeriesControlled, SchedulerError> {
    let txn = dragoman_model::db::begin_write(db).await?;
    let series = tenancy::series(&txn, who.acting(), series_id).await?;
    set_suspended(&txn, &series.id, true).await?;
    let volumes = volumes_in_order(&txn, &series.id).await?;
    let mut out = SeriesControlled::new(SeriesReport::new(&series, SeriesAction::Pause, &volumes));
    out.report.suspended = true;
    for row in open_requests(&txn, &series.id, &volumes).await? {
        let project_id = row.project_id.clone();
        match control::apply(&txn, row, ControlAction::Pause, limits).await {
            Ok(paused) => {
                if let Some(v) = out.report.volume(&project_id) {
                    v.changed();
                }
                out.changed.push(paused.id);
            }
            // Waiting without a job, or paused already: nothing to pause.
            Err(e) if e.is_refusal() => {}
            Err(e) => return Err(e),
        }
    }
    txn.commit().await?;
    Ok(out)
}

async fn resume(
    db: &DatabaseConnection,
    who: &Principal,
    series_id: &str,
    limits: &IntakeLimits,
) -> Result<SeriesControlled, SchedulerError> {
    let txn = dragoman_model::db::begin_write(db).await?;
    let series = tenancy::series(&txn, who.acting(), series_id).await?;
    let volumes = volumes_in_order(&txn, &series.id).await?;
    let mut out = SeriesControlled::new(SeriesReport::new(&series, SeriesAction::Resume, &volumes));
    resume_paused(&txn, who, &series, &volumes, &mut out, limits).await?;
    txn.commit().await?;
    Ok(out)
}

/// Clears the suspension and resumes the series' paused jobs in reading
/// order, then starts the next queued request if none of them took the
/// series.
async fn resume_paused(
    txn: &DatabaseTransaction,
    who: &Principal,
    series: &series::Model,
    volumes: &[project::Model],
    out: &mut SeriesControlled,
    limits: &IntakeLimits,
) -> Result<(), SchedulerError> {
    set_suspended(txn, &series.id, false).await?;
    out.report.suspended = false;
    let mut resumed = HashSet::new();
    for row in open_requests(txn, &series.id, volumes).await? {
        if !is_paused(txn, &row).await? {
            continue;
        }
        let project_id = row.project_id.clone();
        let Some(report) = out.report.volume(&project_id) else {
            continue;
        };
        match control::check_resumer(txn, who, &row).await {
            Ok(()) => {}
            Err(e) if e.is_refusal() => {
                report.refusal = Some(e.into());
                continue;
            }
            Err(e) => return Err(e),
        }
        match control::apply(txn, row, ControlAction::Resume, limits).await {
            Ok(row) => {
                report.changed();
                if row.status == RequestStatus::Queued {
                    report.deferred = true;
                } else {
                    out.wake_workers = true;
                }
                resumed.insert(row.id.clone());
                out.changed.push(row.id);
            }
            Err(e) if e.is_refusal() => report.refusal = Some(e.into()),
            Err(e) => return Err(e),
        }
    }
    if let Some(started) = series_queue::promote_in(txn, &series.id).await? {
        out.wake_workers = true;
        let project_id = request::Entity::find_by_id(started.clone())
            .one(txn)
            .await?
            .map(|r| r.project_id);
        if let Some(report) = project_id.and_then(|id| out.report.volume(&id)) {
            if resumed.contains(&started) {
                report.deferred = false;
            } else {
                report.changed();
            }
        }
        if !resumed.contains(&started) {
            out.changed.push(started);
        }
    }
    Ok(())
}

/// A request whose job its owner paused (not one resumed already and
/// waiting `queued` for its turn).
async fn is_paused(
    db: &impl ConnectionTrait,
    row: &request::Model,
) -> Result<bool, SchedulerError> {
    if row.status == RequestStatus::Queued {
        return Ok(false);
    }
    let Some(job_id) = &row.job_id else {
        return Ok(false);
    };
    Ok(job::Entity::find_by_id(job_id.clone())
        .one(db)
        .await?
        .is_some_and(|j| j.status == JobStatus::Paused))
}

async fn cancel(
    db: &DatabaseConnection,
    who: &Principal,
    series_id: &str,
    limits: &IntakeLimits,
) -> Result<SeriesControlled, SchedulerError> {
    let txn = dragoman_model::db::begin_write(db).await?;
    let series = tenancy::series(&txn, who.acting(), series_id).await?;
    let volumes = volumes_in_order(&txn, &series.id).await?;
    let mut out = SeriesControlled::new(SeriesReport::new(&series, SeriesAction::Cancel, &volumes));
    for row in open_requests(&txn, &series.id, &volumes).await? {
        let project_id = row.project_id.clone();
        match control::apply(&txn, row, ControlAction::Cancel, limits).await {
            Ok(ended) => {
                if let Some(v) = out.report.volume(&project_id) {
                    v.changed();
                }
                out.ended.push(ended);
            }
            Err(e) if e.is_refusal() => {
                if let Some(v) = out.report.volume(&project_id) {
                    v.refusal = Some(e.into());
                }
            }
            Err(e) => return Err(e),
        }
    }
    txn.commit().await?;
    Ok(out)
}

async fn start(
    db: &DatabaseConnection,
    who: &Principal,
    series_id: &str,
    resume_if_paused: bool,
    limits: &IntakeLimits,
) -> Result<SeriesControlled, SchedulerError> {
    let owner = account::Entity::find_by_id(who.account_id.clone())
        .one(db)
        .await?
        .ok_or(SchedulerError::SeriesNotFound)?;
    let token = match &who.token_id {
        Some(id) => api_token::Entity::find_by_id(id.clone()).one(db).await?,
        None => None,
    };

    // The refusals of the whole call, and the resume it may ask for.
    let txn = dragoman_model::db::begin_write(db).await?;
    let series = tenancy::series(&txn, Acting::account(&owner.id), series_id).await?;
    if series.archived {
        return Err(SchedulerError::SeriesArchived);
    }
    if series.suspended && !resume_if_paused {
        return Err(SchedulerError::SeriesSuspended);
    }
    let volumes = volumes_in_order(&txn, &series.id).await?;
    let mut out = SeriesControlled::new(SeriesReport::new(&series, SeriesAction::Start, &volumes));
    if series.suspended {
        resume_paused(&txn, who, &series, &volumes, &mut out, limits).await?;
    }
    txn.commit().await?;

    let mut allowance = Allowance::new(&owner, token.as_ref(), &limits.queue, &limits.licence);
    let starter = Starter {
        owner: &owner,
        token: token.as_ref(),
        limits,
        provider_id: None,
        priority: None,
        operation: JobOperation::Translate,
        batch: None,
    };
    for volume in &volumes {
        let txn = dragoman_model::db::begin_write(db).await?;
        match starter.start_volume(&txn, volume, &mut allowance).await {
            Ok(Started::Request(row)) => {
                txn.commit().await?;
                if let Some(report) = out.report.volume(&volume.id) {
                    report.changed();
                    report.deferred = row.status == RequestStatus::Queued;
                    report.request_id = Some(row.id.clone());
                }
                out.wake_workers |= row.job_id.is_some();
                out.changed.push(row.id);
            }
            Ok(Started::Skipped(_)) => txn.rollback().await?,
            Err(e) if e.is_refusal() => {
                txn.rollback().await?;
                if let Some(report) = out.report.volume(&volume.id) {
                    report.refusal = Some(e.into());
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

/// Who a `start` launches work for, and with which installation limits.
/// A series `start` launches each volume with the provider and priority in
/// force; a book's `start_job` ([`crate::library::jobs`]) may name them.
pub(crate) struct Starter<'a> {
    pub(crate) owner: &'a account::Model,
    pub(crate) token: Option<&'a api_token::Model>,
    pub(crate) limits: &'a IntakeLimits,
    /// A provider chosen for this work (an id); none: the one in force.
    pub(crate) provider_id: Option<String>,
    /// The priority asked for; none: the default under the ceilings.
    pub(crate) priority: Option<Priority>,
    /// What the work does: a translation of what is left, or reader-note
    /// proposals over what is translated.
    pub(crate) operation: JobOperation,
    /// The provider's batch mode asked for; none: the volume's default,
    /// else the installation's.
    pub(crate) batch: Option<bool>,
}

/// What [`Starter::start_volume`] did.
#[derive(Debug)]
pub(crate) enum Started {
    /// The volume's new request (`pending` with its job, or `queued`).
    Request(Box<request::Model>),
    /// Nothing stored, and why.
    Skipped(Skip),
}

/// Why a volume was not started. A series `start` skips it silently; a
/// book's `start_job` refuses with the reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Skip {
    /// Deleted since the call began.
    Gone,
    /// Shelved (archived).
    Archived,
    /// A request of the volume has not ended.
    Working,
    /// Every passage has a usable translation, or there is none.
    NothingLeft,
    /// No passage has a usable translation, for work that reads it.
    NothingTranslated,
}

impl Starter<'_> {
    /// Creates the volume's request when the volume is to start, inside the
    /// volume's own write transaction, or says why it is skipped.
    pub(crate) async fn start_volume(
        &self,
        txn: &DatabaseTransaction,
        volume: &project::Model,
        allowance: &mut Allowance<'_>,
    ) -> Result<Started, SchedulerError> {
        // Read again under the write lock: the series or the volume may
        // have changed since the call began.
        let series = series::Entity::find_by_id(volume.series_id.clone())
            .one(txn)
            .await?
            .ok_or(SchedulerError::SeriesNotFound)?;
        if series.archived {
            return Err(SchedulerError::SeriesArchived);
        }
        let Some(volume) = project::Entity::find_by_id(volume.id.clone())
            .one(txn)
            .await?
        else {
            return Ok(Started::Skipped(Skip::Gone));
        };
        if volume.archived {
            return Ok(Started::Skipped(Skip::Archived));
        }
        if working(txn, &volume.id).await? {
            return Ok(Started::Skipped(Skip::Working));
        }
        let translation = self.operation == JobOperation::Translate;
        if translation && !work_left(txn, &volume.id).await? {
            return Ok(Started::Skipped(Skip::NothingLeft));
        }
        if !translation && !translated(txn, &volume.id).await? {
            return Ok(Started::Skipped(Skip::NothingTranslated));
        }
        // The checks of spec 4.2 that apply to work on stored chapters, in
        // its order.
        let provider_id = match &self.provider_id {
            Some(id) => Some(id.clone()),
            None => intake::provider_in_force(txn, Some(&volume), Some(&series), true).await?,
        };
        let priority = intake::check_priority(self.owner, self.token, self.priority)?;
        // A translation of a volume already counted costs nothing; of one
        // stored before the licence's ledger, its words still to translate.
        // A reader-note pass costs the words it reads. Counted below.
        let words = if translation {
            crate::licence::words_to_start(txn, &volume).await?
        } else {
            crate::licence::words_translated(txn, &volume.id).await?
        };
        allowance.fit(txn, true, words).await?;

        let chapter_ids: Vec<String> = chapter::Entity::find()
            .select_only()
            .column(chapter::Column::Id)
            .filter(chapter::Column::ProjectId.eq(volume.id.clone()))
            .order_by_asc(chapter::Column::Position)
            .into_tuple()
            .all(txn)
            .await?;
        let pipeline = PipelineOptions {
            batch: self.batch,
            ..PipelineOptions::default()
        };
        let languages = (
            volume.source_language.clone(),
            volume.target_language.clone(),
        );
        let new = NewRequest {
            account_id: self.owner.id.clone(),
            token_id: self.token.map(|t| t.id.clone()),
            external_id: None,
            idempotency_key: None,
            // No content was sent: a hash of its own, so nothing can
            // replay this request.
            content_hash: format!("series-start:{}", ids::new_id()),
            input: volume.source_format.unwrap_or(InputKind::Json),
            start: true,
            priority,
            provider_id,
            pipeline: &pipeline,
            output_format: None,
            languages: (&languages.0, &languages.1),
            callback_url: None,
            callback_events: &[],
            chapters: intake::unchanged_chapters(chapter_ids),
            original: None,
            operation: self.operation,
        };
        let book = volume.clone();
        let row = intake::store_request(txn, &series, volume, new, self.limits).await?;
        let licence = &self.limits.licence;
        if translation {
            crate::licence::count(txn, licence, self.owner, &book, &row.id, 0).await?;
        } else {
            crate::licence::count_pass(txn, licence, self.owner, &book, &row.id, words).await?;
        }
        Ok(Started::Request(Box::new(row)))
    }
}

/// Whether a request of the volume has not ended.
pub(crate) async fn working(
    db: &impl ConnectionTrait,
    project_id: &str,
) -> Result<bool, SchedulerError> {
    let open = request::Entity::find()
        .filter(request::Column::ProjectId.eq(project_id))
        .filter(request::Column::Status.is_not_in(RequestStatus::FINAL))
        .count(db)
        .await?;
    Ok(open > 0)
}

/// Whether a passage of the volume lacks a usable translation.
async fn work_left(db: &impl ConnectionTrait, project_id: &str) -> Result<bool, SchedulerError> {
    let left = passage::Entity::find()
        .filter(passage::Column::ProjectId.eq(project_id))
        .filter(
            Condition::any()
                .add(passage::Column::Translation.is_null())
                .add(passage::Column::Status.is_not_in(PassageStatus::USABLE)),
        )
        .count(db)
        .await?;
    Ok(left > 0)
}

/// Whether a passage of the volume has a usable translation.
async fn translated(db: &impl ConnectionTrait, project_id: &str) -> Result<bool, SchedulerError> {
    let done = passage::Entity::find()
        .filter(passage::Column::ProjectId.eq(project_id))
        .filter(passage::Column::Translation.is_not_null())
        .filter(passage::Column::Status.is_in(PassageStatus::USABLE))
        .count(db)
        .await?;
    Ok(done > 0)
}

async fn set_suspended(
    db: &impl ConnectionTrait,
    series_id: &str,
    suspended: bool,
) -> Result<(), SchedulerError> {
    series::Entity::update_many()
        .col_expr(series::Column::Suspended, Expr::value(suspended))
        .col_expr(series::Column::UpdatedAt, Expr::value(clock::now()))
        .filter(series::Column::Id.eq(series_id))
        .exec(db)
        .await?;
    Ok(())
}

/// The series' volumes in reading order; those outside it come last, by
/// title.
async fn volumes_in_order(
    db: &impl ConnectionTrait,
    series_id: &str,
) -> Result<Vec<project::Model>, SchedulerError> {
    let mut volumes = project::Entity::find()
        .filter(project::Column::SeriesId.eq(series_id))
        .order_by_asc(project::Column::CreatedAt)
        .all(db)
        .await?;
    volumes.sort_by(|a, b| {
        let key =
            |v: &project::Model| reading_order::key(v.volume_number, v.volume_label.as_deref());
        reading_order::compare(&key(a), &key(b)).then_with(|| {
            if outside_order(a) && outside_order(b) {
                a.title.cmp(&b.title)
            } else {
                Ordering::Equal
            }
        })
    });
    Ok(volumes)
}

/// A volume with neither a number nor a label stays outside the reading
/// order (spec 2.8).
fn outside_order(volume: &project::Model) -> bool {
    volume.volume_number.is_none()
        && volume
            .volume_label
            .as_deref()
            .is_none_or(|l| l.trim().is_empty())
}

/// The series' requests that have not ended, by their volume's place in
/// `volumes`, then by arrival.
async fn open_requests(
    db: &impl ConnectionTrait,
    series_id: &str,
    volumes: &[project::Model],
) -> Result<Vec<request::Model>, SchedulerError> {
    let mut rows = request::Entity::find()
        .filter(request::Column::SeriesId.eq(series_id))
        .filter(request::Column::Status.is_not_in(RequestStatus::FINAL))
        .order_by_asc(request::Column::CreatedAt)
        .all(db)
        .await?;
    let place = |row: &request::Model| {
        volumes
            .iter()
            .position(|v| v.id == row.project_id)
            .unwrap_or(usize::MAX)
    };
    rows.sort_by_key(place);
    Ok(rows)
}

#[cfg(test)]
mod tests;
