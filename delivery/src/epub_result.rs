//! The delivered EPUB (spec 4.5): the volume's original, rebuilt with every
//! usable translation by its passage id, chapter titles in the navigation
//! where the book's title was translated, the target language, and the
//! AI-assisted-translation mention when the book or the installation asks
//! for it; then validated and repaired by [`crate::epub_check`].
//!
//! When the stored result is built, what validation decided is written back
//! to the request: the report's `delivery` section, the passages a repair
//! sent back to source (residuals with reason `validator_repair`), or, when
//! repairs are exhausted, the request's end as `failed`.

use crate::epub_check::{DeliveredEpub, DeliveryReport, EpubDeliveryFailed, EpubValidator};
use crate::error::DeliveryError;
use crate::results::{BuiltEpubFacts, Loaded, PassageMarkup, usable};
use dragoman_book::EpubWriteOptions;
use dragoman_book::model::Translations;
use dragoman_model::entities::{chapter, passage, request};
use dragoman_model::exports;
use dragoman_model::vocab::{PassageStatus, RequestStatus};
use object_store::ObjectStore;
use object_store::path::Path;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, Set,
    TransactionTrait,
};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;

/// The residual reason of passages a validator made revert.
pub const VALIDATOR_REPAIR: &str = "validator_repair";
/// The request's `stop_reason` when its EPUB cannot be delivered.
pub const DELIVERY_FAILED: &str = "delivery_failed";

/// How EPUBs are validated: the installed validator, if any, and the
/// repair attempts (`DELIVERY_REPAIR_ATTEMPTS`).
#[derive(Clone, Default)]
pub struct EpubDelivery {
    pub validator: Option<Arc<dyn EpubValidator>>,
    pub max_repairs: u32,
}

/// The built EPUB and what it did to the passages.
pub struct BuiltEpub {
    pub bytes: Vec<u8>,
    pub report: DeliveryReport,
    /// Stored passages (their row ids) a repair sent back to source.
    pub restored: Vec<String>,
}

/// Builds the EPUB of `loaded` (the request's chapters: the whole book).
pub async fn build(
    db: &impl ConnectionTrait,
    blobs: &dyn ObjectStore,
    delivery: &EpubDelivery,
    loaded: &Loaded,
) -> Result<BuiltEpub, DeliveryError> {
    let key = loaded
        .volume
        .original_blob
        .clone()
        .ok_or_else(|| DeliveryError::DeliveryFailed("the volume keeps no original EPUB".into()))?;
    let original = blobs
        .get(&Path::from(key.as_str()))
        .await
        .map_err(|e| DeliveryError::Blob(format!("original {key}: {e}")))?
        .bytes()
        .await
        .map_err(|e| DeliveryError::Blob(format!("original {key}: {e}")))?;
    let mut translations = Translations::new();
    // Passage id in the book → stored passage, to name restored passages.
    let mut rows: HashMap<String, String> = HashMap::new();
    for chapter in &loaded.chapters {
        for p in loaded.passages.get(&chapter.id).map(Vec::as_slice).unwrap_or(&[]) {
            let Some(reference) = PassageMarkup::of(p).reference else {
                continue;
            };
            if let Some(text) = usable(p) {
                translations.insert(reference.clone(), text);
            }
            rows.insert(reference, p.id.clone());
        }
    }
    add_toc_titles(&original, loaded, &mut translations).await?;
    let options = EpubWriteOptions {
        target_language: loaded.volume.target_language.clone(),
        ai_mention: exports::discloses(db, &loaded.volume)
            .await?
            .then(|| exports::AI_MENTION.to_owned()),
        notes: Vec::new(),
    };
    let validator = delivery.validator.as_deref();
    match crate::epub_check::deliver_epub(
        &original,
        translations,
        &options,
        validator,
        delivery.max_repairs,
    )
    .await
    {
        Ok(DeliveredEpub {
            bytes,
            report,
            restored,
            ..
        }) => Ok(BuiltEpub {
            bytes,
            report,
            restored: restored
                .iter()
                .filter_map(|reference| rows.get(reference).cloned())
                .collect(),
        }),
        Err(EpubDeliveryFailed::Rejected { report }) => Err(DeliveryError::EpubRejected(
            serde_json::to_value(report).unwrap_or(Value::Null),
        )),
        Err(e) => Err(DeliveryError::DeliveryFailed(e.to_string())),
    }
}

/// Navigation titles take the translated title of the chapter they point
/// to, when they give that chapter's own title.
async fn add_toc_titles(
    original: &[u8],
    loaded: &Loaded,
    translations: &mut Translations,
) -> Result<(), DeliveryError> {
    let translated: HashMap<String, (String, String)> = loaded
        .chapters
        .iter()
        .filter_map(|c| {
            let source = c.mapping.as_ref()?.get("source")?.as_str()?.to_owned();
            Some((source, (c.title.clone()?, c.translated_title.clone()?)))
        })
        .collect();
    if translated.is_empty() {
        return Ok(());
    }
    let bytes = original.to_vec();
    let book = tokio::task::spawn_blocking(move || dragoman_book::read_epub(&bytes))
        .await
        .map_err(|e| DeliveryError::DeliveryFailed(format!("reading the original stopped: {e}")))?
        .map_err(|e| DeliveryError::DeliveryFailed(format!("the original no longer reads: {e}")))?;
    for entry in &book.toc {
        let path = entry.href.split('#').next().unwrap_or("");
        if let Some((title, target)) = translated.get(path)
            && title.trim() == entry.title.trim()
        {
            translations.insert(entry.id.clone(), target.clone());
        }
    }
    Ok(())
}

/// Writes what delivering the stored EPUB decided into the request: the
/// `delivery` section, and the passages a repair restored (source text from
/// now on, in every format), listed as residuals.
pub async fn record_delivery(
    db: &impl TransactionTrait,
    row: &request::Model,
    built: &BuiltEpubFacts,
) -> Result<(), DeliveryError> {
    let txn = db.begin().await?;
    let now = dragoman_model::clock::now();
    let mut restored = Vec::new();
    if !built.restored.is_empty() {
        restored = passage::Entity::find()
            .filter(passage::Column::Id.is_in(built.restored.clone()))
            .all(&txn)
            .await?;
        for p in &restored {
            let mut model: passage::ActiveModel = p.clone().into();
            model.status = Set(PassageStatus::SourceRetained);
            model.last_error = Set(Some(VALIDATOR_REPAIR.to_owned()));
            model.updated_at = Set(now);
            model.update(&txn).await?;
        }
    }
    let chapters: HashMap<String, chapter::Model> = chapter::Entity::find()
        .filter(chapter::Column::Id.is_in(restored.iter().map(|p| p.chapter_id.clone())))
        .all(&txn)
        .await?
        .into_iter()
        .map(|c| (c.id.clone(), c))
        .collect();
    let mut report = row.report.clone().unwrap_or_else(|| json!({}));
    report["delivery"] = serde_json::to_value(&built.report).unwrap_or(Value::Null);
    add_residuals(&mut report, &restored, &chapters);
    let mut model: request::ActiveModel = row.clone().into();
    if !restored.is_empty() && row.status == RequestStatus::Completed {
        model.status = Set(RequestStatus::CompletedWithResiduals);
        report["outcome"] = json!(RequestStatus::CompletedWithResiduals);
        report["reason"] = json!(VALIDATOR_REPAIR);
    }
    model.report = Set(Some(report));
    model.updated_at = Set(now);
    model.update(&txn).await?;
    txn.commit().await?;
    Ok(())
}

/// Ends the request `failed`: its EPUB cannot be delivered, and the
/// report says which errors remained (spec 3, 4.5).
pub async fn record_failure(
    db: &impl ConnectionTrait,
    row: &request::Model,
    delivery: Value,
) -> Result<(), DeliveryError> {
    let mut report = row.report.clone().unwrap_or_else(|| json!({}));
    report["delivery"] = delivery;
    report["outcome"] = json!(RequestStatus::Failed);
    report["reason"] = json!(DELIVERY_FAILED);
    let mut model: request::ActiveModel = row.clone().into();
    model.status = Set(RequestStatus::Failed);
    model.error = Set("the EPUB validator still rejects the book after every repair".into());
    model.stop_reason = Set(DELIVERY_FAILED.into());
    model.report = Set(Some(report));
    model.updated_at = Set(dragoman_model::clock::now());
    model.update(db).await?;
    Ok(())
}

/// Adds restored passages (as they were before the repair) to the report's
/// residuals and counts.
fn add_residuals(
    report: &mut Value,
    restored: &[passage::Model],
    chapters: &HashMap<String, chapter::Model>,
) {
    if restored.is_empty() {
        return;
    }
    let bump = |value: &mut Value, by: i64| {
        let now = value.as_i64().unwrap_or(0);
        *value = json!((now + by).max(0));
    };
    let count = i64::try_from(restored.len()).unwrap_or(i64::MAX);
    bump(&mut report["residual_total"], count);
    bump(&mut report["passages"]["source_retained"], count);
    bump(&mut report["passages"]["translated"], -count);
    bump(&mut report["passages"]["by_status"]["source_retained"], count);
    for p in restored {
        let was = match p.status {
            PassageStatus::Check => "check",
            PassageStatus::Error | PassageStatus::Refused => "error",
            _ => "ok",
        };
        bump(&mut report["passages"]["by_status"][was], -1);
    }
    let mut items = report["residuals"].as_array().cloned().unwrap_or_default();
    let room = crate::results::MAX_RESIDUALS.saturating_sub(items.len());
    items.extend(restored.iter().take(room).map(|p| {
        let chapter = chapters.get(&p.chapter_id);
        json!({
            "segment_id": p.id,
            "chapter_id": p.chapter_id,
            "chapter_external_id": chapter.and_then(|c| c.external_id.clone()),
            "chapter_title": chapter.and_then(|c| c.title.clone()),
            "position": p.position,
            "status": PassageStatus::SourceRetained,
            "kept": "source",
            "reason": VALIDATOR_REPAIR,
        })
    }));
    let total = report["residual_total"].as_u64().unwrap_or(0);
    report["residuals_truncated"] = json!(total > items.len() as u64);
    report["residuals"] = Value::Array(items);
}
