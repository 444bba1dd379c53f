//! `narrative_entities`: the characters, places, organisations and objects
//! of one book (spec 2.11 character sheets and `world`), each linked to its
//! canonical series identity once the volume has shared its memory.

use crate::vocab::{EntityKind, Origin};
use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "narrative_entities")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub project_id: String,
    pub series_entity_id: Option<String>,
    pub kind: EntityKind,
    pub name: String,
    /// The name as entities are matched (case-folded, NFC, spaces collapsed).
    pub name_key: String,
    /// Other names, a JSON array of strings.
    pub aliases: Json,
    /// The rendering in the target language.
    pub target_name: Option<String>,
    pub gender: Option<String>,
    pub address: Option<String>,
    #[sea_orm(column_type = "Text")]
    pub description: String,
    pub origin: Origin,
    /// The passage where it first appears.
    pub passage_id: Option<String>,
    /// The words of that passage it rests on.
    #[sea_orm(column_type = "Text", nullable)]
    pub evidence: Option<String>,
    /// Passages that mention it.
    pub mentions: i32,
    /// What the text says of it: a JSON array of
    /// `{passage_id, words, note}`, at most a few per entity.
    pub observations: Json,
    pub created_at: i64,
    pub updated_at: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
