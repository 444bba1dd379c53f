//! `series_entities`: canonical identities of a series (spec 2.11
//! `series_entity_id`): a character, place, organisation or object as every
//! volume of the series knows it.

use crate::vocab::{EntityKind, Origin};
use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "series_entities")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub series_id: String,
    pub kind: EntityKind,
    pub name: String,
    /// The name as entities are matched (case-folded, NFC, spaces collapsed).
    pub name_key: String,
    /// Other names, a JSON array of strings.
    pub aliases: Json,
    /// The canonical rendering in the target language.
    pub target_name: Option<String>,
    pub gender: Option<String>,
    /// Forms of address, as the text shows them.
    pub address: Option<String>,
    #[sea_orm(column_type = "Text")]
    pub description: String,
    pub origin: Origin,
    /// The volume that introduced it.
    pub first_project_id: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
