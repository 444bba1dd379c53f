//! Residuals (spec 2.7): the passages delivered in source text, the one
//! predicate that says which they are (the report's list and the final
//! status both read it), and the reason each is listed with.

use dragoman_model::documents::report::Residual;
use dragoman_model::entities::{chapter, passage};
use dragoman_model::quality::{is_residual, residual_reason};
use std::collections::HashMap;

/// Residuals listed in a report at most (spec 8).
pub const MAX_RESIDUALS: usize = 500;

/// What a residual's reader gets instead of a translation (`kept`).
const KEPT_SOURCE: &str = "source";

/// The residuals among `passages`, listed in reading order (at most
/// [`MAX_RESIDUALS`]), and how many there are in all.
pub fn listed(
    passages: &[passage::Model],
    chapters: &HashMap<String, chapter::Model>,
    retained: &HashMap<String, String>,
) -> (Vec<Residual>, usize) {
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
            Residual {
                chapter_external_id: c.and_then(|c| c.external_id.clone()),
                chapter_id: p.chapter_id.clone(),
                chapter_title: c.and_then(|c| c.title.clone()),
                kept: KEPT_SOURCE.to_owned(),
                position: i64::from(p.position),
                reason: residual_reason(p, retained),
                segment_id: p.id.clone(),
                status: p.status,
            }
        })
        .collect();
    (items, residuals.len())
}
