//! Admission (spec 4.2): whether the same content was sent before (a replay
//! or an idempotency conflict), then the checks that may refuse a request,
//! in the spec's order — callback, provider, priority, budget, waiting
//! quota. Nothing here writes.

use super::{Submitted, placement};
use crate::error::{QueueScope, SchedulerError};
use dragoman_model::budget;
use dragoman_model::clock;
use dragoman_model::entities::{account, api_token, provider, request};
use dragoman_model::provider_default;
use dragoman_model::vocab::{Priority, RequestStatus};
use dragoman_model::webhook::{WebhookPolicy, callback};
use dragoman_proto::principal::Principal;
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, PaginatorTrait, QueryFilter};
use serde_json::Value;

/// A request that passed admission, with what admission decided.
pub struct Admitted {
    pub owner: account::Model,
    pub token: Option<api_token::Model>,
    pub submitted: Submitted,
    /// The provider the job runs with; none for an import-only request
    /// that names none.
    pub provider_id: Option<String>,
    pub priority: Priority,
    /// `pipeline.start`: false only imports.
    pub start: bool,
}

/// The earlier request this one replays, or a conflict when the key or the
/// external id was used for other content.
pub async fn replay(
    db: &impl ConnectionTrait,
    account_id: &str,
    submitted: &Submitted,
) -> Result<Option<request::Model>, SchedulerError> {
    for (column, value) in [
        (request::Column::IdempotencyKey, submitted.key.as_deref()),
        (
            request::Column::ExternalId,
            submitted.payload.external_id.as_deref(),
        ),
    ] {
        let Some(value) = value else { continue };
        let found = request::Entity::find()
            .filter(request::Column::AccountId.eq(account_id))
            .filter(column.eq(value))
            .one(db)
            .await?;
        if let Some(found) = found {
            return if found.content_hash == submitted.hash {
                Ok(Some(found))
            } else {
                Err(SchedulerError::IdempotencyConflict)
            };
        }
    }
    Ok(None)
}

/// The checks of spec 4.2, in order.
pub async fn admit(
    db: &impl ConnectionTrait,
    who: &Principal,
    webhooks: &WebhookPolicy,
    submitted: Submitted,
) -> Result<Admitted, SchedulerError> {
    let payload = &submitted.payload;
    let start = payload.start();
    let owner = account::Entity::find_by_id(who.account_id.clone())
        .one(db)
        .await?
        .ok_or(SchedulerError::RequestNotFound)?;
    let token = match &who.token_id {
        Some(id) => api_token::Entity::find_by_id(id.clone()).one(db).await?,
        None => None,
    };
    if let Some(url) = &payload.callback_url {
        check_callback(db, webhooks, token.as_ref(), url).await?;
    }
    let provider_id = resolve_provider(db, &owner.id, &submitted, start).await?;
    let priority = check_priority(&owner, token.as_ref(), payload.pipeline.priority)?;
    if start && let Some(token) = &token {
        check_budget(db, token).await?;
    }
    check_queue(db, &owner, token.as_ref()).await?;
    Ok(Admitted {
        owner,
        token,
        submitted,
        provider_id,
        priority,
        start,
    })
}

/// The callback rules of spec 6.4 with the settings in force: form, host,
/// a signing secret (the token's own or the global one), public addresses.
async fn check_callback(
    db: &impl ConnectionTrait,
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

/// The request's provider, else its volume's, else its series' default,
/// else the installation's default.
async fn resolve_provider(
    db: &impl ConnectionTrait,
    account_id: &str,
    submitted: &Submitted,
    start: bool,
) -> Result<Option<String>, SchedulerError> {
    let payload = &submitted.payload;
    if let Some(id) = &payload.provider_id {
        return match provider::Entity::find_by_id(id.clone()).one(db).await? {
            Some(p) => Ok(Some(p.id)),
            None => Err(SchedulerError::UnknownProvider),
        };
    }
    if let Some(series) = placement::find_series(db, account_id, payload).await? {
        if let Some(volume) = placement::find_volume(db, account_id, &series, submitted).await?
            && let Some(id) = volume.provider_id
        {
            return Ok(Some(id));
        }
        if let Some(id) = &series.default_provider_id {
            return Ok(Some(id.clone()));
        }
    }
    if let Some(id) = provider_default::in_force(db).await? {
        return Ok(Some(id));
    }
    if start {
        Err(SchedulerError::ProviderRequired)
    } else {
        Ok(None)
    }
}

/// The priority the request runs at, or 403 when it is above the lower of
/// the token's and the account's ceilings. Without a priority the request
/// runs at `normal`, or at the ceiling when that is lower.
pub fn check_priority(
    owner: &account::Model,
    token: Option<&api_token::Model>,
    asked: Option<Priority>,
) -> Result<Priority, SchedulerError> {
    let token_ceiling = token.map_or(Priority::High, |t| t.max_priority);
    let ceiling = owner.priority_ceiling.min(token_ceiling);
    match asked {
        Some(p) if p > ceiling => Err(SchedulerError::PriorityNotAllowed {
            max_priority: ceiling,
        }),
        Some(p) => Ok(p),
        None => Ok(Priority::default().min(ceiling)),
    }
}

/// 402 when the token's spending cap is reached.
async fn check_budget(
    db: &impl ConnectionTrait,
    token: &api_token::Model,
) -> Result<(), SchedulerError> {
    let view = budget::view(db, token, clock::now()).await?;
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
            .filter(request::Column::Status.is_in(RequestStatus::WAITING))
    };
    if let Some(token) = token {
        let count = waiting(request::Column::TokenId, token.id.clone())
            .count(db)
            .await?;
        if count >= u64::try_from(token.max_queued).unwrap_or(0) {
            return Err(SchedulerError::QueueFull {
                scope: QueueScope::Token,
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
                scope: QueueScope::Account,
                limit: i64::from(limit),
            });
        }
    }
    Ok(())
}
