//! A passage's quality as stored, read the same way by every service: the
//! signals the pipeline wrote on it (spec 2.7 `review_first`), how serious
//! an issue each makes (spec 2.6 `issues`), which passages are residuals
//! (delivered in source text) and the reason each is listed with. The
//! report, the final status and the JSON result all decide through here,
//! so they agree.

use crate::entities::{autopilot_decision, passage};
use crate::vocab::{AutopilotAction, PassageStatus, Severity, SignalCode};
use sea_orm::{ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryOrder};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// A penalty from which a signal is a `major` issue whatever its code.
pub const MAJOR_PENALTY: u32 = 15;

/// One kind of problem found in a passage: how many times, what it cost.
/// Fields in alphabetical order, the order reports have always listed them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = QualitySignal)]
pub struct Signal {
    pub code: SignalCode,
    #[serde(default)]
    pub count: u32,
    /// A short sentence naming what was found.
    #[serde(default)]
    pub message: String,
    #[serde(default)]
    pub penalty: u32,
}

impl Signal {
    /// How serious an issue the signal makes: its code's severity
    /// ([`SignalCode::severity`]), else (a length outside the band, a
    /// reviewer's flags) major from [`MAJOR_PENALTY`], minor below.
    pub fn severity(&self) -> Severity {
        self.code
            .severity()
            .unwrap_or(if self.penalty >= MAJOR_PENALTY {
                Severity::Major
            } else {
                Severity::Minor
            })
    }

    /// Whether the signal is a major or critical issue: the autopilot
    /// takes the passage up whatever its score.
    pub fn serious(&self) -> bool {
        self.severity() != Severity::Minor
    }
}

/// The signals stored on a passage; an entry this build cannot read (a
/// code it does not know) is left out rather than failing the reader.
pub fn signals_of(p: &passage::Model) -> Vec<Signal> {
    p.signals
        .as_ref()
        .and_then(serde_json::Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|s| serde_json::from_value(s.clone()).ok())
                .collect()
        })
        .unwrap_or_default()
}

/// The alert left open on a passage delivered with its translation that is
/// in fact no translation: the source sent back (`unchanged`) or nothing
/// (`untranslated`). A person who validated the passage closed it.
pub fn open_alert(p: &passage::Model) -> Option<SignalCode> {
    if p.validated || !p.is_translated() {
        return None;
    }
    signals_of(p)
        .into_iter()
        .map(|s| s.code)
        .find(|code| matches!(code, SignalCode::Unchanged | SignalCode::Untranslated))
}

/// A passage the reader gets in source text: no usable translation, or a
/// "translation" that still is the source (spec 2.7).
pub fn is_residual(p: &passage::Model) -> bool {
    !p.is_translated() || open_alert(p).is_some()
}

/// Why a residual kept its source text: the autopilot's reason when it
/// retained the passage (`retained`, from [`retain_reasons`]), the open
/// alert of a translation that is the source, the passage's last error, or
/// what its status says.
pub fn residual_reason(p: &passage::Model, retained: &HashMap<String, String>) -> String {
    if let Some(reason) = retained.get(&p.id).filter(|r| !r.is_empty()) {
        return reason.clone();
    }
    if let Some(code) = open_alert(p) {
        return code.as_str().to_owned();
    }
    if let Some(error) = p.last_error.as_ref().filter(|e| !e.is_empty()) {
        return error.clone();
    }
    if p.status == PassageStatus::SourceRetained {
        PassageStatus::SourceRetained.as_str()
    } else {
        SignalCode::Untranslated.as_str()
    }
    .to_owned()
}

/// For each passage of the request the autopilot retained in source text,
/// the reason of its last `retain` decision.
pub async fn retain_reasons(
    db: &impl ConnectionTrait,
    request_id: &str,
) -> Result<HashMap<String, String>, DbErr> {
    let decisions = autopilot_decision::Entity::find()
        .filter(autopilot_decision::Column::RequestId.eq(request_id))
        .filter(autopilot_decision::Column::Action.eq(AutopilotAction::Retain))
        .order_by_asc(autopilot_decision::Column::CreatedAt)
        .order_by_asc(autopilot_decision::Column::Round)
        .all(db)
        .await?;
    // In time order, so a later decision about a passage replaces an earlier.
    Ok(decisions
        .into_iter()
        .map(|d| (d.passage_id, d.reason))
        .collect())
}
