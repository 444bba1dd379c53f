//! The series bundle (spec 4.8 `GET /api/v1/series/{id}/narrative-context`):
//! the Series Bible, the canonical identities with the book entities
//! linked to them, the series' relations and glossary, and its volumes in
//! reading order with their fingerprints.

use super::book::{self, bible, glossary, kind_rank, series_object};
use super::fingerprint::{Obj, fingerprint};
use super::load::{self, SeriesMemory};
use crate::error::MemoryResult;
use dragoman_model::documents::narrative::{
    Identity, IdentityLink, Relation, SCHEMA_VERSION, SeriesBundle, SeriesVolume,
};
use dragoman_model::entities::named::NamedThing;
use dragoman_model::entities::{project, series, series_entity};
use dragoman_model::reading_order as order;
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter};
use serde_json::Value;
use std::collections::HashMap;

/// An identity with the book entities linked to it, listed in the reading
/// order of their books.
fn identity(entity: &series_entity::Model, links: &[(usize, &str, &str)]) -> Identity {
    Identity {
        address: entity.address().map(str::to_owned),
        aliases: entity.aliases(),
        description: entity.description().to_owned(),
        first_book_id: entity.first_project_id.clone(),
        gender: entity.gender().map(str::to_owned),
        id: entity.id().to_owned(),
        kind: entity.kind(),
        links: links
            .iter()
            .map(|(_, book_id, entity_id)| IdentityLink {
                book_id: (*book_id).to_owned(),
                entity_id: (*entity_id).to_owned(),
            })
            .collect(),
        name: entity.name().to_owned(),
        origin: entity.origin(),
        target_name: entity.target_name().map(str::to_owned),
    }
}

/// The series bundle, with an empty `checksum` and no `generated_at` yet.
pub async fn bundle(
    db: &impl ConnectionTrait,
    series: series::Model,
) -> MemoryResult<SeriesBundle> {
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
    let identities: Vec<Identity> = identities
        .iter()
        .map(|entity| {
            identity(
                entity,
                links
                    .get(entity.id.as_str())
                    .map(Vec::as_slice)
                    .unwrap_or_default(),
            )
        })
        .collect();
    let bible = bible(&bible_lines);
    let glossary = glossary(&memory.in_force_for_series());
    // The memory records no relation between entities yet.
    let relations: Vec<Relation> = Vec::new();
    let revision = fingerprint(&Value::from(
        Obj::new()
            .with("bible", serde_json::to_value(&bible)?)
            .with("identities", serde_json::to_value(&identities)?)
            .with("relations", serde_json::to_value(&relations)?)
            .with("glossary", serde_json::to_value(&glossary)?),
    ));
    let volume_entries = volumes
        .iter()
        .map(|volume| {
            let view = book::build(volume, &memory)?;
            let v = &volume.volume;
            Ok(SeriesVolume {
                content_revision: view.content_revision,
                id: v.id.clone(),
                project_kind: v.project_kind,
                revision: view.revision,
                status: v.status,
                title: v.title.clone(),
                volume_label: v.volume_label.clone(),
                volume_number: v.volume_number,
            })
        })
        .collect::<MemoryResult<_>>()?;
    Ok(SeriesBundle {
        bible,
        checksum: String::new(),
        generated_at: 0,
        glossary,
        identities,
        relations,
        revision,
        schema_version: SCHEMA_VERSION,
        series: series_object(&memory),
        volumes: volume_entries,
    })
}
