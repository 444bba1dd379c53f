//! The delivered EPUB (spec 4.5): the volume's original, rebuilt with every
//! usable translation by its passage id, chapter titles in the navigation
//! where the book's title was translated, the target language, and the
//! AI-assisted-translation mention when the book or the installation asks
//! for it, and the book's reader notes as footnotes
//! ([`crate::reader_notes`]); then validated and repaired by [`crate::epub_check`].
//!
//! The export stage of an EPUB request ([`export`]) runs this before the
//! job finishes: what validation decided goes into the request's final
//! report (`delivery`), passages a repair sent back to source become
//! residuals with reason `validator_repair`, and exhausted repairs end the
//! request `failed`. Built on demand later, the book is validated again and
//! a rejection answers 422 `delivery_failed`.

use crate::epub_check::{
    DeliveredEpub, DeliveryReport, EpubDeliveryFailed, EpubValidator, ValidatorFailure,
};
use crate::error::DeliveryError;
use crate::results::{BuiltResult, Loaded, PassageMarkup, ResultQuery, usable};
use crate::stored::ResultStore;
use dragoman_book::EpubWriteOptions;
use dragoman_book::model::Translations;
use dragoman_model::entities::{passage, request};
use dragoman_model::exports;
use dragoman_model::passages;
use dragoman_model::vocab::{ResultFormat, ResultScope};
use object_store::ObjectStore;
use object_store::path::Path;
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseConnection, EntityTrait, QueryFilter, TransactionTrait,
};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The residual reason of passages a validator made revert.
pub const VALIDATOR_REPAIR: &str = "validator_repair";

/// How EPUBs are validated: the installed validator, if any, the repair
/// attempts (`DELIVERY_REPAIR_ATTEMPTS`), and the time all validations of
/// one book may take together.
#[derive(Clone, Default)]
pub struct EpubDelivery {
    pub validator: Option<Arc<dyn EpubValidator>>,
    pub max_repairs: u32,
    /// Past it, a validation gives no verdict and the book is delivered as
    /// rebuilt so far (`validator_error` says so); `None`: no bound beyond
    /// each validation's own. It keeps the export stage within the deadline
    /// of the call that asked for it, which would otherwise be retried
    /// forever.
    pub budget: Option<Duration>,
}

/// A validator that gives up once the book's validation budget is spent.
struct WithinBudget<'a> {
    inner: &'a dyn EpubValidator,
    until: Instant,
    budget: Duration,
}

#[async_trait::async_trait]
impl EpubValidator for WithinBudget<'_> {
    async fn validate(
        &self,
        epub: &[u8],
    ) -> Result<Vec<crate::epub_check::ValidationError>, ValidatorFailure> {
        let left = self.until.saturating_duration_since(Instant::now());
        tokio::time::timeout(left, self.inner.validate(epub))
            .await
            .unwrap_or(Err(ValidatorFailure::Timeout {
                seconds: self.budget.as_secs(),
            }))
    }
}

/// The built EPUB and what it did to the passages.
pub struct BuiltEpub {
    pub bytes: Vec<u8>,
    pub report: DeliveryReport,
    /// Stored passages (their row ids) a repair sent back to source.
    pub restored: Vec<String>,
}

/// Builds the EPUB of `loaded` (the request's chapters: the whole book).
pub(crate) async fn build(
    db: &impl ConnectionTrait,
    blobs: &dyn ObjectStore,
    delivery: &EpubDelivery,
    loaded: &Loaded,
) -> Result<BuiltEpub, DeliveryError> {
    let key =
        loaded.volume.original_blob.clone().ok_or_else(|| {
            DeliveryError::DeliveryFailed("the volume keeps no original EPUB".into())
        })?;
    let original = blobs
        .get(&Path::from(key.as_str()))
        .await
        .map_err(DeliveryError::blob(format!("original {key}")))?
        .bytes()
        .await
        .map_err(DeliveryError::blob(format!("original {key}")))?;
    let mut translations = Translations::new();
    // Passage id in the book → stored passage, to name restored passages.
    let mut rows: HashMap<String, String> = HashMap::new();
    for chapter in &loaded.chapters {
        for p in loaded
            .passages
            .get(&chapter.id)
            .map(Vec::as_slice)
            .unwrap_or(&[])
        {
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
        notes: crate::reader_notes::load(db, loaded)
            .await?
            .by_reference(loaded),
    };
    let bounded = match (delivery.validator.as_deref(), delivery.budget) {
        (Some(inner), Some(budget)) => Some(WithinBudget {
            inner,
            until: Instant::now() + budget,
            budget,
        }),
        _ => None,
    };
    let validator = match &bounded {
        Some(bounded) => Some(bounded as &dyn EpubValidator),
        None => delivery.validator.as_deref(),
    };
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
        Err(EpubDeliveryFailed::Rejected { report }) => {
            Err(DeliveryError::EpubRejected(Box::new(report)))
        }
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

/// What the export stage of an EPUB request decided.
pub struct ExportOutcome {
    /// `report.delivery`.
    pub delivery: DeliveryReport,
    /// Repairs are exhausted: the request fails and nothing is stored.
    pub failed: bool,
}

/// The export stage of an EPUB request: builds the book from its original
/// with every usable translation, validates and repairs it, marks the
/// passages a repair restored (source text from now on, in every format,
/// listed as residuals with reason `validator_repair`), and stores the
/// book as the request's result. Run before the job finishes, so the
/// request's final status and report already say what delivery decided.
pub async fn export(
    db: &DatabaseConnection,
    store: &ResultStore,
    request_id: &str,
) -> Result<ExportOutcome, DeliveryError> {
    let row = request::Entity::find_by_id(request_id.to_owned())
        .one(db)
        .await?
        .ok_or(DeliveryError::RequestNotFound)?;
    let loaded =
        crate::results::load(db, &row.account_id, request_id, ResultScope::Request).await?;
    let built = match build(db, store.blobs.as_ref(), &store.epub, &loaded).await {
        Ok(built) => built,
        Err(DeliveryError::EpubRejected(report)) => {
            return Ok(ExportOutcome {
                delivery: *report,
                failed: true,
            });
        }
        Err(e) => return Err(e),
    };
    restore(db, &built.restored).await?;
    let query = ResultQuery::stored(&row);
    store
        .keep(
            db,
            &row,
            &query,
            BuiltResult {
                media_type: ResultFormat::Epub.media_type(),
                filename: crate::results::filename(&loaded, ResultFormat::Epub),
                complete: built.restored.is_empty(),
                body: built.bytes,
            },
        )
        .await?;
    Ok(ExportOutcome {
        delivery: built.report,
        failed: false,
    })
}

/// Sends passages a validator rejected back to source for good.
async fn restore(db: &DatabaseConnection, passages: &[String]) -> Result<(), DeliveryError> {
    if passages.is_empty() {
        return Ok(());
    }
    let txn = db.begin().await?;
    let now = dragoman_model::clock::now();
    for p in passage::Entity::find()
        .filter(passage::Column::Id.is_in(passages.to_vec()))
        .all(&txn)
        .await?
    {
        passages::return_to_source_after_epub_repair(&txn, &p, VALIDATOR_REPAIR, now).await?;
    }
    txn.commit().await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use dragoman_book::model::ResidualReason;

    #[test]
    fn the_repair_reason_is_the_writers_own() {
        assert_eq!(
            serde_json::to_value(ResidualReason::ValidatorRepair).ok(),
            Some(serde_json::json!(VALIDATOR_REPAIR))
        );
    }
}
