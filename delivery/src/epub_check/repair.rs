//! The delivery loop: rebuild, validate, revert the files the errors name,
//! rebuild again, and the `report.delivery` it produces.
//!
//! A file reverts by dropping from the translations every passage written
//! into it: the passages of the chapters whose source is that file, the
//! `toc.*` titles for the nav document or the NCX (the rebuilt book's, which
//! an EPUB 2 → 3 upgrade may have added), the `meta.*` passages for the
//! package document. Only passages written in translation are dropped, so a
//! passage already kept for a markup mismatch keeps that reason.
//!
//! `validation.valid` is the validator's verdict on the delivered book:
//! `true` only when it found no error at all. A book that keeps only errors
//! of the original is delivered with `valid: false` and those errors in
//! `inherited_errors`; saying `true` there would claim more than the
//! validator did.
//!
//! The original is validated only when the rebuilt book has errors: a clean
//! rebuild has nothing to inherit, and one JVM run is saved.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use dragoman_book::{
    Book, BookError, EpubLayout, EpubWriteOptions, ResidualReason, Translations, WriteReport,
    epub_layout, read_epub, write_epub,
};

use super::validator::{EpubValidator, ErrorKey, ValidationError, dedupe};

/// `report.delivery` (EPUB only), its `validation` and each repair
/// attempt.
pub use dragoman_model::documents::report::{DeliveryReport, EpubValidation as Validation, Repair};

/// The delivered EPUB and what delivering it took.
#[derive(Debug, Clone)]
pub struct DeliveredEpub {
    pub bytes: Vec<u8>,
    pub report: DeliveryReport,
    /// Passage ids reverted to source by repairs, in the order reverted.
    pub restored: Vec<String>,
    /// The last rebuild's report; restored passages are residuals with
    /// reason [`ResidualReason::ValidatorRepair`].
    pub write: WriteReport,
}

/// Why no EPUB is delivered.
#[derive(Debug, thiserror::Error)]
pub enum EpubDeliveryFailed {
    /// The validator still rejects the book after every repair attempt; the
    /// report's `errors` lists what is left.
    #[error("the EPUB validator still rejects the book after {} repair attempts", .report.repairs.len())]
    Rejected { report: DeliveryReport },
    /// The book could not be rebuilt from the original.
    #[error("the EPUB could not be rebuilt: {0}")]
    Write(#[from] BookError),
    /// The blocking rebuild task did not complete (it panicked).
    #[error("the EPUB rebuild stopped: {0}")]
    Task(String),
}

impl EpubDeliveryFailed {
    /// The delivery report, when the failure came from validation.
    pub fn report(&self) -> Option<&DeliveryReport> {
        match self {
            EpubDeliveryFailed::Rejected { report } => Some(report),
            _ => None,
        }
    }
}

/// Rebuilds `original` with `translations`; with a `validator`, validates and
/// repairs at most `max_repairs` times (see the module doc). Rebuilding runs
/// on the blocking pool and validation on the validator's own terms, so the
/// caller only has to run this off its request handlers.
pub async fn deliver_epub(
    original: &[u8],
    translations: Translations,
    options: &EpubWriteOptions,
    validator: Option<&dyn EpubValidator>,
    max_repairs: u32,
) -> Result<DeliveredEpub, EpubDeliveryFailed> {
    let original: Arc<[u8]> = Arc::from(original);
    let options = Arc::new(options.clone());
    let mut current = translations;
    let (mut bytes, mut write) = rebuild(&original, &current, &options).await?;
    let mut report = DeliveryReport::default();
    let mut restored: Vec<String> = Vec::new();
    let Some(validator) = validator else {
        return Ok(DeliveredEpub {
            bytes,
            report,
            restored,
            write,
        });
    };
    report.validation.available = true;
    let mut inherited: Option<HashSet<ErrorKey>> = None;
    let mut book_cache: Option<Arc<Book>> = None;
    let empty = HashSet::new();
    let mut reverted: HashSet<String> = HashSet::new();
    let mut attempt = 0u32;
    loop {
        let errors = match validator.validate(&bytes).await {
            Ok(errors) => dedupe(errors),
            Err(failure) => {
                // Errors of an earlier round describe a book no longer delivered.
                report.inherited_errors.clear();
                report.validator_error = Some(failure.to_string());
                break;
            }
        };
        if errors.is_empty() {
            report.inherited_errors.clear();
            report.validation.valid = Some(true);
            break;
        }
        if inherited.is_none() {
            match validator.validate(&original).await {
                Ok(errors) => inherited = Some(errors.iter().map(ErrorKey::of).collect()),
                Err(failure) => {
                    report.validator_error = Some(format!("validating the original: {failure}"));
                    break;
                }
            }
        }
        let inherited = inherited.as_ref().map_or(&empty, |k| k);
        let (old, new): (Vec<_>, Vec<_>) = errors
            .into_iter()
            .partition(|e| inherited.contains(&ErrorKey::of(e)));
        report.inherited_errors = old;
        if new.is_empty() {
            report.validation.valid = Some(false);
            break;
        }
        if attempt >= max_repairs {
            report.validation.valid = Some(false);
            report.errors = new;
            return Err(EpubDeliveryFailed::Rejected { report });
        }
        attempt += 1;
        let book = match book_cache.clone() {
            Some(b) => b,
            None => {
                let b = Arc::new(read(&original).await?);
                book_cache = Some(b.clone());
                b
            }
        };
        let layout = layout(&bytes).await;
        let (files, drop) =
            passages_to_revert(&book, layout.as_ref(), &new, &current, &write, &reverted);
        report.repairs.push(Repair {
            attempt,
            errors: new,
            files,
            passages_restored: u64::try_from(drop.len()).unwrap_or(u64::MAX),
        });
        reverted.extend(drop.iter().cloned());
        restored.extend(drop);
        current = without(&book, &current, &reverted);
        (bytes, write) = rebuild(&original, &current, &options).await?;
    }
    let restored_set: HashSet<&str> = restored.iter().map(String::as_str).collect();
    for r in &mut write.residuals {
        if restored_set.contains(r.passage_id.as_str()) {
            r.reason = ResidualReason::ValidatorRepair;
        }
    }
    Ok(DeliveredEpub {
        bytes,
        report,
        restored,
        write,
    })
}

/// The files the errors name, in order, that reverted something, and the
/// passage ids to drop (in file order, then book order). An id is dropped
/// when it was written in translation in the last rebuild.
fn passages_to_revert(
    book: &Book,
    layout: Option<&EpubLayout>,
    errors: &[ValidationError],
    current: &Translations,
    write: &WriteReport,
    reverted: &HashSet<String>,
) -> (Vec<String>, Vec<String>) {
    let kept: HashSet<&str> = write
        .residuals
        .iter()
        .map(|r| r.passage_id.as_str())
        .collect();
    let translated =
        |id: &str| current.get(id).is_some() && !kept.contains(id) && !reverted.contains(id);
    let by_file = ids_by_file(book, layout);
    let mut files: Vec<String> = Vec::new();
    let mut drop: Vec<String> = Vec::new();
    let mut dropped: HashSet<&str> = HashSet::new();
    let mut seen: HashSet<&str> = HashSet::new();
    for file in errors.iter().filter_map(|e| e.file.as_deref()) {
        if !seen.insert(file) {
            continue;
        }
        let ids: Vec<&String> = by_file
            .get(file)
            .into_iter()
            .flatten()
            .filter(|id| translated(id) && dropped.insert(id.as_str()))
            .collect();
        if !ids.is_empty() {
            files.push(file.to_string());
            drop.extend(ids.into_iter().cloned());
        }
    }
    (files, drop)
}

/// Every passage id by the archive file it is written into.
pub(super) fn ids_by_file(
    book: &Book,
    layout: Option<&EpubLayout>,
) -> HashMap<String, Vec<String>> {
    let mut map: HashMap<String, Vec<String>> = HashMap::new();
    for c in &book.chapters {
        map.entry(c.source.clone())
            .or_default()
            .extend(c.passages.iter().map(|p| p.id.clone()));
    }
    let extra = |prefix: &str| -> Vec<String> {
        book.extra_passages
            .iter()
            .filter(|p| p.id.starts_with(prefix))
            .map(|p| p.id.clone())
            .collect()
    };
    if let Some(layout) = layout {
        // A nav document in the spine is a chapter: its titles are that
        // chapter's passages, and the `toc.*` titles live in the NCX.
        let nav = layout.nav.iter().filter(|n| !map.contains_key(*n));
        for file in nav.chain(&layout.ncx).cloned().collect::<Vec<_>>() {
            map.entry(file).or_default().extend(extra("toc."));
        }
        map.entry(layout.package.clone())
            .or_default()
            .extend(extra("meta."));
    }
    map
}

/// `current` without the `reverted` ids (Translations has no removal; the
/// book lists every id a translation can have).
fn without(book: &Book, current: &Translations, reverted: &HashSet<String>) -> Translations {
    book.passages()
        .chain(&book.extra_passages)
        .filter(|p| !reverted.contains(&p.id))
        .filter_map(|p| current.get(&p.id).map(|t| (p.id.clone(), t.to_string())))
        .collect()
}

async fn rebuild(
    original: &Arc<[u8]>,
    translations: &Translations,
    options: &Arc<EpubWriteOptions>,
) -> Result<(Vec<u8>, WriteReport), EpubDeliveryFailed> {
    let (original, translations, options) =
        (original.clone(), translations.clone(), options.clone());
    blocking(move || write_epub(&original, &translations, &options)).await
}

async fn read(original: &Arc<[u8]>) -> Result<Book, EpubDeliveryFailed> {
    let original = original.clone();
    blocking(move || read_epub(&original)).await
}

/// The rebuilt book's layout; `None` only if the book just written cannot be
/// read back, and then chapter files can still be repaired.
async fn layout(bytes: &[u8]) -> Option<EpubLayout> {
    let bytes = bytes.to_vec();
    match blocking(move || epub_layout(&bytes)).await {
        Ok(layout) => Some(layout),
        Err(e) => {
            tracing::warn!(error = %e, "the rebuilt EPUB's package could not be read back");
            None
        }
    }
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, BookError> + Send + 'static,
) -> Result<T, EpubDeliveryFailed> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| EpubDeliveryFailed::Task(e.to_string()))?
        .map_err(EpubDeliveryFailed::Write)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_serializes_with_the_spec_field_names() {
        let report = DeliveryReport {
            validation: Validation {
                available: true,
                valid: Some(true),
            },
            repairs: vec![Repair {
                attempt: 1,
                errors: vec![],
                files: vec!["OEBPS/c1.xhtml".into()],
                passages_restored: 2,
            }],
            ..DeliveryReport::default()
        };
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "validation": {"available": true, "valid": true},
                "repairs": [{"attempt": 1, "errors": [], "files": ["OEBPS/c1.xhtml"], "passages_restored": 2}],
                "inherited_errors": []
            })
        );
        let unavailable = serde_json::to_value(DeliveryReport::default()).unwrap();
        assert_eq!(
            unavailable["validation"],
            serde_json::json!({"available": false, "valid": null})
        );
    }
}
