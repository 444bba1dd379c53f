//! The books list (spec 4.8 `GET /api/v1/books`): the volumes of the
//! series an account owns, with their size and how much of them is
//! translated. Counts come from grouped `COUNT` queries, not from loading
//! passages.

use crate::error::MemoryResult;
use crate::store::CHUNK;
use dragoman_model::entities::{chapter, passage, project, series};
use dragoman_model::reading_order as order;
use dragoman_model::vocab::{InputKind, PassageStatus, ProjectKind, VolumeStatus};
use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QuerySelect};
use serde::Serialize;
use std::collections::HashMap;

/// One book of the list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BookSummary {
    pub id: String,
    pub title: String,
    pub series_id: String,
    pub series_name: String,
    pub volume_number: Option<i32>,
    pub volume_label: Option<String>,
    pub source_language: String,
    pub target_language: String,
    pub source_format: Option<InputKind>,
    pub project_kind: ProjectKind,
    pub status: VolumeStatus,
    /// Chapters of the book.
    pub chapters: i64,
    /// Passages of the book.
    pub passages: i64,
    /// Passages with a translation in force (stored, status `ok` or
    /// `check`): those delivered translated.
    pub translated: i64,
    pub created_at: i64,
    pub updated_at: i64,
}

/// Chapters per volume.
async fn count_chapters(
    db: &impl ConnectionTrait,
    ids: &[String],
) -> MemoryResult<HashMap<String, i64>> {
    let mut counts = HashMap::new();
    for chunk in ids.chunks(CHUNK) {
        let rows: Vec<(String, i64)> = chapter::Entity::find()
            .select_only()
            .column(chapter::Column::ProjectId)
            .column_as(Expr::col(chapter::Column::Id).count(), "n")
            .filter(chapter::Column::ProjectId.is_in(chunk.iter().cloned()))
            .group_by(chapter::Column::ProjectId)
            .into_tuple()
            .all(db)
            .await?;
        counts.extend(rows);
    }
    Ok(counts)
}

/// Passages per volume; with `translated`, only those with a translation
/// in force.
async fn count_passages(
    db: &impl ConnectionTrait,
    ids: &[String],
    translated: bool,
) -> MemoryResult<HashMap<String, i64>> {
    let mut counts = HashMap::new();
    for chunk in ids.chunks(CHUNK) {
        let mut query = passage::Entity::find()
            .select_only()
            .column(passage::Column::ProjectId)
            .column_as(Expr::col(passage::Column::Id).count(), "n")
            .filter(passage::Column::ProjectId.is_in(chunk.iter().cloned()));
        if translated {
            query = query
                .filter(passage::Column::Translation.is_not_null())
                .filter(passage::Column::Status.is_in(PassageStatus::USABLE));
        }
        let rows: Vec<(String, i64)> = query
            .group_by(passage::Column::ProjectId)
            .into_tuple()
            .all(db)
            .await?;
        counts.extend(rows);
    }
    Ok(counts)
}

/// The account's books, by series name, then reading order, then title.
pub async fn books(db: &impl ConnectionTrait, account_id: &str) -> MemoryResult<Vec<BookSummary>> {
    let owned: HashMap<String, String> = series::Entity::find()
        .filter(series::Column::AccountId.eq(account_id))
        .all(db)
        .await?
        .into_iter()
        .map(|s| (s.id, s.name))
        .collect();
    let series_ids: Vec<String> = owned.keys().cloned().collect();
    let mut volumes: Vec<project::Model> = Vec::new();
    for chunk in series_ids.chunks(CHUNK) {
        volumes.extend(
            project::Entity::find()
                .filter(project::Column::SeriesId.is_in(chunk.iter().cloned()))
                .all(db)
                .await?,
        );
    }
    let mut volumes: Vec<(String, project::Model)> = volumes
        .into_iter()
        .map(|v| (owned.get(&v.series_id).cloned().unwrap_or_default(), v))
        .collect();
    volumes.sort_by(|(name_a, a), (name_b, b)| {
        (name_a, &a.series_id)
            .cmp(&(name_b, &b.series_id))
            .then_with(|| order::compare_volumes(a, b))
    });
    let ids: Vec<String> = volumes.iter().map(|(_, v)| v.id.clone()).collect();
    let chapters = count_chapters(db, &ids).await?;
    let passages = count_passages(db, &ids, false).await?;
    let translated = count_passages(db, &ids, true).await?;
    let count = |counts: &HashMap<String, i64>, id: &str| counts.get(id).copied().unwrap_or(0);
    Ok(volumes
        .into_iter()
        .map(|(series_name, v)| BookSummary {
            series_name,
            chapters: count(&chapters, &v.id),
            passages: count(&passages, &v.id),
            translated: count(&translated, &v.id),
            id: v.id,
            title: v.title,
            series_id: v.series_id,
            volume_number: v.volume_number,
            volume_label: v.volume_label,
            source_language: v.source_language,
            target_language: v.target_language,
            source_format: v.source_format,
            project_kind: v.project_kind,
            status: v.status,
            created_at: v.created_at,
            updated_at: v.updated_at,
        })
        .collect())
}
