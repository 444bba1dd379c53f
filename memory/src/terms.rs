//! A person's terms: decisions in a volume, a series or a shared glossary,
//! and the terms in force for a volume as callers read them.

use crate::domain::{TermInput, TermView};
use crate::error::{MemoryError, MemoryResult};
use crate::glossary;
use crate::normalize::{match_key, normalize_text};
use crate::store;
use dragoman_model::entities::{glossary as glossary_entity, project, series, term};
use dragoman_model::tenancy::{self, Acting, TermHome};
use dragoman_model::vocab::{Issue, IssueContext, IssueKind, Origin, TermLayer};
use dragoman_model::{clock, ids};
use sea_orm::{ActiveModelTrait, ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, Set};

/// Length bounds, in characters after trimming.
const SOURCE_MAX: usize = 200;
const TRANSLATION_MAX: usize = 500;
const CATEGORY_MAX: usize = 100;
const DESCRIPTION_MAX: usize = 4000;

/// The located problems of a term decision (never its values).
pub fn validate(input: &TermInput) -> Vec<Issue> {
    let mut issues = Vec::new();
    let mut length = |field: &str, text: &str, min: usize, max: usize| {
        let count = text.trim().chars().count();
        if count < min {
            issues.push(
                Issue::at("body", field, IssueKind::StringTooShort)
                    .with_ctx(IssueContext::new().min(min)),
            );
        } else if count > max {
            issues.push(
                Issue::at("body", field, IssueKind::StringTooLong)
                    .with_ctx(IssueContext::new().max(max)),
            );
        }
    };
    length("source", &input.source, 1, SOURCE_MAX);
    length("translation", &input.translation, 1, TRANSLATION_MAX);
    length("category", &input.category, 0, CATEGORY_MAX);
    length("description", &input.description, 0, DESCRIPTION_MAX);
    issues
}

/// Checks that the book, series or shared glossary the decision names
/// exists and, with `account`, that the account may reach it
/// ([`tenancy::term_home`]).
async fn check_home(
    db: &impl ConnectionTrait,
    layer: TermLayer,
    owner_id: &str,
    account: Option<&str>,
) -> MemoryResult<()> {
    if let Some(account) = account {
        let home = TermHome {
            layer,
            id: owner_id,
        };
        return Ok(tenancy::term_home(db, Acting::account(account), home).await?);
    }
    let exists = match layer {
        TermLayer::Book => project::Entity::find_by_id(owner_id.to_owned())
            .one(db)
            .await?
            .is_some(),
        TermLayer::Series => series::Entity::find_by_id(owner_id.to_owned())
            .one(db)
            .await?
            .is_some(),
        TermLayer::Shared => glossary_entity::Entity::find_by_id(owner_id.to_owned())
            .one(db)
            .await?
            .is_some(),
    };
    if exists {
        Ok(())
    } else {
        Err(match layer {
            TermLayer::Book => MemoryError::VolumeNotFound,
            TermLayer::Series => MemoryError::SeriesNotFound,
            TermLayer::Shared => MemoryError::GlossaryNotFound,
        })
    }
}

fn owner_column(layer: TermLayer) -> term::Column {
    match layer {
        TermLayer::Book => term::Column::ProjectId,
        TermLayer::Series => term::Column::SeriesId,
        TermLayer::Shared => term::Column::GlossaryId,
    }
}

/// A term decision's texts as they are stored: the source normalized with
/// its match key, the other texts trimmed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Normalized {
    pub source: String,
    pub source_key: String,
    pub translation: String,
    pub category: String,
    pub description: String,
}

/// The stored form of `input`'s texts.
pub(crate) fn normalized(input: &TermInput) -> Normalized {
    let source = normalize_text(&input.source);
    Normalized {
        source_key: match_key(&source),
        source,
        translation: input.translation.trim().to_owned(),
        category: input.category.trim().to_owned(),
        description: input.description.trim().to_owned(),
    }
}

/// `input` validated, in its stored form.
pub(crate) fn checked(input: &TermInput) -> MemoryResult<Normalized> {
    let issues = validate(input);
    if !issues.is_empty() {
        return Err(MemoryError::InvalidRequest(issues));
    }
    Ok(normalized(input))
}

/// The owner's term of the same source key, if it has one.
pub(crate) async fn held(
    db: &impl ConnectionTrait,
    layer: TermLayer,
    owner_id: &str,
    source_key: &str,
) -> MemoryResult<Option<term::Model>> {
    Ok(term::Entity::find()
        .filter(term::Column::Layer.eq(layer))
        .filter(owner_column(layer).eq(owner_id))
        .filter(term::Column::SourceKey.eq(source_key))
        .one(db)
        .await?)
}

/// Writes a person's decision: over `held` when given, else as a new term
/// of the owner `input` names.
pub(crate) async fn store(
    db: &impl ConnectionTrait,
    held: Option<term::Model>,
    input: &TermInput,
    values: Normalized,
) -> MemoryResult<TermView> {
    let now = clock::now();
    let exists = held.is_some();
    let mut model = match held {
        Some(held) => held.into(),
        None => term::ActiveModel {
            id: Set(ids::new_id()),
            layer: Set(input.layer),
            project_id: Set((input.layer == TermLayer::Book).then(|| input.owner_id.clone())),
            series_id: Set((input.layer == TermLayer::Series).then(|| input.owner_id.clone())),
            glossary_id: Set((input.layer == TermLayer::Shared).then(|| input.owner_id.clone())),
            proposed_by: Set(None),
            passage_id: Set(None),
            evidence: Set(None),
            occurrences: Set(0),
            created_at: Set(now),
            ..Default::default()
        },
    };
    model.source = Set(values.source);
    model.source_key = Set(values.source_key);
    model.translation = Set(values.translation);
    model.category = Set(values.category);
    model.description = Set(values.description);
    model.locked = Set(input.locked);
    model.accepted = Set(input.accepted);
    model.origin = Set(Origin::Human);
    model.updated_at = Set(now);
    let stored = if exists {
        model.update(db).await?
    } else {
        model.insert(db).await?
    };
    Ok(TermView::from(&stored))
}

/// Stores a person's term: a new one, or the owner's term of the same
/// source made a person's decision.
pub async fn put(
    db: &impl ConnectionTrait,
    account: Option<&str>,
    input: &TermInput,
) -> MemoryResult<TermView> {
    let values = checked(input)?;
    check_home(db, input.layer, &input.owner_id, account).await?;
    let found = held(db, input.layer, &input.owner_id, &values.source_key).await?;
    store(db, found, input, values).await
}

/// The terms in force for the volume, sorted by source.
pub async fn in_force(
    db: &impl ConnectionTrait,
    volume: &project::Model,
) -> MemoryResult<Vec<TermView>> {
    let series = store::series_of(db, volume).await?;
    Ok(glossary::load_in_force(db, volume, &series)
        .await?
        .iter()
        .map(TermView::from)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::MemoryBackend;
    use crate::error::MemoryError;
    use crate::testing::{self, Fixture};
    use serde_json::json;

    /// A locked name.
    fn decision(layer: TermLayer, owner: &str, source: &str, translation: &str) -> TermInput {
        TermInput {
            category: "name".into(),
            locked: true,
            ..testing::decision(layer, owner, source, translation)
        }
    }

    #[test]
    fn lengths_are_checked_after_trimming_and_located() {
        let mut input = decision(TermLayer::Book, "v", "   ", "x");
        input.translation = "é".repeat(501);
        input.category = "c".repeat(101);
        input.description = "d".repeat(4001);
        let issues = validate(&input);
        let found: Vec<(serde_json::Value, IssueKind)> = issues
            .iter()
            .map(|i| {
                (
                    serde_json::to_value(&i.loc).expect("a location serialises"),
                    i.kind,
                )
            })
            .collect();
        assert_eq!(
            found,
            vec![
                (json!(["body", "source"]), IssueKind::StringTooShort),
                (json!(["body", "translation"]), IssueKind::StringTooLong),
                (json!(["body", "category"]), IssueKind::StringTooLong),
                (json!(["body", "description"]), IssueKind::StringTooLong),
            ]
        );
        let ok = decision(TermLayer::Book, "v", &"s".repeat(200), &"t".repeat(500));
        assert!(validate(&ok).is_empty());
    }

    #[tokio::test]
    async fn a_decision_is_stored_once_per_owner_and_source() {
        let fx = Fixture::new().await;
        let series = fx.series("Saga").await;
        let volume = fx.volume(&series, 1).await;
        let first = fx
            .backend
            .put_term(
                None,
                &decision(TermLayer::Series, &series.id, "Dark  Lord", "Seigneur"),
            )
            .await
            .expect("put");
        assert_eq!(first.source, "Dark Lord");
        assert_eq!(first.origin, Origin::Human);
        assert_eq!(first.owner_id, series.id);
        let second = fx
            .backend
            .put_term(
                None,
                &decision(TermLayer::Series, &series.id, "dark lord", "Maître"),
            )
            .await
            .expect("put again");
        assert_eq!(second.id, first.id);
        assert_eq!(second.translation, "Maître");
        fx.backend
            .put_term(
                None,
                &decision(TermLayer::Book, &volume.id, "Apple", "pomme"),
            )
            .await
            .expect("book term");
        let in_force = fx
            .backend
            .terms_in_force(None, &volume.id)
            .await
            .expect("terms");
        let sources: Vec<&str> = in_force.iter().map(|t| t.source.as_str()).collect();
        assert_eq!(sources, vec!["Apple", "dark lord"]);
    }

    #[tokio::test]
    async fn owners_must_exist_and_belong_to_the_acting_account() {
        let fx = Fixture::new().await;
        let series = fx.series("Saga").await;
        let volume = fx.volume(&series, 1).await;
        let other = fx.add_account("other").await;
        let cases = [
            (TermLayer::Book, volume.id.as_str(), "volume_not_found"),
            (TermLayer::Series, series.id.as_str(), "series_not_found"),
            (TermLayer::Shared, "no-such-glossary", "glossary_not_found"),
        ];
        for (layer, owner, code) in cases {
            let refused = fx
                .backend
                .put_term(Some(&other), &decision(layer, owner, "a", "b"))
                .await
                .expect_err("another account's owner");
            let sent = dragoman_proto::api_status::ServiceError::from(refused);
            assert_eq!(sent.code.code(), code);
        }
        assert!(matches!(
            fx.backend
                .put_term(None, &decision(TermLayer::Series, "nope", "a", "b"))
                .await,
            Err(MemoryError::SeriesNotFound)
        ));
        assert!(matches!(
            fx.backend.terms_in_force(Some(&other), &volume.id).await,
            Err(MemoryError::VolumeNotFound)
        ));
        assert!(
            fx.backend
                .put_term(
                    Some(&fx.account),
                    &decision(TermLayer::Series, &series.id, "a", "b")
                )
                .await
                .is_ok()
        );
        assert!(matches!(
            fx.backend
                .put_term(None, &decision(TermLayer::Series, &series.id, "", "b"))
                .await,
            Err(MemoryError::InvalidRequest(issues)) if issues.len() == 1
        ));
    }
}
