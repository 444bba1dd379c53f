//! Closing a volume: its memory enriches its series' so that the volumes
//! after it start from what it learnt.
//!
//! * Each book entity becomes, or is linked to, a canonical series
//!   identity of the same kind sharing a name or alias; aliases are
//!   unioned and empty fields filled (the series' values win).
//! * Each accepted book term whose source has no series term yet becomes a
//!   series term proposed by the volume (a person's stays a person's).
//! * Each Bible aspect the series has no line for takes the volume's.
//!
//! Closing twice changes nothing the second time.

use crate::domain::CloseOutcome;
use crate::entities::{
    aliases, aliases_json, book_keys, fill, fill_text, series_keys, share_a_key, union_aliases,
};
use crate::error::MemoryResult;
use dragoman_model::entities::{
    bible_line, narrative_entity, project, series, series_entity, term,
};
use dragoman_model::vocab::TermLayer;
use dragoman_model::{clock, ids};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, EntityTrait, IntoActiveModel, PaginatorTrait,
    QueryFilter, QueryOrder, Set,
};
use std::collections::HashSet;

/// Shares the volume's memory with its series. Run it in a transaction.
pub async fn close(
    db: &impl ConnectionTrait,
    volume: &project::Model,
    series: &series::Model,
) -> MemoryResult<CloseOutcome> {
    let now = clock::now();
    share_entities(db, volume, series, now).await?;
    share_terms(db, volume, series, now).await?;
    share_bible(db, volume, series, now).await?;
    let series_entities = series_entity::Entity::find()
        .filter(series_entity::Column::SeriesId.eq(series.id.as_str()))
        .count(db)
        .await?;
    let series_terms = term::Entity::find()
        .filter(term::Column::Layer.eq(TermLayer::Series))
        .filter(term::Column::SeriesId.eq(series.id.as_str()))
        .count(db)
        .await?;
    Ok(CloseOutcome {
        series_entities: usize::try_from(series_entities).unwrap_or(usize::MAX),
        series_terms: usize::try_from(series_terms).unwrap_or(usize::MAX),
    })
}

async fn share_entities(
    db: &impl ConnectionTrait,
    volume: &project::Model,
    series: &series::Model,
    now: i64,
) -> MemoryResult<()> {
    let entities = narrative_entity::Entity::find()
        .filter(narrative_entity::Column::ProjectId.eq(volume.id.as_str()))
        .order_by_asc(narrative_entity::Column::CreatedAt)
        .order_by_asc(narrative_entity::Column::Id)
        .all(db)
        .await?;
    let mut identities = series_entity::Entity::find()
        .filter(series_entity::Column::SeriesId.eq(series.id.as_str()))
        .order_by_asc(series_entity::Column::CreatedAt)
        .order_by_asc(series_entity::Column::Id)
        .all(db)
        .await?;
    // Identities whose row must be updated at the end (new ones are
    // inserted at once: the link points at them).
    let mut changed: HashSet<usize> = HashSet::new();
    for entity in entities {
        let keys = book_keys(&entity);
        let index = entity
            .series_entity_id
            .as_deref()
            .and_then(|id| identities.iter().position(|s| s.id == id))
            .or_else(|| {
                identities
                    .iter()
                    .position(|s| s.kind == entity.kind && share_a_key(&series_keys(s), &keys))
            });
        let index = match index {
            Some(index) => {
                if enrich(&mut identities[index], &entity) {
                    identities[index].updated_at = now;
                    changed.insert(index);
                }
                index
            }
            None => {
                let identity = series_entity::Model {
                    id: ids::new_id(),
                    series_id: series.id.clone(),
                    kind: entity.kind,
                    name: entity.name.clone(),
                    name_key: entity.name_key.clone(),
                    aliases: entity.aliases.clone(),
                    target_name: entity.target_name.clone(),
                    gender: entity.gender.clone(),
                    address: entity.address.clone(),
                    description: entity.description.clone(),
                    origin: entity.origin,
                    first_project_id: Some(volume.id.clone()),
                    created_at: now,
                    updated_at: now,
                };
                identities.push(identity.into_active_model().reset_all().insert(db).await?);
                identities.len() - 1
            }
        };
        let identity_id = identities[index].id.clone();
        if entity.series_entity_id.as_deref() != Some(identity_id.as_str()) {
            let mut link = entity.into_active_model();
            link.series_entity_id = Set(Some(identity_id));
            link.updated_at = Set(now);
            link.update(db).await?;
        }
    }
    let mut changed: Vec<usize> = changed.into_iter().collect();
    changed.sort_unstable();
    for index in changed {
        identities[index]
            .clone()
            .into_active_model()
            .reset_all()
            .update(db)
            .await?;
    }
    Ok(())
}

/// Unions the aliases of `entity` into `identity` and fills its empty
/// fields; `true` when something changed.
fn enrich(identity: &mut series_entity::Model, entity: &narrative_entity::Model) -> bool {
    let mut list = aliases(&identity.aliases);
    let book_aliases = aliases(&entity.aliases);
    let mut changed = union_aliases(
        &identity.name_key,
        &mut list,
        std::iter::once(&entity.name).chain(&book_aliases),
    );
    if changed {
        identity.aliases = aliases_json(&list);
    }
    changed |= fill(&mut identity.target_name, entity.target_name.as_deref());
    changed |= fill(&mut identity.gender, entity.gender.as_deref());
    changed |= fill(&mut identity.address, entity.address.as_deref());
    changed |= fill_text(&mut identity.description, &entity.description);
    changed
}

async fn share_terms(
    db: &impl ConnectionTrait,
    volume: &project::Model,
    series: &series::Model,
    now: i64,
) -> MemoryResult<()> {
    let book = term::Entity::find()
        .filter(term::Column::Layer.eq(TermLayer::Book))
        .filter(term::Column::ProjectId.eq(volume.id.as_str()))
        .filter(term::Column::Accepted.eq(true))
        .order_by_asc(term::Column::CreatedAt)
        .order_by_asc(term::Column::Id)
        .all(db)
        .await?;
    let mut known: HashSet<String> = term::Entity::find()
        .filter(term::Column::Layer.eq(TermLayer::Series))
        .filter(term::Column::SeriesId.eq(series.id.as_str()))
        .all(db)
        .await?
        .into_iter()
        .map(|t| t.source_key)
        .collect();
    for held in book {
        if !known.insert(held.source_key.clone()) {
            continue;
        }
        term::ActiveModel {
            id: Set(ids::new_id()),
            layer: Set(TermLayer::Series),
            project_id: Set(None),
            series_id: Set(Some(series.id.clone())),
            glossary_id: Set(None),
            source: Set(held.source),
            source_key: Set(held.source_key),
            translation: Set(held.translation),
            category: Set(held.category),
            description: Set(held.description),
            locked: Set(held.locked),
            accepted: Set(true),
            origin: Set(held.origin),
            proposed_by: Set(Some(volume.id.clone())),
            passage_id: Set(held.passage_id),
            evidence: Set(held.evidence),
            occurrences: Set(held.occurrences),
            created_at: Set(now),
            updated_at: Set(now),
        }
        .insert(db)
        .await?;
    }
    Ok(())
}

async fn share_bible(
    db: &impl ConnectionTrait,
    volume: &project::Model,
    series: &series::Model,
    now: i64,
) -> MemoryResult<()> {
    let covered: HashSet<_> = bible_line::Entity::find()
        .filter(bible_line::Column::SeriesId.eq(series.id.as_str()))
        .all(db)
        .await?
        .into_iter()
        .map(|l| l.aspect)
        .collect();
    let lines = bible_line::Entity::find()
        .filter(bible_line::Column::ProjectId.eq(volume.id.as_str()))
        .order_by_asc(bible_line::Column::CreatedAt)
        .order_by_asc(bible_line::Column::Id)
        .all(db)
        .await?;
    for line in lines.into_iter().filter(|l| !covered.contains(&l.aspect)) {
        bible_line::ActiveModel {
            id: Set(ids::new_id()),
            project_id: Set(None),
            series_id: Set(Some(series.id.clone())),
            aspect: Set(line.aspect),
            text: Set(line.text),
            origin: Set(line.origin),
            passage_id: Set(line.passage_id),
            evidence: Set(line.evidence),
            created_at: Set(now),
        }
        .insert(db)
        .await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::backend::MemoryBackend;
    use crate::domain::Extraction;
    use crate::testing::{Fixture, analysis, character, found, note, proposal};
    use dragoman_model::entities::{bible_line, narrative_entity, series_entity, term};
    use dragoman_model::vocab::{BibleAspect, Origin, Quality};
    use sea_orm::{EntityTrait, QueryOrder};

    /// Volume 1 met Alice (also Ally) and settled the Warpcore; volume 2
    /// has not been analysed.
    async fn closed_first_volume(fx: &Fixture) -> (String, String, Vec<String>) {
        let series = fx.series("Saga").await;
        let one = fx.volume(&series, 1).await;
        let (_, passages) = fx
            .chapter(
                &one,
                1,
                &[
                    "Alice (Ally) took the Warpcore.",
                    "Ally hid the Warpcore.",
                    "Rain.",
                ],
            )
            .await;
        let mut alice = character("Alice", &["Ally"], Some("Alicia"));
        alice.gender = Some("female".into());
        let analyses = vec![
            analysis(
                &passages[0],
                Extraction {
                    style: vec![note(BibleAspect::Tense, "past")],
                    ..found(
                        vec![alice],
                        vec![proposal("Warpcore", "cœur")],
                        "She takes it.",
                    )
                },
            ),
            analysis(
                &passages[1],
                found(
                    vec![character("Ally", &[], None)],
                    vec![proposal("Warpcore", "cœur"), proposal("Rain", "pluie")],
                    "She hides it.",
                ),
            ),
            analysis(&passages[2], found(vec![], vec![], "")),
        ];
        fx.backend
            .record_analysis(&one.id, &analyses, false, Quality::High)
            .await
            .expect("record");
        fx.backend
            .reconcile(&one.id, Quality::High)
            .await
            .expect("reconcile");
        let outcome = fx.backend.close_volume(&one.id).await.expect("close");
        assert_eq!(outcome.series_entities, 1);
        assert_eq!(outcome.series_terms, 1, "only the accepted term");
        let two = fx.volume(&series, 2).await;
        let (_, passages) = fx.chapter(&two, 1, &["Alice sealed the Warpcore."]).await;
        (one.id, two.id, passages.into_iter().map(|p| p.id).collect())
    }

    #[tokio::test]
    async fn the_next_volume_receives_the_characters_and_accepted_terms() {
        let fx = Fixture::new().await;
        let (one, two, passages) = closed_first_volume(&fx).await;
        let identities = series_entity::Entity::find()
            .all(&fx.db)
            .await
            .expect("identities");
        assert_eq!(identities[0].name, "Alice");
        assert_eq!(
            identities[0].first_project_id.as_deref(),
            Some(one.as_str())
        );
        assert_eq!(identities[0].origin, Origin::Analysis);
        let linked = narrative_entity::Entity::find()
            .all(&fx.db)
            .await
            .expect("entities");
        assert_eq!(
            linked[0].series_entity_id.as_deref(),
            Some(identities[0].id.as_str())
        );

        let expected = "Glossary:\n\
                        - Warpcore => cœur\n\
                        Characters:\n\
                        - Alice => Alicia; aliases: Ally; female\n\
                        Style:\n\
                        - tense: past";
        let context = fx
            .backend
            .build_context(&two, &passages)
            .await
            .expect("context");
        assert_eq!(context.text, expected);

        // Once volume 2 meets Alice, its own sheet shows the same.
        fx.backend
            .record_analysis(
                &two,
                &[crate::domain::PassageExtraction {
                    passage_id: passages[0].clone(),
                    extraction: found(vec![character("Alice", &[], Some("Alice"))], vec![], ""),
                    failed: false,
                }],
                true,
                Quality::Normal,
            )
            .await
            .expect("record");
        let context = fx
            .backend
            .build_context(&two, &passages)
            .await
            .expect("context");
        assert_eq!(context.text, expected);
    }

    #[tokio::test]
    async fn closing_twice_changes_nothing() {
        let fx = Fixture::new().await;
        let (one, _, _) = closed_first_volume(&fx).await;
        let snapshot = |fx: &Fixture| {
            let db = fx.db.clone();
            async move {
                (
                    series_entity::Entity::find()
                        .order_by_asc(series_entity::Column::Id)
                        .all(&db)
                        .await
                        .expect("identities"),
                    narrative_entity::Entity::find()
                        .order_by_asc(narrative_entity::Column::Id)
                        .all(&db)
                        .await
                        .expect("entities"),
                    term::Entity::find()
                        .order_by_asc(term::Column::Id)
                        .all(&db)
                        .await
                        .expect("terms"),
                    bible_line::Entity::find()
                        .order_by_asc(bible_line::Column::Id)
                        .all(&db)
                        .await
                        .expect("lines"),
                )
            }
        };
        let before = snapshot(&fx).await;
        assert_eq!(before.3.len(), 2, "the volume's line and the series' copy");
        let outcome = fx.backend.close_volume(&one).await.expect("close again");
        assert_eq!((outcome.series_entities, outcome.series_terms), (1, 1));
        assert_eq!(snapshot(&fx).await, before);
    }
}
