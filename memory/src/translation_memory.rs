//! The translation memory: a passage's key (its normalized text, the
//! language pair, and the terms in force that occur in it), and the
//! earlier translation of the same account under the same key.
//!
//! A term in force that occurs in the passage is part of the key, so a
//! glossary decision changed since an earlier translation gives another key
//! and the earlier translation is not recalled.

use crate::domain::PreparedPassage;
use crate::error::MemoryResult;
use crate::glossary;
use crate::normalize::{FingerprintTerm, Haystack, fingerprint, memory_key, normalize_text};
use crate::store::CHUNK;
use dragoman_model::entities::{passage, project, series, term};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QuerySelect, RelationTrait};

/// The key of one passage's text given the terms in force of its volume.
pub fn key_of(volume: &project::Model, in_force: &[term::Model], source: &str) -> String {
    let text = Haystack::new(source, false);
    let mut used: Vec<FingerprintTerm<'_>> = glossary::occurring(in_force, &text)
        .into_iter()
        .map(|t| FingerprintTerm {
            source_key: &t.source_key,
            translation: &t.translation,
            locked: t.locked,
        })
        .collect();
    memory_key(
        &volume.source_language,
        &volume.target_language,
        &normalize_text(source),
        &fingerprint(&mut used),
    )
}

/// The keys of the volume's passages `passage_ids` (others are skipped)
/// and what each may recall, in the order asked.
pub async fn prepare(
    db: &impl ConnectionTrait,
    volume: &project::Model,
    series: &series::Model,
    passage_ids: &[String],
) -> MemoryResult<Vec<PreparedPassage>> {
    let in_force = glossary::load_in_force(db, volume, series).await?;
    let mut passages = Vec::new();
    for chunk in passage_ids.chunks(CHUNK) {
        passages.extend(
            passage::Entity::find()
                .filter(passage::Column::Id.is_in(chunk.iter().cloned()))
                .filter(passage::Column::ProjectId.eq(volume.id.as_str()))
                .all(db)
                .await?,
        );
    }
    let mut prepared = Vec::new();
    for id in passage_ids {
        let Some(passage) = passages.iter().find(|p| &p.id == id) else {
            continue;
        };
        let key = key_of(volume, &in_force, &passage.source);
        let recalled = recall(db, &volume.account_id, &passage.id, &key).await?;
        prepared.push(PreparedPassage {
            passage_id: passage.id.clone(),
            memory_key: key,
            recalled,
        });
    }
    Ok(prepared)
}

/// The best earlier translation of the account under `key`, from another
/// passage: validated first, then a person's, then the most recent.
async fn recall(
    db: &impl ConnectionTrait,
    account_id: &str,
    passage_id: &str,
    key: &str,
) -> MemoryResult<Option<String>> {
    let mut found: Vec<passage::Model> = passage::Entity::find()
        .join(
            sea_orm::JoinType::InnerJoin,
            passage::Relation::Project.def(),
        )
        .filter(project::Column::AccountId.eq(account_id))
        .filter(passage::Column::MemoryKey.eq(key))
        .filter(passage::Column::Id.ne(passage_id))
        .filter(passage::Column::Translation.is_not_null())
        .all(db)
        .await?;
    found.retain(passage::Model::is_translated);
    found.sort_by(|a, b| {
        (b.validated, b.human, b.updated_at, &b.id).cmp(&(
            a.validated,
            a.human,
            a.updated_at,
            &a.id,
        ))
    });
    Ok(found.into_iter().next().and_then(|p| p.translation))
}

#[cfg(test)]
mod tests {
    use crate::backend::MemoryBackend;

    use crate::testing::{Fixture, decision};
    use dragoman_model::vocab::TermLayer;

    #[tokio::test]
    async fn recall_prefers_validated_and_never_crosses_accounts() {
        let fx = Fixture::new().await;
        let series = fx.series("Saga").await;
        let old = fx.volume(&series, 1).await;
        let (_, earlier) = fx
            .chapter(
                &old,
                1,
                &["The ship sailed.", "The ship sailed.", "The ship sailed."],
            )
            .await;
        let new = fx.volume(&series, 2).await;
        let (_, now) = fx.chapter(&new, 1, &["The  ship sailed."]).await;

        let key = fx
            .backend
            .prepare_translation(&new.id, std::slice::from_ref(&now[0].id))
            .await
            .expect("prepare")[0]
            .memory_key
            .clone();
        fx.translate(&earlier[0], "recent", &key, false, 300).await;
        fx.translate(&earlier[1], "validated", &key, true, 100)
            .await;
        fx.translate(&earlier[2], "other key", "another", true, 400)
            .await;
        let prepared = fx
            .backend
            .prepare_translation(&new.id, std::slice::from_ref(&now[0].id))
            .await
            .expect("prepare");
        assert_eq!(prepared[0].recalled.as_deref(), Some("validated"));

        // The same text of another account has the same key but recalls nothing.
        let other = fx.add_account("other").await;
        let theirs = fx.volume(&fx.series_of(&other, "Theirs").await, 1).await;
        let (_, their) = fx.chapter(&theirs, 1, &["The ship sailed."]).await;
        let prepared = fx
            .backend
            .prepare_translation(&theirs.id, std::slice::from_ref(&their[0].id))
            .await
            .expect("prepare");
        assert_eq!(prepared[0].memory_key, key);
        assert_eq!(prepared[0].recalled, None);

        // A passage never recalls itself.
        fx.translate(&now[0], "itself", &key, true, 500).await;
        let prepared = fx
            .backend
            .prepare_translation(&new.id, std::slice::from_ref(&now[0].id))
            .await
            .expect("prepare");
        assert_eq!(prepared[0].recalled.as_deref(), Some("validated"));
    }

    async fn key(fx: &Fixture, volume: &str, ids: &[String]) -> String {
        fx.backend
            .prepare_translation(volume, ids)
            .await
            .expect("prepare")[0]
            .memory_key
            .clone()
    }

    #[tokio::test]
    async fn the_key_changes_with_the_terms_in_force_that_occur() {
        let fx = Fixture::new().await;
        let series = fx.series("Saga").await;
        let volume = fx.volume(&series, 1).await;
        let (_, passages) = fx.chapter(&volume, 1, &["The ship sailed."]).await;
        let ids = vec![passages[0].id.clone()];
        let plain = key(&fx, &volume.id, &ids).await;
        // A term that does not occur leaves the key alone.
        fx.backend
            .put_term(
                None,
                &decision(TermLayer::Series, &series.id, "harbour", "port"),
            )
            .await
            .expect("term");
        assert_eq!(key(&fx, &volume.id, &ids).await, plain);
        // One that occurs changes it, and so does a new translation of it.
        fx.backend
            .put_term(
                None,
                &decision(TermLayer::Series, &series.id, "ship", "navire"),
            )
            .await
            .expect("term");
        let with_ship = key(&fx, &volume.id, &ids).await;
        assert_ne!(with_ship, plain);
        fx.backend
            .put_term(
                None,
                &decision(TermLayer::Book, &volume.id, "Ship", "bateau"),
            )
            .await
            .expect("override");
        let overridden = key(&fx, &volume.id, &ids).await;
        assert_ne!(overridden, with_ship);
        assert_ne!(overridden, plain);
    }
}
