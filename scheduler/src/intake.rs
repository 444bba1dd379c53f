//! `Submit`: a JSON request becomes a stored request, its chapters and
//! passages, and a job — or, when the volume is busy, a queued request that
//! waits for it. The checks of spec 4.2 run in order before anything is
//! stored; a refusal stores nothing. Same content again (by idempotency key
//! or external id) replays the original answer.

use crate::chapters::{self, IncomingChapter, Slot};
use crate::error::SchedulerError;
use crate::lifecycle;
use dragoman_model::entities::{
    account, api_token, chapter, passage, project, provider, request, series,
};
use dragoman_model::payload::TranslationPayload;
use dragoman_model::scopes::Priority;
use dragoman_model::webhook::{EVENT_CHAPTERS, WebhookPolicy, callback};
use dragoman_model::{budget, clock, ids};
use dragoman_proto::principal::Principal;
use dragoman_proto::v1::{RequestSummary, SubmitRequest, SubmitResponse};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DatabaseConnection, DatabaseTransaction,
    EntityTrait, PaginatorTrait, QueryFilter, QueryOrder, Set,
};
use serde_json::{Value, json};
use std::collections::HashMap;

/// Limits of intake (spec 8).
#[derive(Debug, Clone)]
pub struct IntakeLimits {
    /// `API_MAX_CHAPTERS`.
    pub max_chapters: usize,
}

/// 1 to 200 printable ASCII characters.
pub fn valid_idempotency_key(key: &str) -> bool {
    (1..=200).contains(&key.len()) && key.bytes().all(|b| (0x20..=0x7e).contains(&b))
}

pub fn summary(row: &request::Model) -> RequestSummary {
    RequestSummary {
        request_id: row.id.clone(),
        external_id: row.external_id.clone(),
        series_id: row.series_id.clone(),
        project_id: row.project_id.clone(),
        job_id: row.job_id.clone(),
        input: row.input.clone(),
        status: row.status.clone(),
    }
}

/// The callback rules of spec 6.4 with the settings in force: form, host,
/// a signing secret (the token's own or the global one), public addresses.
async fn check_callback(
    db: &DatabaseConnection,
    webhooks: &WebhookPolicy,
    token: Option<&api_token::Model>,
    url: &str,
) -> Result<(), SchedulerError> {
    let settings = webhooks.current(db).await?;
    let has_secret =
        token.is_some_and(|t| t.webhook_secret_enc.is_some()) || settings.secret.is_some();
    callback::check_callback(url, &settings, has_secret, webhooks.resolver.as_ref())
        .await
        .map(|_| ())
        .map_err(SchedulerError::CallbackRefused)
}

/// The earlier request this one replays, or a conflict when the key or the
/// external id was used for other content.
async fn replay(
    db: &impl ConnectionTrait,
    account_id: &str,
    key: Option<&str>,
    external_id: Option<&str>,
    hash: &str,
) -> Result<Option<request::Model>, SchedulerError> {
    for (column, value) in [
        (request::Column::IdempotencyKey, key),
        (request::Column::ExternalId, external_id),
    ] {
        let Some(value) = value else { continue };
        let found = request::Entity::find()
            .filter(request::Column::AccountId.eq(account_id))
            .filter(column.eq(value))
            .one(db)
            .await?;
        if let Some(found) = found {
            return if found.content_hash == hash {
                Ok(Some(found))
            } else {
                Err(SchedulerError::IdempotencyConflict)
            };
        }
    }
    Ok(None)
}

pub async fn submit(
    db: &DatabaseConnection,
    who: &Principal,
    message: SubmitRequest,
    limits: &IntakeLimits,
    webhooks: &WebhookPolicy,
) -> Result<(SubmitResponse, bool), SchedulerError> {
    let payload: TranslationPayload =
        serde_json::from_str(&message.payload_json).map_err(|_| {
            SchedulerError::InvalidPayload(vec![dragoman_model::payload::PayloadIssue {
                loc: vec![json!("body")],
                kind: "json_invalid",
                ctx: None,
            }])
        })?;
    let issues = payload.check(limits.max_chapters);
    if !issues.is_empty() {
        return Err(SchedulerError::InvalidPayload(issues));
    }
    let key = message.idempotency_key.as_deref();
    if key.is_some_and(|k| !valid_idempotency_key(k)) {
        return Err(SchedulerError::InvalidIdempotencyKey);
    }
    let hash = payload.content_hash();
    // A replay is answered even when quotas are full: look before checking.
    if let Some(original) = replay(
        db,
        &who.account_id,
        key,
        payload.external_id.as_deref(),
        &hash,
    )
    .await?
    {
        return Ok((
            SubmitResponse {
                summary: Some(summary(&original)),
                replayed: true,
            },
            false,
        ));
    }
    let start = payload.start();
    let owner = account::Entity::find_by_id(who.account_id.clone())
        .one(db)
        .await?
        .ok_or(SchedulerError::RequestNotFound)?;
    let token = match &who.token_id {
        Some(id) => api_token::Entity::find_by_id(id.clone()).one(db).await?,
        None => None,
    };

    // Checks of spec 4.2, in order.
    if let Some(url) = &payload.callback_url {
        check_callback(db, webhooks, token.as_ref(), url).await?;
    }
    let provider_id = resolve_provider(db, &owner.id, &payload, start).await?;
    let priority = check_priority(&owner, token.as_ref(), payload.pipeline.priority.as_deref())?;
    if start && let Some(token) = &token {
        check_budget(db, token).await?;
    }
    check_queue(db, &owner, token.as_ref()).await?;

    // Two writers can race past the checks above (PostgreSQL runs them side
    // by side): the loser hits a unique index, and the next attempt finds
    // the winner's request (a replay) or series.
    let mut attempts = 0;
    let row = loop {
        attempts += 1;
        let txn = dragoman_model::db::begin_write(db).await?;
        // Looked up again under the write lock: of concurrent identical
        // submissions, the first stores and the others replay it.
        if let Some(original) = replay(
            &txn,
            &who.account_id,
            key,
            payload.external_id.as_deref(),
            &hash,
        )
        .await?
        {
            txn.rollback().await?;
            return Ok((
                SubmitResponse {
                    summary: Some(summary(&original)),
                    replayed: true,
                },
                false,
            ));
        }
        let stored = match store(
            &txn,
            who,
            &owner,
            &payload,
            key,
            &hash,
            provider_id.clone(),
            priority,
            start,
        )
        .await
        {
            Ok(row) => txn
                .commit()
                .await
                .map(|()| row)
                .map_err(SchedulerError::from),
            Err(e) => {
                txn.rollback().await?;
                Err(e)
            }
        };
        match stored {
            Ok(row) => break row,
            Err(SchedulerError::Db(e)) if attempts < 3 && is_unique_violation(&e) => continue,
            Err(e) => return Err(e),
        }
    };
    let has_job = row.job_id.is_some();
    Ok((
        SubmitResponse {
            summary: Some(summary(&row)),
            replayed: false,
        },
        has_job,
    ))
}

fn is_unique_violation(e: &sea_orm::DbErr) -> bool {
    matches!(
        e.sql_err(),
        Some(sea_orm::SqlErr::UniqueConstraintViolation(_))
    )
}

async fn resolve_provider(
    db: &impl ConnectionTrait,
    account_id: &str,
    payload: &TranslationPayload,
    start: bool,
) -> Result<Option<String>, SchedulerError> {
    if let Some(id) = &payload.provider_id {
        return match provider::Entity::find_by_id(id.clone()).one(db).await? {
            Some(p) => Ok(Some(p.id)),
            None => Err(SchedulerError::UnknownProvider),
        };
    }
    let existing_series = find_series(db, account_id, payload).await?;
    if let Some(series) = &existing_series {
        if let Some(volume) = find_volume(db, account_id, series, payload).await?
            && let Some(id) = volume.provider_id
        {
            return Ok(Some(id));
        }
        if let Some(id) = &series.default_provider_id {
            return Ok(Some(id.clone()));
        }
    }
    if start {
        Err(SchedulerError::ProviderRequired)
    } else {
        Ok(None)
    }
}

/// The priority the request runs at, or 403 when it is above the lower of
/// the token's and the account's ceilings.
fn check_priority(
    owner: &account::Model,
    token: Option<&api_token::Model>,
    asked: Option<&str>,
) -> Result<Priority, SchedulerError> {
    let account_ceiling: Priority = owner.priority_ceiling.parse().unwrap_or_default();
    let token_ceiling: Priority = token
        .and_then(|t| t.max_priority.parse().ok())
        .unwrap_or(Priority::High);
    let ceiling = account_ceiling.min(token_ceiling);
    match asked.and_then(|a| a.parse::<Priority>().ok()) {
        Some(p) if p > ceiling => Err(SchedulerError::PriorityNotAllowed(
            ceiling.as_str().to_owned(),
        )),
        Some(p) => Ok(p),
        None => Ok(Priority::Normal.min(ceiling)),
    }
}

async fn check_budget(
    db: &impl ConnectionTrait,
    token: &api_token::Model,
) -> Result<(), SchedulerError> {
    let now = clock::now();
    let view = budget::view(db, token, now).await?;
    if let (Some(amount), Some(spent)) = (
        view.get("amount").and_then(Value::as_f64),
        view.get("spent").and_then(Value::as_f64),
    ) && spent >= amount
    {
        return Err(SchedulerError::BudgetExceeded(view));
    }
    Ok(())
}

/// Requests waiting to start (`pending` or `queued`) count against the
/// token's and the account's waiting quotas.
async fn check_queue(
    db: &impl ConnectionTrait,
    owner: &account::Model,
    token: Option<&api_token::Model>,
) -> Result<(), SchedulerError> {
    let waiting = |column: request::Column, value: String| {
        request::Entity::find()
            .filter(column.eq(value))
            .filter(request::Column::Status.is_in(["pending", "queued"]))
    };
    if let Some(token) = token {
        let count = waiting(request::Column::TokenId, token.id.clone())
            .count(db)
            .await?;
        if count >= u64::try_from(token.max_queued).unwrap_or(0) {
            return Err(SchedulerError::QueueFull {
                scope: "token",
                limit: i64::from(token.max_queued),
            });
        }
    }
    if let Some(limit) = owner.max_queued {
        let count = waiting(request::Column::AccountId, owner.id.clone())
            .count(db)
            .await?;
        if count >= u64::try_from(limit).unwrap_or(0) {
            return Err(SchedulerError::QueueFull {
                scope: "account",
                limit: i64::from(limit),
            });
        }
    }
    Ok(())
}

async fn find_series(
    db: &impl ConnectionTrait,
    account_id: &str,
    payload: &TranslationPayload,
) -> Result<Option<series::Model>, SchedulerError> {
    if let Some(id) = &payload.series.id {
        let found = series::Entity::find_by_id(id.clone())
            .filter(series::Column::AccountId.eq(account_id))
            .one(db)
            .await?;
        return found.map(Some).ok_or(SchedulerError::SeriesNotFound);
    }
    let name = payload.series.name.clone().unwrap_or_default();
    Ok(series::Entity::find()
        .filter(series::Column::AccountId.eq(account_id))
        .filter(series::Column::Name.eq(name))
        .one(db)
        .await?)
}

/// The volume by external id, then by number (or `latest`) in the series.
async fn find_volume(
    db: &impl ConnectionTrait,
    account_id: &str,
    series: &series::Model,
    payload: &TranslationPayload,
) -> Result<Option<project::Model>, SchedulerError> {
    if let Some(external_id) = &payload.volume.external_id {
        let found = project::Entity::find()
            .filter(project::Column::AccountId.eq(account_id))
            .filter(project::Column::ExternalId.eq(external_id.clone()))
            .one(db)
            .await?;
        if found.is_some() {
            return Ok(found);
        }
    }
    let in_series =
        || project::Entity::find().filter(project::Column::SeriesId.eq(series.id.clone()));
    if payload.volume.latest {
        let numbered = in_series()
            .filter(project::Column::VolumeNumber.is_not_null())
            .order_by_desc(project::Column::VolumeNumber)
            .one(db)
            .await?;
        if numbered.is_some() {
            return Ok(numbered);
        }
        return Ok(in_series()
            .filter(project::Column::ProjectKind.eq("continuous"))
            .one(db)
            .await?);
    }
    match payload.volume.number {
        Some(number) => Ok(in_series()
            .filter(project::Column::VolumeNumber.eq(i32::try_from(number).unwrap_or(i32::MAX)))
            .one(db)
            .await?),
        None => Ok(None),
    }
}

#[allow(clippy::too_many_arguments)]
async fn store(
    txn: &DatabaseTransaction,
    who: &Principal,
    owner: &account::Model,
    payload: &TranslationPayload,
    key: Option<&str>,
    hash: &str,
    provider_id: Option<String>,
    priority: Priority,
    start: bool,
) -> Result<request::Model, SchedulerError> {
    let now = clock::now();
    let series = match find_series(txn, &owner.id, payload).await {
        Ok(Some(series)) => series,
        Ok(None) if payload.series.create_if_missing => {
            series::ActiveModel {
                id: Set(ids::new_id()),
                account_id: Set(owner.id.clone()),
                name: Set(payload.series.name.clone().unwrap_or_default()),
                kind: Set(if payload.volume.latest {
                    "continuous"
                } else {
                    "numbered"
                }
                .into()),
                source_language: Set(Some(payload.source_language.clone())),
                target_language: Set(Some(payload.target_language.clone())),
                archived: Set(false),
                default_provider_id: Set(provider_id.clone()),
                shared_glossary_id: Set(None),
                suspended: Set(false),
                created_at: Set(now),
                updated_at: Set(now),
            }
            .insert(txn)
            .await?
        }
        Ok(None) => return Err(SchedulerError::SeriesNotFound),
        Err(e) => return Err(e),
    };
    if series.archived {
        return Err(SchedulerError::SeriesArchived);
    }
    let volume = match find_volume(txn, &owner.id, &series, payload).await? {
        Some(volume) => volume,
        None => {
            let number = payload
                .volume
                .number
                .and_then(|n| i32::try_from(n).ok())
                .or(Some(1));
            let title = payload
                .volume
                .title
                .clone()
                .unwrap_or_else(|| format!("{} {}", series.name, number.unwrap_or(1)));
            project::ActiveModel {
                id: Set(ids::new_id()),
                series_id: Set(series.id.clone()),
                account_id: Set(owner.id.clone()),
                title: Set(title),
                volume_number: Set(number),
                volume_label: Set(None),
                external_id: Set(payload.volume.external_id.clone()),
                source_format: Set(Some("json".into())),
                project_kind: Set("volume".into()),
                status: Set("empty".into()),
                provider_id: Set(payload.provider_id.clone()),
                source_language: Set(payload.source_language.clone()),
                target_language: Set(payload.target_language.clone()),
                author: Set(payload.author.clone()),
                original_blob: Set(None),
                analysis_mode: Set(None),
                threads: Set(payload.pipeline.threads.and_then(|t| i32::try_from(t).ok())),
                archived: Set(false),
                created_at: Set(now),
                updated_at: Set(now),
            }
            .insert(txn)
            .await?
        }
    };
    if volume.archived {
        return Err(SchedulerError::VolumeArchived);
    }
    let mut outcome = import_chapters(txn, &volume, payload, now).await?;
    if payload.callback_events.iter().any(|e| e == EVENT_CHAPTERS) {
        // Chapters complete already are never announced (spec 6.2).
        let ids = request::chapter_list(&outcome, "ids");
        let complete = passage::fully_translated_chapters(txn, &ids).await?;
        let complete: Vec<&String> = ids.iter().filter(|id| complete.contains(*id)).collect();
        outcome["translated_at_import"] = json!(complete);
    }

    let request_id = ids::new_id();
    let busy = start && lifecycle::series_busy(txn, &series.id).await?;
    let status = if !start {
        "imported"
    } else if busy {
        "queued"
    } else {
        "pending"
    };
    let options = json!({
        "start": start,
        "final_review": payload.pipeline.final_review.unwrap_or(true),
        "output_format": payload.output.format.clone().unwrap_or_else(|| "json".into()),
        "analysis_mode": Value::Null,
        "threads": payload.pipeline.threads,
        "quality": payload.pipeline.quality.clone().unwrap_or_else(|| "normal".into()),
        "context_backend": payload.pipeline.context_backend.clone().unwrap_or_else(|| "internal".into()),
        "provider_id": provider_id,
        "target_language": payload.target_language,
        "source_language": payload.source_language,
    });
    let row = request::ActiveModel {
        id: Set(request_id.clone()),
        account_id: Set(owner.id.clone()),
        token_id: Set(who.token_id.clone()),
        external_id: Set(payload.external_id.clone()),
        idempotency_key: Set(key.map(str::to_owned)),
        content_hash: Set(hash.to_owned()),
        series_id: Set(series.id.clone()),
        project_id: Set(volume.id.clone()),
        job_id: Set(None),
        input: Set("json".into()),
        status: Set(status.into()),
        stage: Set("import".into()),
        step: Set(if start { "waiting" } else { "imported" }.into()),
        error: Set(String::new()),
        stop_reason: Set(String::new()),
        priority: Set(priority.as_str().into()),
        options: Set(options),
        callback_url: Set(payload.callback_url.clone()),
        callback_events: Set(json!(payload.callback_events)),
        chapters: Set(outcome),
        result: Set(None),
        report: Set(None),
        next_attempt: Set(0),
        created_at: Set(now),
        updated_at: Set(now),
        finished_at: Set((!start).then_some(now)),
    }
    .insert(txn)
    .await?;
    let mut volume_model: project::ActiveModel = volume.into();
    volume_model.status = Set(if start { "translating" } else { "imported" }.into());
    volume_model.updated_at = Set(now);
    volume_model.update(txn).await?;
    if !start {
        lifecycle::finish_report(txn, &row, "imported", None).await?;
        return Ok(request::Entity::find_by_id(row.id.clone())
            .one(txn)
            .await?
            .unwrap_or(row));
    }
    if busy {
        return Ok(row);
    }
    lifecycle::create_job(txn, row).await
}

/// Compares the request's chapters with the volume's, stores new and
/// replaced ones with their passages, and returns the `chapters` object of
/// the status document (counts, `new`, and every chapter id of the request).
async fn import_chapters(
    txn: &DatabaseTransaction,
    volume: &project::Model,
    payload: &TranslationPayload,
    now: i64,
) -> Result<Value, SchedulerError> {
    let existing = chapter::Entity::find()
        .filter(chapter::Column::ProjectId.eq(volume.id.clone()))
        .order_by_asc(chapter::Column::Position)
        .all(txn)
        .await?;
    let mut order: Vec<Slot> = existing
        .iter()
        .map(|c| Slot {
            id: c.id.clone(),
            number: c.number.map(|n| (n, c.part.unwrap_or(1))),
        })
        .collect();
    let incoming: Vec<IncomingChapter> = payload.chapters.iter().map(chapters::read).collect();
    let (mut created, mut unchanged, mut replaced) = (0, 0, 0);
    let mut new_ids = Vec::new();
    let mut request_ids = Vec::new();
    let mut conflicts = Vec::new();
    let mut human = Vec::new();
    let mut anchor: Option<String> = None;
    let mut status_map = serde_json::Map::new();
    for chapter_in in &incoming {
        let found = existing
            .iter()
            .find(|c| match (&chapter_in.external_id, chapter_in.number) {
                (Some(id), _) => c.external_id.as_deref() == Some(id.as_str()),
                (None, Some(n)) => {
                    c.number == Some(n) && c.part.unwrap_or(1) == chapter_in.part.unwrap_or(1)
                }
                (None, None) => {
                    c.number.is_none()
                        && c.title == chapter_in.title
                        && c.kind == chapter_in.kind.key()
                }
            });
        match found {
            Some(old) if old.source_sha256 == chapter_in.source_sha256 => {
                unchanged += 1;
                status_map.insert(old.id.clone(), json!("unchanged"));
                request_ids.push(old.id.clone());
                anchor = Some(old.id.clone());
            }
            Some(old) => {
                if !payload.replace_changed_chapters {
                    conflicts.push(
                        old.external_id
                            .clone()
                            .unwrap_or_else(|| old.label.clone().unwrap_or_default()),
                    );
                    continue;
                }
                if replace_passages(txn, old, chapter_in, payload.discard_human, now).await? {
                    human.push(old.external_id.clone().unwrap_or_else(|| old.id.clone()));
                    continue;
                }
                replaced += 1;
                status_map.insert(old.id.clone(), json!("replaced"));
                new_ids.push(old.id.clone());
                request_ids.push(old.id.clone());
                anchor = Some(old.id.clone());
            }
            None => {
                let id = ids::new_id();
                chapters::place(
                    &mut order,
                    Slot {
                        id: id.clone(),
                        number: chapter_in.number.map(|n| (n, chapter_in.part.unwrap_or(1))),
                    },
                    anchor.as_deref(),
                );
                insert_chapter(txn, volume, &id, chapter_in, now).await?;
                created += 1;
                status_map.insert(id.clone(), json!("created"));
                new_ids.push(id.clone());
                request_ids.push(id.clone());
                anchor = Some(id);
            }
        }
    }
    if !conflicts.is_empty() {
        return Err(SchedulerError::ChapterConflict(conflicts));
    }
    if !human.is_empty() {
        return Err(SchedulerError::HumanWork(human));
    }
    // Renumber the reading order; only chapters whose place moved are written.
    let old_positions: HashMap<&str, i32> = existing
        .iter()
        .map(|c| (c.id.as_str(), c.position))
        .collect();
    for (index, slot) in order.iter().enumerate() {
        let position = i32::try_from(index + 1).unwrap_or(i32::MAX);
        let moved = old_positions
            .get(slot.id.as_str())
            .is_none_or(|p| *p != position);
        if moved {
            chapter::Entity::update_many()
                .col_expr(
                    chapter::Column::Position,
                    sea_orm::sea_query::Expr::value(position),
                )
                .filter(chapter::Column::Id.eq(slot.id.clone()))
                .exec(txn)
                .await?;
        }
    }
    Ok(json!({
        "created": created,
        "unchanged": unchanged,
        "replaced": replaced,
        "new": new_ids,
        "ids": request_ids,
        "map": status_map,
    }))
}

async fn insert_chapter(
    txn: &DatabaseTransaction,
    volume: &project::Model,
    id: &str,
    chapter_in: &IncomingChapter,
    now: i64,
) -> Result<(), SchedulerError> {
    chapter::ActiveModel {
        id: Set(id.to_owned()),
        project_id: Set(volume.id.clone()),
        external_id: Set(chapter_in.external_id.clone()),
        number: Set(chapter_in.number),
        part: Set(chapter_in.part),
        part_count: Set(None),
        kind: Set(chapter_in.kind.key().to_owned()),
        label: Set(Some(chapter_in.label.clone())),
        title: Set(chapter_in.title.clone()),
        translated_title: Set(None),
        // Placed for real by the renumbering pass.
        position: Set(0),
        source_sha256: Set(chapter_in.source_sha256.clone()),
        words: Set(chapter_in.words),
        mapping: Set(Some(chapter_in.mapping.clone())),
        created_at: Set(now),
        updated_at: Set(now),
    }
    .insert(txn)
    .await?;
    insert_passages(
        txn,
        volume,
        id,
        &chapter_in.passages,
        &mut HashMap::new(),
        now,
    )
    .await
}

/// Translation and review state carried from an old passage with the same
/// source text.
type Kept = (Option<String>, String, bool, bool);

async fn insert_passages(
    txn: &DatabaseTransaction,
    volume: &project::Model,
    chapter_id: &str,
    passages: &[String],
    kept: &mut HashMap<String, Vec<Kept>>,
    now: i64,
) -> Result<(), SchedulerError> {
    let rows: Vec<passage::ActiveModel> = passages
        .iter()
        .enumerate()
        .map(|(index, text)| {
            let (translation, status, human, validated) = kept
                .get_mut(text)
                .and_then(Vec::pop)
                .unwrap_or((None, "pending".into(), false, false));
            passage::ActiveModel {
                id: Set(ids::new_id()),
                chapter_id: Set(chapter_id.to_owned()),
                project_id: Set(volume.id.clone()),
                position: Set(i32::try_from(index + 1).unwrap_or(i32::MAX)),
                source: Set(text.clone()),
                markup: Set(None),
                translation: Set(translation),
                status: Set(status),
                last_error: Set(None),
                human: Set(human),
                validated: Set(validated),
                attempts: Set(0),
                created_at: Set(now),
                updated_at: Set(now),
            }
        })
        .collect();
    for batch in rows.chunks(200) {
        passage::Entity::insert_many(batch.to_vec())
            .exec(txn)
            .await?;
    }
    Ok(())
}

/// Replaces a changed chapter's passages; unchanged passages keep their
/// translation. Returns true (and changes nothing) when passages a person
/// edited or validated would be dropped without `discard_human`.
async fn replace_passages(
    txn: &DatabaseTransaction,
    old: &chapter::Model,
    chapter_in: &IncomingChapter,
    discard_human: bool,
    now: i64,
) -> Result<bool, SchedulerError> {
    let old_passages = passage::Entity::find()
        .filter(passage::Column::ChapterId.eq(old.id.clone()))
        .order_by_asc(passage::Column::Position)
        .all(txn)
        .await?;
    let mut kept: HashMap<String, Vec<Kept>> = HashMap::new();
    for p in old_passages.iter().rev() {
        kept.entry(p.source.clone()).or_default().push((
            p.translation.clone(),
            p.status.clone(),
            p.human,
            p.validated,
        ));
    }
    let mut remaining = kept.clone();
    for text in &chapter_in.passages {
        if let Some(list) = remaining.get_mut(text) {
            list.pop();
        }
    }
    let drops_human = remaining
        .values()
        .flatten()
        .any(|(_, _, human, validated)| *human || *validated);
    if drops_human && !discard_human {
        return Ok(true);
    }
    passage::Entity::delete_many()
        .filter(passage::Column::ChapterId.eq(old.id.clone()))
        .exec(txn)
        .await?;
    let volume = project::Entity::find_by_id(old.project_id.clone())
        .one(txn)
        .await?
        .ok_or(SchedulerError::RequestNotFound)?;
    insert_passages(txn, &volume, &old.id, &chapter_in.passages, &mut kept, now).await?;
    let mut model: chapter::ActiveModel = old.clone().into();
    model.source_sha256 = Set(chapter_in.source_sha256.clone());
    model.words = Set(chapter_in.words);
    model.title = Set(chapter_in.title.clone());
    model.translated_title = Set(None);
    model.updated_at = Set(now);
    model.update(txn).await?;
    Ok(false)
}
