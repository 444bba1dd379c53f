//! Provider routes: the automation listing (spec 4.6) and the
//! administrator's session routes that list, register and edit providers
//! and choose the installation's default, over
//! [`operations::providers`](crate::operations::providers).

use crate::auth::bearer::TokenCaller;
use crate::auth::session::SessionUser;
use crate::error::ApiResult;
use crate::extract::JsonBody;
use crate::openapi::refusals::refusals;
use crate::operations::Caller;
use crate::operations::providers::{self, ProviderAdminView, ProviderView};
use crate::state::AppState;
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use dragoman_model::provider_input::{NewProvider, ProviderChanges};

refusals!(
    /// Listing providers refuses only what every operation may.
    ListRefusals: []
);

/// `GET /api/v1/providers` (spec 4.6).
#[utoipa::path(
    get,
    path = "/providers",
    operation_id = "listProviders",
    tag = "providers",
    summary = "List the installation's providers",
    description = "Sorted by name; never a provider's address or key. The provider of a \
        request is, in order: the request's `provider_id`, the volume's provider, the series' \
        default provider.",
    responses(
        (status = 200, description = "The providers.", body = Vec<ProviderView>),
        ListRefusals,
    ),
    extensions(("x-required-scopes" = json!([providers::LIST.rest]))),
)]
pub async fn list(
    State(state): State<AppState>,
    token: TokenCaller,
) -> ApiResult<Json<Vec<ProviderView>>> {
    let listed = providers::list(&state, &Caller::rest(token)).await?;
    Ok(Json(listed))
}

pub async fn admin_list(
    State(state): State<AppState>,
    user: SessionUser,
) -> ApiResult<Json<Vec<ProviderAdminView>>> {
    let listed = providers::admin_list(&state, &user).await?;
    Ok(Json(listed))
}

pub async fn admin_add(
    State(state): State<AppState>,
    user: SessionUser,
    JsonBody(body): JsonBody<NewProvider>,
) -> ApiResult<impl IntoResponse> {
    let added = providers::admin_add(&state, &user, body).await?;
    Ok((StatusCode::CREATED, Json(added)))
}

pub async fn admin_set_default(
    State(state): State<AppState>,
    user: SessionUser,
    JsonBody(body): JsonBody<providers::DefaultProvider>,
) -> ApiResult<Json<Vec<ProviderAdminView>>> {
    let listed = providers::set_default(&state, &user, body).await?;
    Ok(Json(listed))
}

/// `PATCH /api/providers/{id}`: the fields given change.
pub async fn admin_update(
    State(state): State<AppState>,
    user: SessionUser,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<ProviderChanges>,
) -> ApiResult<Json<ProviderAdminView>> {
    let updated = providers::update(&state, &user, &id, &body).await?;
    Ok(Json(updated))
}
