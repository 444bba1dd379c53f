//! `bible_lines`: the Book Bible of a volume (`project_id`) or the Series
//! Bible (`series_id`): register, tone, tense, forms of address and
//! recurring style choices, each with its provenance.

use crate::vocab::{BibleAspect, Origin};
use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "bible_lines")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub project_id: Option<String>,
    pub series_id: Option<String>,
    pub aspect: BibleAspect,
    #[sea_orm(column_type = "Text")]
    pub text: String,
    pub origin: Origin,
    pub passage_id: Option<String>,
    #[sea_orm(column_type = "Text", nullable)]
    pub evidence: Option<String>,
    pub created_at: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
