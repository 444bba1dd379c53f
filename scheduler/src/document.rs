//! The status document of a request (spec 2.2): every field present with its
//! type, progress per stage (a stage that does not run reads `skipped`), the
//! stage and step a running job is in (analysis, review, autopilot), and the
//! chapter items in reading order.

use crate::analysis;
use crate::error::SchedulerError;
use crate::lifecycle::lease::review_below;
use crate::lifecycle::queue::{QueueSettings, WaitReason, wait_reason};
use crate::passage_counts::{self, Counts};
use crate::steps;
use dragoman_model::documents::report::CompletionReport;
use dragoman_model::documents::request::{
    ChapterEvents, ChapterItem, ChapterMapping, QueueReason, QueueState, RequestChapters,
    RequestDocument, RequestOptions, RequestProgress, RequestSummary, StageProgress, StoredResult,
    WebhookStatus,
};
use dragoman_model::entities::{
    autopilot_run, chapter, job, passage, request, result, webhook_delivery,
};
use dragoman_model::estimate::Estimate;
use dragoman_model::vocab::{
    CallbackEvent, PassageStatus, Quality, RequestStatus, RequestWebhookState, Stage, WebhookState,
};
use dragoman_model::webhook::announced_in;
use sea_orm::sea_query::Expr;
use sea_orm::{
    ColumnTrait, Condition, ConnectionTrait, DbErr, EntityTrait, FromQueryResult, JoinType,
    QueryFilter, QueryOrder, QuerySelect, RelationDef,
};
use serde_json::Value;

fn percent(done: usize, total: usize) -> usize {
    (done * 100).checked_div(total).unwrap_or(100)
}

/// A count as the document states it.
fn count(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// One entry of `progress.stages`: what a stage did, or `skipped` (0 of 0,
/// 0 %) for a stage that does not run, so it never reads as finished. A
/// stage whose work is not `known` yet (the review, before every passage
/// was attempted) reads 0 % while it has nothing counted.
fn stage_entry(stage: Stage, progress: Option<(usize, usize)>, known: bool) -> StageProgress {
    match progress {
        Some((done, total)) => StageProgress {
            key: stage,
            done: count(done),
            total: count(total),
            percent: count(if total == 0 && !known {
                0
            } else {
                percent(done, total)
            }),
            skipped: false,
        },
        None => StageProgress {
            key: stage,
            done: 0,
            total: 0,
            percent: 0,
            skipped: true,
        },
    }
}

/// The quality the request runs at (`normal` when it named none).
fn quality(row: &request::Model) -> Quality {
    row.options.quality()
}

/// The language the request translates into.
fn target_language(row: &request::Model) -> &str {
    row.options.target_language()
}

/// The options in force as the document states them: those the request
/// gave, the defaults otherwise (`analysis_mode` and `threads` stay null
/// when it gave none).
fn options_in_force(row: &request::Model) -> RequestOptions {
    RequestOptions {
        start: row.options.start(),
        final_review: row.options.final_review(),
        output_format: row.options.output_format(),
        analysis_mode: row.options.analysis_mode,
        threads: row.options.threads,
        batch: row.options.batch(),
    }
}

/// Whether the review pass takes up, or took up, a passage at `quality`,
/// as a SQL condition on `passages`: at `high` and `maximum` every
/// translated passage, at `normal` those the checks flagged or scored below
/// the threshold. Like the pass itself, it leaves what a person edited or
/// validated alone, and passages delivered in source text; counting them
/// would keep the stage from ever finishing. A passage the pass has read
/// counts whatever it is now.
fn in_review(quality: Quality, review_below: i32) -> Condition {
    let read = passage::Column::Reviewed.eq(true);
    let translated = passage::Column::Translation.is_not_null();
    let mut eligible = Condition::all()
        .add(passage::Column::Human.eq(false))
        .add(passage::Column::Validated.eq(false))
        .add(passage::Column::Status.is_in([
            PassageStatus::Ok,
            PassageStatus::Check,
            PassageStatus::Error,
            PassageStatus::Refused,
        ]));
    match quality {
        Quality::Fast => return Condition::all().add(translated).add(read),
        Quality::Normal => {
            eligible = eligible.add(
                Condition::any()
                    .add(passage::Column::Status.ne(PassageStatus::Ok))
                    .add(passage::Column::Score.lt(review_below)),
            );
        }
        Quality::High | Quality::Maximum => {}
    }
    Condition::all()
        .add(translated)
        .add(Condition::any().add(read).add(eligible))
}

/// Whether the request runs the review stage: not an import-only request,
/// nor one without final review, nor quality `fast`.
fn review_runs(row: &request::Model) -> bool {
    row.options.start() && row.options.final_review() && quality(row) != Quality::Fast
}

/// A webhook delivery as the document reads it: the body only when the
/// request asked for chapter events (it tells which chapters a batch
/// announced).
#[derive(Debug, FromQueryResult)]
struct Delivery {
    batch: Option<i32>,
    state: WebhookState,
    attempts: i32,
    last_error: String,
    body: String,
}

async fn deliveries(
    db: &impl ConnectionTrait,
    row: &request::Model,
) -> Result<Vec<Delivery>, SchedulerError> {
    let mut query = webhook_delivery::Entity::find()
        .select_only()
        .columns([
            webhook_delivery::Column::Batch,
            webhook_delivery::Column::State,
            webhook_delivery::Column::Attempts,
            webhook_delivery::Column::LastError,
        ])
        .filter(webhook_delivery::Column::RequestId.eq(row.id.clone()))
        .order_by_asc(webhook_delivery::Column::CreatedAt)
        .order_by_asc(webhook_delivery::Column::Id);
    query = if row.wants_chapter_events() {
        query.column(webhook_delivery::Column::Body)
    } else {
        query.column_as(Expr::val(""), "body")
    };
    Ok(query.into_model::<Delivery>().all(db).await?)
}

/// The request's job and its autopilot run, in one statement.
async fn job_and_run(
    db: &impl ConnectionTrait,
    row: &request::Model,
) -> Result<(Option<job::Model>, Option<autopilot_run::Model>), SchedulerError> {
    let Some(job_id) = &row.job_id else {
        return Ok((None, None));
    };
    let run: RelationDef = job::Entity::belongs_to(autopilot_run::Entity)
        .from(job::Column::Id)
        .to(autopilot_run::Column::JobId)
        .into();
    let found = job::Entity::find_by_id(job_id.clone())
        .join(JoinType::LeftJoin, run)
        .select_also(autopilot_run::Entity)
        .one(db)
        .await?;
    Ok(found.map_or((None, None), |(job, run)| (Some(job), run)))
}

/// The status document of `row`; `queue` are the environment's queue
/// settings (the running limits behind `queue.reason`).
pub async fn build(
    db: &impl ConnectionTrait,
    row: &request::Model,
    queue: &QueueSettings,
) -> Result<RequestDocument, SchedulerError> {
    let ids = row.chapter_ids();
    let chapters = chapter::Entity::find()
        .filter(chapter::Column::Id.is_in(ids.clone()))
        .order_by_asc(chapter::Column::Position)
        .all(db)
        .await?;
    let counts =
        passage_counts::of_chapters(db, ids, in_review(quality(row), review_below(row))).await?;
    let target = target_language(row);
    let items: Vec<ChapterItem> = chapters
        .iter()
        .map(|c| chapter_item(c, counts.of(&c.id), target))
        .collect();
    let total = counts.total.segments;
    let translated = counts.total.translated;
    let attempted = counts.total.attempted;
    let finished = row.status.is_final();
    let (job_row, autopilot) = job_and_run(db, row).await?;
    let analysis = analysis::progress(db, row, &counts.total).await?;
    let review = review_runs(row).then_some((counts.total.reviewed, counts.total.in_review));
    let stage_progress = |stage: Stage| -> Option<(usize, usize)> {
        match stage {
            Stage::Import => Some((1, 1)),
            Stage::Analysis => analysis.as_ref().map(|a| (a.done, a.total)),
            Stage::Translation => Some((attempted, total)),
            Stage::Export => Some((
                usize::from(finished && row.status != RequestStatus::Cancelled),
                1,
            )),
            Stage::Review => review,
        }
    };
    // A running job analyses before it translates; the request row only
    // knows it holds a worker, the analysis rows tell which stage it is in.
    let analysing = row.status == RequestStatus::Running
        && row.stage == Stage::Translation
        && analysis.as_ref().is_some_and(|a| a.done < a.total);
    let running = row.status == RequestStatus::Running;
    // The review pass runs once every passage was attempted and before the
    // autopilot starts; the autopilot's run tells the round it is in.
    let reviewing = running
        && autopilot.is_none()
        && total > 0
        && attempted == total
        && review.is_some_and(|(done, taken)| done < taken);
    let (stage, step) = match &autopilot {
        Some(run) if running && !run.finished => (Stage::Review, steps::autopilot(run.round)),
        _ if reviewing => (Stage::Review, steps::REVIEWING.to_owned()),
        _ if analysing => (Stage::Analysis, steps::ANALYSING.to_owned()),
        _ => (row.stage, row.step.clone()),
    };
    // Whichever stage's calls a provider batch carries, the wait is what
    // a person needs to know of.
    let step = if running && row.step == steps::WAITING_FOR_BATCH {
        row.step.clone()
    } else {
        step
    };
    let stages: Vec<StageProgress> = Stage::ALL
        .iter()
        .map(|stage| {
            let known = *stage != Stage::Review || finished || attempted == total;
            stage_entry(*stage, stage_progress(*stage), known)
        })
        .collect();
    let stored = stored_result(db, row).await?;
    let (webhook, chapter_events) = webhook_views(db, row).await?;
    // Read now rather than stored: the reason goes away as soon as the job
    // starts or a slot frees, whoever frees it.
    let queue = match &job_row {
        Some(j) => wait_reason(db, j, queue).await?.map(|reason| QueueState {
            reason: queue_reason(reason),
        }),
        None => None,
    };
    let chapters = request_chapters(row, items);
    Ok(RequestDocument {
        summary: RequestSummary {
            request_id: row.id.clone(),
            external_id: row.external_id.clone(),
            series_id: row.series_id.clone(),
            project_id: row.project_id.clone(),
            job_id: row.job_id.clone(),
            input: row.input,
            status: row.status,
            status_url: RequestSummary::status_url(&row.id),
            result_url: RequestSummary::result_url(&row.id),
        },
        created_at: row.created_at,
        updated_at: row.updated_at,
        finished_at: row.finished_at,
        // Set only in what is kept of a request whose volume was deleted
        // (crate::deleted_requests).
        volume_deleted_at: None,
        stage,
        step,
        progress: RequestProgress {
            segments: count(total),
            translated: count(translated),
            percent: count(percent(translated, total)),
            stages,
            analysis: analysis.as_ref().map(analysis::Progress::to_document),
        },
        memory: analysis::memory_backend(db, row).await?,
        estimate: job_row.as_ref().and_then(estimate),
        error: row.error.clone(),
        stop_reason: row.stop_reason.clone(),
        // Kept by the webhook outbox, which schedules the retries.
        next_attempt: row.next_attempt,
        chapters,
        options: options_in_force(row),
        priority: row.priority,
        queue,
        result: stored,
        report: stored_report(row)?,
        webhook,
        chapter_events,
    })
}

/// The newest result stored for `row`.
async fn stored_result(
    db: &impl ConnectionTrait,
    row: &request::Model,
) -> Result<Option<StoredResult>, SchedulerError> {
    Ok(result::Entity::find()
        .filter(result::Column::RequestId.eq(row.id.clone()))
        .order_by_desc(result::Column::CreatedAt)
        .one(db)
        .await?
        .map(|r| StoredResult {
            format: r.format,
            media_type: r.media_type,
            filename: r.filename,
            size: r.size,
            sha256: r.sha256,
            created_at: r.created_at,
        }))
}

/// The final webhook's state and the chapter batches' counts of `row`.
async fn webhook_views(
    db: &impl ConnectionTrait,
    row: &request::Model,
) -> Result<(WebhookStatus, ChapterEvents), SchedulerError> {
    let deliveries = deliveries(db, row).await?;
    let finals: Vec<&Delivery> = deliveries.iter().filter(|d| d.batch.is_none()).collect();
    let batches: Vec<&Delivery> = deliveries.iter().filter(|d| d.batch.is_some()).collect();
    let final_event = finals.first();
    let webhook = WebhookStatus {
        state: RequestWebhookState::of(row.callback_url.is_some(), final_event.map(|d| d.state)),
        attempts: final_event.map_or(0, |d| i64::from(d.attempts)),
        error: final_event
            .map(|d| d.last_error.clone())
            .unwrap_or_default(),
    };
    let state_count =
        |state: WebhookState| count(batches.iter().filter(|d| d.state == state).count());
    let chapter_events = ChapterEvents {
        event: CallbackEvent::ChaptersTranslated,
        batches: count(batches.len()),
        delivered: state_count(WebhookState::Delivered),
        pending: state_count(WebhookState::Pending),
        failed: state_count(WebhookState::Failed),
        waiting_chapters: count(waiting_chapters(row, &batches)),
        error: batches
            .iter()
            .rev()
            .find(|d| !d.last_error.is_empty())
            .map(|d| d.last_error.clone())
            .unwrap_or_default(),
    };
    Ok((webhook, chapter_events))
}

/// The request's chapter bookkeeping and its chapters' progress `items`.
fn request_chapters(row: &request::Model, items: Vec<ChapterItem>) -> RequestChapters {
    let bookkeeping = |key: &str| row.chapters.get(key).and_then(Value::as_i64).unwrap_or(0);
    RequestChapters {
        created: bookkeeping("created"),
        unchanged: bookkeeping("unchanged"),
        replaced: bookkeeping("replaced"),
        items,
        new: row.chapter_list("new"),
    }
}

/// The completion report the request row keeps; reports of earlier builds
/// read too (the fields added since have defaults).
fn stored_report(row: &request::Model) -> Result<Option<CompletionReport>, SchedulerError> {
    row.report
        .clone()
        .map(serde_json::from_value)
        .transpose()
        .map_err(|e| SchedulerError::Db(DbErr::Json(format!("stored report: {e}"))))
}

/// One chapter of the request with its counts.
fn chapter_item(c: &chapter::Model, counts: Counts, target: &str) -> ChapterItem {
    let Counts {
        segments,
        translated,
        validated,
        flagged,
        ..
    } = counts;
    // The spec's three fields; the column also keeps an EPUB chapter's
    // archive path, which is intake's business.
    let stored = c.mapping.as_ref();
    let field = |name: &str| stored.and_then(|m| m.get(name));
    let mapping = ChapterMapping {
        confidence: field("confidence").and_then(Value::as_f64).unwrap_or(1.0),
        reason: field("reason")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        detected: field("detected").and_then(Value::as_bool).unwrap_or(false),
    };
    ChapterItem {
        chapter_id: c.id.clone(),
        external_id: c.external_id.clone(),
        number: c.number.map(i64::from),
        kind: c.kind.clone(),
        part: c.part.map(i64::from),
        part_count: c.part_count.map(i64::from),
        label: c.label.clone(),
        display_label: display_label(c, target),
        position: i64::from(c.position),
        mapping,
        title: c.title.clone(),
        segments: count(segments),
        translated: count(translated),
        validated: count(validated),
        flagged: count(flagged),
        complete: segments > 0 && translated == segments && flagged == 0,
    }
}

/// The estimate the job stored when it started. One that no longer reads
/// as an estimate is left out rather than failing the whole document.
fn estimate(job: &job::Model) -> Option<Estimate> {
    let stored = job.estimate.clone()?;
    match serde_json::from_value(stored) {
        Ok(estimate) => Some(estimate),
        Err(error) => {
            tracing::warn!(job_id = %job.id, %error, "stored estimate unreadable");
            None
        }
    }
}

fn queue_reason(reason: WaitReason) -> QueueReason {
    match reason {
        WaitReason::TokenLimit => QueueReason::TokenLimit,
        WaitReason::AccountLimit => QueueReason::AccountLimit,
    }
}

/// Chapters of the request that a `chapters.translated` batch will announce
/// once translated and has not yet: none unless the request asked for them,
/// and never those already translated at import.
fn waiting_chapters(row: &request::Model, batches: &[&Delivery]) -> usize {
    if !row.wants_chapter_events() {
        return 0;
    }
    let at_import = row.chapter_list("translated_at_import").len();
    let announced: usize = batches.iter().map(|d| announced_in(&d.body).len()).sum();
    row.chapter_ids()
        .len()
        .saturating_sub(at_import)
        .saturating_sub(announced)
}

/// The label in the target language (spec 2.6 `display_label`).
pub fn display_label(c: &chapter::Model, target: &str) -> String {
    let kind = kind_from_key(&c.kind);
    dragoman_book::labels::display_label(
        kind,
        c.number.and_then(|n| u32::try_from(n).ok()),
        c.part.and_then(|p| u32::try_from(p).ok()),
        c.part_count.and_then(|p| u32::try_from(p).ok()),
        target,
    )
}

pub fn kind_from_key(key: &str) -> dragoman_book::model::ChapterKind {
    serde_json::from_value(Value::String(key.to_owned()))
        .unwrap_or(dragoman_book::model::ChapterKind::Chapter)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixtures::{edit, run, scored};
    use crate::report::{is_flagged, is_translated};
    use crate::testing::{Fixture, chapter};
    use dragoman_model::entities::passage_analysis;
    use dragoman_model::vocab::AutopilotOutcome;
    use sea_orm::{ActiveModelTrait, Set};
    use serde_json::json;

    /// A request of one chapter of `n` passages with `pipeline` options.
    async fn request_with(
        f: &Fixture,
        n: usize,
        pipeline: Value,
    ) -> (request::Model, Vec<passage::Model>) {
        let content = (0..n)
            .map(|i| format!("Paragraph {i}."))
            .collect::<Vec<_>>()
            .join("\n\n");
        let mut body = f.body("Saga", 1, json!([chapter(1, &content)]));
        body["pipeline"] = pipeline;
        let row = f.accepted(&body).await;
        let chapters = f.chapters(&row.project_id).await;
        let passages = f.passages(&chapters[0].id).await;
        (row, passages)
    }

    async fn document(f: &Fixture, row: &request::Model) -> Value {
        let doc = build(&f.db, &f.request(&row.id).await, &f.limits.queue)
            .await
            .expect("document");
        serde_json::to_value(doc).expect("json")
    }

    /// Marks a passage as read by the review pass.
    async fn reviewed(f: &Fixture, p: &passage::Model) -> passage::Model {
        edit(&f.db, p, |m| m.reviewed = Set(true)).await
    }

    #[tokio::test]
    async fn the_review_stage_counts_what_the_quality_takes_up() {
        let f = Fixture::new().await;
        let (row, ps) = request_with(&f, 7, json!({})).await;
        // Good and unread: not for review at `normal`.
        scored(&f.db, &ps[0], PassageStatus::Ok, Some(90), json!([])).await;
        // Below the threshold, flagged, failed: to review.
        scored(&f.db, &ps[1], PassageStatus::Ok, Some(60), json!([])).await;
        let checked = scored(&f.db, &ps[2], PassageStatus::Check, Some(80), json!([])).await;
        reviewed(&f, &checked).await;
        scored(&f.db, &ps[3], PassageStatus::Error, Some(0), json!([])).await;
        // Read already: counted as done whatever its score now.
        let read = scored(&f.db, &ps[4], PassageStatus::Ok, Some(95), json!([])).await;
        reviewed(&f, &read).await;
        // A person validated it: the pass leaves it alone.
        let validated = scored(&f.db, &ps[5], PassageStatus::Check, Some(50), json!([])).await;
        edit(&f.db, &validated, |m| m.validated = Set(true)).await;
        // ps[6] has no translation yet.
        let doc = document(&f, &row).await;
        assert_eq!(
            stage(&doc, "review"),
            &json!({"key": "review", "done": 2, "total": 4, "percent": 50, "skipped": false})
        );

        // At `high` every translated passage is reviewed.
        let f = Fixture::new().await;
        let (row, ps) = request_with(&f, 3, json!({"quality": "high"})).await;
        let read = scored(&f.db, &ps[0], PassageStatus::Ok, Some(100), json!([])).await;
        reviewed(&f, &read).await;
        scored(&f.db, &ps[1], PassageStatus::Ok, Some(99), json!([])).await;
        let doc = document(&f, &row).await;
        assert_eq!(stage(&doc, "review")["done"], 1);
        assert_eq!(stage(&doc, "review")["total"], 2);

        // No review at `fast`, nor when the request turned it off.
        for pipeline in [json!({"quality": "fast"}), json!({"final_review": false})] {
            let f = Fixture::new().await;
            let (row, ps) = request_with(&f, 1, pipeline).await;
            scored(&f.db, &ps[0], PassageStatus::Check, Some(10), json!([])).await;
            let doc = document(&f, &row).await;
            assert_eq!(stage(&doc, "review")["skipped"], true, "{doc}");
        }
    }

    #[tokio::test]
    async fn a_running_job_reads_reviewing_then_its_autopilot_round() {
        let f = Fixture::new().await;
        let (row, ps) = request_with(&f, 2, json!({})).await;
        f.lease("w1", 60)
            .await
            .expect("lease")
            .ticket
            .expect("a job");
        scored(&f.db, &ps[0], PassageStatus::Ok, Some(90), json!([])).await;
        // One passage still to translate: not reviewing yet.
        let doc = document(&f, &row).await;
        assert_ne!(doc["step"], steps::REVIEWING);

        let low = scored(&f.db, &ps[1], PassageStatus::Check, Some(40), json!([])).await;
        let doc = document(&f, &row).await;
        assert_eq!(
            (doc["stage"].clone(), doc["step"].clone()),
            (json!("review"), json!("reviewing"))
        );

        reviewed(&f, &low).await;
        run(&f.db, &row, 2, None, None).await;
        let doc = document(&f, &row).await;
        assert_eq!(doc["stage"], "review");
        assert_eq!(doc["step"], steps::autopilot(2));
        assert_eq!(doc["step"], "autopilot round 2");
    }

    #[tokio::test]
    async fn a_finished_autopilot_no_longer_names_the_step() {
        let f = Fixture::new().await;
        let (row, ps) = request_with(&f, 1, json!({})).await;
        f.lease("w1", 60)
            .await
            .expect("lease")
            .ticket
            .expect("a job");
        // Still below the threshold and unread, but the autopilot ran: the
        // review pass does not come back to it.
        scored(&f.db, &ps[0], PassageStatus::Check, Some(40), json!([])).await;
        run(&f.db, &row, 1, Some(AutopilotOutcome::Resolved), None).await;
        let doc = document(&f, &row).await;
        assert_ne!(doc["stage"], "review");
    }

    #[tokio::test]
    async fn a_chapter_with_a_flagged_passage_is_not_complete() {
        let f = Fixture::new().await;
        let (row, ps) = request_with(&f, 2, json!({})).await;
        scored(&f.db, &ps[0], PassageStatus::Ok, Some(90), json!([])).await;
        let flagged = scored(&f.db, &ps[1], PassageStatus::Check, Some(60), json!([])).await;
        let item = |doc: &Value| doc["chapters"]["items"][0].clone();
        let doc = document(&f, &row).await;
        assert_eq!(item(&doc)["translated"], 2);
        assert_eq!(item(&doc)["flagged"], 1);
        assert_eq!(item(&doc)["complete"], false);
        // A person validated it: the chapter is complete.
        edit(&f.db, &flagged, |m| m.validated = Set(true)).await;
        let doc = document(&f, &row).await;
        assert_eq!(item(&doc)["validated"], 1);
        assert_eq!(item(&doc)["flagged"], 0);
        assert_eq!(item(&doc)["complete"], true);
    }

    /// The review pass's rule read on one passage: what the SQL condition
    /// [`in_review`] must agree with.
    fn taken_by_review(p: &passage::Model, quality: Quality, below: i32) -> bool {
        let eligible = !p.human
            && !p.validated
            && matches!(
                p.status,
                PassageStatus::Ok
                    | PassageStatus::Check
                    | PassageStatus::Error
                    | PassageStatus::Refused
            );
        p.translation.is_some()
            && (p.reviewed
                || eligible
                    && match quality {
                        Quality::Fast => false,
                        Quality::Normal => {
                            p.status != PassageStatus::Ok || p.score.is_some_and(|s| s < below)
                        }
                        Quality::High | Quality::Maximum => true,
                    })
    }

    #[tokio::test]
    async fn counts_in_sql_agree_with_the_rules_on_every_kind_of_passage() {
        crate::testing::on_both(|f| async move {
            // Every status, with and without a translation, validated or
            // not, edited by a person or not, read by the review or not,
            // unscored, scored below and above the threshold.
            let mut kinds = Vec::new();
            for status in PassageStatus::ALL {
                for translated in [false, true] {
                    for validated in [false, true] {
                        for human in [false, true] {
                            for reviewed in [false, true] {
                                for score in [None, Some(50), Some(90)] {
                                    kinds.push((
                                        *status, translated, validated, human, reviewed, score,
                                    ));
                                }
                            }
                        }
                    }
                }
            }
            let half = kinds.len().div_ceil(2);
            let text = |n: usize| {
                (0..n)
                    .map(|i| format!("Paragraph {i}."))
                    .collect::<Vec<_>>()
                    .join("\n\n")
            };
            let body = f.body(
                "Saga",
                1,
                json!([chapter(1, &text(half)), chapter(2, &text(half))]),
            );
            let row = f.accepted(&body).await;
            let chapters = f.chapters(&row.project_id).await;
            let mut passages = Vec::new();
            for c in &chapters {
                passages.extend(f.passages(&c.id).await);
            }
            assert!(passages.len() >= kinds.len(), "{} passages", passages.len());
            let mut edited = Vec::new();
            for (i, (p, kind)) in passages.iter().zip(kinds.iter().cycle()).enumerate() {
                let (status, translated, validated, human, reviewed, score) = *kind;
                let p = edit(&f.db, p, |m| {
                    m.status = Set(status);
                    m.translation = Set(translated.then(|| format!("{} (fr)", p.source)));
                    m.validated = Set(validated);
                    m.human = Set(human);
                    m.reviewed = Set(reviewed);
                    m.score = Set(score);
                })
                .await;
                // Every third passage analysed, every sixth without result.
                if i % 3 == 0 {
                    passage_analysis::ActiveModel {
                        passage_id: Set(p.id.clone()),
                        project_id: Set(row.project_id.clone()),
                        account_id: Set(row.account_id.clone()),
                        source_key: Set(format!("key {i}")),
                        extraction: Set(json!({})),
                        reconciled: Set(false),
                        failed: Set(i % 6 == 0),
                        created_at: Set(0),
                    }
                    .insert(&f.db)
                    .await
                    .expect("analysis");
                }
                edited.push((i, p));
            }
            for quality in Quality::ALL {
                let counts =
                    passage_counts::of_chapters(&f.db, row.chapter_ids(), in_review(*quality, 70))
                        .await
                        .expect("counts");
                let mut total = 0;
                for c in &chapters {
                    let ps: Vec<&(usize, passage::Model)> = edited
                        .iter()
                        .filter(|(_, p)| p.chapter_id == c.id)
                        .collect();
                    let n = |rule: &dyn Fn(usize, &passage::Model) -> bool| {
                        ps.iter().filter(|(i, p)| rule(*i, p)).count()
                    };
                    let taken = |_: usize, p: &passage::Model| taken_by_review(p, *quality, 70);
                    let expected = Counts {
                        segments: ps.len(),
                        translated: n(&|_, p| is_translated(p)),
                        validated: n(&|_, p| p.validated),
                        flagged: n(&|_, p| is_flagged(p)),
                        attempted: n(&|_, p| p.status != PassageStatus::Pending),
                        in_review: n(&taken),
                        reviewed: n(&|i, p| taken(i, p) && p.reviewed),
                        analysed: n(&|i, _| i % 3 == 0),
                        analysis_failed: n(&|i, _| i % 6 == 0),
                    };
                    assert_eq!(
                        counts.of(&c.id),
                        expected,
                        "{quality} chapter {:?}",
                        c.number
                    );
                    total += ps.len();
                }
                assert_eq!(counts.total.segments, total);
                assert!(counts.total.in_review > 0 || *quality == Quality::Fast);
            }
        })
        .await;
    }

    #[tokio::test]
    async fn a_request_without_callback_has_no_webhook_pending_ever() {
        use crate::lifecycle::{JobEnd, finish};
        use crate::testing::CALLBACK;
        use dragoman_model::entities::webhook_delivery;
        use sea_orm::{ColumnTrait, IntoActiveModel, QueryFilter};

        let f = Fixture::new().await;
        let silent = f
            .accepted(&f.body("Silent", 1, json!([chapter(1, "a")])))
            .await;
        let mut body = f.body("Called", 1, json!([chapter(1, "b")]));
        body["callback_url"] = json!(CALLBACK);
        let called = f.accepted(&body).await;
        let none = json!({"state": "none", "attempts": 0, "error": ""});
        let pending = json!({"state": "pending", "attempts": 0, "error": ""});
        assert_eq!(document(&f, &silent).await["webhook"], none);
        assert_eq!(document(&f, &called).await["webhook"], pending);

        // Both run and end: the one without callback still has nothing due.
        for _ in 0..2 {
            let ticket = f
                .lease("w1", 60)
                .await
                .expect("lease")
                .ticket
                .expect("a job");
            finish(&f.db, &ticket.job_id, "w1", JobEnd::done())
                .await
                .expect("finish");
        }
        let doc = document(&f, &silent).await;
        assert!(doc["finished_at"].is_i64(), "{doc}");
        assert_eq!(doc["webhook"], none);
        // The other's final event is queued, then delivered.
        assert_eq!(document(&f, &called).await["webhook"], pending);
        let final_event = webhook_delivery::Entity::find()
            .filter(webhook_delivery::Column::RequestId.eq(called.id.clone()))
            .one(&f.db)
            .await
            .expect("select")
            .expect("the final event");
        let mut delivered = final_event.into_active_model();
        delivered.state = sea_orm::Set(WebhookState::Delivered);
        delivered.attempts = sea_orm::Set(1);
        delivered.update(&f.db).await.expect("update");
        assert_eq!(
            document(&f, &called).await["webhook"],
            json!({"state": "delivered", "attempts": 1, "error": ""})
        );
    }

    fn stage<'a>(doc: &'a Value, key: &str) -> &'a Value {
        doc["progress"]["stages"]
            .as_array()
            .and_then(|stages| stages.iter().find(|s| s["key"] == key))
            .unwrap_or_else(|| panic!("stage {key} in {doc}"))
    }

    #[tokio::test]
    async fn stages_that_do_not_run_never_look_finished() {
        let f = Fixture::new().await;
        let row = f
            .accepted(&f.body("Saga", 1, json!([chapter(1, "a\n\nb")])))
            .await;
        let doc = document(&f, &row).await;
        let keys: Vec<&str> = doc["progress"]["stages"]
            .as_array()
            .expect("stages")
            .iter()
            .filter_map(|s| s["key"].as_str())
            .collect();
        assert_eq!(
            keys,
            ["import", "analysis", "translation", "review", "export"]
        );
        // At quality `normal` the review runs; what it will take up is not
        // known before the passages are translated.
        assert_eq!(
            stage(&doc, "review"),
            &json!({"key": "review", "done": 0, "total": 0, "percent": 0, "skipped": false})
        );
        // At quality `normal` the analysis stage runs: nothing analysed yet.
        assert_eq!(
            stage(&doc, "analysis"),
            &json!({"key": "analysis", "done": 0, "total": 2, "percent": 0, "skipped": false})
        );
        assert_eq!(doc["progress"]["analysis"]["mode"], "parallel");
        assert_eq!(doc["progress"]["analysis"]["done"], 0);
        assert_eq!(doc["memory"]["answered_by"], "internal");
        assert_eq!(
            stage(&doc, "import"),
            &json!({"key": "import", "done": 1, "total": 1, "percent": 100, "skipped": false})
        );
        assert_eq!(stage(&doc, "translation")["total"], 2);
        assert_eq!(stage(&doc, "translation")["percent"], 0);
        assert_eq!(stage(&doc, "export")["done"], 0);
        assert_eq!(doc["status"], "pending");
        assert_eq!(doc["priority"], "normal");
        assert_eq!(doc["options"]["output_format"], "json");
        assert_eq!(doc["webhook"]["state"], "none");
        assert_eq!(doc["chapter_events"]["event"], "chapters.translated");
        assert_eq!(doc["chapters"]["items"].as_array().map(Vec::len), Some(1));
    }
}
