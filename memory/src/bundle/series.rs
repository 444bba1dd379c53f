//! The series bundle (spec 4.8 `GET /api/v1/series/{id}/narrative-context`):
//! the Series Bible, the canonical identities with the book entities
//! linked to them, the series' relations and glossary, and its volumes in
//! reading order with their fingerprints.

use super::book::{self, bible, glossary, kind_rank, series_object};
use super::fingerprint::{Obj, fingerprint, list};
use super::load::{self, SeriesMemory};
use crate::error::MemoryResult;
use dragoman_model::entities::{project, series, series_entity};
use dragoman_model::reading_order as order;
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter};
use serde_json::Value;
use std::collections::HashMap;

/// An identity with the book entities linked to it, listed in the reading
/// order of their books.
fn identity(entity: &series_entity::Model, links: &[(usize, &str, &str)]) -> Obj {
    book::described(entity)
        .with("first_book_id", entity.first_project_id.clone())
        .with(
            "links",
            list(links.iter().map(|(_, book_id, entity_id)| {
                Obj::new()
                    .with("book_id", *book_id)
                    .with("entity_id", *entity_id)
            })),
        )
}

/// The body of the series bundle, without `generated_at` and `checksum`.
pub async fn body(db: &impl ConnectionTrait, series: series::Model) -> MemoryResult<Obj> {
    let mut volumes = project::Entity::find()
        .filter(project::Column::SeriesId.eq(series.id.as_str()))
        .all(db)
        .await?;
    volumes.sort_by(order::compare_volumes);
    let memory = SeriesMemory::load(db, series).await?;
    let mut identities = load::identities(db, &memory.series.id).await?;
    let bible_lines = load::series_bible(db, &memory.series.id).await?;
    let volumes = load::volumes(db, volumes).await?;

    // Identity id -> (reading rank of the book, book id, entity id).
    let mut links: HashMap<&str, Vec<(usize, &str, &str)>> = HashMap::new();
    for (rank, volume) in volumes.iter().enumerate() {
        for entity in &volume.entities {
            if let Some(identity) = entity.series_entity_id.as_deref() {
                links.entry(identity).or_default().push((
                    rank,
                    volume.volume.id.as_str(),
                    entity.id.as_str(),
                ));
            }
        }
    }
    for held in links.values_mut() {
        held.sort();
    }
    identities.sort_by(|a, b| {
        (kind_rank(a.kind), &a.name_key, &a.id).cmp(&(kind_rank(b.kind), &b.name_key, &b.id))
    });
    let identities = list(identities.iter().map(|entity| {
        identity(
            entity,
            links
                .get(entity.id.as_str())
                .map(Vec::as_slice)
                .unwrap_or_default(),
        )
    }));
    let bible = bible(&bible_lines);
    let glossary = glossary(&memory.in_force_for_series());
    // The memory records no relation between entities yet.
    let relations = list(Vec::<Value>::new());
    let revision = fingerprint(&Value::from(
        Obj::new()
            .with("bible", bible.clone())
            .with("identities", identities.clone())
            .with("relations", relations.clone())
            .with("glossary", glossary.clone()),
    ));
    let volume_entries = list(volumes.iter().map(|volume| {
        let view = book::build(volume, &memory);
        let v = &volume.volume;
        Obj::new()
            .with("id", v.id.as_str())
            .with("title", v.title.as_str())
            .with("volume_number", v.volume_number)
            .with("volume_label", v.volume_label.clone())
            .with("project_kind", v.project_kind.as_str())
            .with("status", v.status.as_str())
            .with("revision", view.revision)
            .with("content_revision", view.content_revision)
    }));
    Ok(Obj::new()
        .with("schema_version", super::SCHEMA_VERSION)
        .with("revision", revision)
        .with("series", series_object(&memory))
        .with("bible", bible)
        .with("identities", identities)
        .with("relations", relations)
        .with("glossary", glossary)
        .with("volumes", volume_entries))
}
