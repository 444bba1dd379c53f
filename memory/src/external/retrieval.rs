//! Retrieval for translation context: the earlier passages (with their
//! translations) and the entities nearest to each batch.
//!
//! One query text per batch: its passages' sources in reading order, cut
//! to [`QUERY_CHARS`] characters (a batch of the pipeline is a few
//! paragraphs; one embedding per batch keeps a call for 200 batches to one
//! embeddings request and two Chroma queries, which is what lets it fit in
//! the hybrid deadline). Both queries are limited to the volume's series
//! (`series_id`: every volume of the series and the series' own memory), so
//! one book never sees another account's or series' text.
//!
//! * Passages: the [`SIMILAR_PASSAGES`] nearest translated passages within
//!   [`MAX_PASSAGE_DISTANCE`] (cosine), the batch's own passages left out
//!   (a retranslated passage must not be shown its old self), a validated
//!   one first among equally near ones.
//! * Entities: of the [`ENTITY_CANDIDATES`] nearest book and series
//!   entities, those whose name or an alias occurs in the batch (with its
//!   case, on word boundaries, as the database's context matches them:
//!   "characters by alias"), then those nearer than
//!   [`MAX_ENTITY_DISTANCE`], at most [`ENTITIES`]; one per name.
//!
//! The deadlines and the fallback to the database are the context
//! builder's (`crate::backend`); this module only asks.

use super::ExternalMemory;
use super::chroma::Where;
use super::items::ItemKind;
use crate::error::{MemoryError, MemoryResult};
use crate::normalize::{Haystack, match_key, normalize_text};
use dragoman_model::entities::{passage, project};
use dragoman_model::vocab::EntityKind;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};

/// Characters of a batch's text embedded as its query.
pub const QUERY_CHARS: usize = 4000;

/// Earlier passages given to one batch at most.
pub const SIMILAR_PASSAGES: usize = 3;

/// Cosine distance beyond which a passage is not "similar" (cosine
/// similarity below 0.4: unrelated prose of the same book sits around
/// 0.1–0.3 with common embedding models and the simulator alike).
pub const MAX_PASSAGE_DISTANCE: f32 = 0.6;

/// Entities asked of Chroma per batch, before the checks below.
pub const ENTITY_CANDIDATES: usize = 12;

/// Entities given to one batch at most.
pub const ENTITIES: usize = 6;

/// Cosine distance within which an entity counts as near the batch even
/// when none of its names occurs in it.
pub const MAX_ENTITY_DISTANCE: f32 = 0.5;

/// An earlier passage like one of the batch's, with its translation.
#[derive(Debug, Clone, PartialEq)]
pub struct SimilarPassage {
    pub source: String,
    pub translation: String,
    pub validated: bool,
    pub distance: f32,
}

/// An entity named or described near the batch's text.
#[derive(Debug, Clone, PartialEq)]
pub struct EntityHit {
    pub name: String,
    pub target_name: Option<String>,
    pub aliases: Vec<String>,
    pub description: String,
    pub distance: f32,
    /// `None` when the mirror holds a kind this version does not know.
    pub kind: Option<EntityKind>,
}

/// What Chroma gives one batch.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Retrieved {
    pub passages: Vec<SimilarPassage>,
    pub entities: Vec<EntityHit>,
}

/// A string field of a hit's metadata, empty when absent.
fn text(metadata: &Map<String, Value>, key: &str) -> String {
    metadata
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// `text` cut to at most `max` characters, on a character boundary.
fn cut(text: &str, max: usize) -> &str {
    match text.char_indices().nth(max) {
        Some((at, _)) => &text[..at],
        None => text,
    }
}

/// The similar passage of a passage hit; `None` without a translation
/// (only translated passages are mirrored, but a mirror is not trusted).
fn similar_passage(hit: super::chroma::Hit) -> Option<SimilarPassage> {
    let translation = text(&hit.metadata, "translation");
    let source = hit.document.unwrap_or_default();
    if translation.trim().is_empty() || source.trim().is_empty() {
        return None;
    }
    Some(SimilarPassage {
        source,
        translation,
        validated: hit
            .metadata
            .get("validated")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        distance: hit.distance,
    })
}

/// The entity of an entity hit; `None` without a name.
fn entity_hit(hit: &super::chroma::Hit) -> Option<EntityHit> {
    let name = text(&hit.metadata, "name");
    if name.trim().is_empty() {
        return None;
    }
    let target = text(&hit.metadata, "target_name");
    Some(EntityHit {
        name,
        target_name: (!target.trim().is_empty()).then_some(target),
        aliases: text(&hit.metadata, "aliases")
            .split(" | ")
            .map(str::trim)
            .filter(|a| !a.is_empty())
            .map(str::to_owned)
            .collect(),
        description: text(&hit.metadata, "description"),
        distance: hit.distance,
        kind: text(&hit.metadata, "entity_kind").parse().ok(),
    })
}

/// The passages to show one batch, from its hits (nearest first).
fn pick_passages(hits: Vec<super::chroma::Hit>, own: &HashSet<String>) -> Vec<SimilarPassage> {
    let mut seen = HashSet::new();
    let mut picked: Vec<SimilarPassage> = hits
        .into_iter()
        .filter(|hit| !own.contains(&hit.id) && hit.distance <= MAX_PASSAGE_DISTANCE)
        .filter_map(similar_passage)
        // The same text mirrored twice (a repeated sentence) is shown once.
        .filter(|p| seen.insert(normalize_text(&p.source)))
        .collect();
    // Validated first among equally near ones: the distance rounded to
    // 0.01 decides, then validation, then the exact distance.
    picked.sort_by(|a, b| {
        let rank = |p: &SimilarPassage| ((p.distance * 100.0).round() as i64, !p.validated);
        rank(a)
            .cmp(&rank(b))
            .then(a.distance.total_cmp(&b.distance))
    });
    picked.truncate(SIMILAR_PASSAGES);
    picked
}

/// The entities to show one batch whose text is `batch`, from its hits.
fn pick_entities(hits: &[super::chroma::Hit], batch: &Haystack) -> Vec<EntityHit> {
    let candidates: Vec<EntityHit> = hits.iter().filter_map(entity_hit).collect();
    let named = |e: &EntityHit| {
        std::iter::once(&e.name)
            .chain(&e.aliases)
            .any(|n| batch.contains(n))
    };
    let mut seen = HashSet::new();
    let (mut picked, near): (Vec<EntityHit>, Vec<EntityHit>) =
        candidates.into_iter().partition(|e| named(e));
    picked.extend(
        near.into_iter()
            .filter(|e| e.distance <= MAX_ENTITY_DISTANCE),
    );
    // One per name: a volume's entity and its series identity often share
    // it; the nearer (first) one stays.
    picked.retain(|e| seen.insert(match_key(&e.name)));
    picked.truncate(ENTITIES);
    picked
}

impl ExternalMemory {
    /// One answer per batch (the batch's passage ids, in reading order),
    /// from the volume's and its series' mirrors.
    pub async fn retrieve(
        &self,
        project_id: &str,
        batches: &[Vec<String>],
    ) -> MemoryResult<Vec<Retrieved>> {
        let volume = project::Entity::find_by_id(project_id)
            .one(&self.db)
            .await?
            .ok_or(MemoryError::VolumeNotFound)?;
        let wanted: Vec<&String> = batches.iter().flatten().collect();
        let sources: HashMap<String, String> = if wanted.is_empty() {
            HashMap::new()
        } else {
            passage::Entity::find()
                .filter(passage::Column::ProjectId.eq(volume.id.as_str()))
                .filter(passage::Column::Id.is_in(wanted.iter().map(|id| id.as_str())))
                .all(&self.db)
                .await?
                .into_iter()
                .map(|p| (p.id, p.source))
                .collect()
        };
        // The batches with text to look for; the others get nothing.
        let mut asked: Vec<usize> = Vec::new();
        let mut queries: Vec<String> = Vec::new();
        for (index, ids) in batches.iter().enumerate() {
            let joined = ids
                .iter()
                .filter_map(|id| sources.get(id).map(String::as_str))
                .collect::<Vec<_>>()
                .join("\n");
            let query = cut(joined.trim(), QUERY_CHARS);
            if !query.is_empty() {
                asked.push(index);
                queries.push(query.to_owned());
            }
        }
        let mut answers = vec![Retrieved::default(); batches.len()];
        if queries.is_empty() {
            return Ok(answers);
        }
        let model = self.embedder.model().await?;
        let Some(collection) = self.store.existing_collection(&model).await? else {
            // Nothing was ever mirrored under this model (a new
            // installation or a reindex under way): nothing to give, which
            // the external memory did answer.
            return Ok(answers);
        };
        let embeddings = self.embedder.embed(&queries).await?;
        let series_filter = |kinds: Vec<&'static str>| {
            Where::and(vec![
                Where::series(volume.series_id.as_str()),
                Where::kind_in(kinds),
            ])
        };
        let longest = asked.iter().map(|&i| batches[i].len()).max().unwrap_or(0);
        // Each batch may find its own passages (retranslations): asked for
        // that many more, then left out.
        let passage_hits = collection
            .query(
                embeddings.clone(),
                SIMILAR_PASSAGES + longest,
                Some(&series_filter(vec![ItemKind::Passage.as_str()])),
            )
            .await?;
        let entity_hits = collection
            .query(
                embeddings,
                ENTITY_CANDIDATES,
                Some(&series_filter(vec![
                    ItemKind::Entity.as_str(),
                    ItemKind::SeriesEntity.as_str(),
                ])),
            )
            .await?;
        for ((&index, passages), entities) in asked.iter().zip(passage_hits).zip(entity_hits) {
            let own: HashSet<String> = batches[index]
                .iter()
                .map(|id| ItemKind::Passage.item_id(id))
                .collect();
            let text = Haystack::of_all(
                batches[index]
                    .iter()
                    .filter_map(|id| sources.get(id).map(String::as_str)),
                true,
            );
            answers[index] = Retrieved {
                passages: pick_passages(passages, &own),
                entities: pick_entities(&entities, &text),
            };
        }
        Ok(answers)
    }
}

#[cfg(test)]
mod tests {
    use super::super::chroma::Hit;
    use super::*;
    use serde_json::json;

    fn hit(id: &str, distance: f32, document: &str, metadata: Value) -> Hit {
        Hit {
            id: id.to_owned(),
            distance,
            document: Some(document.to_owned()),
            metadata: metadata.as_object().cloned().unwrap_or_default(),
        }
    }

    #[test]
    fn passages_leave_out_the_batch_the_far_and_the_untranslated() {
        let own = HashSet::from(["passage:self".to_owned()]);
        let hits = vec![
            hit(
                "passage:self",
                0.0,
                "Same.",
                json!({"translation": "Même."}),
            ),
            hit(
                "passage:a",
                0.10,
                "A.",
                json!({"translation": "Aa.", "validated": false}),
            ),
            hit(
                "passage:b",
                0.102,
                "B.",
                json!({"translation": "Bb.", "validated": true}),
            ),
            hit("passage:c", 0.3, "C.", json!({"translation": ""})),
            hit("passage:d", 0.4, "A.", json!({"translation": "Aa again."})),
            hit("passage:e", 0.5, "E.", json!({"translation": "Ee."})),
            hit("passage:f", 0.55, "F.", json!({"translation": "Ff."})),
            hit("passage:g", 0.9, "G.", json!({"translation": "Gg."})),
        ];
        let picked = pick_passages(hits, &own);
        let sources: Vec<&str> = picked.iter().map(|p| p.source.as_str()).collect();
        // B (validated) before A at the same rounded distance; the repeat
        // of A, the untranslated C and the far G are left out.
        assert_eq!(sources, ["B.", "A.", "E."]);
        assert!(picked[0].validated);
        assert_eq!(picked[1].translation, "Aa.");
    }

    #[test]
    fn entities_named_in_the_batch_come_first_then_the_near_ones() {
        let entity = |name: &str, aliases: &str, distance: f32| {
            hit(
                &format!("entity:{name}"),
                distance,
                name,
                json!({"name": name, "aliases": aliases, "target_name": "",
                       "entity_kind": "character", "description": "d"}),
            )
        };
        let hits = vec![
            entity("Morgana", "", 0.2),
            entity("Alice", "Ally", 0.8),
            entity("Bob", "", 0.9),
            entity("Alice", "", 0.85),
            hit("entity:x", 0.1, "x", json!({"name": ""})),
        ];
        let batch = Haystack::of_all(["Ally ran to the bob of the boat."], true);
        let picked = pick_entities(&hits, &batch);
        let names: Vec<&str> = picked.iter().map(|e| e.name.as_str()).collect();
        // Alice by her alias (once), Morgana by distance; "bob" is not Bob.
        assert_eq!(names, ["Alice", "Morgana"]);
        assert_eq!(picked[0].aliases, ["Ally"]);
        assert_eq!(picked[0].target_name, None);
        assert_eq!(picked[0].kind, Some(EntityKind::Character));
    }

    #[test]
    fn queries_are_cut_on_character_boundaries() {
        assert_eq!(cut("ééé", 2), "éé");
        assert_eq!(cut("ab", 5), "ab");
    }
}
