//! A person's translation of a passage held to the checks of every
//! translation ([`crate::quality::assess`]): the same signals and the same
//! score. Only the status differs: a person's translation is always
//! delivered, so what would put a machine's translation in `error` or
//! `refused` (or keep its source) only flags it for another look. The
//! status is `check` when the checks found a major or critical signal,
//! `ok` otherwise; a low score alone is the report's business
//! (`quality.to_review`), not the passage's status.

use crate::quality::{self, Assessment, Check, Sheet};
use dragoman_model::vocab::PassageStatus;
use dragoman_proto::v1::{AssessEditRequest, EditAssessment};
use dragoman_proto::wire::WireEnum;

/// The score under which the checks would flag a translation by its score
/// alone: none for a person's, see the module's documentation.
const NO_SCORE_FLAG: i32 = 0;

/// The assessment of a person's translation: CPU work (sentences aligned,
/// numbers read every way), done on a blocking thread so that the
/// process's other roles keep answering.
pub async fn assess_edit(ask: AssessEditRequest) -> Result<EditAssessment, tokio::task::JoinError> {
    tokio::task::spawn_blocking(move || answer(&assess(&ask))).await
}

/// The checks' assessment of the translation asked, with the status a
/// person's translation takes.
pub fn assess(ask: &AssessEditRequest) -> Assessment {
    let sheet = Sheet::from(ask.sheet.clone().unwrap_or_default());
    let found = quality::assess(
        &Check {
            source: &ask.source,
            translation: Some(&ask.translation),
            source_language: &ask.source_language,
            target_language: &ask.target_language,
            flags: &[],
        },
        &sheet,
        NO_SCORE_FLAG,
    );
    let flagged = found.status != PassageStatus::Ok || found.signals.iter().any(|s| s.serious());
    Assessment {
        status: if flagged {
            PassageStatus::Check
        } else {
            PassageStatus::Ok
        },
        ..found
    }
}

fn answer(assessment: &Assessment) -> EditAssessment {
    EditAssessment {
        score: assessment.score,
        signals: assessment.signals.iter().cloned().map(Into::into).collect(),
        status: assessment.status.to_wire(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dragoman_model::vocab::SignalCode;
    use dragoman_proto::v1::{QualitySheetResponse, SheetTerm as WireTerm};

    fn ask(source: &str, translation: &str) -> AssessEditRequest {
        AssessEditRequest {
            source: source.to_owned(),
            translation: translation.to_owned(),
            source_language: "en".to_owned(),
            target_language: "fr".to_owned(),
            sheet: Some(QualitySheetResponse {
                terms: vec![WireTerm {
                    source: "WARPCORE".to_owned(),
                    translation: "cœur-de-distorsion".to_owned(),
                    locked: true,
                }],
                names: vec![],
            }),
        }
    }

    #[test]
    fn a_clean_translation_is_ok_and_a_missing_locked_term_is_flagged() {
        let clean = assess(&ask(
            "The engineer carried the WARPCORE to the ship before dawn.",
            "L'ingénieur porta le cœur-de-distorsion jusqu'au navire avant l'aube.",
        ));
        assert_eq!(clean.status, PassageStatus::Ok, "{clean:?}");
        let missing = assess(&ask(
            "The engineer carried the WARPCORE to the ship before dawn.",
            "L'ingénieur porta le moteur jusqu'au navire avant l'aube.",
        ));
        assert_eq!(missing.status, PassageStatus::Check);
        assert!(missing.score < clean.score);
        assert!(
            missing
                .signals
                .iter()
                .any(|s| s.code == SignalCode::LockedTerm)
        );
    }

    #[test]
    fn what_would_reject_a_machine_translation_only_flags_a_persons() {
        // The source sent back: `unchanged` makes a machine's translation an
        // error, a person's stays delivered with a check.
        let text = "The engineer carried the heavy box to the ship before dawn.";
        let same = assess(&ask(text, text));
        assert_eq!(same.status, PassageStatus::Check);
        assert!(same.signals.iter().any(|s| s.code == SignalCode::Unchanged));
        let wire = answer(&same);
        assert_eq!(wire.score, same.score);
        assert_eq!(wire.signals.len(), same.signals.len());
        assert_eq!(
            PassageStatus::from_wire(wire.status, "status").ok(),
            Some(PassageStatus::Check)
        );
    }
}
