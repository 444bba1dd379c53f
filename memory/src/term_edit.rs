//! A person's terms as the tool protocol changes them: a new term in a book
//! or its series (refused when the place already has that source), a term
//! changed field by field, and a term deleted. The rules of a decision
//! (lengths, normalization) are [`crate::terms`]'s; this module adds who
//! may reach a term.
//!
//! A term is reachable when its book, series or shared glossary belongs to
//! the acting account; any other term answers exactly as an absent one
//! (`term_not_found`).

use crate::domain::{TermInput, TermView};
use crate::error::{MemoryError, MemoryResult};
use crate::{store, terms};
use dragoman_model::clock;
use dragoman_model::entities::term;
use dragoman_model::tenancy::{self, Acting};
use dragoman_model::vocab::{Issue, IssueKind, Origin, TermLayer};
use sea_orm::{ActiveModelTrait, DatabaseConnection, EntityTrait, Set};

/// A new term of a book (`layer` book) or of the book's series (`layer`
/// series); `input.owner_id` is ignored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewTerm {
    pub book_id: String,
    pub input: TermInput,
}

/// The fields an edit changes; `None` leaves a field as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TermChanges {
    pub source: Option<String>,
    pub translation: Option<String>,
    pub category: Option<String>,
    pub description: Option<String>,
    pub locked: Option<bool>,
}

impl TermChanges {
    fn is_empty(&self) -> bool {
        self == &TermChanges::default()
    }

    /// Whether the field an issue locates was given.
    fn gives(&self, field: &str) -> bool {
        match field {
            "source" => self.source.is_some(),
            "translation" => self.translation.is_some(),
            "category" => self.category.is_some(),
            "description" => self.description.is_some(),
            _ => false,
        }
    }
}

/// Adds a person's term to one of `account`'s books or to the book's
/// series. The place already holding a term of the same source (matched
/// as terms are) refuses with the existing term's id.
pub async fn add(db: &DatabaseConnection, account: &str, new: NewTerm) -> MemoryResult<TermView> {
    let mut input = new.input;
    let values = terms::checked(&input)?;
    let txn = dragoman_model::db::begin_write(db).await?;
    let volume = store::volume(&txn, &new.book_id, Some(account)).await?;
    input.owner_id = match input.layer {
        TermLayer::Book => volume.id,
        TermLayer::Series => volume.series_id,
        TermLayer::Shared => {
            return Err(MemoryError::InvalidRequest(vec![Issue::at(
                "body",
                "layer",
                IssueKind::Enum,
            )]));
        }
    };
    if let Some(existing) =
        terms::held(&txn, input.layer, &input.owner_id, &values.source_key).await?
    {
        return Err(MemoryError::TermExists {
            term_id: existing.id,
        });
    }
    let stored = terms::store(&txn, None, &input, values).await?;
    txn.commit().await?;
    Ok(stored)
}

/// Changes the given fields of one of `account`'s terms; the term becomes
/// a person's decision. Nothing given changes nothing. A new source that
/// another term of the same place already has refuses with that term's id.
pub async fn edit(
    db: &DatabaseConnection,
    account: &str,
    term_id: &str,
    changes: TermChanges,
) -> MemoryResult<TermView> {
    let txn = dragoman_model::db::begin_write(db).await?;
    let held = tenancy::term(&txn, Acting::account(account), term_id).await?;
    if changes.is_empty() {
        return Ok(TermView::from(&held));
    }
    let current = TermView::from(&held);
    let merged = TermInput {
        layer: held.layer,
        owner_id: current.owner_id.clone(),
        source: changes.source.clone().unwrap_or(current.source),
        translation: changes.translation.clone().unwrap_or(current.translation),
        category: changes.category.clone().unwrap_or(current.category),
        description: changes.description.clone().unwrap_or(current.description),
        locked: changes.locked.unwrap_or(held.locked),
        accepted: held.accepted,
    };
    // Only the fields given are judged: a stored value the caller left
    // alone is never the reason of a refusal.
    let issues: Vec<Issue> = terms::validate(&merged)
        .into_iter()
        .filter(|issue| {
            issue
                .loc
                .get(1)
                .and_then(dragoman_model::vocab::LocPart::as_str)
                .is_some_and(|field| changes.gives(field))
        })
        .collect();
    if !issues.is_empty() {
        return Err(MemoryError::InvalidRequest(issues));
    }
    let values = terms::normalized(&merged);
    let mut model: term::ActiveModel = held.clone().into();
    if changes.source.is_some() {
        if values.source_key != held.source_key
            && let Some(other) =
                terms::held(&txn, held.layer, &merged.owner_id, &values.source_key).await?
            && other.id != held.id
        {
            return Err(MemoryError::TermExists { term_id: other.id });
        }
        model.source = Set(values.source);
        model.source_key = Set(values.source_key);
    }
    if changes.translation.is_some() {
        model.translation = Set(values.translation);
    }
    if changes.category.is_some() {
        model.category = Set(values.category);
    }
    if changes.description.is_some() {
        model.description = Set(values.description);
    }
    if let Some(locked) = changes.locked {
        model.locked = Set(locked);
    }
    model.origin = Set(Origin::Human);
    model.updated_at = Set(clock::now());
    let stored = model.update(&txn).await?;
    txn.commit().await?;
    Ok(TermView::from(&stored))
}

/// Deletes one of `account`'s terms; answers its id.
pub async fn delete(db: &DatabaseConnection, account: &str, term_id: &str) -> MemoryResult<String> {
    let txn = dragoman_model::db::begin_write(db).await?;
    let held = tenancy::term(&txn, Acting::account(account), term_id).await?;
    term::Entity::delete_by_id(held.id.clone())
        .exec(&txn)
        .await?;
    txn.commit().await?;
    Ok(held.id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::MemoryBackend;
    use crate::testing::{Fixture, decision};
    use dragoman_model::entities::glossary as glossary_entity;

    fn new_term(book: &str, layer: TermLayer, source: &str, translation: &str) -> NewTerm {
        NewTerm {
            book_id: book.into(),
            input: TermInput {
                locked: true,
                ..decision(layer, "", source, translation)
            },
        }
    }

    #[tokio::test]
    async fn add_places_a_term_in_the_book_or_its_series_and_refuses_duplicates() {
        let fx = Fixture::new().await;
        let series = fx.series("Saga").await;
        let volume = fx.volume(&series, 1).await;
        let book = add(
            &fx.db,
            &fx.account,
            new_term(&volume.id, TermLayer::Book, "Dark  Lord", "Seigneur"),
        )
        .await
        .expect("book term");
        assert_eq!(
            (book.layer, book.owner_id.as_str(), book.source.as_str()),
            (TermLayer::Book, volume.id.as_str(), "Dark Lord")
        );
        assert!(book.locked && book.accepted);
        assert_eq!(book.origin, Origin::Human);
        let in_series = add(
            &fx.db,
            &fx.account,
            new_term(&volume.id, TermLayer::Series, "Dark Lord", "Maître"),
        )
        .await
        .expect("the same source in the series is another place");
        assert_eq!(in_series.owner_id, series.id);

        // The same source, matched as terms are, in the same place.
        let refused = add(
            &fx.db,
            &fx.account,
            new_term(&volume.id, TermLayer::Book, "dark lord", "Autre"),
        )
        .await
        .expect_err("duplicate");
        assert!(
            matches!(&refused, MemoryError::TermExists { term_id } if *term_id == book.id),
            "{refused:?}"
        );
        let kept = fx
            .backend
            .terms_in_force(None, &volume.id)
            .await
            .expect("terms");
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].translation, "Seigneur");

        // Validation is PutTerm's; a shared layer is not a place of a book.
        assert!(matches!(
            add(&fx.db, &fx.account, new_term(&volume.id, TermLayer::Book, " ", "x")).await,
            Err(MemoryError::InvalidRequest(issues)) if issues.len() == 1
        ));
        assert!(matches!(
            add(
                &fx.db,
                &fx.account,
                new_term(&volume.id, TermLayer::Shared, "a", "b")
            )
            .await,
            Err(MemoryError::InvalidRequest(_))
        ));
        let other = fx.add_account("other").await;
        assert!(matches!(
            add(
                &fx.db,
                &other,
                new_term(&volume.id, TermLayer::Book, "a", "b")
            )
            .await,
            Err(MemoryError::VolumeNotFound)
        ));
    }

    #[tokio::test]
    async fn edit_changes_only_the_fields_given() {
        let fx = Fixture::new().await;
        let volume = fx.volume(&fx.series("Saga").await, 1).await;
        let mut input = new_term(&volume.id, TermLayer::Book, "Dark Lord", "Seigneur");
        input.input.category = "title".into();
        input.input.description = "The enemy.".into();
        let held = add(&fx.db, &fx.account, input).await.expect("term");

        let edited = edit(
            &fx.db,
            &fx.account,
            &held.id,
            TermChanges {
                translation: Some("  Maître ".into()),
                locked: Some(false),
                ..TermChanges::default()
            },
        )
        .await
        .expect("edit");
        assert_eq!(
            edited,
            TermView {
                translation: "Maître".into(),
                locked: false,
                ..held.clone()
            }
        );

        // A given field is judged; a bad one refuses and changes nothing.
        let refused = edit(
            &fx.db,
            &fx.account,
            &held.id,
            TermChanges {
                source: Some("   ".into()),
                category: Some("ok".into()),
                ..TermChanges::default()
            },
        )
        .await
        .expect_err("blank source");
        assert!(
            matches!(&refused, MemoryError::InvalidRequest(issues)
                if issues.len() == 1 && issues[0].loc[1] == "source"),
            "{refused:?}"
        );
        let unchanged = edit(&fx.db, &fx.account, &held.id, TermChanges::default())
            .await
            .expect("nothing given");
        assert_eq!(unchanged, edited);

        // A new source is normalized; one another term holds is refused.
        let other = add(
            &fx.db,
            &fx.account,
            new_term(&volume.id, TermLayer::Book, "Sword", "épée"),
        )
        .await
        .expect("second term");
        let renamed = edit(
            &fx.db,
            &fx.account,
            &held.id,
            TermChanges {
                source: Some("Dark   Lady".into()),
                ..TermChanges::default()
            },
        )
        .await
        .expect("rename");
        assert_eq!(renamed.source, "Dark Lady");
        assert_eq!(renamed.category, "title");
        let clash = edit(
            &fx.db,
            &fx.account,
            &held.id,
            TermChanges {
                source: Some("SWORD".into()),
                ..TermChanges::default()
            },
        )
        .await
        .expect_err("taken");
        assert!(matches!(clash, MemoryError::TermExists { term_id } if term_id == other.id));
    }

    #[tokio::test]
    async fn foreign_and_absent_terms_are_refused_alike() {
        let fx = Fixture::new().await;
        let series = fx.series("Saga").await;
        let volume = fx.volume(&series, 1).await;
        let mine = add(
            &fx.db,
            &fx.account,
            new_term(&volume.id, TermLayer::Series, "Dark Lord", "Seigneur"),
        )
        .await
        .expect("term");
        let other = fx.add_account("other").await;
        let change = || TermChanges {
            translation: Some("Volé".into()),
            ..TermChanges::default()
        };
        for (account, id) in [(&other, mine.id.as_str()), (&fx.account, "no-such-term")] {
            assert!(matches!(
                edit(&fx.db, account, id, change()).await,
                Err(MemoryError::TermNotFound)
            ));
            assert!(matches!(
                delete(&fx.db, account, id).await,
                Err(MemoryError::TermNotFound)
            ));
        }

        // A shared glossary's term is reachable by the glossary's owner.
        let glossary = glossary_entity::ActiveModel {
            id: Set("g".into()),
            account_id: Set(fx.account.clone()),
            name: Set("Shared".into()),
            description: Set(String::new()),
            source_language: Set(None),
            target_language: Set(None),
            created_at: Set(0),
            updated_at: Set(0),
        }
        .insert(&fx.db)
        .await
        .expect("glossary");
        let shared = fx
            .backend
            .put_term(
                None,
                &decision(TermLayer::Shared, &glossary.id, "mana", "mana"),
            )
            .await
            .expect("shared term");
        assert!(matches!(
            edit(&fx.db, &other, &shared.id, change()).await,
            Err(MemoryError::TermNotFound)
        ));
        assert!(
            edit(&fx.db, &fx.account, &shared.id, change())
                .await
                .is_ok()
        );

        assert_eq!(
            delete(&fx.db, &fx.account, &mine.id).await.expect("delete"),
            mine.id
        );
        assert!(matches!(
            delete(&fx.db, &fx.account, &mine.id).await,
            Err(MemoryError::TermNotFound)
        ));
    }
}
