//! Reading what the bundles are made of, each table once per call: the
//! memory of a series (its terms, its shared glossary's, its identities and
//! Bible) and the memory and text of some of its volumes, all of them with
//! `eq` or chunked `IN` queries, never one query per chapter or passage.
//! Nothing here writes.

use crate::domain::Extraction;
use crate::error::MemoryResult;
use crate::store::{self, CHUNK};
use dragoman_model::entities::{
    bible_line, chapter, glossary, narrative_entity, passage, passage_analysis, project, series,
    series_entity, term,
};
use dragoman_model::vocab::TermLayer;
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter};
use std::collections::HashMap;

/// The series a book belongs to and the terms it lends its volumes.
pub struct SeriesMemory {
    pub series: series::Model,
    /// The shared glossary the series follows, if any.
    pub shared: Option<glossary::Model>,
    pub series_terms: Vec<term::Model>,
    /// The shared glossary's terms (empty without one).
    pub shared_terms: Vec<term::Model>,
}

impl SeriesMemory {
    pub async fn load(db: &impl ConnectionTrait, series: series::Model) -> MemoryResult<Self> {
        let series_terms = term::Entity::find()
            .filter(term::Column::Layer.eq(TermLayer::Series))
            .filter(term::Column::SeriesId.eq(series.id.as_str()))
            .all(db)
            .await?;
        let shared = match &series.shared_glossary_id {
            Some(id) => glossary::Entity::find_by_id(id.clone()).one(db).await?,
            None => None,
        };
        let shared_terms = match &shared {
            Some(glossary) => {
                term::Entity::find()
                    .filter(term::Column::Layer.eq(TermLayer::Shared))
                    .filter(term::Column::GlossaryId.eq(glossary.id.as_str()))
                    .all(db)
                    .await?
            }
            None => Vec::new(),
        };
        Ok(SeriesMemory {
            series,
            shared,
            series_terms,
            shared_terms,
        })
    }

    /// The glossary in force for a volume, as `glossary::load_in_force`
    /// decides it, from terms already loaded.
    pub fn in_force_for(
        &self,
        volume: &project::Model,
        book_terms: &[term::Model],
    ) -> Vec<term::Model> {
        let mut candidates: Vec<term::Model> = book_terms.to_vec();
        candidates.extend(self.series_terms.iter().cloned());
        if self
            .shared
            .as_ref()
            .is_some_and(|g| crate::glossary::glossary_applies(g, volume))
        {
            candidates.extend(self.shared_terms.iter().cloned());
        }
        crate::glossary::in_force(&candidates)
    }

    /// The glossary in force at the level of the series: its terms and the
    /// shared glossary's, with the same precedence. A shared glossary
    /// naming a language applies when the series has that language (or
    /// names none on that side).
    pub fn in_force_for_series(&self) -> Vec<term::Model> {
        let mut candidates = self.series_terms.clone();
        let side = |named: &Option<String>, own: &Option<String>| {
            named
                .as_deref()
                .is_none_or(|l| own.as_deref().is_none_or(|o| o == l))
        };
        if self.shared.as_ref().is_some_and(|g| {
            side(&g.source_language, &self.series.source_language)
                && side(&g.target_language, &self.series.target_language)
        }) {
            candidates.extend(self.shared_terms.iter().cloned());
        }
        crate::glossary::in_force(&candidates)
    }
}

/// One volume's text and memory.
pub struct VolumeMemory {
    pub volume: project::Model,
    /// By position, then id.
    pub chapters: Vec<chapter::Model>,
    /// Reading order: chapter, then position, then id.
    pub passages: Vec<passage::Model>,
    /// The usable analyses, by passage (failed ones count as none).
    pub analyses: HashMap<String, Extraction>,
    pub entities: Vec<narrative_entity::Model>,
    /// The Book Bible.
    pub bible: Vec<bible_line::Model>,
    /// The volume's own terms (layer `book`).
    pub book_terms: Vec<term::Model>,
}

/// The rows of `E` whose `column` is one of `ids`.
async fn rows_in<E>(
    db: &impl ConnectionTrait,
    column: E::Column,
    ids: &[String],
) -> MemoryResult<Vec<E::Model>>
where
    E: EntityTrait,
{
    let mut rows = Vec::new();
    for chunk in ids.chunks(CHUNK) {
        rows.extend(
            E::find()
                .filter(column.is_in(chunk.iter().cloned()))
                .all(db)
                .await?,
        );
    }
    Ok(rows)
}

/// Groups rows by the volume they belong to.
fn by_volume<M>(rows: Vec<M>, key: impl Fn(&M) -> Option<&str>) -> HashMap<String, Vec<M>> {
    let mut grouped: HashMap<String, Vec<M>> = HashMap::new();
    for row in rows {
        if let Some(id) = key(&row).map(str::to_owned) {
            grouped.entry(id).or_default().push(row);
        }
    }
    grouped
}

/// The text and memory of `volumes`, in the order given.
pub async fn volumes(
    db: &impl ConnectionTrait,
    volumes: Vec<project::Model>,
) -> MemoryResult<Vec<VolumeMemory>> {
    let ids: Vec<String> = volumes.iter().map(|v| v.id.clone()).collect();
    let mut chapters = by_volume(
        rows_in::<chapter::Entity>(db, chapter::Column::ProjectId, &ids).await?,
        |c| Some(c.project_id.as_str()),
    );
    let mut passages = by_volume(
        rows_in::<passage::Entity>(db, passage::Column::ProjectId, &ids).await?,
        |p| Some(p.project_id.as_str()),
    );
    let mut analyses = by_volume(
        rows_in::<passage_analysis::Entity>(db, passage_analysis::Column::ProjectId, &ids).await?,
        |a| Some(a.project_id.as_str()),
    );
    let mut entities = by_volume(
        rows_in::<narrative_entity::Entity>(db, narrative_entity::Column::ProjectId, &ids).await?,
        |e| Some(e.project_id.as_str()),
    );
    let mut bible = by_volume(
        rows_in::<bible_line::Entity>(db, bible_line::Column::ProjectId, &ids).await?,
        |l| l.project_id.as_deref(),
    );
    let mut terms = by_volume(
        rows_in::<term::Entity>(db, term::Column::ProjectId, &ids)
            .await?
            .into_iter()
            .filter(|t| t.layer == TermLayer::Book)
            .collect(),
        |t| t.project_id.as_deref(),
    );
    let mut loaded = Vec::with_capacity(volumes.len());
    for volume in volumes {
        let mut volume_chapters = chapters.remove(&volume.id).unwrap_or_default();
        volume_chapters.sort_by(|a, b| (a.position, &a.id).cmp(&(b.position, &b.id)));
        let order: HashMap<&str, usize> = volume_chapters
            .iter()
            .enumerate()
            .map(|(i, c)| (c.id.as_str(), i))
            .collect();
        let mut volume_passages: Vec<(usize, passage::Model)> = passages
            .remove(&volume.id)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|p| order.get(p.chapter_id.as_str()).map(|i| (*i, p)))
            .collect();
        volume_passages
            .sort_by(|(ca, a), (cb, b)| (ca, a.position, &a.id).cmp(&(cb, b.position, &b.id)));
        // A stored analysis outlives its passage (`passage_analyses` has no
        // foreign key to it): keep only those of passages still there.
        let present: std::collections::HashSet<&str> =
            volume_passages.iter().map(|(_, p)| p.id.as_str()).collect();
        let volume_analyses: HashMap<String, Extraction> = analyses
            .remove(&volume.id)
            .unwrap_or_default()
            .into_iter()
            .filter(|row| !row.failed && present.contains(row.passage_id.as_str()))
            .map(|row| {
                let extraction = store::extraction_of(&row);
                (row.passage_id, extraction)
            })
            .collect();
        loaded.push(VolumeMemory {
            analyses: volume_analyses,
            passages: volume_passages.into_iter().map(|(_, p)| p).collect(),
            chapters: volume_chapters,
            entities: entities.remove(&volume.id).unwrap_or_default(),
            bible: bible.remove(&volume.id).unwrap_or_default(),
            book_terms: terms.remove(&volume.id).unwrap_or_default(),
            volume,
        });
    }
    Ok(loaded)
}

/// The series' canonical identities.
pub async fn identities(
    db: &impl ConnectionTrait,
    series_id: &str,
) -> MemoryResult<Vec<series_entity::Model>> {
    Ok(series_entity::Entity::find()
        .filter(series_entity::Column::SeriesId.eq(series_id))
        .all(db)
        .await?)
}

/// The Series Bible.
pub async fn series_bible(
    db: &impl ConnectionTrait,
    series_id: &str,
) -> MemoryResult<Vec<bible_line::Model>> {
    Ok(bible_line::Entity::find()
        .filter(bible_line::Column::SeriesId.eq(series_id))
        .all(db)
        .await?)
}
