//! The installation's licence (spec 1, 4.2, 4.10, 7 and 8 "Licence word
//! quota rules"): its plan, which opens the automation API and the tool
//! protocol, and its word quota, counted in the `licence_words` ledger.
//!
//! - [`document`]: the licence document and the plans' features.
//! - [`cycle`]: cycles anchored on the subscription day, overrun carried.
//! - [`ledger`]: the quota and the accounts' allowances against the ledger;
//!   [`charge`] counts words inside the caller's write transaction.
//!
//! Where the licence comes from, read at each check so a change applies
//! without restart: the administrator setting `licence` (saved by
//! `PUT /api/settings/licence`) wins over the file named by
//! `DRAGOMAN_LICENCE_FILE`. With neither, the installation runs
//! unlicensed, as self-hosted software: every feature, no word limit (an
//! account's own allowance still applies, over calendar months). A licence
//! file that does not read stops `dragoman serve` at start
//! ([`LicenceSettings::check_file`]).

pub mod cycle;
pub mod document;
pub mod ledger;

pub use cycle::{Cycle, cycle_of};
pub use document::{Features, Licence, Plan};
pub use ledger::{
    AllowanceStanding, LicenceRefusal, LicenceStanding, allowance_standing, charge,
    charge_older_book, check, standing,
};

use crate::ModelError;
use crate::entities::setting;
use sea_orm::{ConnectionTrait, EntityTrait};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// The settings row an administrator's licence is saved under.
pub const SETTING_KEY: &str = "licence";
/// `LICENCE_QUOTA_OVERRUN_WORDS` by default (spec 8).
pub const DEFAULT_OVERRUN_WORDS: i64 = 20_000;

/// Where the licence in force comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum LicenceSource {
    /// Saved by an administrator.
    Setting,
    /// The file named by `DRAGOMAN_LICENCE_FILE`.
    File,
    /// No licence: unlicensed self-hosting.
    None,
}

/// The licence in force and the installation's margin.
#[derive(Debug, Clone, PartialEq)]
pub struct LicenceInForce {
    /// None: unlicensed, every feature and no limit.
    pub licence: Option<Licence>,
    pub source: LicenceSource,
    /// `LICENCE_QUOTA_OVERRUN_WORDS`.
    pub margin: i64,
}

impl LicenceInForce {
    /// No licence configured.
    pub fn unlicensed(margin: i64) -> LicenceInForce {
        LicenceInForce {
            licence: None,
            source: LicenceSource::None,
            margin,
        }
    }

    /// The interfaces open: every one without a licence.
    pub fn features(&self) -> Features {
        self.licence
            .as_ref()
            .map_or(Features::ALL, Licence::features)
    }

    /// Source words per cycle; none: no limit.
    pub fn word_limit(&self) -> Option<i64> {
        self.licence.as_ref().and_then(|l| l.word_limit)
    }
}

/// How this installation finds its licence: the file named in the
/// configuration and the margin. Cheap to clone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LicenceSettings {
    /// `DRAGOMAN_LICENCE_FILE`.
    pub file: Option<PathBuf>,
    /// `LICENCE_QUOTA_OVERRUN_WORDS`.
    pub margin: i64,
}

impl Default for LicenceSettings {
    fn default() -> Self {
        LicenceSettings {
            file: None,
            margin: DEFAULT_OVERRUN_WORDS,
        }
    }
}

impl LicenceSettings {
    /// Reads the licence file, if one is configured; the message names the
    /// file and what is wrong. `dragoman serve` refuses to start on an error.
    pub fn check_file(&self) -> Result<Option<Licence>, ModelError> {
        let Some(path) = &self.file else {
            return Ok(None);
        };
        let text = std::fs::read_to_string(path)
            .map_err(|e| ModelError::Config(format!("licence file {}: {e}", path.display())))?;
        parse_file(path, &text).map(Some)
    }

    /// The licence in force now: the administrator's, else the file's, else
    /// none.
    pub async fn in_force(&self, db: &impl ConnectionTrait) -> Result<LicenceInForce, ModelError> {
        if let Some(licence) = saved(db).await? {
            return Ok(LicenceInForce {
                licence: Some(licence),
                source: LicenceSource::Setting,
                margin: self.margin,
            });
        }
        let Some(path) = &self.file else {
            return Ok(LicenceInForce::unlicensed(self.margin));
        };
        // A file that disappears or stops reading after the start is an
        // error (answered 500 and logged), never "no licence".
        let text = tokio::fs::read_to_string(path)
            .await
            .map_err(|e| ModelError::Config(format!("licence file {}: {e}", path.display())))?;
        Ok(LicenceInForce {
            licence: Some(parse_file(path, &text)?),
            source: LicenceSource::File,
            margin: self.margin,
        })
    }
}

fn parse_file(path: &std::path::Path, text: &str) -> Result<Licence, ModelError> {
    Licence::parse(text).map_err(|e| {
        ModelError::Config(format!(
            "licence file {} does not hold a licence: {e}",
            path.display()
        ))
    })
}

/// The administrator's licence, if one is saved.
pub async fn saved(db: &impl ConnectionTrait) -> Result<Option<Licence>, ModelError> {
    let Some(row) = setting::Entity::find_by_id(SETTING_KEY.to_owned())
        .one(db)
        .await?
    else {
        return Ok(None);
    };
    serde_json::from_value(row.value).map(Some).map_err(|e| {
        ModelError::Config(format!(
            "the licence saved in the settings does not read: {e}"
        ))
    })
}

/// Saves an administrator's licence, which wins over the file from now on.
/// The caller checked [`Licence::issues`].
pub async fn save(db: &impl ConnectionTrait, licence: &Licence) -> Result<(), ModelError> {
    let value =
        serde_json::to_value(licence).map_err(|e| ModelError::Config(format!("licence: {e}")))?;
    setting::save(db, SETTING_KEY, value).await?;
    Ok(())
}

/// Removes the administrator's licence: the file's applies again, or none.
/// Says whether one was saved.
pub async fn clear(db: &impl ConnectionTrait) -> Result<bool, ModelError> {
    let deleted = setting::Entity::delete_by_id(SETTING_KEY.to_owned())
        .exec(db)
        .await?;
    Ok(deleted.rows_affected > 0)
}

#[cfg(test)]
mod tests;
