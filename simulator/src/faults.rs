//! The fault ledger: every content fault and dropped placeholder the
//! simulator put in a translation answer that went out whole, with the
//! passage that got it, in the order applied, for `GET /faults`. A test
//! compares it with what the service detected and repaired.

use std::collections::VecDeque;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::state::lock;

/// Faults kept in memory; older ones are dropped first.
pub const KEPT: usize = 100_000;

/// What was done wrong to a passage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    NameDrift,
    GlossaryViolation,
    Untranslated,
    WrongLanguage,
    DroppedPlaceholder,
}

/// One fault applied to one passage of an answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultRecord {
    pub passage_id: String,
    pub kind: FaultKind,
}

/// The ledger.
pub(super) struct FaultLedger {
    kept: usize,
    recent: Mutex<VecDeque<FaultRecord>>,
}

impl FaultLedger {
    /// Keeps the last `kept` faults.
    pub fn new(kept: usize) -> FaultLedger {
        FaultLedger {
            kept,
            recent: Mutex::new(VecDeque::new()),
        }
    }

    /// Appends one answer's faults, together so that another answer's never
    /// come between them.
    pub fn record(&self, faults: Vec<FaultRecord>) {
        if faults.is_empty() {
            return;
        }
        let mut recent = lock(&self.recent);
        for fault in faults {
            while recent.len() >= self.kept.max(1) {
                recent.pop_front();
            }
            recent.push_back(fault);
        }
    }

    /// The kept faults, oldest first.
    pub fn recent(&self) -> Vec<FaultRecord> {
        lock(&self.recent).iter().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fault(n: usize) -> FaultRecord {
        FaultRecord {
            passage_id: format!("p{n}"),
            kind: FaultKind::Untranslated,
        }
    }

    #[test]
    fn the_ledger_keeps_the_last_faults_in_order() {
        let ledger = FaultLedger::new(3);
        ledger.record(vec![fault(1), fault(2)]);
        ledger.record(Vec::new());
        ledger.record(vec![fault(3), fault(4)]);
        let ids: Vec<String> = ledger.recent().into_iter().map(|f| f.passage_id).collect();
        assert_eq!(ids, ["p2", "p3", "p4"]);
    }

    #[test]
    fn kinds_are_written_in_snake_case() {
        let record = FaultRecord {
            passage_id: "c1.p2".into(),
            kind: FaultKind::DroppedPlaceholder,
        };
        assert_eq!(
            serde_json::to_value(&record).expect("json"),
            serde_json::json!({"passage_id": "c1.p2", "kind": "dropped_placeholder"})
        );
        for (kind, text) in [
            (FaultKind::NameDrift, "name_drift"),
            (FaultKind::GlossaryViolation, "glossary_violation"),
            (FaultKind::Untranslated, "untranslated"),
            (FaultKind::WrongLanguage, "wrong_language"),
        ] {
            assert_eq!(serde_json::to_value(kind).expect("json"), text);
        }
    }
}
