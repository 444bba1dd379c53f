//! `passage_analyses`: what the analysis stage found in each passage, kept
//! so that a passage is analysed once (a job resumed after a crash skips
//! it) and so that the same text of the same owner is never paid for again.
//! A row outlives its passage (no foreign key to it): a replaced chapter's
//! unchanged paragraphs take their earlier analysis back by source key.

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "passage_analyses")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub passage_id: String,
    pub project_id: String,
    pub account_id: String,
    /// SHA-256 of the source language and the normalized source text.
    pub source_key: String,
    /// The extraction (entities, terms, style, summary, events) as JSON.
    pub extraction: Json,
    /// Merged into the book's memory.
    pub reconciled: bool,
    /// The model never gave a usable analysis; the passage is translated
    /// without what it would have added.
    pub failed: bool,
    pub created_at: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
