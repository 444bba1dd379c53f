//! `settings`: administrator settings, which win over the environment.

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

/// One setting, keyed by its name.
#[derive(Clone, Debug, PartialEq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "settings")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub key: String,
    pub value: Json,
    pub updated_at: i64,
}

/// No relations.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}

/// Saves `value` (a typed setting, or JSON as it is) under `key`,
/// replacing what was there.
pub async fn save(
    db: &impl ConnectionTrait,
    key: &str,
    value: impl Serialize,
) -> Result<i64, DbErr> {
    let value = serde_json::to_value(value).map_err(|e| DbErr::Json(e.to_string()))?;
    let now = crate::clock::now();
    Entity::insert(ActiveModel {
        key: sea_orm::Set(key.to_owned()),
        value: sea_orm::Set(value),
        updated_at: sea_orm::Set(now),
    })
    .on_conflict(
        sea_orm::sea_query::OnConflict::column(Column::Key)
            .update_columns([Column::Value, Column::UpdatedAt])
            .to_owned(),
    )
    .exec(db)
    .await?;
    Ok(now)
}
