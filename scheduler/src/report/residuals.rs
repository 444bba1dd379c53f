//! Residuals (spec 2.7): the passages delivered in source text, the one
//! predicate that says which they are (the report's list and the final
//! status both read it), and the reason each is listed with.

use super::quality::signals_of;
use dragoman_model::entities::{chapter, passage};
use dragoman_model::vocab::{PassageStatus, SignalCode};
use serde_json::{Value, json};
use std::collections::HashMap;

/// Residuals listed in a report at most (spec 8).
pub const MAX_RESIDUALS: usize = 500;

/// What a residual's reader gets instead of a translation (`kept`).
const KEPT_SOURCE: &str = "source";

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
/// "translation" that still is the source (spec 2.7). Decides both the
/// report's residuals and whether the request completed with residuals.
pub fn is_residual(p: &passage::Model) -> bool {
    !p.is_translated() || open_alert(p).is_some()
}

/// Why a residual kept its source text: the autopilot's reason when it
/// retained the passage, the open alert of a translation that is the
/// source, the passage's last error, or what its status says.
pub fn reason(p: &passage::Model, retained: &HashMap<String, String>) -> String {
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

/// The residuals among `passages`, listed in reading order (at most
/// [`MAX_RESIDUALS`]), and how many there are in all.
pub fn listed(
    passages: &[passage::Model],
    chapters: &HashMap<String, chapter::Model>,
    retained: &HashMap<String, String>,
) -> (Vec<Value>, usize) {
    let mut residuals: Vec<&passage::Model> = passages.iter().filter(|p| is_residual(p)).collect();
    residuals.sort_by_key(|p| {
        (
            chapters.get(&p.chapter_id).map(|c| c.position).unwrap_or(0),
            p.position,
        )
    });
    let items = residuals
        .iter()
        .take(MAX_RESIDUALS)
        .map(|p| {
            let c = chapters.get(&p.chapter_id);
            json!({
                "segment_id": p.id,
                "chapter_id": p.chapter_id,
                "chapter_external_id": c.and_then(|c| c.external_id.clone()),
                "chapter_title": c.and_then(|c| c.title.clone()),
                "position": p.position,
                "status": p.status,
                "kept": KEPT_SOURCE,
                "reason": reason(p, retained),
            })
        })
        .collect();
    (items, residuals.len())
}
