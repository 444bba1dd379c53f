//! Books as the tool protocol changes them (spec 4.10): configuring one of
//! the caller's books (only the fields given), shelving it or taking it
//! back, and deleting it with everything that belongs to it.
//!
//! A book is visible through a series its account owns; an absent book and
//! another account's are refused alike with `volume_not_found`. A book
//! whose request has not ended refuses a change of languages, a shelving
//! and a deletion with 409 `conflict`: the running job reads them.

use super::provider_named;
use crate::error::SchedulerError;
use crate::lifecycle::queue::QueueSettings;
use crate::lifecycle::series_control::working;
use dragoman_model::clock;
use dragoman_model::entities::{project, request, result};
use dragoman_model::payload::valid_language;
use dragoman_model::tenancy::{self, Acting};
use dragoman_model::vocab::{AnalysisMode, Issue, IssueContext, IssueKind};
use dragoman_proto::v1::{ConfigureBookRequest, ShelveBookRequest};
use dragoman_proto::wire::WireEnum;
use object_store::ObjectStore;
use object_store::path::Path;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, DatabaseConnection, EntityTrait, IntoActiveModel,
    PaginatorTrait, QueryFilter, QuerySelect, Set,
};

/// Longest title and author, as intake accepts them.
const MAX_TEXT: usize = 500;
/// The range of a book's `threads`, as intake accepts it.
const THREADS: std::ops::RangeInclusive<i32> = 1..=64;

/// What a configuration changes, checked: `None` leaves a field alone.
#[derive(Debug, Default, PartialEq)]
struct Changes {
    title: Option<String>,
    /// `Some(None)` removes the author.
    author: Option<Option<String>>,
    source_language: Option<String>,
    target_language: Option<String>,
    /// A provider's name; `Some(None)` removes the book's own provider.
    provider: Option<Option<String>>,
    analysis_mode: Option<AnalysisMode>,
    threads: Option<i32>,
    ai_disclosure: Option<bool>,
    batch: Option<bool>,
}

/// Reads and checks `ask`, locating every problem (never quoting a value).
fn changes(ask: ConfigureBookRequest) -> Result<Changes, SchedulerError> {
    let mut issues = Vec::new();
    let mut issue = |field: &str, kind: IssueKind, ctx: IssueContext| {
        issues.push(Issue::at("body", field, kind).with_ctx(ctx));
    };
    let title = ask.title.map(|t| t.trim().to_owned());
    if let Some(title) = &title {
        if title.is_empty() {
            issue(
                "title",
                IssueKind::StringTooShort,
                IssueContext::new().min(1),
            );
        } else if title.chars().count() > MAX_TEXT {
            issue(
                "title",
                IssueKind::StringTooLong,
                IssueContext::new().max(MAX_TEXT),
            );
        }
    }
    // An empty author removes it.
    let author = ask.author.map(|a| {
        let a = a.trim().to_owned();
        (!a.is_empty()).then_some(a)
    });
    if let Some(Some(author)) = &author
        && author.chars().count() > MAX_TEXT
    {
        issue(
            "author",
            IssueKind::StringTooLong,
            IssueContext::new().max(MAX_TEXT),
        );
    }
    for (field, tag) in [
        ("source_language", &ask.source_language),
        ("target_language", &ask.target_language),
    ] {
        if let Some(tag) = tag
            && !valid_language(tag)
        {
            issue(field, IssueKind::Pattern, IssueContext::new().max(35));
        }
    }
    let provider = match (ask.provider, ask.clear_provider) {
        (Some(_), true) => {
            issue(
                "clear_provider",
                IssueKind::ValueError,
                IssueContext::new().conflicts_with("provider"),
            );
            None
        }
        (Some(name), false) => Some(Some(name)),
        (None, true) => Some(None),
        (None, false) => None,
    };
    if let Some(threads) = ask.threads
        && !THREADS.contains(&threads)
    {
        issue(
            "threads",
            IssueKind::OutOfRange,
            IssueContext::new()
                .min(*THREADS.start())
                .max(*THREADS.end()),
        );
    }
    let analysis_mode = AnalysisMode::from_wire_opt(ask.analysis_mode, "analysis_mode")
        .map_err(SchedulerError::payload_field)?;
    if !issues.is_empty() {
        return Err(SchedulerError::InvalidPayload(issues));
    }
    Ok(Changes {
        title,
        author,
        source_language: ask.source_language,
        target_language: ask.target_language,
        provider,
        analysis_mode,
        threads: ask.threads,
        ai_disclosure: ask.ai_disclosure,
        batch: ask.batch,
    })
}

/// Changes the fields `ask` gives of one of the caller's books, and only
/// those. A provider is named; an unknown name is `unknown_provider`.
/// Changing a language while a request of the book has not ended is
/// refused (the running job translates into the languages it read). A
/// shelved book may be configured: shelving stops work, not settings.
pub async fn configure(
    db: &DatabaseConnection,
    account_id: &str,
    ask: ConfigureBookRequest,
) -> Result<project::Model, SchedulerError> {
    let project_id = ask.project_id.clone();
    let changes = changes(ask)?;
    let txn = dragoman_model::db::begin_write(db).await?;
    let book = tenancy::book(&txn, Acting::account(account_id), &project_id).await?;
    let provider_id = match &changes.provider {
        Some(Some(name)) => Some(Some(provider_named(&txn, name).await?.id)),
        Some(None) => Some(None),
        None => None,
    };
    let languages_change = changes
        .source_language
        .as_ref()
        .is_some_and(|l| *l != book.source_language)
        || changes
            .target_language
            .as_ref()
            .is_some_and(|l| *l != book.target_language);
    if languages_change && working(&txn, &book.id).await? {
        return Err(SchedulerError::BookWorking("its languages cannot change"));
    }
    let mut row = book.into_active_model();
    if let Some(title) = changes.title {
        row.title = Set(title);
    }
    if let Some(author) = changes.author {
        row.author = Set(author);
    }
    if let Some(language) = changes.source_language {
        row.source_language = Set(language);
    }
    if let Some(language) = changes.target_language {
        row.target_language = Set(language);
    }
    if let Some(provider_id) = provider_id {
        row.provider_id = Set(provider_id);
    }
    if let Some(mode) = changes.analysis_mode {
        row.analysis_mode = Set(Some(mode));
    }
    if let Some(threads) = changes.threads {
        row.threads = Set(Some(threads));
    }
    if let Some(disclosure) = changes.ai_disclosure {
        row.ai_disclosure = Set(Some(disclosure));
    }
    if let Some(batch) = changes.batch {
        row.batch = Set(Some(batch));
    }
    if row.is_changed() {
        row.updated_at = Set(clock::now());
    }
    let book = row.update(&txn).await?;
    txn.commit().await?;
    Ok(book)
}

/// Shelves one of the caller's books (`archived`: a series start skips it
/// and a request naming it is refused `volume_archived`) or takes it back.
/// Shelving a book whose request has not ended is refused: pause or cancel
/// the work first. Shelving a shelved book, or taking back one on no
/// shelf, changes nothing.
pub async fn shelve(
    db: &DatabaseConnection,
    account_id: &str,
    ask: ShelveBookRequest,
) -> Result<project::Model, SchedulerError> {
    let txn = dragoman_model::db::begin_write(db).await?;
    let book = tenancy::book(&txn, Acting::account(account_id), &ask.project_id).await?;
    if book.archived == ask.shelved {
        txn.rollback().await?;
        return Ok(book);
    }
    if ask.shelved && working(&txn, &book.id).await? {
        return Err(SchedulerError::BookWorking("it cannot be shelved"));
    }
    let mut row = book.into_active_model();
    row.archived = Set(ask.shelved);
    row.updated_at = Set(clock::now());
    let book = row.update(&txn).await?;
    txn.commit().await?;
    Ok(book)
}

/// Deletes one of the caller's books and everything that belongs to it, in
/// one transaction: its chapters, passages, analyses, narrative entities,
/// Book Bible, book-layer terms, requests with their jobs, results,
/// webhook deliveries and autopilot records (the schema's cascades from
/// `projects` and `requests`; series memory that named the book keeps its
/// rows with the link cleared). Each request's status document is kept
/// ([`crate::deleted_requests`]), so its owner learns what became of it. The licence ledger keeps its rows: words
/// counted stay counted, a deletion never gives quota back. Refused while
/// a request of the book has not ended.
///
/// The blobs (stored results, and the original when no other book holds
/// it) are deleted after the commit, best effort: a failure is logged and
/// leaves an orphan blob, never a half-deleted book.
pub async fn delete(
    db: &DatabaseConnection,
    blobs: &dyn ObjectStore,
    queue: &QueueSettings,
    account_id: &str,
    project_id: &str,
) -> Result<String, SchedulerError> {
    let txn = dragoman_model::db::begin_write(db).await?;
    let book = tenancy::book(&txn, Acting::account(account_id), project_id).await?;
    if working(&txn, &book.id).await? {
        return Err(SchedulerError::BookWorking("it cannot be deleted"));
    }
    crate::deleted_requests::keep(&txn, &book, queue, clock::now()).await?;
    let request_ids: Vec<String> = request::Entity::find()
        .select_only()
        .column(request::Column::Id)
        .filter(request::Column::ProjectId.eq(book.id.as_str()))
        .into_tuple()
        .all(&txn)
        .await?;
    let mut keys: Vec<String> = Vec::new();
    for ids in request_ids.chunks(500) {
        keys.extend(
            result::Entity::find()
                .select_only()
                .column(result::Column::BlobKey)
                .filter(result::Column::RequestId.is_in(ids.iter().cloned()))
                .into_tuple::<String>()
                .all(&txn)
                .await?,
        );
    }
    project::Entity::delete_by_id(book.id.clone())
        .exec(&txn)
        .await?;
    txn.commit().await?;

    if let Some(original) = &book.original_blob {
        // Originals are kept by content: another book may hold the same.
        let held = project::Entity::find()
            .filter(project::Column::OriginalBlob.eq(original.as_str()))
            .count(db)
            .await;
        match held {
            Ok(0) => keys.push(original.clone()),
            Ok(_) => {}
            Err(e) => tracing::warn!(book = %book.id, error = %e,
                "could not tell whether another book holds the original; kept"),
        }
    }
    for key in &keys {
        match blobs.delete(&Path::from(key.as_str())).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
            Err(e) => {
                tracing::warn!(book = %book.id, %key, error = %e,
                    "deleting a blob of a deleted book failed; left behind");
            }
        }
    }
    Ok(book.id)
}

#[cfg(test)]
mod tests;
