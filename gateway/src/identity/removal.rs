//! Deleting an account (spec 4.9), in one transaction: what it owns moves
//! to another account, its tokens, sessions and password resets go, then
//! the account itself. Without a recipient an account that owns anything
//! is kept (409 `account_not_empty`).
//!
//! What an account owns is every row naming it in `account_id`: series,
//! books, requests, jobs, shared glossaries, deleted requests' records,
//! provider calls, the licence ledger, passage versions and analyses.
//! Mails already queued for it stay in the outbox without an owner. Names
//! unique per owner (series and glossary names, books' and requests'
//! external ids, idempotency keys) must not collide at the recipient's:
//! such a clash refuses the whole deletion (409 `conflict`, field `clash`
//! naming the kind and `id` the deleted account's item), nothing moved.

use super::accounts::{begin, by_id, check_not_last_admin};
use super::audit_log::audit;
use crate::error::ApiError;
use dragoman_model::entities::{
    account, api_token, deleted_request, glossary, job, licence_word, mail_outbox,
    passage_analysis, passage_version, password_reset, project, provider_call, request, series,
    session,
};
use dragoman_model::vocab::{AuditAction, ErrorCode, Issue, IssueContext, IssueKind};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseConnection, EntityTrait, PaginatorTrait, QueryFilter,
    QuerySelect,
};
use serde::Serialize;
use std::collections::BTreeMap;

/// Keys compared per query when looking for clashes (well under the
/// databases' bound on parameters).
const CHUNK: usize = 500;

/// What the audit log keeps of a deletion.
#[derive(Serialize)]
struct Deleted<'a> {
    username: &'a str,
    transfer_to: Option<&'a str>,
    /// Rows moved, by table.
    moved: &'a BTreeMap<&'static str, u64>,
}

/// Rows of `E` whose `owner` is `account`.
async fn owned<E>(
    db: &impl ConnectionTrait,
    owner: E::Column,
    account: &str,
) -> Result<u64, ApiError>
where
    E: EntityTrait,
    E::Model: Sync,
{
    Ok(E::find().filter(owner.eq(account)).count(db).await?)
}

/// Moves the rows of `E` owned by `from` to `to`; how many moved.
async fn reassign<E>(
    db: &impl ConnectionTrait,
    owner: E::Column,
    from: &str,
    to: &str,
) -> Result<u64, ApiError>
where
    E: EntityTrait,
{
    Ok(E::update_many()
        .col_expr(owner, Expr::value(to))
        .filter(owner.eq(from))
        .exec(db)
        .await?
        .rows_affected)
}

/// The id of a row of `E` owned by `from` whose `key` (unique per owner)
/// `to` already uses, if any.
async fn clash<E>(
    db: &impl ConnectionTrait,
    id: E::Column,
    owner: E::Column,
    key: E::Column,
    from: &str,
    to: &str,
) -> Result<Option<String>, ApiError>
where
    E: EntityTrait,
{
    let keys: Vec<(String, String)> = E::find()
        .select_only()
        .column(id)
        .column(key)
        .filter(owner.eq(from))
        .filter(key.is_not_null())
        .into_tuple()
        .all(db)
        .await?;
    for chunk in keys.chunks(CHUNK) {
        let wanted: Vec<&str> = chunk.iter().map(|(_, k)| k.as_str()).collect();
        let taken: Option<String> = E::find()
            .select_only()
            .column(key)
            .filter(owner.eq(to))
            .filter(key.is_in(wanted))
            .into_tuple()
            .one(db)
            .await?;
        if let Some(taken) = taken {
            return Ok(chunk
                .iter()
                .find(|(_, k)| *k == taken)
                .map(|(id, _)| id.clone()));
        }
    }
    Ok(None)
}

/// 409 `conflict` naming the first clash between what `from` owns and
/// what `to` already has.
async fn check_no_clash(db: &impl ConnectionTrait, from: &str, to: &str) -> Result<(), ApiError> {
    use {glossary as g, project as p, request as r, series as s};
    let found = [
        (
            "series_name",
            clash::<s::Entity>(
                db,
                s::Column::Id,
                s::Column::AccountId,
                s::Column::Name,
                from,
                to,
            )
            .await?,
        ),
        (
            "glossary_name",
            clash::<g::Entity>(
                db,
                g::Column::Id,
                g::Column::AccountId,
                g::Column::Name,
                from,
                to,
            )
            .await?,
        ),
        (
            "volume_external_id",
            clash::<p::Entity>(
                db,
                p::Column::Id,
                p::Column::AccountId,
                p::Column::ExternalId,
                from,
                to,
            )
            .await?,
        ),
        (
            "request_external_id",
            clash::<r::Entity>(
                db,
                r::Column::Id,
                r::Column::AccountId,
                r::Column::ExternalId,
                from,
                to,
            )
            .await?,
        ),
        (
            "request_idempotency_key",
            clash::<r::Entity>(
                db,
                r::Column::Id,
                r::Column::AccountId,
                r::Column::IdempotencyKey,
                from,
                to,
            )
            .await?,
        ),
    ];
    for (kind, item) in found {
        if let Some(item) = item {
            return Err(ApiError::new(ErrorCode::Conflict)
                .with("clash", kind)
                .with("id", item));
        }
    }
    Ok(())
}

/// What `account` owns, table by table (only tables with rows).
async fn holdings(
    db: &impl ConnectionTrait,
    account: &str,
) -> Result<BTreeMap<&'static str, u64>, ApiError> {
    let counts = [
        (
            "series",
            owned::<series::Entity>(db, series::Column::AccountId, account).await?,
        ),
        (
            "projects",
            owned::<project::Entity>(db, project::Column::AccountId, account).await?,
        ),
        (
            "requests",
            owned::<request::Entity>(db, request::Column::AccountId, account).await?,
        ),
        (
            "jobs",
            owned::<job::Entity>(db, job::Column::AccountId, account).await?,
        ),
        (
            "glossaries",
            owned::<glossary::Entity>(db, glossary::Column::AccountId, account).await?,
        ),
        (
            "deleted_requests",
            owned::<deleted_request::Entity>(db, deleted_request::Column::AccountId, account)
                .await?,
        ),
        (
            "provider_calls",
            owned::<provider_call::Entity>(db, provider_call::Column::AccountId, account).await?,
        ),
        (
            "licence_words",
            owned::<licence_word::Entity>(db, licence_word::Column::AccountId, account).await?,
        ),
        (
            "passage_versions",
            owned::<passage_version::Entity>(db, passage_version::Column::AccountId, account)
                .await?,
        ),
        (
            "passage_analyses",
            owned::<passage_analysis::Entity>(db, passage_analysis::Column::AccountId, account)
                .await?,
        ),
    ];
    Ok(counts.into_iter().filter(|(_, n)| *n > 0).collect())
}

/// Moves everything `from` owns to `to`; rows moved by table.
async fn transfer(
    db: &impl ConnectionTrait,
    from: &str,
    to: &str,
) -> Result<BTreeMap<&'static str, u64>, ApiError> {
    // Parents first: a series before its books, books before their requests.
    let moved = [
        (
            "series",
            reassign::<series::Entity>(db, series::Column::AccountId, from, to).await?,
        ),
        (
            "projects",
            reassign::<project::Entity>(db, project::Column::AccountId, from, to).await?,
        ),
        (
            "requests",
            reassign::<request::Entity>(db, request::Column::AccountId, from, to).await?,
        ),
        (
            "jobs",
            reassign::<job::Entity>(db, job::Column::AccountId, from, to).await?,
        ),
        (
            "glossaries",
            reassign::<glossary::Entity>(db, glossary::Column::AccountId, from, to).await?,
        ),
        (
            "deleted_requests",
            reassign::<deleted_request::Entity>(db, deleted_request::Column::AccountId, from, to)
                .await?,
        ),
        (
            "provider_calls",
            reassign::<provider_call::Entity>(db, provider_call::Column::AccountId, from, to)
                .await?,
        ),
        (
            "licence_words",
            reassign::<licence_word::Entity>(db, licence_word::Column::AccountId, from, to).await?,
        ),
        (
            "passage_versions",
            reassign::<passage_version::Entity>(db, passage_version::Column::AccountId, from, to)
                .await?,
        ),
        (
            "passage_analyses",
            reassign::<passage_analysis::Entity>(db, passage_analysis::Column::AccountId, from, to)
                .await?,
        ),
    ];
    Ok(moved.into_iter().filter(|(_, n)| *n > 0).collect())
}

/// 422 `invalid_request` at `query.transfer_to`, saying why without
/// repeating the id.
fn bad_recipient(reason: &str) -> ApiError {
    ApiError::new(ErrorCode::InvalidRequest).with_issues(vec![
        Issue::at("query", "transfer_to", IssueKind::ValueError)
            .with_ctx(IssueContext::new().reason(reason)),
    ])
}

/// Deletes the account `id`, moving what it owns to `transfer_to`. The
/// last active administrator is never deleted. The caller drops what the
/// token cache kept once this returns.
pub async fn delete(
    db: &DatabaseConnection,
    actor: Option<&str>,
    id: &str,
    transfer_to: Option<&str>,
) -> Result<(), ApiError> {
    let txn = begin(db).await?;
    let target = by_id(&txn, id).await?;
    check_not_last_admin(&txn, &target).await?;
    let moved = match transfer_to {
        Some(recipient_id) => {
            if recipient_id == target.id {
                return Err(bad_recipient("same_account"));
            }
            let recipient = account::Entity::find_by_id(recipient_id.to_owned())
                .one(&txn)
                .await?
                .ok_or_else(|| bad_recipient("not_found"))?;
            if !recipient.active {
                return Err(bad_recipient("inactive"));
            }
            check_no_clash(&txn, &target.id, &recipient.id).await?;
            transfer(&txn, &target.id, &recipient.id).await?
        }
        None => {
            let held = holdings(&txn, &target.id).await?;
            if !held.is_empty() {
                let tables: Vec<&str> = held.keys().copied().collect();
                return Err(ApiError::new(ErrorCode::AccountNotEmpty).with("owns", tables));
            }
            BTreeMap::new()
        }
    };
    // A request keeps no link to a deleted token: its foreign key clears.
    api_token::Entity::delete_many()
        .filter(api_token::Column::AccountId.eq(target.id.as_str()))
        .exec(&txn)
        .await?;
    session::Entity::delete_many()
        .filter(session::Column::AccountId.eq(target.id.as_str()))
        .exec(&txn)
        .await?;
    password_reset::Entity::delete_many()
        .filter(password_reset::Column::AccountId.eq(target.id.as_str()))
        .exec(&txn)
        .await?;
    mail_outbox::Entity::update_many()
        .col_expr(
            mail_outbox::Column::AccountId,
            Expr::value(Option::<String>::None),
        )
        .filter(mail_outbox::Column::AccountId.eq(target.id.as_str()))
        .exec(&txn)
        .await?;
    account::Entity::delete_by_id(target.id.clone())
        .exec(&txn)
        .await?;
    audit(
        &txn,
        actor,
        AuditAction::AccountDelete,
        Some(&target.id),
        Deleted {
            username: &target.username,
            transfer_to,
            moved: &moved,
        },
    )
    .await?;
    txn.commit().await?;
    Ok(())
}
