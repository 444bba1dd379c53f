//! What a result says about the quality of its chapters (spec 2.6, 4.5):
//! the `issues` of each chapter, drawn from the signals the pipeline stored
//! on its passages and from its residuals, and whether the autopilot left
//! points unresolved. Residuals are told apart as the completion report
//! tells them (spec 2.7), so a result and its report agree.

use crate::error::DeliveryError;
use dragoman_model::entities::{autopilot_decision, autopilot_run, passage, request};
use dragoman_model::vocab::{
    AutopilotAction, AutopilotOutcome, PassageStatus, Severity, SignalCode,
};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;

/// A penalty from which a signal is a `major` issue whatever its code.
pub const MAJOR_PENALTY: u32 = 15;

/// The message of the issue a residual passage raises.
pub const DELIVERED_IN_SOURCE: &str = "delivered in source text";

/// One signal that lowered a passage's score, as the pipeline stores it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Signal {
    pub code: SignalCode,
    #[serde(default)]
    pub count: u32,
    #[serde(default)]
    pub penalty: u32,
    #[serde(default)]
    pub message: String,
}

impl Signal {
    /// How serious the signal makes an issue: an unusable translation is
    /// critical; a locked term, a drifted name or a heavy penalty major.
    pub fn severity(&self) -> Severity {
        if self.code.is_hard() {
            Severity::Critical
        } else if matches!(self.code, SignalCode::LockedTerm | SignalCode::NameDrift)
            || self.penalty >= MAJOR_PENALTY
        {
            Severity::Major
        } else {
            Severity::Minor
        }
    }
}

/// The signals stored on a passage; an entry this build cannot read (a
/// code it does not know) is left out rather than failing the result.
pub fn signals_of(p: &passage::Model) -> Vec<Signal> {
    p.signals
        .as_ref()
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|s| serde_json::from_value(s.clone()).ok())
                .collect()
        })
        .unwrap_or_default()
}

/// One entry of a chapter's `issues`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Issue {
    pub segment_id: String,
    pub severity: Severity,
    /// A signal's code, or a residual's reason.
    pub code: String,
    pub message: String,
}

/// The alert left open on a passage delivered with its translation that is
/// in fact no translation: the source sent back or nothing at all. A person
/// who validated the passage closed it.
fn open_alert(p: &passage::Model) -> Option<SignalCode> {
    if p.validated || !p.is_translated() {
        return None;
    }
    signals_of(p)
        .into_iter()
        .map(|s| s.code)
        .find(|code| matches!(code, SignalCode::Unchanged | SignalCode::Untranslated))
}

/// A passage the reader gets in source text (a residual of the report).
pub fn is_residual(p: &passage::Model) -> bool {
    !p.is_translated() || open_alert(p).is_some()
}

/// Why a residual kept its source text, as the report gives it: the
/// autopilot's reason, the open alert, the last error, else its status.
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
    row: &request::Model,
) -> Result<HashMap<String, String>, DeliveryError> {
    let decisions = autopilot_decision::Entity::find()
        .filter(autopilot_decision::Column::RequestId.eq(row.id.clone()))
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

/// How the autopilot of the request's job ended; none when it did not run
/// or has not ended.
pub async fn autopilot_outcome(
    db: &impl ConnectionTrait,
    row: &request::Model,
) -> Result<Option<AutopilotOutcome>, DeliveryError> {
    let Some(job_id) = &row.job_id else {
        return Ok(None);
    };
    Ok(autopilot_run::Entity::find_by_id(job_id.clone())
        .one(db)
        .await?
        .and_then(|run| run.outcome))
}

/// The issues of a chapter's passages (given in position order): one per
/// signal of a passage no person validated, and for a residual that raised
/// no critical one, an issue naming why it is delivered in source text.
pub fn chapter_issues(
    passages: &[passage::Model],
    retained: &HashMap<String, String>,
) -> Vec<Issue> {
    let mut issues = Vec::new();
    for p in passages {
        let mut critical = false;
        if !p.validated {
            for signal in signals_of(p) {
                let severity = signal.severity();
                critical |= severity == Severity::Critical;
                issues.push(Issue {
                    segment_id: p.id.clone(),
                    severity,
                    code: signal.code.as_str().to_owned(),
                    message: signal.message,
                });
            }
        }
        if !critical && is_residual(p) {
            issues.push(Issue {
                segment_id: p.id.clone(),
                severity: Severity::Critical,
                code: residual_reason(p, retained),
                message: DELIVERED_IN_SOURCE.to_owned(),
            });
        }
    }
    issues
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn passage(position: i32, status: PassageStatus, signals: Value) -> passage::Model {
        passage::Model {
            id: format!("p{position}"),
            chapter_id: "c".into(),
            project_id: "v".into(),
            position,
            source: "Source.".into(),
            markup: None,
            translation: Some("Traduction.".into()),
            status,
            last_error: None,
            human: false,
            validated: false,
            attempts: 1,
            memory_key: None,
            score: Some(60),
            signals: Some(signals),
            reviewed: false,
            autopilot_round: 0,
            created_at: 0,
            updated_at: 0,
        }
    }

    fn signal(code: SignalCode, penalty: u32) -> Value {
        json!({"code": code, "count": 1, "penalty": penalty, "message": format!("{code} found")})
    }

    #[test]
    fn severity_follows_the_code_then_the_penalty() {
        let of = |code, penalty| {
            Signal {
                code,
                count: 1,
                penalty,
                message: String::new(),
            }
            .severity()
        };
        assert_eq!(of(SignalCode::Unchanged, 1), Severity::Critical);
        assert_eq!(of(SignalCode::MarkupMismatch, 1), Severity::Critical);
        assert_eq!(of(SignalCode::LockedTerm, 1), Severity::Major);
        assert_eq!(of(SignalCode::NameDrift, 1), Severity::Major);
        assert_eq!(of(SignalCode::GlossaryTerm, MAJOR_PENALTY), Severity::Major);
        assert_eq!(
            of(SignalCode::GlossaryTerm, MAJOR_PENALTY - 1),
            Severity::Minor
        );
        assert_eq!(of(SignalCode::LengthRatio, 5), Severity::Minor);
    }

    #[test]
    fn validated_passages_raise_no_signal_and_residuals_say_why() {
        let mut validated = passage(
            0,
            PassageStatus::Check,
            json!([signal(SignalCode::NameDrift, 8)]),
        );
        validated.validated = true;
        let minor = passage(
            1,
            PassageStatus::Ok,
            json!([signal(SignalCode::LengthRatio, 5)]),
        );
        let unchanged = passage(
            2,
            PassageStatus::Ok,
            json!([signal(SignalCode::Unchanged, 40)]),
        );
        let mut retained = passage(3, PassageStatus::SourceRetained, json!([]));
        retained.translation = None;
        let mut failed = passage(
            4,
            PassageStatus::Error,
            json!([signal(SignalCode::GlossaryTerm, 4)]),
        );
        failed.last_error = Some("provider_error".into());
        let reasons =
            HashMap::from([("p3".to_owned(), "still unchanged after 2 rounds".to_owned())]);
        let issues = chapter_issues(&[validated, minor, unchanged, retained, failed], &reasons);
        let seen: Vec<(&str, Severity, &str)> = issues
            .iter()
            .map(|i| (i.segment_id.as_str(), i.severity, i.code.as_str()))
            .collect();
        assert_eq!(
            seen,
            [
                ("p1", Severity::Minor, SignalCode::LengthRatio.as_str()),
                ("p2", Severity::Critical, SignalCode::Unchanged.as_str()),
                ("p3", Severity::Critical, "still unchanged after 2 rounds"),
                ("p4", Severity::Minor, SignalCode::GlossaryTerm.as_str()),
                ("p4", Severity::Critical, "provider_error"),
            ]
        );
        assert_eq!(issues[2].message, DELIVERED_IN_SOURCE);
        assert_eq!(issues[0].message, "length_ratio found");
    }
}
