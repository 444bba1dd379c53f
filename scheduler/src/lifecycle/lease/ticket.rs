//! The ticket a leased job's worker gets: its book's languages, its
//! threads, and the options its request settled at intake (quality,
//! analysis mode, review threshold).

use super::DEFAULT_VOLUME_THREADS;
use crate::error::SchedulerError;
use dragoman_model::entities::{job, project, request};
use dragoman_model::vocab::{AnalysisMode, InputKind, JobOperation, Quality, ResultFormat};
use dragoman_proto::v1::JobTicket;
use dragoman_proto::wire::WireEnum;
use sea_orm::sea_query::{Expr, ExprTrait, Query, SelectStatement};
use sea_orm::{DatabaseConnection, FromQueryResult};

/// The parallel batches of a job: the volume's share, lowered by the
/// request's `threads` when it asks for fewer, never raised (spec 2.5).
pub fn ticket_threads(requested: Option<i64>, volume: Option<i32>) -> i32 {
    let share = volume
        .map(i64::from)
        .filter(|t| *t > 0)
        .unwrap_or(DEFAULT_VOLUME_THREADS);
    let threads = std::cmp::max(requested.map_or(share, |r| std::cmp::min(r, share)), 1);
    i32::try_from(threads).unwrap_or(1)
}

/// The ceiling of a job's calls at once: its share itself when the request
/// or the volume set `threads`, since a client that set it asked for at
/// most that many; none when neither did, so the job may use more than its
/// share while no other job waits for its own.
pub fn ticket_max_threads(requested: Option<i64>, volume: Option<i32>) -> Option<i32> {
    let set = requested.is_some() || volume.is_some_and(|t| t > 0);
    set.then(|| ticket_threads(requested, volume))
}

/// The quality the request asked for (`normal` when it did not).
pub(super) fn quality(row: &request::Model) -> Quality {
    row.options.quality()
}

/// The analysis mode intake settled for the request (the request's, the
/// volume's or the installation's choice).
pub fn analysis_mode(row: &request::Model) -> AnalysisMode {
    row.options.analysis_mode_in_force()
}

/// The score below which the request's passages are checked (settled at
/// intake from `QUALITY_REVIEW_BELOW`).
pub fn review_below(row: &request::Model) -> i32 {
    row.options.review_below.unwrap_or(DEFAULT_REVIEW_BELOW)
}

/// `QUALITY_REVIEW_BELOW` when nothing sets it.
pub const DEFAULT_REVIEW_BELOW: i32 = 70;

/// What a ticket and the job-start checks take from a job's book (its
/// volume).
#[derive(Debug, FromQueryResult)]
pub(super) struct Book {
    pub(super) source_language: String,
    pub(super) target_language: String,
    pub(super) threads: Option<i32>,
    pub(super) licence_counted: bool,
}

/// Adds the [`Book`] columns of `projects` to `query`.
pub(super) fn book_columns(query: &mut SelectStatement) -> &mut SelectStatement {
    query.columns([
        (project::Entity, project::Column::SourceLanguage),
        (project::Entity, project::Column::TargetLanguage),
        (project::Entity, project::Column::Threads),
        (project::Entity, project::Column::LicenceCounted),
    ])
}

/// The ticket of a job taken over, as it is now; none when its volume is
/// gone.
pub(super) async fn ticket_of(
    db: &DatabaseConnection,
    job_row: &job::Model,
    row: &request::Model,
) -> Result<Option<JobTicket>, SchedulerError> {
    let mut query = Query::select();
    book_columns(&mut query).from(project::Entity).and_where(
        Expr::col((project::Entity, project::Column::Id)).eq(job_row.project_id.clone()),
    );
    let book = Book::find_by_statement(db.get_database_backend().build(&query))
        .one(db)
        .await?;
    Ok(book.map(|book| ticket(job_row, row, book)))
}

/// The ticket of a job taken: `job_row` is the job as it is now (the
/// job-start checks may have moved it to a cheaper provider, a worker that
/// took it over may have moved it before).
pub(super) fn ticket(job_row: &job::Model, row: &request::Model, book: Book) -> JobTicket {
    let requested = row.options.threads;
    JobTicket {
        job_id: job_row.id.clone(),
        request_id: job_row.request_id.clone(),
        project_id: job_row.project_id.clone(),
        provider_id: job_row.provider_id.clone().unwrap_or_default(),
        source_language: book.source_language,
        target_language: book.target_language,
        threads: ticket_threads(requested, book.threads),
        max_threads: ticket_max_threads(requested, book.threads),
        account_id: job_row.account_id.clone(),
        token_id: job_row.token_id.clone(),
        chapter_ids: row.chapter_ids(),
        announce_chapters: row.wants_chapter_events(),
        quality: quality(row).to_wire(),
        analysis_mode: analysis_mode(row).to_wire(),
        final_review: row.options.final_review(),
        review_below: review_below(row),
        provider_switches: job_row.provider_switches,
        deliver_epub: row.input == InputKind::Epub
            && row.options.output_format == Some(ResultFormat::Epub)
            && job_row.operation == JobOperation::Translate,
        operation: job_row.operation.to_wire(),
        batch: row.options.batch(),
    }
}
