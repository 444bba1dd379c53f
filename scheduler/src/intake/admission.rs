//! Admission (spec 4.2): whether the same content was sent before (a replay
//! or an idempotency conflict), then the checks that may refuse a request,
//! in the spec's order — callback, provider, priority, budget, licence
//! word quota, waiting quota. Nothing here writes.
//!
//! Before them, a request that starts work in a series its owner suspended
//! (a series `pause`, spec 4.7) is refused: the suspension is the state of
//! the target, like its being archived, whatever the request carries. An
//! import-only request is not paid work and goes on.
//!
//! The provider resolution, the priority and the [`Allowance`] checks are
//! shared with a series `start`, which admits one volume after the other.

use super::{Submitted, import, placement};
use crate::error::SchedulerError;
use crate::lifecycle::queue::QueueSettings;
use crate::lifecycle::waiting;
use dragoman_model::budget;
use dragoman_model::clock;
use dragoman_model::entities::{account, api_token, project, request, series};
use dragoman_model::licence::LicenceSettings;
use dragoman_model::provider_default;
use dragoman_model::tenancy::{self, Acting};
use dragoman_model::vocab::Priority;
use dragoman_model::webhook::{WebhookPolicy, callback};
use dragoman_proto::principal::Principal;
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter};
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
    queue: &QueueSettings,
    licence: &LicenceSettings,
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
    if start {
        check_not_suspended(db, &owner.id, &submitted).await?;
    }
    if let Some(url) = &payload.callback_url {
        check_callback(db, webhooks, token.as_ref(), url).await?;
    }
    let provider_id = resolve_provider(db, &owner.id, &submitted, start).await?;
    let priority = check_priority(&owner, token.as_ref(), payload.pipeline.priority)?;
    let words = words_to_add(db, &owner.id, &submitted).await?;
    Allowance::new(&owner, token.as_ref(), queue, licence)
        .fit(db, start, words)
        .await?;
    Ok(Admitted {
        owner,
        token,
        submitted,
        provider_id,
        priority,
        start,
    })
}

/// The source words the request would add to the licence's ledger (see
/// [`crate::licence`]): its chapters that the volume does not hold as they
/// are, and all the words still to translate of a volume stored before the
/// ledger. A series or volume that is not found yet costs its chapters;
/// placement refuses it later, in its place in the order.
async fn words_to_add(
    db: &impl ConnectionTrait,
    account_id: &str,
    submitted: &Submitted,
) -> Result<i64, SchedulerError> {
    let series = match placement::find_series(db, account_id, &submitted.payload).await {
        Ok(series) => series,
        Err(SchedulerError::SeriesNotFound) => None,
        Err(e) => return Err(e),
    };
    let volume = match &series {
        Some(series) => placement::find_volume(db, account_id, series, submitted).await?,
        None => None,
    };
    let words =
        import::new_words(db, volume.as_ref(), &submitted.chapters, &submitted.payload).await?;
    let older = match &volume {
        Some(volume) => crate::licence::words_to_start(db, volume).await?,
        None => 0,
    };
    Ok(words.saturating_add(older))
}

/// 409 `series_suspended` when the series the request names exists and is
/// suspended. A series that is not found is refused where the request is
/// placed, in its place in the order.
async fn check_not_suspended(
    db: &impl ConnectionTrait,
    account_id: &str,
    submitted: &Submitted,
) -> Result<(), SchedulerError> {
    match placement::find_series(db, account_id, &submitted.payload).await {
        Ok(Some(series)) if series.suspended => Err(SchedulerError::SeriesSuspended),
        Ok(_) | Err(SchedulerError::SeriesNotFound) => Ok(()),
        Err(e) => Err(e),
    }
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
        let chosen = tenancy::provider(db, Acting::account(account_id), id).await?;
        return Ok(Some(chosen.id));
    }
    let series = placement::find_series(db, account_id, payload).await?;
    let volume = match &series {
        Some(series) => placement::find_volume(db, account_id, series, submitted).await?,
        None => None,
    };
    provider_in_force(db, volume.as_ref(), series.as_ref(), start).await
}

/// The volume's provider, else its series' default, else the
/// installation's default. None is `provider_required` for work that
/// starts, and nothing for an import.
pub async fn provider_in_force(
    db: &impl ConnectionTrait,
    volume: Option<&project::Model>,
    series: Option<&series::Model>,
    start: bool,
) -> Result<Option<String>, SchedulerError> {
    if let Some(id) = volume.and_then(|v| v.provider_id.clone()) {
        return Ok(Some(id));
    }
    if let Some(id) = series.and_then(|s| s.default_provider_id.clone()) {
        return Ok(Some(id));
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

/// The allowances one call draws on as it admits requests one after the
/// other (once for a submission, once per volume for a series `start`),
/// checked in the spec's order: the token's spending cap for work that
/// starts, then the licence's word quota and the account's allowance, then
/// the waiting quotas.
///
/// Each request must fit in what the ones admitted before it in the same
/// call left. Those are stored before the next one is checked, so the
/// waiting quotas count them from the database; they have spent nothing
/// yet, so the cap is unchanged by them. Their words are in the database
/// too: each request's words are counted in the ledger by the transaction
/// that stores it ([`crate::licence::count`], under the charging lock,
/// which also settles two calls racing past this check).
pub struct Allowance<'a> {
    owner: &'a account::Model,
    token: Option<&'a api_token::Model>,
    /// The environment's queue settings (the account's default waiting
    /// quota; an administrator setting wins over them).
    queue: QueueSettings,
    /// Where the licence is found, and its margin.
    licence: &'a LicenceSettings,
}

impl<'a> Allowance<'a> {
    pub fn new(
        owner: &'a account::Model,
        token: Option<&'a api_token::Model>,
        queue: &QueueSettings,
        licence: &'a LicenceSettings,
    ) -> Self {
        Allowance {
            owner,
            token,
            queue: *queue,
            licence,
        }
    }

    /// Whether one more request fits; `start` says whether it starts work
    /// (an import-only request spends nothing, but its `words` — the source
    /// words it adds to the ledger — count like any other: a book is
    /// counted when it is added).
    pub async fn fit(
        &mut self,
        db: &impl ConnectionTrait,
        start: bool,
        words: i64,
    ) -> Result<(), SchedulerError> {
        if start && let Some(token) = self.token {
            check_budget(db, token).await?;
        }
        crate::licence::check(db, self.licence, self.owner, words).await?;
        check_queue(db, self.owner, self.token, &self.queue).await
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

/// The waiting quotas of the token and the account ([`waiting::check`]).
async fn check_queue(
    db: &impl ConnectionTrait,
    owner: &account::Model,
    token: Option<&api_token::Model>,
    queue: &QueueSettings,
) -> Result<(), SchedulerError> {
    waiting::check(db, owner, token, queue).await
}
