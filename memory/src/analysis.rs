//! Planning and recording the analysis of passages.
//!
//! A passage is analysed once: a stored row (even a failed or empty one)
//! keeps it out of every later plan, and a passage whose text the same
//! account had analysed before (in any of its volumes) takes a copy of that
//! analysis instead of a provider call.

use crate::domain::{AnalysisPlan, PassageExtraction, PendingPassage};
use crate::error::MemoryResult;
use crate::normalize::source_key;
use crate::store::{self, CHUNK};
use dragoman_model::clock;
use dragoman_model::entities::{passage, passage_analysis, project};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder, Set,
};
use std::collections::HashMap;

/// A new, unreconciled analysis row of `passage`.
fn new_row(
    volume: &project::Model,
    passage: &passage::Model,
    extraction: serde_json::Value,
    failed: bool,
) -> passage_analysis::ActiveModel {
    passage_analysis::ActiveModel {
        passage_id: Set(passage.id.clone()),
        project_id: Set(volume.id.clone()),
        account_id: Set(volume.account_id.clone()),
        source_key: Set(source_key(&volume.source_language, &passage.source)),
        extraction: Set(extraction),
        reconciled: Set(false),
        failed: Set(failed),
        created_at: Set(clock::now()),
    }
}

/// Stores a row unless the passage has one already (two plans racing).
async fn insert_row(
    db: &impl ConnectionTrait,
    row: passage_analysis::ActiveModel,
) -> MemoryResult<()> {
    passage_analysis::Entity::insert(row)
        .on_conflict_do_nothing()
        .exec_without_returning(db)
        .await?;
    Ok(())
}

/// The passages of `chapter_ids` (the whole volume when empty) still to
/// analyse; blank passages get an empty analysis and earlier analyses of
/// the same text by the same account are copied.
pub async fn plan(
    db: &impl ConnectionTrait,
    volume: &project::Model,
    chapter_ids: &[String],
) -> MemoryResult<AnalysisPlan> {
    let chapters = (!chapter_ids.is_empty()).then_some(chapter_ids);
    let passages = store::reading_order(db, &volume.id, chapters).await?;
    let ids: Vec<String> = passages.iter().map(|p| p.id.clone()).collect();
    let stored = store::analyses_of_passages(db, &ids).await?;
    let mut plan = AnalysisPlan {
        total: passages.len(),
        ..AnalysisPlan::default()
    };
    let mut pending: Vec<(&passage::Model, String)> = Vec::new();
    for passage in &passages {
        if stored.contains_key(&passage.id) {
            plan.done += 1;
        } else if passage.source.trim().is_empty() {
            // Nothing to analyse; the empty row keeps it out of later plans.
            let empty = serde_json::to_value(crate::domain::Extraction::default())
                .unwrap_or(serde_json::Value::Null);
            insert_row(db, new_row(volume, passage, empty, false)).await?;
            plan.done += 1;
        } else {
            pending.push((
                passage,
                source_key(&volume.source_language, &passage.source),
            ));
        }
    }
    let earlier = earlier_analyses(db, &volume.account_id, &pending).await?;
    for (passage, key) in pending {
        match earlier.get(&key) {
            Some(extraction) => {
                insert_row(db, new_row(volume, passage, extraction.clone(), false)).await?;
                plan.done += 1;
                plan.recalled += 1;
            }
            None => plan.passages.push(PendingPassage {
                id: passage.id.clone(),
                text: passage.source.clone(),
            }),
        }
    }
    Ok(plan)
}

/// The oldest usable extraction of the account for each of these source
/// keys.
async fn earlier_analyses(
    db: &impl ConnectionTrait,
    account_id: &str,
    pending: &[(&passage::Model, String)],
) -> MemoryResult<HashMap<String, serde_json::Value>> {
    let mut keys: Vec<String> = pending.iter().map(|(_, k)| k.clone()).collect();
    keys.sort();
    keys.dedup();
    let mut found: HashMap<String, serde_json::Value> = HashMap::new();
    for chunk in keys.chunks(CHUNK) {
        let rows = passage_analysis::Entity::find()
            .filter(passage_analysis::Column::AccountId.eq(account_id))
            .filter(passage_analysis::Column::Failed.eq(false))
            .filter(passage_analysis::Column::SourceKey.is_in(chunk.iter().cloned()))
            .order_by_asc(passage_analysis::Column::CreatedAt)
            .order_by_asc(passage_analysis::Column::PassageId)
            .all(db)
            .await?;
        for row in rows {
            found.entry(row.source_key).or_insert(row.extraction);
        }
    }
    Ok(found)
}

/// Stores the analyses of passages of the volume, one row per passage.
/// Recording the same analysis again changes nothing; another analysis of
/// a passage replaces the stored one and is merged again. Passages not of
/// the volume are skipped. Answers the rows stored.
pub async fn record(
    db: &impl ConnectionTrait,
    volume: &project::Model,
    analyses: &[PassageExtraction],
) -> MemoryResult<usize> {
    let ids: Vec<String> = analyses.iter().map(|a| a.passage_id.clone()).collect();
    let mut passages: HashMap<String, passage::Model> = HashMap::new();
    for chunk in ids.chunks(CHUNK) {
        for p in passage::Entity::find()
            .filter(passage::Column::Id.is_in(chunk.iter().cloned()))
            .filter(passage::Column::ProjectId.eq(volume.id.as_str()))
            .all(db)
            .await?
        {
            passages.insert(p.id.clone(), p);
        }
    }
    let stored = store::analyses_of_passages(db, &ids).await?;
    let mut count = 0;
    for analysis in analyses {
        let Some(passage) = passages.get(&analysis.passage_id) else {
            tracing::debug!(passage = %analysis.passage_id, "analysis of a passage not in the volume; skipped");
            continue;
        };
        let extraction = if analysis.failed {
            serde_json::Value::Object(Default::default())
        } else {
            serde_json::to_value(&analysis.extraction)
                .unwrap_or(serde_json::Value::Object(Default::default()))
        };
        match stored.get(&passage.id) {
            Some(row) if row.extraction == extraction && row.failed == analysis.failed => {}
            Some(row) => {
                let mut update: passage_analysis::ActiveModel = row.clone().into();
                update.extraction = Set(extraction);
                update.failed = Set(analysis.failed);
                update.reconciled = Set(false);
                update.source_key = Set(source_key(&volume.source_language, &passage.source));
                update.update(db).await?;
            }
            None => insert_row(db, new_row(volume, passage, extraction, analysis.failed)).await?,
        }
        count += 1;
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use crate::backend::MemoryBackend;
    use crate::domain::Extraction;
    use crate::testing::{Fixture, analysis, character, found};
    use dragoman_model::entities::passage_analysis;
    use dragoman_model::vocab::Quality;
    use sea_orm::{EntityTrait, PaginatorTrait};

    #[tokio::test]
    async fn plans_list_pending_passages_in_reading_order_and_record_once() {
        let fx = Fixture::new().await;
        let series = fx.series("Saga").await;
        let volume = fx.volume(&series, 1).await;
        // Inserted out of order: chapter positions decide.
        let (late, late_passages) = fx.chapter(&volume, 2, &["Third.", "Fourth."]).await;
        let (early, early_passages) = fx.chapter(&volume, 1, &["First.", "   ", "Second."]).await;
        let chapters = vec![late.id.clone(), early.id.clone()];

        let plan = fx
            .backend
            .plan_analysis(&volume.id, &chapters)
            .await
            .expect("plan");
        let texts: Vec<&str> = plan.passages.iter().map(|p| p.text.as_str()).collect();
        assert_eq!(texts, vec!["First.", "Second.", "Third.", "Fourth."]);
        assert_eq!(
            (plan.done, plan.recalled, plan.total),
            (1, 0, 5),
            "the blank one is done"
        );

        let first = analysis(
            &early_passages[0],
            found(vec![character("Ann", &[], None)], vec![], "Ann."),
        );
        for _ in 0..2 {
            let stored = fx
                .backend
                .record_analysis(
                    &volume.id,
                    std::slice::from_ref(&first),
                    false,
                    Quality::Normal,
                )
                .await
                .expect("record");
            assert_eq!(stored, 1);
        }
        let rows = passage_analysis::Entity::find()
            .count(&fx.db)
            .await
            .expect("count");
        assert_eq!(
            rows, 2,
            "the blank passage's row and one row for the recorded passage"
        );

        let plan = fx
            .backend
            .plan_analysis(&volume.id, &chapters)
            .await
            .expect("plan");
        let ids: Vec<&str> = plan.passages.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(
            ids,
            vec![
                early_passages[2].id.as_str(),
                late_passages[0].id.as_str(),
                late_passages[1].id.as_str()
            ]
        );
        assert_eq!(plan.done, 2);

        // One chapter only.
        let plan = fx
            .backend
            .plan_analysis(&volume.id, std::slice::from_ref(&late.id))
            .await
            .expect("plan");
        assert_eq!((plan.total, plan.done, plan.passages.len()), (2, 0, 2));
    }

    #[tokio::test]
    async fn earlier_analyses_are_recalled_within_the_account_only() {
        let fx = Fixture::new().await;
        let mine = fx.volume(&fx.series("Mine").await, 1).await;
        let (_, passages) = fx.chapter(&mine, 1, &["Ann met  Bob.", "Rain fell."]).await;
        let told = found(
            vec![character("Ann", &[], Some("Anne"))],
            vec![],
            "They met.",
        );
        fx.backend
            .record_analysis(
                &mine.id,
                &[
                    analysis(&passages[0], told.clone()),
                    crate::domain::PassageExtraction {
                        passage_id: passages[1].id.clone(),
                        extraction: Extraction::default(),
                        failed: true,
                    },
                ],
                false,
                Quality::Normal,
            )
            .await
            .expect("record");

        // Same account, another series: the same text (spacing aside) is
        // recalled; a failed analysis is not.
        let again = fx.volume(&fx.series("Again").await, 1).await;
        let (chapter, again_passages) = fx
            .chapter(&again, 1, &["Ann met Bob.", "Rain fell.", "New."])
            .await;
        let plan = fx
            .backend
            .plan_analysis(&again.id, std::slice::from_ref(&chapter.id))
            .await
            .expect("plan");
        assert_eq!((plan.total, plan.done, plan.recalled), (3, 1, 1));
        let texts: Vec<&str> = plan.passages.iter().map(|p| p.text.as_str()).collect();
        assert_eq!(texts, vec!["Rain fell.", "New."]);
        let copied = passage_analysis::Entity::find_by_id(again_passages[0].id.clone())
            .one(&fx.db)
            .await
            .expect("query")
            .expect("a recalled row");
        assert_eq!(copied.project_id, again.id);
        assert!(!copied.reconciled);
        assert_eq!(crate::store::extraction_of(&copied), told);

        // Another account never sees it.
        let other = fx.add_account("other").await;
        let theirs = fx.volume(&fx.series_of(&other, "Theirs").await, 1).await;
        let (chapter, _) = fx.chapter(&theirs, 1, &["Ann met Bob."]).await;
        let plan = fx
            .backend
            .plan_analysis(&theirs.id, std::slice::from_ref(&chapter.id))
            .await
            .expect("plan");
        assert_eq!((plan.done, plan.recalled, plan.passages.len()), (0, 0, 1));
    }
}
