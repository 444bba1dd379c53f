//! Loaders every operation shares: a volume checked against the acting
//! account, its series, its passages in reading order, and stored
//! analyses. Generic over the connection so they run inside a transaction.

use crate::domain::Extraction;
use crate::error::{MemoryError, MemoryResult};
use dragoman_model::entities::{chapter, passage, passage_analysis, project, series};
use dragoman_model::tenancy::{self, Acting};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder};
use std::collections::HashMap;

/// Ids per `IN (…)` list: far below every backend's bound on parameters.
pub const CHUNK: usize = 500;

/// The volume `project_id`; with `account`, only when that account may
/// reach it ([`tenancy::book`]: another's answers the same as an absent one).
pub async fn volume(
    db: &impl ConnectionTrait,
    project_id: &str,
    account: Option<&str>,
) -> MemoryResult<project::Model> {
    if let Some(account) = account {
        return Ok(tenancy::book(db, Acting::account(account), project_id).await?);
    }
    project::Entity::find_by_id(project_id.to_owned())
        .one(db)
        .await?
        .ok_or(MemoryError::VolumeNotFound)
}

/// The series of a volume.
pub async fn series_of(
    db: &impl ConnectionTrait,
    volume: &project::Model,
) -> MemoryResult<series::Model> {
    series::Entity::find_by_id(volume.series_id.clone())
        .one(db)
        .await?
        .ok_or(MemoryError::SeriesNotFound)
}

/// The passages of the volume in reading order (chapter position, then
/// passage position); with `chapters`, only those of these chapters.
pub async fn reading_order(
    db: &impl ConnectionTrait,
    project_id: &str,
    chapters: Option<&[String]>,
) -> MemoryResult<Vec<passage::Model>> {
    let mut query = chapter::Entity::find().filter(chapter::Column::ProjectId.eq(project_id));
    if let Some(ids) = chapters {
        query = query.filter(chapter::Column::Id.is_in(ids.iter().cloned()));
    }
    let chapters = query
        .order_by_asc(chapter::Column::Position)
        .order_by_asc(chapter::Column::Id)
        .all(db)
        .await?;
    let order: HashMap<String, usize> = chapters
        .iter()
        .enumerate()
        .map(|(i, c)| (c.id.clone(), i))
        .collect();
    let mut passages = Vec::new();
    for ids in chapters.chunks(CHUNK) {
        passages.extend(
            passage::Entity::find()
                .filter(passage::Column::ChapterId.is_in(ids.iter().map(|c| c.id.clone())))
                .all(db)
                .await?,
        );
    }
    passages.sort_by(|a, b| {
        let ca = order.get(&a.chapter_id).copied().unwrap_or(usize::MAX);
        let cb = order.get(&b.chapter_id).copied().unwrap_or(usize::MAX);
        (ca, a.position, &a.id).cmp(&(cb, b.position, &b.id))
    });
    Ok(passages)
}

/// The stored analyses of a volume, by passage.
pub async fn analyses_of(
    db: &impl ConnectionTrait,
    project_id: &str,
) -> MemoryResult<HashMap<String, passage_analysis::Model>> {
    Ok(passage_analysis::Entity::find()
        .filter(passage_analysis::Column::ProjectId.eq(project_id))
        .all(db)
        .await?
        .into_iter()
        .map(|row| (row.passage_id.clone(), row))
        .collect())
}

/// The stored analyses of some passages, by passage.
pub async fn analyses_of_passages(
    db: &impl ConnectionTrait,
    passage_ids: &[String],
) -> MemoryResult<HashMap<String, passage_analysis::Model>> {
    let mut found = HashMap::new();
    for ids in passage_ids.chunks(CHUNK) {
        for row in passage_analysis::Entity::find()
            .filter(passage_analysis::Column::PassageId.is_in(ids.iter().cloned()))
            .all(db)
            .await?
        {
            found.insert(row.passage_id.clone(), row);
        }
    }
    Ok(found)
}

/// The extraction a stored analysis holds; a row that no longer parses
/// counts as an empty analysis rather than stopping the volume.
pub fn extraction_of(row: &passage_analysis::Model) -> Extraction {
    if row.failed {
        return Extraction::default();
    }
    serde_json::from_value(row.extraction.clone()).unwrap_or_else(|error| {
        tracing::warn!(passage = %row.passage_id, %error, "a stored analysis does not parse; ignored");
        Extraction::default()
    })
}
