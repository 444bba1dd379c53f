//! The batch rows and their items as the database keeps them: a batch is
//! written whole (its `submission_key` and every item's line) before
//! anything is sent, and each step with the provider moves it on by a
//! conditional update, so that two workers never both take the same step
//! and a worker that restarts finds where it stood.

use crate::llm::{BatchLimits, LlmClient, LlmError};
use dragoman_model::entities::{provider_batch, provider_batch_item};
use dragoman_model::vocab::{BatchState, UsageStage};
use dragoman_model::{clock, ids};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DatabaseConnection, DbErr, EntityTrait,
    PaginatorTrait, QueryFilter, QueryOrder, Set, TransactionTrait,
};
use serde_json::Value;

/// What the item outcome of an answered call says.
pub const ITEM_OK: &str = "ok";
/// What the item outcome of a call without a usable answer says.
pub const ITEM_FAILED: &str = "failed";

/// Whose batches these are.
#[derive(Debug, Clone)]
pub struct Owner {
    pub job_id: String,
    pub request_id: String,
    pub project_id: String,
    pub provider_id: String,
    pub stage: UsageStage,
}

/// One call to send by batch.
#[derive(Debug, Clone)]
pub struct Call {
    /// What its answer is for, as the stage reads it back.
    pub subject: Value,
    pub system: String,
    pub user: String,
    pub max_tokens: u32,
    /// What it is expected to cost at the batch discount, when priced.
    pub cost: Option<f64>,
}

/// Why calls could not be written down as batches.
#[derive(Debug)]
pub enum OpenError {
    Db(DbErr),
    /// The provider's kind cannot write a batch line.
    Line(LlmError),
}

impl From<DbErr> for OpenError {
    fn from(e: DbErr) -> OpenError {
        OpenError::Db(e)
    }
}

/// The key of the `number`th batch of a job: unique, and what each of its
/// items' `custom_id` starts with.
fn submission_key(job_id: &str, number: u64) -> String {
    format!("dragoman-{job_id}-{number}")
}

fn custom_id(key: &str, item: usize) -> String {
    format!("{key}-{item}")
}

/// Bytes one line takes in the batch's input (with its line break).
fn line_bytes(line: &Value) -> usize {
    line.to_string().len() + 1
}

/// One batch being filled.
struct Draft {
    key: String,
    items: Vec<(Value, Value)>,
    bytes: usize,
    /// What its calls are expected to cost, when any is priced.
    cost: Option<f64>,
}

/// Splits `calls` into batches within `limits`, each under a key of
/// `keys` (called once per batch), with its items' lines.
fn split(
    calls: &[Call],
    limits: BatchLimits,
    mut keys: impl FnMut() -> String,
    line: &dyn Fn(&str, &Call) -> Result<Value, LlmError>,
) -> Result<Vec<Draft>, LlmError> {
    let mut drafts: Vec<Draft> = Vec::new();
    let mut current = Draft {
        key: keys(),
        items: Vec::new(),
        bytes: 0,
        cost: None,
    };
    for call in calls {
        let mut built = line(&custom_id(&current.key, current.items.len() + 1), call)?;
        let mut bytes = line_bytes(&built);
        let full = current.items.len() + 1 > limits.max_requests.max(1)
            || current.bytes + bytes > limits.max_bytes;
        if full && !current.items.is_empty() {
            let next = Draft {
                key: keys(),
                items: Vec::new(),
                bytes: 0,
                cost: None,
            };
            drafts.push(std::mem::replace(&mut current, next));
            built = line(&custom_id(&current.key, 1), call)?;
            bytes = line_bytes(&built);
        }
        current.items.push((call.subject.clone(), built));
        current.bytes += bytes;
        if let Some(cost) = call.cost {
            current.cost = Some(current.cost.unwrap_or(0.0) + cost);
        }
    }
    if !current.items.is_empty() {
        drafts.push(current);
    }
    Ok(drafts)
}

/// Writes `calls` down as batches of `owner` in state `collecting`, each
/// in one transaction with all its items, split by the provider's limits.
/// Nothing is sent: the rows are what a restarted worker resumes from.
pub async fn open(
    db: &DatabaseConnection,
    owner: &Owner,
    client: &LlmClient,
    calls: &[Call],
) -> Result<Vec<provider_batch::Model>, OpenError> {
    let before = provider_batch::Entity::find()
        .filter(provider_batch::Column::JobId.eq(owner.job_id.clone()))
        .count(db)
        .await?;
    let mut number = before;
    let drafts = split(
        calls,
        client.batch_limits(),
        || {
            number += 1;
            submission_key(&owner.job_id, number)
        },
        &|id, call| client.batch_line(id, &call.system, &call.user, call.max_tokens),
    )
    .map_err(OpenError::Line)?;
    let mut rows = Vec::with_capacity(drafts.len());
    for draft in drafts {
        let now = clock::now();
        let row = provider_batch::Model {
            id: ids::new_id(),
            job_id: owner.job_id.clone(),
            request_id: owner.request_id.clone(),
            project_id: owner.project_id.clone(),
            provider_id: owner.provider_id.clone(),
            stage: owner.stage,
            submission_key: draft.key.clone(),
            state: BatchState::Collecting,
            remote_id: None,
            input_file_id: None,
            items: i32::try_from(draft.items.len()).unwrap_or(i32::MAX),
            done: 0,
            failed: 0,
            submitted_at: None,
            expected_by: None,
            next_poll_at: None,
            polls: 0,
            applied_at: None,
            expected_cost: draft.cost,
            last_error: String::new(),
            created_at: now,
            updated_at: now,
        };
        let items: Vec<provider_batch_item::ActiveModel> = draft
            .items
            .into_iter()
            .enumerate()
            .map(|(n, (subject, line))| provider_batch_item::ActiveModel {
                id: Set(ids::new_id()),
                batch_id: Set(row.id.clone()),
                custom_id: Set(custom_id(&draft.key, n + 1)),
                subject: Set(subject.to_string()),
                line: Set(line.to_string()),
                outcome: Set(None),
            })
            .collect();
        let txn = db.begin().await?;
        provider_batch::ActiveModel::from(row.clone())
            .insert(&txn)
            .await?;
        for chunk in items.chunks(200) {
            provider_batch_item::Entity::insert_many(chunk.to_vec())
                .exec(&txn)
                .await?;
        }
        txn.commit().await?;
        rows.push(row);
    }
    Ok(rows)
}

/// Notes once that `owner`'s stage runs without batches, the provider's
/// kind having no batch API: a row in state `unsupported` with no items.
pub async fn unsupported(db: &DatabaseConnection, owner: &Owner) -> Result<(), DbErr> {
    let noted = provider_batch::Entity::find()
        .filter(provider_batch::Column::JobId.eq(owner.job_id.clone()))
        .filter(provider_batch::Column::Stage.eq(owner.stage))
        .filter(provider_batch::Column::State.eq(BatchState::Unsupported))
        .count(db)
        .await?;
    if noted > 0 {
        return Ok(());
    }
    let before = provider_batch::Entity::find()
        .filter(provider_batch::Column::JobId.eq(owner.job_id.clone()))
        .count(db)
        .await?;
    let now = clock::now();
    provider_batch::ActiveModel {
        id: Set(ids::new_id()),
        job_id: Set(owner.job_id.clone()),
        request_id: Set(owner.request_id.clone()),
        project_id: Set(owner.project_id.clone()),
        provider_id: Set(owner.provider_id.clone()),
        stage: Set(owner.stage),
        submission_key: Set(submission_key(&owner.job_id, before + 1)),
        state: Set(BatchState::Unsupported),
        remote_id: Set(None),
        input_file_id: Set(None),
        items: Set(0),
        done: Set(0),
        failed: Set(0),
        submitted_at: Set(None),
        expected_by: Set(None),
        next_poll_at: Set(None),
        polls: Set(0),
        applied_at: Set(None),
        expected_cost: Set(None),
        last_error: Set(String::new()),
        created_at: Set(now),
        updated_at: Set(now),
    }
    .insert(db)
    .await?;
    Ok(())
}

/// The job's batches of `stage` in the order they were written.
pub async fn of_stage(
    db: &DatabaseConnection,
    job_id: &str,
    stage: UsageStage,
) -> Result<Vec<provider_batch::Model>, DbErr> {
    provider_batch::Entity::find()
        .filter(provider_batch::Column::JobId.eq(job_id.to_owned()))
        .filter(provider_batch::Column::Stage.eq(stage))
        .order_by_asc(provider_batch::Column::CreatedAt)
        .order_by_asc(provider_batch::Column::SubmissionKey)
        .all(db)
        .await
}

/// Whether a batch still has to be driven to its results or applied.
pub fn pending(row: &provider_batch::Model) -> bool {
    row.state != BatchState::Unsupported && row.applied_at.is_none()
}

/// The items of a batch, in their order.
pub async fn items(
    db: &impl ConnectionTrait,
    batch_id: &str,
) -> Result<Vec<provider_batch_item::Model>, DbErr> {
    provider_batch_item::Entity::find()
        .filter(provider_batch_item::Column::BatchId.eq(batch_id.to_owned()))
        .order_by_asc(provider_batch_item::Column::Id)
        .all(db)
        .await
}

/// The batch as stored now.
pub async fn reread(
    db: &DatabaseConnection,
    id: &str,
) -> Result<Option<provider_batch::Model>, DbErr> {
    provider_batch::Entity::find_by_id(id.to_owned())
        .one(db)
        .await
}

/// Moves the batch from `from` to what `change` sets (its state among
/// them), only if it is still in `from`; the row as it is then, or `None`
/// when another step moved it first.
pub async fn advance(
    db: &DatabaseConnection,
    row: &provider_batch::Model,
    from: BatchState,
    change: provider_batch::ActiveModel,
) -> Result<Option<provider_batch::Model>, DbErr> {
    let mut change = change;
    change.updated_at = Set(clock::now());
    let moved = provider_batch::Entity::update_many()
        .set(change)
        .filter(provider_batch::Column::Id.eq(row.id.clone()))
        .filter(provider_batch::Column::State.eq(from))
        .exec(db)
        .await?;
    if moved.rows_affected == 0 {
        return Ok(None);
    }
    reread(db, &row.id).await
}

/// A change that only sets the state.
pub fn to_state(state: BatchState) -> provider_batch::ActiveModel {
    provider_batch::ActiveModel {
        state: Set(state),
        ..Default::default()
    }
}

/// Notes when the batch is asked next and why the last step failed,
/// whatever its state.
pub async fn note_poll(
    db: &DatabaseConnection,
    id: &str,
    next_poll_at: i64,
    polls: i32,
    error: &str,
) -> Result<(), DbErr> {
    provider_batch::Entity::update_many()
        .col_expr(
            provider_batch::Column::NextPollAt,
            Expr::value(next_poll_at),
        )
        .col_expr(provider_batch::Column::Polls, Expr::value(polls))
        .col_expr(provider_batch::Column::LastError, Expr::value(error))
        .col_expr(provider_batch::Column::UpdatedAt, Expr::value(clock::now()))
        .filter(provider_batch::Column::Id.eq(id.to_owned()))
        .exec(db)
        .await?;
    Ok(())
}

/// Notes the outcome of each item (by id) and that the batch's results
/// were stored, in one transaction.
pub async fn applied(
    db: &DatabaseConnection,
    id: &str,
    outcomes: &[(String, bool)],
) -> Result<(), DbErr> {
    let txn = db.begin().await?;
    for (item, ok) in outcomes {
        provider_batch_item::Entity::update_many()
            .col_expr(
                provider_batch_item::Column::Outcome,
                Expr::value(if *ok { ITEM_OK } else { ITEM_FAILED }),
            )
            .filter(provider_batch_item::Column::Id.eq(item.clone()))
            .exec(&txn)
            .await?;
    }
    let now = clock::now();
    provider_batch::Entity::update_many()
        .col_expr(provider_batch::Column::AppliedAt, Expr::value(now))
        .col_expr(provider_batch::Column::UpdatedAt, Expr::value(now))
        .filter(provider_batch::Column::Id.eq(id.to_owned()))
        .exec(&txn)
        .await?;
    txn.commit().await
}

/// The job's batches the provider still works on (`submitted`), moved to
/// `canceling`: their providers and their ids there.
pub async fn to_cancel(
    db: &DatabaseConnection,
    job_id: &str,
) -> Result<Vec<(String, String)>, DbErr> {
    let open = provider_batch::Entity::find()
        .filter(provider_batch::Column::JobId.eq(job_id.to_owned()))
        .filter(provider_batch::Column::State.eq(BatchState::Submitted))
        .all(db)
        .await?;
    let mut remote = Vec::new();
    for row in open {
        let Some(remote_id) = row.remote_id.clone() else {
            continue;
        };
        if advance(
            db,
            &row,
            BatchState::Submitted,
            to_state(BatchState::Canceling),
        )
        .await?
        .is_some()
        {
            remote.push((row.provider_id.clone(), remote_id));
        }
    }
    Ok(remote)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch_mode::testing::{self, db};
    use crate::llm::ProviderKind;
    use serde_json::json;

    fn client(kind: ProviderKind) -> LlmClient {
        testing::client(kind, "http://127.0.0.1:9".into())
    }

    fn owner() -> Owner {
        Owner {
            job_id: "job".into(),
            request_id: "request".into(),
            project_id: "project".into(),
            provider_id: "provider".into(),
            stage: UsageStage::Translation,
        }
    }

    #[tokio::test]
    async fn a_batch_is_written_whole_before_anything_is_sent_and_moves_once() {
        let db = db().await;
        let client = client(ProviderKind::OpenAi);
        let calls: Vec<Call> = (0..3).map(|n| call(n, 10)).collect();
        let rows = open(&db, &owner(), &client, &calls).await.expect("open");
        assert_eq!(rows.len(), 1);
        let row = &rows[0];
        assert_eq!(row.state, BatchState::Collecting);
        assert_eq!(row.submission_key, "dragoman-job-1");
        assert_eq!(row.items, 3);
        let stored = items(&db, &row.id).await.expect("items");
        let ids: Vec<&str> = stored.iter().map(|i| i.custom_id.as_str()).collect();
        assert_eq!(
            ids,
            ["dragoman-job-1-1", "dragoman-job-1-2", "dragoman-job-1-3"]
        );
        assert_eq!(stored[2].subject, json!({ "n": 2 }).to_string());

        // A second batch of the job gets the next key.
        let more = open(&db, &owner(), &client, &calls[..1])
            .await
            .expect("open");
        assert_eq!(more[0].submission_key, "dragoman-job-2");

        // Two steps from the same state: only the first moves it.
        let first = advance(
            &db,
            row,
            BatchState::Collecting,
            to_state(BatchState::Uploading),
        )
        .await
        .expect("advance");
        assert_eq!(first.map(|r| r.state), Some(BatchState::Uploading));
        let second = advance(
            &db,
            row,
            BatchState::Collecting,
            to_state(BatchState::Uploading),
        )
        .await
        .expect("advance");
        assert!(second.is_none());

        let all = of_stage(&db, "job", UsageStage::Translation)
            .await
            .expect("rows");
        assert_eq!(all.len(), 2);
        assert!(all.iter().all(pending));
        applied(
            &db,
            &row.id,
            &[(stored[0].id.clone(), true), (stored[1].id.clone(), false)],
        )
        .await
        .expect("applied");
        let after = reread(&db, &row.id).await.expect("row").expect("row");
        assert!(!pending(&after));
        let outcomes: Vec<Option<String>> = items(&db, &row.id)
            .await
            .expect("items")
            .into_iter()
            .map(|i| i.outcome)
            .collect();
        assert_eq!(
            outcomes,
            [Some(ITEM_OK.to_owned()), Some(ITEM_FAILED.to_owned()), None]
        );
    }

    #[tokio::test]
    async fn only_submitted_batches_are_cancelled_and_unsupported_is_noted_once() {
        let db = db().await;
        let client = client(ProviderKind::Anthropic);
        let calls: Vec<Call> = (0..2).map(|n| call(n, 10)).collect();
        let rows = open(&db, &owner(), &client, &calls).await.expect("open");
        let waiting = open(&db, &owner(), &client, &calls).await.expect("open");
        let change = provider_batch::ActiveModel {
            state: Set(BatchState::Submitted),
            remote_id: Set(Some("msgbatch_1".into())),
            ..Default::default()
        };
        advance(&db, &rows[0], BatchState::Collecting, change)
            .await
            .expect("advance")
            .expect("moved");
        let cancelled = to_cancel(&db, "job").await.expect("cancel");
        let remote: Vec<&str> = cancelled.iter().map(|(_, id)| id.as_str()).collect();
        assert_eq!(remote, ["msgbatch_1"]);
        assert!(to_cancel(&db, "job").await.expect("cancel").is_empty());
        let left = reread(&db, &waiting[0].id)
            .await
            .expect("row")
            .expect("row");
        assert_eq!(left.state, BatchState::Collecting);

        unsupported(&db, &owner()).await.expect("unsupported");
        unsupported(&db, &owner()).await.expect("unsupported");
        let noted: Vec<BatchState> = of_stage(&db, "job", UsageStage::Translation)
            .await
            .expect("rows")
            .into_iter()
            .map(|r| r.state)
            .collect();
        assert_eq!(
            noted,
            [
                BatchState::Canceling,
                BatchState::Collecting,
                BatchState::Unsupported
            ]
        );
    }

    fn call(n: usize, size: usize) -> Call {
        Call {
            subject: json!({ "n": n }),
            system: String::new(),
            user: "x".repeat(size),
            max_tokens: 1,
            cost: None,
        }
    }

    fn line(id: &str, call: &Call) -> Result<Value, LlmError> {
        Ok(json!({ "custom_id": id, "body": call.user }))
    }

    fn keys() -> impl FnMut() -> String {
        let mut n = 0;
        move || {
            n += 1;
            submission_key("job", n)
        }
    }

    #[test]
    fn calls_are_split_by_requests_and_bytes_with_ids_under_their_batch_key() {
        let limits = BatchLimits {
            max_requests: 2,
            max_bytes: 1_000_000,
        };
        let calls: Vec<Call> = (0..5).map(|n| call(n, 10)).collect();
        let drafts = split(&calls, limits, keys(), &line).expect("split");
        let sizes: Vec<usize> = drafts.iter().map(|d| d.items.len()).collect();
        assert_eq!(sizes, [2, 2, 1]);
        assert_eq!(drafts[1].key, "dragoman-job-2");
        assert_eq!(drafts[1].items[0].1["custom_id"], "dragoman-job-2-1");
        assert_eq!(drafts[1].items[1].1["custom_id"], "dragoman-job-2-2");
        assert_eq!(drafts[2].items[0].0, json!({ "n": 4 }));

        // Lines of about 60 bytes, 130 bytes a batch: two a batch.
        let limits = BatchLimits {
            max_requests: 100,
            max_bytes: 130,
        };
        let drafts = split(&calls, limits, keys(), &line).expect("split");
        let sizes: Vec<usize> = drafts.iter().map(|d| d.items.len()).collect();
        assert_eq!(sizes, [2, 2, 1]);
        assert!(drafts.iter().all(|d| d.bytes <= 130));
    }

    #[test]
    fn a_call_larger_than_the_byte_limit_goes_alone() {
        let limits = BatchLimits {
            max_requests: 100,
            max_bytes: 50,
        };
        let calls = vec![call(0, 200), call(1, 200)];
        let drafts = split(&calls, limits, keys(), &line).expect("split");
        let sizes: Vec<usize> = drafts.iter().map(|d| d.items.len()).collect();
        assert_eq!(sizes, [1, 1]);
    }
}
