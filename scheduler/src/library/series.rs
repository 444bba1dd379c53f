//! Series as the tool protocol changes them (spec 4.10): creating one,
//! changing only the fields given, placing one of the account's books in a
//! series (`attach_volume`) and deleting an empty series. An absent series
//! and another account's are refused alike (`series_not_found`), and so
//! are books (`volume_not_found`).
//!
//! Rules decided here (docs/mcp.md, "Series"):
//! - A name follows intake's rule ([`valid_series_name`]), is stored
//!   trimmed, and is unique in the account as intake matches it (exact
//!   text): a taken name is 409 `conflict` with reason `name_taken`, since
//!   intake would otherwise file requests naming it under either series.
//! - A language changed on a series must be the language of every volume
//!   it holds (409 `conflict`, reason `volume_languages`).
//! - A book attached goes at a volume number (the range intake accepts) or
//!   a label, never both; the place must be free (`volume_conflict`,
//!   reason `place_taken`); an archived series neither takes nor gives a
//!   book (`series_archived`); a book with a request that has not ended
//!   stays where it is (409 `conflict`); a series that names a language
//!   takes only books in that language (422 `invalid_placement`, reason
//!   `languages`). The book's requests follow it to its new series.
//! - A series is deleted only once it holds no volume (409 `conflict`,
//!   reason `has_volumes`); its series-level memory (terms, canonical
//!   identities, Series Bible) and its shared-glossary attachment go with
//!   it in the same statement, through the foreign keys that cascade.

use super::provider_named;
use crate::error::{SchedulerError, VolumeClash};
use crate::lifecycle::series_control::working;
use crate::series as listing;
use dragoman_model::clock;
use dragoman_model::db::begin_write;
use dragoman_model::entities::{project, request, series};
use dragoman_model::payload::{VOLUME_NUMBERS, same_language, valid_language, valid_series_name};
use dragoman_model::tenancy::{self, Acting};
use dragoman_model::vocab::{Issue, IssueContext, IssueKind, SeriesKind};
use dragoman_proto::v1::{
    AttachVolumeRequest, CreateSeriesRequest, SeriesDetail, UpdateSeriesRequest,
};
use dragoman_proto::wire::{WireEnum, WireError};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DatabaseConnection, EntityTrait,
    PaginatorTrait, QueryFilter, Set,
};

/// Longest volume label, in characters.
pub const LABEL_MAX: usize = 200;

/// A refusal located at one argument.
fn located(field: &str, kind: IssueKind, ctx: IssueContext) -> SchedulerError {
    SchedulerError::InvalidArguments(vec![Issue::at("arguments", field, kind).with_ctx(ctx)])
}

/// The trimmed name, or `invalid_name`.
fn series_name(raw: &str) -> Result<String, SchedulerError> {
    if !valid_series_name(raw) {
        return Err(SchedulerError::InvalidName);
    }
    Ok(raw.trim().to_owned())
}

/// The trimmed language tag, or an issue located at `field`.
fn language(field: &str, tag: Option<&str>, issues: &mut Vec<Issue>) -> Option<String> {
    let tag = tag?.trim();
    if valid_language(tag) {
        Some(tag.to_owned())
    } else {
        issues.push(
            Issue::at("arguments", field, IssueKind::Pattern).with_ctx(IssueContext::new().max(35)),
        );
        None
    }
}

fn kind(value: i32) -> Result<SeriesKind, SchedulerError> {
    SeriesKind::from_wire(value, "kind").map_err(|e| {
        located(
            e.field,
            IssueKind::Enum,
            IssueContext::new().values(["numbered", "continuous"]),
        )
    })
}

fn name_taken() -> SchedulerError {
    SchedulerError::SeriesConflict {
        reason: "name_taken",
    }
}

/// Whether another series of the account has this name.
async fn name_in_use(
    db: &impl ConnectionTrait,
    account_id: &str,
    name: &str,
    except: Option<&str>,
) -> Result<bool, SchedulerError> {
    let mut query = series::Entity::find()
        .filter(series::Column::AccountId.eq(account_id))
        .filter(series::Column::Name.eq(name));
    if let Some(id) = except {
        query = query.filter(series::Column::Id.ne(id));
    }
    Ok(query.count(db).await? > 0)
}

/// A concurrent writer that took the name first trips the unique index.
fn unique_to_taken(error: sea_orm::DbErr) -> SchedulerError {
    match error.sql_err() {
        Some(sea_orm::SqlErr::UniqueConstraintViolation(_)) => name_taken(),
        _ => SchedulerError::Db(error),
    }
}

/// Creates a series of the account and answers its detail (no volume).
pub async fn create(
    db: &DatabaseConnection,
    account_id: &str,
    ask: CreateSeriesRequest,
) -> Result<SeriesDetail, SchedulerError> {
    let name = series_name(&ask.name)?;
    let kind = kind(ask.kind)?;
    let mut issues = Vec::new();
    let source = language(
        "source_language",
        ask.source_language.as_deref(),
        &mut issues,
    );
    let target = language(
        "target_language",
        ask.target_language.as_deref(),
        &mut issues,
    );
    if !issues.is_empty() {
        return Err(SchedulerError::InvalidArguments(issues));
    }
    let txn = begin_write(db).await?;
    let provider_id = match ask.default_provider.as_deref() {
        Some(name) => Some(provider_named(&txn, name).await?.id),
        None => None,
    };
    if name_in_use(&txn, account_id, &name, None).await? {
        return Err(name_taken());
    }
    let mut row = series::ActiveModel::new_series(account_id, &name, kind, ("", ""), provider_id);
    row.source_language = Set(source);
    row.target_language = Set(target);
    let row = row.insert(&txn).await.map_err(unique_to_taken)?;
    txn.commit().await?;
    listing::detail(db, account_id, &row.id).await
}

/// Whether a volume of the series has another language than `tag` on the
/// side `column` names.
async fn volumes_disagree(
    db: &impl ConnectionTrait,
    series_id: &str,
    column: project::Column,
    tag: &str,
) -> Result<bool, SchedulerError> {
    Ok(project::Entity::find()
        .filter(project::Column::SeriesId.eq(series_id))
        .filter(column.ne(tag))
        .count(db)
        .await?
        > 0)
}

/// Changes the fields given of one of the account's series and answers
/// its detail. Nothing given changes nothing.
pub async fn update(
    db: &DatabaseConnection,
    account_id: &str,
    ask: UpdateSeriesRequest,
) -> Result<SeriesDetail, SchedulerError> {
    let name = ask.name.as_deref().map(series_name).transpose()?;
    let kind = ask.kind.map(kind).transpose()?;
    let mut issues = Vec::new();
    let source = language(
        "source_language",
        ask.source_language.as_deref(),
        &mut issues,
    );
    let target = language(
        "target_language",
        ask.target_language.as_deref(),
        &mut issues,
    );
    if ask.clear_default_provider && ask.default_provider.is_some() {
        issues.push(
            Issue::at("arguments", "clear_default_provider", IssueKind::ValueError)
                .with_ctx(IssueContext::new().conflicts_with("default_provider")),
        );
    }
    if !issues.is_empty() {
        return Err(SchedulerError::InvalidArguments(issues));
    }
    let txn = begin_write(db).await?;
    let row = tenancy::series_locked(&txn, Acting::account(account_id), &ask.series_id).await?;
    let mut changes: series::ActiveModel = row.clone().into();
    let mut changed = false;
    if let Some(name) = name
        && name != row.name
    {
        if name_in_use(&txn, account_id, &name, Some(&row.id)).await? {
            return Err(name_taken());
        }
        changes.name = Set(name);
        changed = true;
    }
    if let Some(kind) = kind
        && kind != row.kind
    {
        changes.kind = Set(kind);
        changed = true;
    }
    for (tag, held, column, active) in [
        (
            source,
            &row.source_language,
            project::Column::SourceLanguage,
            &mut changes.source_language,
        ),
        (
            target,
            &row.target_language,
            project::Column::TargetLanguage,
            &mut changes.target_language,
        ),
    ] {
        let Some(tag) = tag else { continue };
        if held.as_deref() == Some(tag.as_str()) {
            continue;
        }
        if volumes_disagree(&txn, &row.id, column, &tag).await? {
            return Err(SchedulerError::SeriesConflict {
                reason: "volume_languages",
            });
        }
        *active = Set(Some(tag));
        changed = true;
    }
    if let Some(name) = ask.default_provider.as_deref() {
        let id = provider_named(&txn, name).await?.id;
        if row.default_provider_id.as_deref() != Some(id.as_str()) {
            changes.default_provider_id = Set(Some(id));
            changed = true;
        }
    } else if ask.clear_default_provider && row.default_provider_id.is_some() {
        changes.default_provider_id = Set(None);
        changed = true;
    }
    if let Some(archived) = ask.archived
        && archived != row.archived
    {
        changes.archived = Set(archived);
        changed = true;
    }
    if changed {
        changes.updated_at = Set(clock::now());
        changes.update(&txn).await.map_err(unique_to_taken)?;
    }
    txn.commit().await?;
    listing::detail(db, account_id, &ask.series_id).await
}

/// Where a book goes in a series.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    Number(i32),
    /// Trimmed.
    Label(String),
}

impl Place {
    /// The place the message names. The tool refuses both and neither
    /// before calling, located at its arguments; a direct caller sending
    /// them gets a plain `invalid_request`.
    pub fn of(number: Option<i32>, label: Option<&str>) -> Result<Place, SchedulerError> {
        match (number, label) {
            (Some(n), None) => {
                if VOLUME_NUMBERS.contains(&i64::from(n)) {
                    Ok(Place::Number(n))
                } else {
                    Err(located(
                        "volume_number",
                        IssueKind::OutOfRange,
                        IssueContext::new()
                            .min(*VOLUME_NUMBERS.start())
                            .max(*VOLUME_NUMBERS.end()),
                    ))
                }
            }
            (None, Some(label)) => {
                let label = label.trim();
                if (1..=LABEL_MAX).contains(&label.chars().count()) {
                    Ok(Place::Label(label.to_owned()))
                } else {
                    Err(located(
                        "volume_label",
                        IssueKind::StringTooLong,
                        IssueContext::new().min(1).max(LABEL_MAX),
                    ))
                }
            }
            _ => Err(SchedulerError::InvalidRequest(WireError {
                field: "volume_number",
            })),
        }
    }

    /// Whether `volume` stands at this place.
    fn holds(&self, volume: &project::Model) -> bool {
        match self {
            Place::Number(n) => volume.volume_number == Some(*n),
            Place::Label(label) => volume
                .volume_label
                .as_deref()
                .is_some_and(|l| l.trim() == label),
        }
    }
}

/// Moves one of the account's books into one of its series at a number or
/// a label (the book's other place is cleared) and answers the detail of
/// that series. Attaching a book where it already stands changes nothing.
pub async fn attach(
    db: &DatabaseConnection,
    account_id: &str,
    ask: AttachVolumeRequest,
) -> Result<SeriesDetail, SchedulerError> {
    let place = Place::of(ask.volume_number, ask.volume_label.as_deref())?;
    let txn = begin_write(db).await?;
    let book = tenancy::book(&txn, Acting::account(account_id), &ask.project_id).await?;
    let target = tenancy::series_locked(&txn, Acting::account(account_id), &ask.series_id).await?;
    if target.archived {
        return Err(SchedulerError::SeriesArchived);
    }
    if book.series_id != target.id {
        let from =
            tenancy::series_locked(&txn, Acting::account(account_id), &book.series_id).await?;
        if from.archived {
            return Err(SchedulerError::SeriesArchived);
        }
    }
    if working(&txn, &book.id).await? {
        return Err(SchedulerError::BookWorking(
            "it stays in its place until its requests end",
        ));
    }
    let language_differs = |series_tag: &Option<String>, book_tag: &str| {
        series_tag
            .as_deref()
            .is_some_and(|tag| !same_language(tag, book_tag))
    };
    if language_differs(&target.source_language, &book.source_language)
        || language_differs(&target.target_language, &book.target_language)
    {
        return Err(SchedulerError::InvalidPlacement {
            reason: "languages",
        });
    }
    let others = project::Entity::find()
        .filter(project::Column::SeriesId.eq(target.id.as_str()))
        .filter(project::Column::Id.ne(book.id.as_str()))
        .all(&txn)
        .await?;
    if others.iter().any(|v| place.holds(v)) {
        return Err(SchedulerError::VolumeConflict(VolumeClash::PlaceTaken));
    }
    let (number, label) = match &place {
        Place::Number(n) => (Some(*n), None),
        Place::Label(l) => (None, Some(l.clone())),
    };
    let moved = book.series_id != target.id;
    if moved || book.volume_number != number || book.volume_label != label {
        let now = clock::now();
        let mut changes: project::ActiveModel = book.clone().into();
        changes.series_id = Set(target.id.clone());
        changes.volume_number = Set(number);
        changes.volume_label = Set(label);
        changes.updated_at = Set(now);
        changes.update(&txn).await?;
        if moved {
            // A request belongs to its book's series: listings, the series
            // queue and series actions find it there.
            request::Entity::update_many()
                .col_expr(request::Column::SeriesId, Expr::value(target.id.clone()))
                .filter(request::Column::ProjectId.eq(book.id.as_str()))
                .exec(&txn)
                .await?;
            for id in [&target.id, &book.series_id] {
                series::Entity::update_many()
                    .col_expr(series::Column::UpdatedAt, Expr::value(now))
                    .filter(series::Column::Id.eq(id.as_str()))
                    .exec(&txn)
                    .await?;
            }
        }
    }
    txn.commit().await?;
    listing::detail(db, account_id, &target.id).await
}

/// Deletes one of the account's series that holds no volume; answers its
/// id.
pub async fn delete(
    db: &DatabaseConnection,
    account_id: &str,
    series_id: &str,
) -> Result<String, SchedulerError> {
    let txn = begin_write(db).await?;
    let row = tenancy::series_locked(&txn, Acting::account(account_id), series_id).await?;
    let volumes = project::Entity::find()
        .filter(project::Column::SeriesId.eq(row.id.as_str()))
        .count(&txn)
        .await?;
    if volumes > 0 {
        return Err(SchedulerError::SeriesConflict {
            reason: "has_volumes",
        });
    }
    // The series' terms, identities and Bible lines cascade with the row.
    series::Entity::delete_by_id(row.id.clone())
        .exec(&txn)
        .await?;
    txn.commit().await?;
    Ok(row.id)
}

#[cfg(test)]
mod tests;
