//! What the status document counts of a request's passages, computed by
//! the database in one grouped query rather than by loading every passage
//! (and its text): per chapter, the passages, those translated, validated,
//! flagged and attempted, those the review pass takes up and has read, and
//! those analysed. A big book's status read then costs the same few rows
//! as a small one's.

use crate::report::flagged_condition;
use dragoman_model::entities::{passage, passage_analysis};
use dragoman_model::vocab::PassageStatus;
use sea_orm::sea_query::{Expr, Func};
use sea_orm::{
    ColumnTrait, Condition, ConnectionTrait, DbErr, EntityTrait, FromQueryResult, JoinType,
    QueryFilter, QuerySelect, RelationDef,
};
use std::collections::HashMap;

/// Counts of one chapter's passages, or of the request's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub segments: usize,
    pub translated: usize,
    pub validated: usize,
    pub flagged: usize,
    /// Not `pending` any more: the translation stage tried them.
    pub attempted: usize,
    /// Taken up by the review pass (the condition the caller gave).
    pub in_review: usize,
    /// Of those, read by the review pass.
    pub reviewed: usize,
    /// With an analysis row (or an earlier analysis of the same text).
    pub analysed: usize,
    /// Of those, without a usable analysis.
    pub analysis_failed: usize,
}

impl Counts {
    fn add(&mut self, other: &Counts) {
        self.segments += other.segments;
        self.translated += other.translated;
        self.validated += other.validated;
        self.flagged += other.flagged;
        self.attempted += other.attempted;
        self.in_review += other.in_review;
        self.reviewed += other.reviewed;
        self.analysed += other.analysed;
        self.analysis_failed += other.analysis_failed;
    }
}

/// The counts of each chapter and their sum.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PassageCounts {
    pub chapters: HashMap<String, Counts>,
    pub total: Counts,
}

impl PassageCounts {
    /// A chapter's counts (all zero for a chapter without passages).
    pub fn of(&self, chapter_id: &str) -> Counts {
        self.chapters.get(chapter_id).copied().unwrap_or_default()
    }
}

/// One row of the grouped query.
#[derive(Debug, FromQueryResult)]
struct Row {
    chapter_id: String,
    segments: i64,
    translated: i64,
    validated: i64,
    flagged: i64,
    attempted: i64,
    in_review: i64,
    reviewed: i64,
    analysed: i64,
    analysis_failed: i64,
}

fn count(n: i64) -> usize {
    usize::try_from(n).unwrap_or(0)
}

/// `COUNT(CASE WHEN condition THEN 1 END)`: a count whatever the backend's
/// boolean and integer types (a `SUM` would be `numeric` on PostgreSQL).
fn count_where(condition: Condition) -> Expr {
    Func::count(Expr::case(condition, 1)).into()
}

/// Counts the passages of `chapter_ids`; `in_review` is the condition under
/// which the review pass takes a passage up (see `document`).
pub async fn of_chapters(
    db: &impl ConnectionTrait,
    chapter_ids: Vec<String>,
    in_review: Condition,
) -> Result<PassageCounts, DbErr> {
    if chapter_ids.is_empty() {
        return Ok(PassageCounts::default());
    }
    // An analysis row is keyed by its passage, so the join adds no row.
    let analysis: RelationDef = passage::Entity::belongs_to(passage_analysis::Entity)
        .from(passage::Column::Id)
        .to(passage_analysis::Column::PassageId)
        .into();
    let rows = passage::Entity::find()
        .select_only()
        .column(passage::Column::ChapterId)
        .column_as(
            Expr::from(Func::count(Expr::col((
                passage::Entity,
                passage::Column::Id,
            )))),
            "segments",
        )
        .column_as(count_where(passage::translated_condition()), "translated")
        .column_as(
            count_where(Condition::all().add(passage::Column::Validated.eq(true))),
            "validated",
        )
        .column_as(count_where(flagged_condition()), "flagged")
        .column_as(
            count_where(Condition::all().add(passage::Column::Status.ne(PassageStatus::Pending))),
            "attempted",
        )
        .column_as(count_where(in_review), "in_review")
        .column_as(
            count_where(
                Condition::all()
                    .add(passage::Column::Translation.is_not_null())
                    .add(passage::Column::Reviewed.eq(true)),
            ),
            "reviewed",
        )
        .column_as(
            Expr::from(Func::count(Expr::col((
                passage_analysis::Entity,
                passage_analysis::Column::PassageId,
            )))),
            "analysed",
        )
        .column_as(
            count_where(Condition::all().add(passage_analysis::Column::Failed.eq(true))),
            "analysis_failed",
        )
        .join(JoinType::LeftJoin, analysis)
        .filter(passage::Column::ChapterId.is_in(chapter_ids))
        .group_by(passage::Column::ChapterId)
        .into_model::<Row>()
        .all(db)
        .await?;
    let mut counts = PassageCounts::default();
    for row in rows {
        let chapter = Counts {
            segments: count(row.segments),
            translated: count(row.translated),
            validated: count(row.validated),
            flagged: count(row.flagged),
            attempted: count(row.attempted),
            in_review: count(row.in_review),
            reviewed: count(row.reviewed),
            analysed: count(row.analysed),
            analysis_failed: count(row.analysis_failed),
        };
        counts.total.add(&chapter);
        counts.chapters.insert(row.chapter_id, chapter);
    }
    Ok(counts)
}
