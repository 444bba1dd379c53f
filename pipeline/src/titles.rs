//! Chapter titles go through translation like passages: they travel in the
//! same batches, under the same placeholder and answer checks, and a title
//! without a usable translation keeps its source text. A translated title is
//! stored on its chapter (`translated_title`), so a resumed job never sends it
//! again. A title that gives only the number or the kind (`Chapter 12`,
//! `Prologue`) is not sent: exports show the display label for it. A title
//! the same owner already had translated between the same languages is
//! taken from that chapter, like a passage from the translation memory.

use crate::translate::PassageIn;
use dragoman_book::numbering;
use dragoman_model::clock;
use dragoman_model::entities::{chapter, project};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ColumnTrait, ConnectionTrait, DbErr, EntityTrait, JoinType, QueryFilter, QueryOrder,
    QuerySelect, RelationTrait,
};

/// Batch item ids of titles start with this, then the chapter id.
const TITLE_ID_PREFIX: &str = "title:";

/// The chapter a batch item's id names, when the item is a title.
pub fn chapter_of(item_id: &str) -> Option<&str> {
    item_id.strip_prefix(TITLE_ID_PREFIX)
}

/// Whether a title says more than the chapter's number or kind.
fn worth_translating(title: &str) -> bool {
    !title.trim().is_empty()
        && numbering::detect_heading(title).is_none_or(|heading| heading.title.is_some())
}

/// The titles of `chapter_ids` still to translate, as batch items.
pub async fn pending(
    db: &impl ConnectionTrait,
    chapter_ids: &[String],
) -> Result<Vec<PassageIn>, DbErr> {
    let chapters = chapter::Entity::find()
        .filter(chapter::Column::Id.is_in(chapter_ids.to_vec()))
        .filter(chapter::Column::Title.is_not_null())
        .filter(chapter::Column::TranslatedTitle.is_null())
        .order_by_asc(chapter::Column::Position)
        .all(db)
        .await?;
    Ok(chapters
        .into_iter()
        .filter_map(|c| {
            let title = c.title?;
            worth_translating(&title).then(|| PassageIn {
                id: format!("{TITLE_ID_PREFIX}{}", c.id),
                text: title,
            })
        })
        .collect())
}

/// The languages and owner a title is translated for.
pub struct TitleOwner<'a> {
    pub account_id: &'a str,
    pub source_language: &'a str,
    pub target_language: &'a str,
}

/// Takes from `pending` the titles the same owner already had translated
/// between the same languages and stores those translations; returns how
/// many were taken.
pub async fn recall(
    db: &impl ConnectionTrait,
    owner: &TitleOwner<'_>,
    pending: &mut Vec<PassageIn>,
) -> Result<usize, DbErr> {
    let mut kept = Vec::with_capacity(pending.len());
    let mut recalled = 0;
    for item in pending.drain(..) {
        let earlier = chapter::Entity::find()
            .join(JoinType::InnerJoin, chapter::Relation::Project.def())
            .filter(project::Column::AccountId.eq(owner.account_id))
            .filter(project::Column::SourceLanguage.eq(owner.source_language))
            .filter(project::Column::TargetLanguage.eq(owner.target_language))
            .filter(chapter::Column::Title.eq(item.text.clone()))
            .filter(chapter::Column::TranslatedTitle.is_not_null())
            .order_by_desc(chapter::Column::UpdatedAt)
            .one(db)
            .await?
            .and_then(|c| c.translated_title);
        match (earlier, chapter_of(&item.id)) {
            (Some(text), Some(chapter_id)) => {
                store(db, chapter_id, text).await?;
                recalled += 1;
            }
            _ => kept.push(item),
        }
    }
    *pending = kept;
    Ok(recalled)
}

/// Stores a chapter's translated title.
pub async fn store(
    db: &impl ConnectionTrait,
    chapter_id: &str,
    translation: String,
) -> Result<(), DbErr> {
    chapter::Entity::update_many()
        .col_expr(chapter::Column::TranslatedTitle, Expr::value(translation))
        .col_expr(chapter::Column::UpdatedAt, Expr::value(clock::now()))
        .filter(chapter::Column::Id.eq(chapter_id))
        .exec(db)
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_are_told_from_passages_by_their_id() {
        assert_eq!(chapter_of("title:c1"), Some("c1"));
        assert_eq!(chapter_of("0192f3a0-passage"), None);
    }

    #[test]
    fn labels_alone_are_not_translated() {
        assert!(worth_translating("The Storm"));
        assert!(worth_translating("Chapter 3: The Storm"));
        assert!(!worth_translating("Chapter 12"));
        assert!(!worth_translating("Prologue"));
        assert!(!worth_translating("  "));
    }
}
