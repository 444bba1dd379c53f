//! `licence_words`: the licence's word ledger (spec 8, "Licence word quota
//! rules"). One row per count: a book added, chapters appended to it, or a
//! book added before the ledger counted when a job starts it. No foreign
//! keys: a book counted stays counted when it is deleted.

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "licence_words")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    /// The account whose request added the words (its own allowance).
    pub account_id: String,
    pub project_id: Option<String>,
    pub request_id: Option<String>,
    pub words: i64,
    pub counted_at: i64,
}

/// No relations.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
