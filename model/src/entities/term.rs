//! `terms`: glossary terms of every layer (spec 2.9): a volume's own
//! (`project_id`), a series' (`series_id`), a shared glossary's (`glossary_id`).

use crate::vocab::{Origin, TermLayer};
use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

/// One term. Exactly one of `project_id`, `series_id`, `glossary_id` is set,
/// the one its `layer` names.
#[derive(Clone, Debug, PartialEq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "terms")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub layer: TermLayer,
    pub project_id: Option<String>,
    pub series_id: Option<String>,
    pub glossary_id: Option<String>,
    pub source: String,
    /// The source as terms are matched: case-folded, NFC, spaces collapsed.
    pub source_key: String,
    pub translation: String,
    pub category: String,
    #[sea_orm(column_type = "Text")]
    pub description: String,
    /// Enforced and checked in every passage.
    pub locked: bool,
    /// Only accepted terms are applied.
    pub accepted: bool,
    /// `human` for a person's decision, `analysis` for a model's proposal.
    pub origin: Origin,
    /// The volume whose analysis proposed the term.
    pub proposed_by: Option<String>,
    /// The passage the proposal rests on.
    pub passage_id: Option<String>,
    /// The words of the text the proposal rests on.
    #[sea_orm(column_type = "Text", nullable)]
    pub evidence: Option<String>,
    /// Passages where analysis found it.
    pub occurrences: i32,
    pub created_at: i64,
    pub updated_at: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
