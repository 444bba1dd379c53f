//! Providers of language models, managed by administrators. Listings never
//! carry a key or an address; `default_for_series` names only the caller's
//! own series.

use crate::error::PipelineError;
use crate::llm::default_base_url;
use dragoman_model::entities::{provider, series};
use dragoman_model::provider_input::{NewProvider, ProviderChanges};
use dragoman_model::vocab::{Issue, IssueContext, IssueKind, ProviderKind};
use dragoman_model::{clock, ids};
use dragoman_model::{fallback, provider_default};
use dragoman_proto::v1::{AddProviderRequest, Provider, ProviderAdmin};
use dragoman_proto::wire::{self, WireEnum};
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
        kind: p.kind.to_wire(),
        model: p.model.clone(),
        created_at: p.created_at,
        default_for_series,
    }
}

fn admin(
    p: &provider::Model,
    default_for_series: Vec<String>,
    is_default: bool,
    fallback: Option<String>,
) -> ProviderAdmin {
    ProviderAdmin {
        provider: Some(public(p, default_for_series)),
        api_key_env: p.api_key_env.clone(),
        price_input: p.price_input,
        price_output: p.price_output,
        price_cached_input: p.price_cached_input,
        capacity: p.capacity,
        is_default,
        fallback,
        batch_discount: p.batch_discount,
    }
}

/// The name of the provider's own fallback, when it names one that exists.
fn fallback_name(p: &provider::Model, all: &[(provider::Model, Vec<String>)]) -> Option<String> {
    let id = p.fallback_provider_id.as_deref()?;
    all.iter()
        .find(|(other, _)| other.id == id)
        .map(|(other, _)| other.name.clone())
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
    let default = provider_default::in_force(db).await?;
    let all = list(db, None).await?;
    Ok(all
        .iter()
        .map(|(p, s)| {
            admin(
                p,
                s.clone(),
                default.as_deref() == Some(p.id.as_str()),
                fallback_name(p, &all),
            )
        })
        .collect())
}

/// Makes `provider_id` the installation's default provider (`None` forgets
/// the choice); an unknown provider is refused.
pub async fn set_default(
    db: &impl ConnectionTrait,
    provider_id: Option<&str>,
) -> Result<(), PipelineError> {
    if let Some(id) = provider_id
        && provider::Entity::find_by_id(id.to_owned())
            .one(db)
            .await?
            .is_none()
    {
        return Err(PipelineError::UnknownProvider);
    }
    provider_default::choose(db, provider_id).await?;
    Ok(())
}

/// The provider of an `AddProvider` call.
pub fn from_message(input: AddProviderRequest) -> Result<NewProvider, PipelineError> {
    wire::new_provider(input).map_err(|e| {
        PipelineError::Invalid(vec![
            Issue::at("body", e.field, IssueKind::Enum)
                .with_ctx(IssueContext::new().expected(ProviderKind::expected())),
        ])
    })
}

/// A batch discount takes off at least nothing and less than the whole
/// price.
pub fn valid_batch_discount(discount: f64) -> bool {
    (0.0..1.0).contains(&discount)
}

fn batch_discount_issue() -> Issue {
    Issue::at("body", "batch_discount", IssueKind::OutOfRange)
        .with_ctx(IssueContext::new().min(0).expected("0 <= x < 1"))
}

/// Sets the batch discount of the provider named `name`; answers it as
/// administrators see it.
pub async fn set_batch_discount(
    db: &impl ConnectionTrait,
    name: &str,
    discount: f64,
) -> Result<ProviderAdmin, PipelineError> {
    let found = provider::Entity::find()
        .filter(provider::Column::Name.eq(name))
        .one(db)
        .await?
        .ok_or(PipelineError::UnknownProvider)?;
    let changes = ProviderChanges {
        batch_discount: Some(discount),
        ..ProviderChanges::default()
    };
    update(db, &found.id, changes).await
}

/// The provider `row` becomes with `changes`, described as a new one so
/// that the rules of a new provider check it.
fn edited(row: &provider::Model, changes: ProviderChanges) -> NewProvider {
    NewProvider {
        name: row.name.clone(),
        kind: row.kind,
        model: changes.model.unwrap_or_else(|| row.model.clone()),
        base_url: changes.base_url.unwrap_or_else(|| row.base_url.clone()),
        api_key_env: changes
            .api_key_env
            .unwrap_or_else(|| row.api_key_env.clone()),
        price_input: changes.price_input.or(row.price_input),
        price_output: changes.price_output.or(row.price_output),
        price_cached_input: changes.price_cached_input.or(row.price_cached_input),
        capacity: Some(changes.capacity.unwrap_or(i64::from(row.capacity))),
        batch_discount: Some(changes.batch_discount.unwrap_or(row.batch_discount)),
        fallback: None,
    }
}

/// Changes the fields `changes` gives of provider `id`, checked by the
/// rules of a new provider; its name, kind and fallback stay. Answers it as
/// administrators see it.
pub async fn update(
    db: &impl ConnectionTrait,
    id: &str,
    changes: ProviderChanges,
) -> Result<ProviderAdmin, PipelineError> {
    let found = provider::Entity::find_by_id(id.to_owned())
        .one(db)
        .await?
        .ok_or(PipelineError::ProviderNotFound)?;
    let input = edited(&found, changes);
    let issues = input.check();
    if !issues.is_empty() {
        return Err(PipelineError::Invalid(issues));
    }
    // Within 1 to 10 000 once checked.
    let capacity = input
        .capacity
        .and_then(|c| i32::try_from(c).ok())
        .unwrap_or(found.capacity);
    let mut row: provider::ActiveModel = found.into();
    row.model = Set(input.model);
    row.base_url = Set(stored_base_url(input.kind, input.base_url));
    row.api_key_env = Set(input.api_key_env);
    row.price_input = Set(input.price_input);
    row.price_output = Set(input.price_output);
    row.price_cached_input = Set(input.price_cached_input);
    row.capacity = Set(capacity);
    row.batch_discount = Set(input
        .batch_discount
        .unwrap_or(provider::DEFAULT_BATCH_DISCOUNT));
    row.updated_at = Set(clock::now());
    row.update(db).await?;
    list_admin(db)
        .await?
        .into_iter()
        .find(|p| p.provider.as_ref().is_some_and(|p| p.id == id))
        .ok_or(PipelineError::ProviderNotFound)
}

/// The base URL stored for a provider of `kind`: a blank one is the kind's
/// default, so that what runs is what the row says.
fn stored_base_url(kind: ProviderKind, base_url: String) -> String {
    match default_base_url(kind) {
        Some(default) if base_url.trim().is_empty() => default.to_owned(),
        _ => base_url,
    }
}

/// The rules of a provider, checked here once.
trait ProviderRules {
    fn check(&self) -> Vec<Issue>;
}

impl ProviderRules for NewProvider {
    /// Every rule a provider must follow, as located issues.
    fn check(&self) -> Vec<Issue> {
        let mut issues = Vec::new();
        let mut length = |field: &str, text: &str, min: usize, max: usize| {
            let count = text.trim().chars().count();
            if count < min {
                issues.push(
                    Issue::at("body", field, IssueKind::StringTooShort)
                        .with_ctx(IssueContext::new().min(min)),
                );
            } else if text.chars().count() > max {
                issues.push(
                    Issue::at("body", field, IssueKind::StringTooLong)
                        .with_ctx(IssueContext::new().max(max)),
                );
            }
        };
        length("name", &self.name, 1, 100);
        length("model", &self.model, 1, 200);
        // Every kind but `openai` (any compatible server) knows where its
        // provider is; a blank base URL takes that default.
        let url_min = usize::from(default_base_url(self.kind).is_none());
        length("base_url", &self.base_url, url_min, 2000);
        length("api_key_env", &self.api_key_env, 0, 200);
        let is_web_url = url::Url::parse(&self.base_url)
            .is_ok_and(|url| matches!(url.scheme(), "http" | "https"));
        if !self.base_url.is_empty() && !is_web_url {
            issues.push(Issue::at("body", "base_url", IssueKind::Pattern));
        }
        for (field, price) in [
            ("price_input", self.price_input),
            ("price_output", self.price_output),
            ("price_cached_input", self.price_cached_input),
        ] {
            if price.is_some_and(|p| !(p.is_finite() && p >= 0.0)) {
                issues.push(Issue::at("body", field, IssueKind::NotPositive));
            }
        }
        if let Some(capacity) = self.capacity
            && !(1..=10_000).contains(&capacity)
        {
            issues.push(
                Issue::at("body", "capacity", IssueKind::OutOfRange)
                    .with_ctx(IssueContext::new().min(1).max(10000)),
            );
        }
        if let Some(discount) = self.batch_discount
            && !valid_batch_discount(discount)
        {
            issues.push(batch_discount_issue());
        }
        issues
    }
}

/// Adds a provider; the key itself is never stored, only the name of the
/// environment variable that holds it. A blank base URL is stored as the
/// kind's default, so that what runs is what the row says.
pub async fn add(
    db: &impl ConnectionTrait,
    input: NewProvider,
) -> Result<ProviderAdmin, PipelineError> {
    let mut issues = input.check();
    let fallback = match &input.fallback {
        Some(name) => fallback_of(db, &input, name, &mut issues).await?,
        None => None,
    };
    if !issues.is_empty() {
        return Err(PipelineError::Invalid(issues));
    }
    // Within 1 to 10 000 once checked.
    let capacity = input
        .capacity
        .and_then(|c| i32::try_from(c).ok())
        .unwrap_or(DEFAULT_CAPACITY);
    let taken = provider::Entity::find()
        .filter(provider::Column::Name.eq(input.name.as_str()))
        .one(db)
        .await?;
    if taken.is_some() {
        return Err(PipelineError::ProviderExists);
    }
    let now = clock::now();
    let base_url = stored_base_url(input.kind, input.base_url);
    let created = provider::ActiveModel {
        id: Set(ids::new_id()),
        name: Set(input.name),
        kind: Set(input.kind),
        model: Set(input.model),
        base_url: Set(base_url),
        api_key_env: Set(input.api_key_env),
        price_input: Set(input.price_input),
        price_output: Set(input.price_output),
        price_cached_input: Set(input.price_cached_input),
        capacity: Set(capacity),
        batch_discount: Set(input
            .batch_discount
            .unwrap_or(provider::DEFAULT_BATCH_DISCOUNT)),
        fallback_provider_id: Set(fallback.as_ref().map(|f| f.id.clone())),
        created_at: Set(now),
        updated_at: Set(now),
    }
    .insert(db)
    .await?;
    let is_default = provider_default::in_force(db).await?.as_deref() == Some(created.id.as_str());
    Ok(admin(
        &created,
        Vec::new(),
        is_default,
        fallback.map(|f| f.name),
    ))
}

/// The provider `name` names as the fallback of the provider being added:
/// it must exist and be cheaper (see [`dragoman_model::fallback`]), else an
/// issue on `fallback` is added.
async fn fallback_of(
    db: &impl ConnectionTrait,
    input: &NewProvider,
    name: &str,
    issues: &mut Vec<Issue>,
) -> Result<Option<provider::Model>, PipelineError> {
    let found = provider::Entity::find()
        .filter(provider::Column::Name.eq(name))
        .one(db)
        .await?;
    let Some(found) = found else {
        let names: Vec<String> = provider::Entity::find()
            .order_by_asc(provider::Column::Name)
            .all(db)
            .await?
            .into_iter()
            .map(|p| p.name)
            .collect();
        issues.push(
            Issue::at("body", "fallback", IssueKind::Enum)
                .with_ctx(IssueContext::new().expected(names.join(", "))),
        );
        return Ok(None);
    };
    // The new provider as it would be stored, to compare prices.
    let candidate = provider::Model {
        id: String::new(),
        name: input.name.clone(),
        kind: input.kind,
        model: input.model.clone(),
        base_url: input.base_url.clone(),
        api_key_env: input.api_key_env.clone(),
        price_input: input.price_input,
        price_output: input.price_output,
        price_cached_input: input.price_cached_input,
        capacity: 0,
        batch_discount: input
            .batch_discount
            .unwrap_or(provider::DEFAULT_BATCH_DISCOUNT),
        fallback_provider_id: None,
        created_at: 0,
        updated_at: 0,
    };
    if !fallback::is_cheaper(&found, &candidate) {
        issues.push(
            Issue::at("body", "fallback", IssueKind::ValueError)
                .with_ctx(IssueContext::new().reason("not_cheaper")),
        );
        return Ok(None);
    }
    Ok(Some(found))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn provider(kind: ProviderKind) -> NewProvider {
        NewProvider {
            name: "sim".into(),
            kind,
            model: "m".into(),
            base_url: "http://127.0.0.1:9/v1".into(),
            api_key_env: String::new(),
            price_input: Some(0.1),
            price_output: None,
            price_cached_input: None,
            capacity: Some(4),
            fallback: None,
            batch_discount: None,
        }
    }

    fn kinds_of_issues(p: &NewProvider) -> Vec<(String, IssueKind)> {
        p.check()
            .into_iter()
            .map(|i| {
                (
                    i.loc
                        .iter()
                        .map(|v| v.to_string())
                        .collect::<Vec<_>>()
                        .join("/"),
                    i.kind,
                )
            })
            .collect()
    }

    #[test]
    fn every_kind_of_the_spec_is_accepted() {
        for kind in ProviderKind::ALL {
            assert!(provider(*kind).check().is_empty(), "{kind}");
        }
    }

    #[test]
    fn only_a_compatible_server_needs_a_base_url() {
        for kind in ProviderKind::ALL {
            let mut p = provider(*kind);
            p.base_url = String::new();
            let issues = kinds_of_issues(&p);
            if *kind == ProviderKind::OpenAi {
                assert_eq!(
                    issues,
                    vec![("body/base_url".to_owned(), IssueKind::StringTooShort)]
                );
            } else {
                assert!(issues.is_empty(), "{kind}: {issues:?}");
            }
        }
    }

    #[tokio::test]
    async fn a_blank_base_url_is_stored_as_the_kinds_default() {
        let db = database().await;
        let mut p = provider(ProviderKind::CodexChatgpt);
        p.base_url = String::new();
        p.price_cached_input = Some(0.02);
        add(&db, p).await.expect("added");
        let stored = provider::Entity::find()
            .one(&db)
            .await
            .expect("select")
            .expect("stored");
        assert_eq!(stored.base_url, "https://chatgpt.com/backend-api");
        assert_eq!(stored.price_cached_input, Some(0.02));
        let listed = list_admin(&db).await.expect("list");
        assert_eq!(listed[0].price_cached_input, Some(0.02));
    }

    #[test]
    fn every_rule_is_located() {
        let mut p = provider(ProviderKind::OpenAi);
        p.name = " ".into();
        p.base_url = "ftp://example.com".into();
        p.price_output = Some(-1.0);
        p.price_cached_input = Some(f64::NAN);
        p.capacity = Some(0);
        p.batch_discount = Some(1.0);
        let kinds: Vec<IssueKind> = p.check().into_iter().map(|i| i.kind).collect();
        assert_eq!(
            kinds,
            vec![
                IssueKind::StringTooShort,
                IssueKind::Pattern,
                IssueKind::NotPositive,
                IssueKind::NotPositive,
                IssueKind::OutOfRange,
                IssueKind::OutOfRange
            ]
        );
    }

    #[tokio::test]
    async fn the_batch_discount_is_stored_and_changed_within_its_range() {
        let db = database().await;
        let mut p = provider(ProviderKind::Anthropic);
        add(&db, p.clone()).await.expect("added");
        let listed = list_admin(&db).await.expect("list");
        assert_eq!(listed[0].batch_discount, provider::DEFAULT_BATCH_DISCOUNT);
        p.name = "other".into();
        p.batch_discount = Some(0.3);
        add(&db, p).await.expect("added");
        let changed = set_batch_discount(&db, "sim", 0.0).await.expect("changed");
        assert_eq!(changed.batch_discount, 0.0);
        for wrong in [1.0, -0.1, f64::NAN] {
            assert!(matches!(
                set_batch_discount(&db, "other", wrong).await,
                Err(PipelineError::Invalid(_))
            ));
        }
        let listed = list_admin(&db).await.expect("list");
        assert_eq!(listed[0].batch_discount, 0.3);
        assert!(matches!(
            set_batch_discount(&db, "nobody", 0.2).await,
            Err(PipelineError::UnknownProvider)
        ));
    }

    #[tokio::test]
    async fn an_update_changes_only_the_fields_given_by_the_rules_of_a_new_provider() {
        let db = database().await;
        let mut p = provider(ProviderKind::CodexChatgpt);
        p.base_url = String::new();
        let added = add(&db, p).await.expect("added");
        let id = added.provider.map(|p| p.id).expect("its id");
        let before = provider::Entity::find_by_id(id.clone())
            .one(&db)
            .await
            .expect("select")
            .expect("stored");
        let changes = ProviderChanges {
            price_input: Some(0.7),
            batch_discount: Some(0.25),
            ..ProviderChanges::default()
        };
        let changed = update(&db, &id, changes).await.expect("updated");
        assert_eq!(changed.price_input, Some(0.7));
        assert_eq!(changed.batch_discount, 0.25);
        assert_eq!(changed.capacity, 4);
        assert_eq!(changed.provider.map(|p| p.model), Some("m".to_owned()));

        let refused = ProviderChanges {
            model: Some("other".into()),
            capacity: Some(0),
            batch_discount: Some(1.5),
            ..ProviderChanges::default()
        };
        match update(&db, &id, refused).await {
            Err(PipelineError::Invalid(issues)) => {
                let fields: Vec<String> = issues.iter().map(|i| i.loc[1].to_string()).collect();
                assert_eq!(fields, ["capacity", "batch_discount"]);
            }
            other => panic!("expected issues, got {other:?}"),
        }
        let blank = ProviderChanges {
            base_url: Some(String::new()),
            ..ProviderChanges::default()
        };
        update(&db, &id, blank).await.expect("a blank address");
        let after = provider::Entity::find_by_id(id.clone())
            .one(&db)
            .await
            .expect("select")
            .expect("stored");
        assert_eq!(after.model, "m");
        assert_eq!(after.base_url, "https://chatgpt.com/backend-api");
        assert_eq!(after.price_input, Some(0.7));
        assert!(after.updated_at >= before.updated_at);
        assert!(matches!(
            update(&db, "nobody", ProviderChanges::default()).await,
            Err(PipelineError::ProviderNotFound)
        ));
    }

    async fn database() -> sea_orm::DatabaseConnection {
        use dragoman_migrations::{Migrator, MigratorTrait};
        let db = dragoman_model::db::connect("sqlite::memory:")
            .await
            .expect("in-memory database");
        Migrator::up(&db, None).await.expect("migrations");
        db
    }

    fn priced(name: &str, input: f64, output: f64, fallback: Option<&str>) -> NewProvider {
        NewProvider {
            name: name.into(),
            price_input: Some(input),
            price_output: Some(output),
            fallback: fallback.map(str::to_owned),
            ..provider(ProviderKind::OpenAi)
        }
    }

    fn refused_on_fallback(result: Result<ProviderAdmin, PipelineError>) -> Issue {
        match result {
            Err(PipelineError::Invalid(issues)) => {
                assert_eq!(issues.len(), 1);
                assert_eq!(issues[0].loc, vec![json!("body"), json!("fallback")]);
                issues[0].clone()
            }
            other => panic!("expected an issue on fallback, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn a_fallback_is_a_known_cheaper_provider() {
        let db = database().await;
        add(&db, priced("cheap", 0.1, 0.2, None))
            .await
            .expect("cheap");
        let dear = add(&db, priced("dear", 3.0, 15.0, Some("cheap")))
            .await
            .expect("dear");
        assert_eq!(dear.fallback.as_deref(), Some("cheap"));
        let stored = provider::Entity::find()
            .filter(provider::Column::Name.eq("dear"))
            .one(&db)
            .await
            .expect("select")
            .expect("stored");
        let cheap_id = dear_fallback_id(&db).await;
        assert_eq!(stored.fallback_provider_id, Some(cheap_id));
        let listed = list_admin(&db).await.expect("list");
        let names: Vec<(String, Option<String>)> = listed
            .iter()
            .map(|p| {
                (
                    p.provider
                        .as_ref()
                        .map(|p| p.name.clone())
                        .unwrap_or_default(),
                    p.fallback.clone(),
                )
            })
            .collect();
        assert_eq!(
            names,
            vec![
                ("cheap".to_owned(), None),
                ("dear".to_owned(), Some("cheap".to_owned()))
            ]
        );

        let unknown = refused_on_fallback(add(&db, priced("x", 5.0, 5.0, Some("nope"))).await);
        assert_eq!(unknown.kind, IssueKind::Enum);
        assert_eq!(
            unknown.ctx.as_deref(),
            Some(&IssueContext::new().expected("cheap, dear"))
        );

        let dearer = refused_on_fallback(add(&db, priced("y", 0.1, 0.1, Some("dear"))).await);
        assert_eq!(dearer.kind, IssueKind::ValueError);
        assert_eq!(
            dearer.ctx.as_deref(),
            Some(&IssueContext::new().reason("not_cheaper"))
        );
        // Without its own prices nothing is cheaper than a provider.
        let mut unpriced = priced("z", 1.0, 1.0, Some("cheap"));
        unpriced.price_output = None;
        refused_on_fallback(add(&db, unpriced).await);
    }

    async fn dear_fallback_id(db: &sea_orm::DatabaseConnection) -> String {
        provider::Entity::find()
            .filter(provider::Column::Name.eq("cheap"))
            .one(db)
            .await
            .expect("select")
            .expect("cheap")
            .id
    }
}
