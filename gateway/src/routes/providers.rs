//! Providers: the automation listing (spec 2.10, 4.6) and the administrator
//! session routes that manage them. No route ever shows a key or an address.

use crate::auth::bearer::TokenCaller;
use crate::auth::session::SessionUser;
use crate::error::ApiResult;
use crate::extract::JsonBody;
use crate::state::AppState;
use crate::validate::Checks;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use dragoman_model::scopes::{PROVIDER_KINDS, Scope};
use dragoman_proto::v1::{AddProviderRequest, ListProvidersRequest, Provider, ProviderAdmin};
use serde::Deserialize;
use serde_json::{Value, json};

pub fn provider_json(p: &Provider) -> Value {
    json!({
        "id": p.id,
        "name": p.name,
        "kind": p.kind,
        "model": p.model,
        "created_at": p.created_at,
        "default_for_series": p.default_for_series,
    })
}

fn admin_json(p: &ProviderAdmin) -> Value {
    let mut value = p
        .provider
        .as_ref()
        .map(provider_json)
        .unwrap_or(Value::Null);
    if let Value::Object(map) = &mut value {
        map.insert("api_key_env".into(), json!(p.api_key_env));
        map.insert("price_input".into(), json!(p.price_input));
        map.insert("price_output".into(), json!(p.price_output));
        map.insert("capacity".into(), json!(p.capacity));
    }
    value
}

pub async fn list(State(state): State<AppState>, caller: TokenCaller) -> ApiResult<Json<Value>> {
    caller.require(Scope::ContentWrite)?;
    let answer = state
        .pipeline
        .handle
        .list_providers(state.call(&caller.principal(), ListProvidersRequest {}))
        .await?
        .into_inner();
    Ok(Json(answer.providers.iter().map(provider_json).collect()))
}

pub async fn admin_list(
    State(state): State<AppState>,
    user: SessionUser,
) -> ApiResult<Json<Value>> {
    user.require_admin()?;
    let answer = state
        .pipeline
        .handle
        .list_providers_admin(state.call(&user.principal(), ListProvidersRequest {}))
        .await?
        .into_inner();
    Ok(Json(answer.providers.iter().map(admin_json).collect()))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewProvider {
    name: String,
    kind: String,
    model: String,
    base_url: String,
    api_key_env: String,
    #[serde(default)]
    price_input: Option<f64>,
    #[serde(default)]
    price_output: Option<f64>,
    #[serde(default)]
    capacity: Option<i64>,
}

pub async fn admin_add(
    State(state): State<AppState>,
    user: SessionUser,
    JsonBody(body): JsonBody<NewProvider>,
) -> ApiResult<impl IntoResponse> {
    user.require_admin()?;
    let mut checks = Checks::new();
    checks
        .length("name", &body.name, 1, 100)
        .one_of("kind", &body.kind, &PROVIDER_KINDS)
        .length("model", &body.model, 1, 200)
        .length("base_url", &body.base_url, 1, 2000)
        .length("api_key_env", &body.api_key_env, 0, 200);
    if let Some(capacity) = body.capacity {
        checks.range("capacity", capacity, 1, 10_000);
    }
    for (field, price) in [
        ("price_input", body.price_input),
        ("price_output", body.price_output),
    ] {
        if price.is_some_and(|p| !(p.is_finite() && p >= 0.0)) {
            checks.fail(field, "value_error");
        }
    }
    checks.finish()?;
    let request = AddProviderRequest {
        name: body.name,
        kind: body.kind,
        model: body.model,
        base_url: body.base_url,
        api_key_env: body.api_key_env,
        price_input: body.price_input,
        price_output: body.price_output,
        capacity: body.capacity.map(|c| c as i32),
    };
    let added = state
        .pipeline
        .handle
        .add_provider(state.call(&user.principal(), request))
        .await?
        .into_inner();
    Ok((StatusCode::CREATED, Json(admin_json(&added))))
}
