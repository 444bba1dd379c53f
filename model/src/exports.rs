//! Export settings (spec 4.9 `GET/PUT /api/settings/exports`): whether every
//! written EPUB carries a machine-readable AI-assisted-translation mention.
//! The installation's value is on by default; a book's own value (its
//! `ai_disclosure` column, set by `PATCH /api/projects/{pid}/edition`) wins
//! when it is not null.

use crate::entities::{project, setting};
use sea_orm::{ConnectionTrait, DbErr, EntityTrait};
use serde::{Deserialize, Serialize};

/// The settings row holding the installation's export settings.
pub const SETTING_KEY: &str = "exports";

/// The contributor name the mention gives (MARC role `trl`).
pub const AI_MENTION: &str = "AI-assisted translation (Dragoman)";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExportSettings {
    pub ai_disclosure: bool,
}

impl Default for ExportSettings {
    fn default() -> Self {
        ExportSettings {
            ai_disclosure: true,
        }
    }
}

/// The installation's export settings; the defaults when none are saved
/// (or the saved value no longer reads).
pub async fn current(db: &impl ConnectionTrait) -> Result<ExportSettings, DbErr> {
    let saved = setting::Entity::find_by_id(SETTING_KEY.to_owned())
        .one(db)
        .await?;
    Ok(saved
        .and_then(|row| serde_json::from_value(row.value).ok())
        .unwrap_or_default())
}

/// Saves the installation's export settings.
pub async fn save(db: &impl ConnectionTrait, settings: ExportSettings) -> Result<(), DbErr> {
    let value = serde_json::to_value(settings).map_err(|e| DbErr::Custom(e.to_string()))?;
    setting::save(db, SETTING_KEY, value).await.map(|_| ())
}

/// Whether the EPUBs of `volume` carry the mention.
pub async fn discloses(db: &impl ConnectionTrait, volume: &project::Model) -> Result<bool, DbErr> {
    match volume.ai_disclosure {
        Some(own) => Ok(own),
        None => Ok(current(db).await?.ai_disclosure),
    }
}
