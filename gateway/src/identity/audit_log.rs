//! The audit log of identity and settings changes: appending a line, and
//! reading the log back for administrators (newest first, filtered by
//! account and action). Secrets never reach it.

use crate::error::ApiError;
use dragoman_model::entities::audit_log;
use dragoman_model::vocab::AuditAction;
use dragoman_model::{clock, ids};
use sea_orm::sea_query::Condition;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, EntityTrait, PaginatorTrait, QueryFilter,
    QueryOrder, QuerySelect, Set,
};
use serde::Serialize;

/// The details of an audit line that has none to give: `{}`.
#[derive(Serialize)]
pub struct NoDetails {}

/// Appends one line to the audit log; `details` is kept as the JSON it
/// serialises to.
pub async fn audit(
    db: &impl ConnectionTrait,
    actor: Option<&str>,
    action: AuditAction,
    target_id: Option<&str>,
    details: impl Serialize,
) -> Result<(), ApiError> {
    let details = serde_json::to_value(details)
        .map_err(|e| ApiError::server(format!("audit details: {e}")))?;
    audit_log::ActiveModel {
        id: Set(ids::new_id()),
        at: Set(clock::now()),
        actor_account_id: Set(actor.map(str::to_owned)),
        action: Set(action),
        target_type: Set(action.target()),
        target_id: Set(target_id.map(str::to_owned)),
        details: Set(details),
    }
    .insert(db)
    .await?;
    Ok(())
}

/// Which lines to read.
#[derive(Debug, Default)]
pub struct AuditFilter {
    /// Lines this account did or that were done to it.
    pub account_id: Option<String>,
    pub action: Option<AuditAction>,
    pub limit: u64,
    pub offset: u64,
}

/// One page of the log and how many lines match in all.
pub async fn read(
    db: &impl ConnectionTrait,
    filter: &AuditFilter,
) -> Result<(Vec<audit_log::Model>, u64), ApiError> {
    let mut query = audit_log::Entity::find();
    if let Some(account) = &filter.account_id {
        query = query.filter(
            Condition::any()
                .add(audit_log::Column::ActorAccountId.eq(account.as_str()))
                .add(
                    Condition::all()
                        .add(
                            audit_log::Column::TargetType
                                .eq(dragoman_model::vocab::AuditTarget::Account),
                        )
                        .add(audit_log::Column::TargetId.eq(account.as_str())),
                ),
        );
    }
    if let Some(action) = filter.action {
        query = query.filter(audit_log::Column::Action.eq(action));
    }
    let total = query.clone().count(db).await?;
    // Ids are time-ordered (UUID v7): they order lines of the same second.
    let items = query
        .order_by_desc(audit_log::Column::At)
        .order_by_desc(audit_log::Column::Id)
        .limit(filter.limit)
        .offset(filter.offset)
        .all(db)
        .await?;
    Ok((items, total))
}
