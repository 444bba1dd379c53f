//! What a result says about the quality of its chapters (spec 2.6, 4.5):
//! the `issues` of each chapter, drawn from the signals the pipeline stored
//! on its passages and from its residuals, and whether the autopilot left
//! points unresolved. Residuals are told apart as the completion report
//! tells them (spec 2.7), so a result and its report agree.

use crate::error::DeliveryError;
use dragoman_model::entities::{autopilot_run, passage, request};
use dragoman_model::quality::{is_residual, residual_reason, signals_of};
use dragoman_model::vocab::{AutopilotOutcome, Severity};
use sea_orm::{ConnectionTrait, EntityTrait};
use std::collections::HashMap;

/// The message of the issue a residual passage raises.
pub const DELIVERED_IN_SOURCE: &str = "delivered in source text";

/// One entry of a chapter's `issues`.
pub use dragoman_model::documents::result::ChapterIssue as Issue;

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
    use dragoman_model::quality::{MAJOR_PENALTY, Signal};
    use dragoman_model::vocab::{PassageStatus, SignalCode};
    use serde_json::{Value, json};

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
        assert_eq!(of(SignalCode::GlossaryTerm, 1), Severity::Major);
        assert_eq!(of(SignalCode::NumberMismatch, 1), Severity::Major);
        assert_eq!(of(SignalCode::Omission, 1), Severity::Major);
        assert_eq!(of(SignalCode::Punctuation, 40), Severity::Minor);
        assert_eq!(of(SignalCode::Whitespace, 40), Severity::Minor);
        // The codes without a severity of their own go by the penalty.
        assert_eq!(of(SignalCode::LengthRatio, MAJOR_PENALTY), Severity::Major);
        assert_eq!(of(SignalCode::LengthRatio, 5), Severity::Minor);
        assert_eq!(
            of(SignalCode::ReviewerFlag, MAJOR_PENALTY - 1),
            Severity::Minor
        );
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
            json!([signal(SignalCode::Punctuation, 4)]),
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
                ("p4", Severity::Minor, SignalCode::Punctuation.as_str()),
                ("p4", Severity::Critical, "provider_error"),
            ]
        );
        assert_eq!(issues[2].message, DELIVERED_IN_SOURCE);
        assert_eq!(issues[0].message, "length_ratio found");
    }
}
