//! Providers (spec 2.10, 4.6): the listing tokens see and the
//! administrator's listing and registration, answered by the pipeline,
//! which owns providers. No shape built here ever carries a key or an
//! address.

use super::{Caller, Needs, from_wire};
use crate::auth::session::SessionUser;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use dragoman_model::provider_input::{NewProvider, ProviderChanges};
use dragoman_model::vocab::Scope;
use dragoman_proto::v1::{
    ListProvidersRequest, Provider, ProviderAdmin, SetDefaultProviderRequest,
};
use dragoman_proto::wire;
use serde::Deserialize;

pub use dragoman_model::documents::provider::{ProviderAdminView, ProviderView};

pub const LIST: Needs = Needs::read(Scope::ContentWrite);

/// The providers of this installation (name order), as the pipeline
/// answers them: what the typed surfaces answer as it is.
pub async fn list_answer(state: &AppState, caller: &Caller) -> ApiResult<Vec<Provider>> {
    let answer = caller
        .call(state, LIST, ListProvidersRequest {}, |request| {
            state.pipeline.handle.list_providers(request)
        })
        .await?;
    Ok(answer.providers)
}

/// The providers of this installation (name order).
pub async fn list(state: &AppState, caller: &Caller) -> ApiResult<Vec<ProviderView>> {
    list_answer(state, caller)
        .await?
        .iter()
        .map(provider_view)
        .collect()
}

/// Every provider with its administration fields.
pub async fn admin_list(state: &AppState, user: &SessionUser) -> ApiResult<Vec<ProviderAdminView>> {
    user.require_admin()?;
    let answer = state
        .pipeline
        .handle
        .list_providers_admin(state.call(&user.principal(), ListProvidersRequest {}))
        .await?
        .into_inner();
    answer.providers.iter().map(admin_view).collect()
}

/// Registers a provider.
pub async fn admin_add(
    state: &AppState,
    user: &SessionUser,
    new: NewProvider,
) -> ApiResult<ProviderAdminView> {
    user.require_admin()?;
    // The rules of a provider (lengths, URL, prices, capacity, a kind the
    // pipeline can run) are the pipeline's, checked there once.
    let request = wire::add_provider(&new);
    let added = state
        .pipeline
        .handle
        .add_provider(state.call(&user.principal(), request))
        .await?
        .into_inner();
    admin_view(&added)
}

/// Changes the fields `changes` gives of provider `id`; answers the
/// provider as the administrator's list shows it.
pub async fn update(
    state: &AppState,
    user: &SessionUser,
    id: &str,
    changes: &ProviderChanges,
) -> ApiResult<ProviderAdminView> {
    user.require_admin()?;
    // The rules are those of a new provider, the pipeline's, checked there
    // once.
    let request = wire::update_provider(id, changes);
    let updated = state
        .pipeline
        .handle
        .update_provider(state.call(&user.principal(), request))
        .await?
        .into_inner();
    admin_view(&updated)
}

/// A provider of spec 2.10.
pub fn provider_view(p: &Provider) -> ApiResult<ProviderView> {
    Ok(ProviderView {
        created_at: p.created_at,
        default_for_series: p.default_for_series.clone(),
        id: p.id.clone(),
        kind: from_wire(p.kind, "kind")?,
        model: p.model.clone(),
        name: p.name.clone(),
    })
}

/// The administrator's view: the provider plus the name of the variable
/// holding its key, prices, capacity and the name of its cheaper fallback.
fn admin_view(p: &ProviderAdmin) -> ApiResult<ProviderAdminView> {
    let Some(provider) = &p.provider else {
        return Err(ApiError::server(
            "provider administration without its provider",
        ));
    };
    let provider = provider_view(provider)?;
    Ok(ProviderAdminView {
        api_key_env: p.api_key_env.clone(),
        batch_discount: p.batch_discount,
        capacity: p.capacity,
        created_at: provider.created_at,
        default: p.is_default,
        default_for_series: provider.default_for_series,
        fallback: p.fallback.clone(),
        id: provider.id,
        kind: provider.kind,
        model: provider.model,
        name: provider.name,
        price_cached_input: p.price_cached_input,
        price_input: p.price_input,
        price_output: p.price_output,
    })
}

/// The administrator's choice of the installation's default provider.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DefaultProvider {
    /// A provider's id, or null to forget the choice.
    pub provider_id: Option<String>,
}

/// Sets the installation's default provider; answers every provider.
pub async fn set_default(
    state: &AppState,
    user: &SessionUser,
    choice: DefaultProvider,
) -> ApiResult<Vec<ProviderAdminView>> {
    user.require_admin()?;
    let request = SetDefaultProviderRequest {
        provider_id: choice.provider_id,
    };
    let answer = state
        .pipeline
        .handle
        .set_default_provider(state.call(&user.principal(), request))
        .await?
        .into_inner();
    answer.providers.iter().map(admin_view).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::parse_json;
    use dragoman_model::vocab::IssueKind as Kind;
    use dragoman_model::vocab::ProviderKind;
    use dragoman_proto::wire::WireEnum;
    use serde_json::json;

    #[test]
    fn a_new_provider_kind_is_typed() {
        let body = r#"{"name":"Local","kind":"carrier-pigeon","model":"m",
            "base_url":"http://x","api_key_env":"K"}"#;
        let error = parse_json::<NewProvider>(body.as_bytes()).unwrap_err();
        assert_eq!(error.issues[0].loc, vec![json!("body"), json!("kind")]);
        assert_eq!(error.issues[0].kind, Kind::Enum);

        let body = r#"{"name":"","kind":"codex_chatgpt","model":"m",
            "base_url":"http://x","api_key_env":"K","capacity":0}"#;
        let new: NewProvider = parse_json(body.as_bytes()).expect("shape");
        assert_eq!(new.kind, ProviderKind::CodexChatgpt);
        assert_eq!(new.capacity, Some(0));
    }

    #[test]
    fn the_admin_view_names_the_key_variable_not_the_key() {
        let admin = ProviderAdmin {
            provider: Some(Provider {
                id: "p".into(),
                name: "Local".into(),
                kind: ProviderKind::OpenAiResponses.to_wire(),
                model: "m".into(),
                created_at: 1,
                default_for_series: vec![],
            }),
            api_key_env: "LOCAL_KEY".into(),
            price_input: Some(1.0),
            price_output: None,
            price_cached_input: Some(0.25),
            capacity: 2,
            is_default: true,
            fallback: Some("Cheap".into()),
            batch_discount: 0.4,
        };
        let view = admin_view(&admin).expect("known kind");
        let value = serde_json::to_value(&view).expect("serializes");
        assert_eq!(value["kind"], "openai_responses");
        assert_eq!(value["api_key_env"], "LOCAL_KEY");
        assert_eq!(value["capacity"], 2);
        assert_eq!(value["default"], true);
        assert_eq!(value["fallback"], "Cheap");
        assert_eq!(value["price_cached_input"], 0.25);
        assert_eq!(value["batch_discount"], 0.4);
        assert!(value.get("base_url").is_none());

        let orphan = ProviderAdmin {
            provider: None,
            ..admin
        };
        assert_eq!(
            admin_view(&orphan).unwrap_err().code,
            dragoman_model::vocab::ErrorCode::ServerError
        );
    }
}
