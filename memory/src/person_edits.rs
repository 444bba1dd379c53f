//! A person's edit of a passage: a translation they wrote, a validation
//! given or withdrawn, on the version of the passage they read.
//!
//! * Who: the owner of the book, or an administrator
//!   ([`tenancy::administered_book`]); a passage outside the book answers as an
//!   absent one. A shelved book's translations are not changed.
//! * The version read must still be the stored one
//!   ([`passages::version_of`]), else nothing is written and the current
//!   version is answered (`conflict`).
//! * A translation must keep the passage's placeholders, each once; the
//!   refusal names those lost and those the source does not have. It
//!   comes with the pipeline's assessment (the checks of every
//!   translation), whose score, signals and status the passage takes; it
//!   marks the passage `human` and gets a history version.
//! * Validating needs a translation to validate: a passage without a
//!   usable one answers `conflict`.
//! * The translation memory: a translation written or validated is stored
//!   under the passage's key as the glossary in force gives it now, so the
//!   memory recalls it for the same text (and, being a person's, prefers
//!   it to a machine's).

use crate::error::{MemoryError, MemoryResult};
use crate::glossary;
use crate::translation_memory;
use dragoman_book::placeholder::{CLOSE, OPEN};
use dragoman_model::entities::{passage, passage_version};
use dragoman_model::passages::{self, PersonEdit, PersonTranslation, Scored};
use dragoman_model::quality::Signal;
use dragoman_model::tenancy::{self, Acting};
use dragoman_model::vocab::{Issue, IssueKind, PassageStatus, VersionReason};
use dragoman_model::{clock, ids};
use dragoman_proto::v1;
use dragoman_proto::wire::WireEnum;
use sea_orm::{ActiveModelTrait, DatabaseConnection, EntityTrait, Set};

/// What a person asks of one passage.
#[derive(Debug, Clone, PartialEq)]
pub struct EditAsk {
    pub project_id: String,
    pub passage_id: String,
    /// The version the person read.
    pub version: String,
    pub translation: Option<String>,
    pub validated: Option<bool>,
    /// The pipeline's assessment of `translation`.
    pub assessment: Option<Scored>,
}

/// Which field an edit changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Changed {
    Translation,
    Validated,
}

impl Changed {
    pub fn as_str(self) -> &'static str {
        match self {
            Changed::Translation => "translation",
            Changed::Validated => "validated",
        }
    }
}

/// What an edit did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edited {
    pub passage_id: String,
    /// The passage's version after the edit.
    pub version: String,
    pub changed: Vec<Changed>,
}

/// Stores a person's edit of a passage in one transaction with its history
/// version.
pub async fn edit(db: &DatabaseConnection, who: Acting<'_>, ask: EditAsk) -> MemoryResult<Edited> {
    if ask.translation.is_none() && ask.validated.is_none() {
        return Err(MemoryError::InvalidRequest(vec![Issue::at(
            "body",
            "translation",
            IssueKind::Missing,
        )]));
    }
    let (volume, series) = tenancy::administered_book(db, who, &ask.project_id).await?;
    if volume.archived {
        return Err(MemoryError::VolumeArchived);
    }
    let in_force = glossary::load_in_force(db, &volume, &series).await?;
    let txn = dragoman_model::db::begin_write(db).await?;
    let stored = passage::Entity::find_by_id(ask.passage_id.clone())
        .one(&txn)
        .await?
        .filter(|p| p.project_id == volume.id)
        .ok_or(MemoryError::PassageNotFound)?;
    if passages::version_of(&stored) != ask.version {
        return Err(MemoryError::StalePassage {
            version: passages::version_of(&stored),
        });
    }
    let translation = match ask.translation {
        Some(text) => {
            keeps_placeholders(&stored.source, &text)?;
            let scored = ask.assessment.ok_or_else(|| {
                MemoryError::InvalidRequest(vec![Issue::at(
                    "body",
                    "assessment",
                    IssueKind::Missing,
                )])
            })?;
            Some(PersonTranslation { text, scored })
        }
        None => None,
    };
    if ask.validated == Some(true) && translation.is_none() && !stored.is_translated() {
        return Err(MemoryError::NothingToValidate);
    }
    let mut changed = Vec::new();
    if translation
        .as_ref()
        .is_some_and(|t| stored.translation.as_deref() != Some(t.text.as_str()))
    {
        changed.push(Changed::Translation);
    }
    if ask.validated.is_some_and(|v| v != stored.validated) {
        changed.push(Changed::Validated);
    }
    // A translation written or validated now stands under the key the
    // glossary in force gives its text now.
    let enters_memory = translation.is_some() || ask.validated == Some(true);
    let memory_key =
        enters_memory.then(|| translation_memory::key_of(&volume, &in_force, &stored.source));
    let person = PersonEdit {
        translation,
        validated: ask.validated,
        memory_key,
    };
    let now = clock::now();
    if !passages::record_person_edit(&txn, &stored, &person, now).await? {
        // Changed between the read and the write (a job's write that did
        // not wait for this transaction).
        let current = passage::Entity::find_by_id(stored.id.clone())
            .one(&txn)
            .await?
            .ok_or(MemoryError::PassageNotFound)?;
        return Err(MemoryError::StalePassage {
            version: passages::version_of(&current),
        });
    }
    if let Some(written) = person
        .translation
        .as_ref()
        .filter(|_| changed.contains(&Changed::Translation))
    {
        passage_version::ActiveModel {
            id: Set(ids::new_id()),
            passage_id: Set(stored.id.clone()),
            project_id: Set(stored.project_id.clone()),
            previous_translation: Set(stored.translation.clone()),
            new_translation: Set(Some(written.text.clone())),
            reason: Set(VersionReason::PersonEdit),
            account_id: Set(who.account_id.to_owned()),
            token_id: Set(None),
            created_at: Set(now),
        }
        .insert(&txn)
        .await?;
    }
    let current = passage::Entity::find_by_id(stored.id.clone())
        .one(&txn)
        .await?
        .ok_or(MemoryError::PassageNotFound)?;
    txn.commit().await?;
    Ok(Edited {
        passage_id: current.id.clone(),
        version: passages::version_of(&current),
        changed,
    })
}

/// The pipeline's assessment as the passage stores it.
pub fn scored(assessment: v1::EditAssessment) -> MemoryResult<Scored> {
    let invalid = |field: &'static str| {
        move |_| MemoryError::InvalidRequest(vec![Issue::at("body", field, IssueKind::Enum)])
    };
    let signals: Vec<Signal> = assessment
        .signals
        .into_iter()
        .map(Signal::try_from)
        .collect::<Result<_, _>>()
        .map_err(invalid("assessment.signals"))?;
    Ok(Scored {
        score: assessment.score.clamp(0, 100),
        signals: serde_json::to_value(&signals)?,
        status: PassageStatus::from_wire(assessment.status, "assessment.status")
            .map_err(invalid("assessment.status"))?,
    })
}

/// Refuses a translation that does not carry the source's placeholders,
/// each as often as the source, properly nested.
pub fn keeps_placeholders(source: &str, translation: &str) -> MemoryResult<()> {
    let wanted = marks(source);
    let mut found = marks(translation);
    let mut missing = Vec::new();
    for mark in wanted {
        match found.iter().position(|m| *m == mark) {
            Some(i) => {
                found.swap_remove(i);
            }
            None => missing.push(mark),
        }
    }
    let unexpected = found;
    if missing.is_empty() && unexpected.is_empty() && nested(source, translation) {
        return Ok(());
    }
    Err(MemoryError::MissingPlaceholders {
        missing,
        unexpected,
    })
}

/// The placeholders of a text as written (`⟦1⟧`, `⟦/1⟧`, `⟦2/⟧`), in order;
/// a bracket left open counts as one of its own.
fn marks(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(OPEN) {
        let from = &rest[start..];
        match from.find(CLOSE) {
            Some(end) => {
                let end = end + CLOSE.len_utf8();
                out.push(from[..end].to_owned());
                rest = &from[end..];
            }
            None => {
                out.push(OPEN.to_string());
                rest = &from[OPEN.len_utf8()..];
            }
        }
    }
    out
}

/// Whether the translation's paired placeholders nest properly: each
/// closes after it opens, and none closes across another.
fn nested(source: &str, translation: &str) -> bool {
    use dragoman_book::placeholder::{Token, tokenize};
    let Ok(tokens) = tokenize(translation) else {
        // The same marks as a source that cannot be read either.
        return tokenize(source).is_err();
    };
    let mut open: Vec<usize> = Vec::new();
    for token in tokens {
        match token {
            Token::Open(n) => open.push(n),
            Token::Close(n) if open.pop() != Some(n) => return false,
            Token::Close(_) | Token::Void(_) | Token::Text(_) => {}
        }
    }
    open.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(source: &str, translation: &str) -> Option<(Vec<String>, Vec<String>)> {
        match keeps_placeholders(source, translation) {
            Ok(()) => None,
            Err(MemoryError::MissingPlaceholders {
                missing,
                unexpected,
            }) => Some((missing, unexpected)),
            Err(other) => panic!("unexpected refusal {other:?}"),
        }
    }

    #[test]
    fn placeholders_may_move_but_not_go() {
        let source = "She said ⟦1⟧never⟦/1⟧ again.⟦2/⟧";
        assert_eq!(refusal(source, "⟦2/⟧Elle dit ⟦1⟧jamais⟦/1⟧ plus."), None);
        assert_eq!(refusal("Plain text.", "Texte simple."), None);
        assert_eq!(
            refusal(source, "Elle dit jamais plus.⟦2/⟧"),
            Some((vec!["⟦1⟧".to_owned(), "⟦/1⟧".to_owned()], vec![]))
        );
        assert_eq!(
            refusal(source, "Elle dit ⟦1⟧jamais⟦/1⟧ ⟦3/⟧plus.⟦2/⟧"),
            Some((vec![], vec!["⟦3/⟧".to_owned()]))
        );
        assert_eq!(
            refusal(source, "Elle dit ⟦1⟧jamais⟦/1⟧ ⟦2/⟧plus.⟦2/⟧"),
            Some((vec![], vec!["⟦2/⟧".to_owned()])),
            "each once"
        );
    }

    #[test]
    fn paired_placeholders_must_nest() {
        let source = "⟦1⟧a ⟦2⟧b⟦/2⟧⟦/1⟧";
        assert_eq!(refusal(source, "⟦1⟧x ⟦2⟧y⟦/2⟧⟦/1⟧"), None);
        assert_eq!(refusal(source, "⟦1⟧x ⟦2⟧y⟦/1⟧⟦/2⟧"), Some((vec![], vec![])));
        assert_eq!(refusal(source, "⟦/1⟧x ⟦2⟧y⟦/2⟧⟦1⟧"), Some((vec![], vec![])));
    }

    #[test]
    fn a_bracket_left_open_is_named() {
        assert_eq!(
            refusal("⟦1/⟧ text", "⟦1/⟧ texte ⟦"),
            Some((vec![], vec!["⟦".to_owned()]))
        );
    }

    mod stored {
        use super::super::*;
        use crate::testing::Fixture;
        use dragoman_model::entities::passage_version;
        use sea_orm::{ColumnTrait, QueryFilter};
        use serde_json::json;

        fn assessed(score: i32) -> Scored {
            Scored {
                score,
                signals: json!([]),
                status: PassageStatus::Ok,
            }
        }

        async fn reread(fx: &Fixture, id: &str) -> passage::Model {
            passage::Entity::find_by_id(id.to_owned())
                .one(&fx.db)
                .await
                .expect("read")
                .expect("passage")
        }

        #[tokio::test]
        async fn an_edit_needs_the_version_read_and_leaves_a_history() {
            let fx = Fixture::new().await;
            let series = fx.series("Saga").await;
            let book = fx.volume(&series, 1).await;
            let (_, ps) = fx
                .chapter(&book, 1, &["She said ⟦1⟧no⟦/1⟧.", "Hello."])
                .await;
            fx.translate(&ps[0], "Elle dit ⟦1⟧non⟦/1⟧.", "old-key", false, 10)
                .await;
            let before = reread(&fx, &ps[0].id).await;
            let who = Acting::account(&fx.account);
            let ask = |version: String, text: &str| EditAsk {
                project_id: book.id.clone(),
                passage_id: before.id.clone(),
                version,
                translation: Some(text.to_owned()),
                validated: None,
                assessment: Some(assessed(95)),
            };
            match edit(&fx.db, who, ask("stale".into(), "Elle dit ⟦1⟧non⟦/1⟧ !")).await {
                Err(MemoryError::StalePassage { version }) => {
                    assert_eq!(version, passages::version_of(&before))
                }
                other => panic!("stale edit: {other:?}"),
            }
            match edit(
                &fx.db,
                who,
                ask(passages::version_of(&before), "Elle dit non."),
            )
            .await
            {
                Err(MemoryError::MissingPlaceholders { missing, .. }) => {
                    assert_eq!(missing, ["⟦1⟧", "⟦/1⟧"])
                }
                other => panic!("lost placeholders: {other:?}"),
            }
            let done = edit(
                &fx.db,
                who,
                ask(passages::version_of(&before), "Elle dit ⟦1⟧non⟦/1⟧ !"),
            )
            .await
            .expect("edit");
            assert_eq!(done.changed, [Changed::Translation]);
            let after = reread(&fx, &ps[0].id).await;
            assert_eq!(done.version, passages::version_of(&after));
            assert_eq!(after.translation.as_deref(), Some("Elle dit ⟦1⟧non⟦/1⟧ !"));
            assert!(after.human && !after.validated);
            assert_eq!(after.score, Some(95));
            assert_ne!(after.memory_key.as_deref(), Some("old-key"));
            assert!(after.memory_key.is_some());
            let history = passage_version::Entity::find()
                .filter(passage_version::Column::PassageId.eq(after.id.as_str()))
                .all(&fx.db)
                .await
                .expect("history");
            assert_eq!(history.len(), 1);
            assert_eq!(history[0].reason, VersionReason::PersonEdit);
            assert_eq!(
                history[0].previous_translation.as_deref(),
                Some("Elle dit ⟦1⟧non⟦/1⟧.")
            );
            // The version the edit answered is the one the next edit names.
            let validated = edit(
                &fx.db,
                who,
                EditAsk {
                    translation: None,
                    validated: Some(true),
                    assessment: None,
                    ..ask(done.version.clone(), "")
                },
            )
            .await
            .expect("validate");
            assert_eq!(validated.changed, [Changed::Validated]);
            assert!(reread(&fx, &ps[0].id).await.validated);
        }

        #[tokio::test]
        async fn only_a_translation_can_be_validated_and_only_by_its_owner() {
            let fx = Fixture::new().await;
            let series = fx.series("Saga").await;
            let book = fx.volume(&series, 1).await;
            let (_, ps) = fx.chapter(&book, 1, &["Hello."]).await;
            let ask = EditAsk {
                project_id: book.id.clone(),
                passage_id: ps[0].id.clone(),
                version: passages::version_of(&ps[0]),
                translation: None,
                validated: Some(true),
                assessment: None,
            };
            let owner = Acting::account(&fx.account);
            assert!(matches!(
                edit(&fx.db, owner, ask.clone()).await,
                Err(MemoryError::NothingToValidate)
            ));
            let stranger = fx.add_account("stranger").await;
            assert!(matches!(
                edit(&fx.db, Acting::account(&stranger), ask.clone()).await,
                Err(MemoryError::VolumeNotFound)
            ));
            let admin = Acting::new(&stranger, true);
            assert!(matches!(
                edit(&fx.db, admin, ask.clone()).await,
                Err(MemoryError::NothingToValidate)
            ));
            let elsewhere = EditAsk {
                passage_id: "absent".into(),
                ..ask
            };
            assert!(matches!(
                edit(&fx.db, owner, elsewhere).await,
                Err(MemoryError::PassageNotFound)
            ));
        }
    }
}
