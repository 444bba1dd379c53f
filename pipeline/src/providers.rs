//! Providers of language models, managed by administrators. Listings never
//! carry a key or an address; `default_for_series` names only the caller's
//! own series.

use crate::error::PipelineError;
use dragoman_model::entities::{provider, series};
use dragoman_model::scopes::PROVIDER_KINDS as KINDS;
use dragoman_model::{clock, ids};
use dragoman_proto::v1::{AddProviderRequest, Provider, ProviderAdmin};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder, Set,
};

/// Concurrent calls a provider accepts from the whole installation when the
/// administrator does not say.
pub const DEFAULT_CAPACITY: i32 = 8;

fn public(p: &provider::Model, default_for_series: Vec<String>) -> Provider {
    Provider {
        id: p.id.clone(),
        name: p.name.clone(),
        kind: p.kind.clone(),
        model: p.model.clone(),
        created_at: p.created_at,
        default_for_series,
    }
}

fn admin(p: &provider::Model, default_for_series: Vec<String>) -> ProviderAdmin {
    ProviderAdmin {
        provider: Some(public(p, default_for_series)),
        api_key_env: p.api_key_env.clone(),
        price_input: p.price_input,
        price_output: p.price_output,
        capacity: p.capacity,
    }
}

/// Providers sorted by name, each with the ids of `account_id`'s series that
/// use it by default (all series for an administrator's view when `None`).
pub async fn list(
    db: &impl ConnectionTrait,
    account_id: Option<&str>,
) -> Result<Vec<(provider::Model, Vec<String>)>, PipelineError> {
    let providers = provider::Entity::find()
        .order_by_asc(provider::Column::Name)
        .all(db)
        .await?;
    let mut query = series::Entity::find().filter(series::Column::DefaultProviderId.is_not_null());
    if let Some(account) = account_id {
        query = query.filter(series::Column::AccountId.eq(account));
    }
    let defaults = query.order_by_asc(series::Column::Name).all(db).await?;
    Ok(providers
        .into_iter()
        .map(|p| {
            let ids = defaults
                .iter()
                .filter(|s| s.default_provider_id.as_deref() == Some(p.id.as_str()))
                .map(|s| s.id.clone())
                .collect();
            (p, ids)
        })
        .collect())
}

pub async fn list_public(
    db: &impl ConnectionTrait,
    account_id: &str,
) -> Result<Vec<Provider>, PipelineError> {
    Ok(list(db, Some(account_id))
        .await?
        .iter()
        .map(|(p, s)| public(p, s.clone()))
        .collect())
}

pub async fn list_admin(db: &impl ConnectionTrait) -> Result<Vec<ProviderAdmin>, PipelineError> {
    Ok(list(db, None)
        .await?
        .iter()
        .map(|(p, s)| admin(p, s.clone()))
        .collect())
}

/// Adds a provider; the key itself is never stored, only the name of the
/// environment variable that holds it.
pub async fn add(
    db: &impl ConnectionTrait,
    input: AddProviderRequest,
) -> Result<ProviderAdmin, PipelineError> {
    if input.name.trim().is_empty() || input.name.chars().count() > 100 {
        return Err(PipelineError::Invalid(
            "name must be 1 to 100 characters".into(),
        ));
    }
    if !KINDS.contains(&input.kind.as_str()) {
        return Err(PipelineError::Invalid(format!(
            "kind must be one of {}",
            KINDS.join(", ")
        )));
    }
    if input.model.trim().is_empty() {
        return Err(PipelineError::Invalid("model is required".into()));
    }
    let url = url::Url::parse(&input.base_url)
        .map_err(|_| PipelineError::Invalid("base_url is not a URL".into()))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(PipelineError::Invalid(
            "base_url must be http or https".into(),
        ));
    }
    for price in [input.price_input, input.price_output]
        .into_iter()
        .flatten()
    {
        if !(price.is_finite() && price >= 0.0) {
            return Err(PipelineError::Invalid(
                "prices must be non-negative numbers".into(),
            ));
        }
    }
    let capacity = input.capacity.unwrap_or(DEFAULT_CAPACITY);
    if !(1..=10_000).contains(&capacity) {
        return Err(PipelineError::Invalid("capacity must be 1 to 10000".into()));
    }
    let taken = provider::Entity::find()
        .filter(provider::Column::Name.eq(input.name.as_str()))
        .one(db)
        .await?;
    if taken.is_some() {
        return Err(PipelineError::ProviderExists);
    }
    let now = clock::now();
    let created = provider::ActiveModel {
        id: Set(ids::new_id()),
        name: Set(input.name),
        kind: Set(input.kind),
        model: Set(input.model),
        base_url: Set(input.base_url),
        api_key_env: Set(input.api_key_env),
        price_input: Set(input.price_input),
        price_output: Set(input.price_output),
        capacity: Set(capacity),
        created_at: Set(now),
        updated_at: Set(now),
    }
    .insert(db)
    .await?;
    Ok(admin(&created, Vec::new()))
}
