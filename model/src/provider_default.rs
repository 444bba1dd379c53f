//! The installation's default provider: the last choice when a request, its
//! volume and its series name none (spec 2.10 orders the first three; a JSON
//! client creating a series has no other way to name one). An administrator
//! sets it; while none is set, a lone provider is the default.
//!
//! The pipeline, which owns providers, writes it; intake reads it.

use crate::entities::{provider, setting};
use sea_orm::{ConnectionTrait, DbErr, EntityTrait, PaginatorTrait, QuerySelect};
use serde::{Deserialize, Serialize};

/// The `settings` row holding the chosen provider's id.
const SETTING_KEY: &str = "default_provider";

/// The saved choice: `{"provider_id": …}`.
#[derive(Serialize, Deserialize)]
struct Choice {
    provider_id: String,
}

/// The provider an administrator chose, if it still exists.
pub async fn chosen(db: &impl ConnectionTrait) -> Result<Option<String>, DbErr> {
    let Some(row) = setting::Entity::find_by_id(SETTING_KEY.to_owned())
        .one(db)
        .await?
    else {
        return Ok(None);
    };
    let Ok(Choice { provider_id: id }) = serde_json::from_value(row.value) else {
        return Ok(None);
    };
    Ok(provider::Entity::find_by_id(id)
        .one(db)
        .await?
        .map(|p| p.id))
}

/// The default in force: the chosen provider, else the only provider of the
/// installation when there is exactly one.
pub async fn in_force(db: &impl ConnectionTrait) -> Result<Option<String>, DbErr> {
    if let Some(id) = chosen(db).await? {
        return Ok(Some(id));
    }
    if provider::Entity::find().count(db).await? != 1 {
        return Ok(None);
    }
    provider::Entity::find()
        .select_only()
        .column(provider::Column::Id)
        .into_tuple::<String>()
        .one(db)
        .await
}

/// Records the administrator's choice (`None` forgets it). The caller has
/// checked that the provider exists.
pub async fn choose(db: &impl ConnectionTrait, provider_id: Option<&str>) -> Result<(), DbErr> {
    match provider_id {
        Some(id) => {
            let choice = Choice {
                provider_id: id.to_owned(),
            };
            setting::save(db, SETTING_KEY, choice).await?;
        }
        None => {
            setting::Entity::delete_by_id(SETTING_KEY.to_owned())
                .exec(db)
                .await?;
        }
    }
    Ok(())
}
