//! The licence's plan at the edge (spec 1, 4.10, 7): the automation API
//! (`/api/v1`) and the tool protocol (`/mcp`) answer only when the plan in
//! force includes them (see [`dragoman_model::licence::Plan::features`]);
//! an installation without licence has both.
//!
//! The plan is checked before the bearer token: a closed interface is
//! closed to every caller, so its answer never says whether a token is
//! valid, and no token lookup is spent on it. `/api/v1` answers 402
//! `automation_not_licensed` in the envelope; `/mcp` answers HTTP 402 with
//! a JSON-RPC error (`-32002`, `data.code` `automation_not_licensed`), the
//! form a tool-protocol client reads.
//!
//! The plan is kept for a short time ([`LicenceCache`]) rather than read at
//! each call: an administrator's change through this process applies at
//! once (the route drops it, [`licence_changed`]), through another process
//! as soon as the notify reaches this one, and a licence file edited on
//! disk within [`LICENCE_CACHE_TTL`].

use crate::error::ApiError;
use crate::messages::Lang;
use crate::state::AppState;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use dragoman_model::coordination::{Coordination, NotifiedCache};
use dragoman_model::licence::Features;
use dragoman_model::vocab::{Channel, ErrorCode};
use std::sync::Arc;
use std::time::Duration;

/// The JSON-RPC error code of a tool-protocol call the licence refuses.
pub const NOT_LICENSED_RPC_CODE: i64 = -32002;

/// The plan's features in force, kept under the unit key.
pub type LicenceCache = NotifiedCache<(), Features>;

/// How long the licence's features are kept without reading them again.
pub const LICENCE_CACHE_TTL: Duration = Duration::from_secs(2);

pub fn licence_cache(coordination: Arc<dyn Coordination>) -> LicenceCache {
    NotifiedCache::new_held(coordination, 1, LICENCE_CACHE_TTL, crate::outage::HELD_FOR)
}

/// Bounded as [`crate::outage::bounded`] says: the tool protocol reads it
/// before any call is bounded.
pub(crate) async fn features(state: &AppState) -> Result<Features, ApiError> {
    let load = state.caches.licence.get_or_load_held(
        &(),
        &Channel::Licence,
        || {
            crate::outage::read_now(state, async {
                let in_force = state
                    .settings
                    .licence
                    .in_force(&state.db)
                    .await
                    .map_err(|e| {
                        if e.is_outage() {
                            crate::outage::unavailable()
                        } else {
                            ApiError::server(format!("licence: {e}"))
                        }
                    })?;
                Ok(in_force.features())
            })
        },
        crate::outage::is_unavailable,
    );
    crate::outage::bounded(state, load).await
}

/// The administrator saved or removed a licence: this process reads it
/// again at its next call, the others once the notify reaches them. Call
/// it after the change is committed.
pub async fn licence_changed(state: &AppState) {
    state.caches.licence.clear();
    if let Err(error) = state.coordination.notify(&Channel::Licence).await {
        tracing::warn!(%error, "coordination notify of a licence change failed");
    }
}

/// Middleware of `/api/v1`.
pub async fn require_automation(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    if !features(&state).await?.automation_api {
        return Err(ApiError::new(ErrorCode::AutomationNotLicensed));
    }
    Ok(next.run(request).await)
}

/// Middleware of `/mcp`.
pub async fn require_tool_protocol(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    match features(&state).await {
        Ok(features) if features.tool_protocol => next.run(request).await,
        Ok(_) => not_licensed_rpc(Lang::from_headers(request.headers())),
        Err(error) => error.into_response(),
    }
}

/// HTTP 402 with the JSON-RPC error a tool-protocol client reads.
fn not_licensed_rpc(lang: Lang) -> Response {
    crate::mcp::transport::rpc_refusal(
        StatusCode::PAYMENT_REQUIRED,
        NOT_LICENSED_RPC_CODE,
        crate::mcp::jsonrpc::ErrorData::of(ErrorCode::AutomationNotLicensed),
        lang,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::{HeaderValue, header};

    async fn body_json(response: Response) -> serde_json::Value {
        use http_body_util::BodyExt;
        let bytes = response
            .into_body()
            .collect()
            .await
            .expect("body")
            .to_bytes();
        serde_json::from_slice(&bytes).expect("json")
    }

    #[tokio::test]
    async fn the_tool_protocol_refusal_is_a_json_rpc_error_in_the_callers_language() {
        let response = not_licensed_rpc(Lang::En);
        assert_eq!(response.status(), StatusCode::PAYMENT_REQUIRED);
        assert_eq!(
            response.headers().get(header::CONTENT_TYPE),
            Some(&HeaderValue::from_static("application/json"))
        );
        let body = body_json(response).await;
        assert_eq!(body["jsonrpc"], "2.0");
        assert!(body["id"].is_null());
        assert_eq!(body["error"]["code"], NOT_LICENSED_RPC_CODE);
        assert_eq!(body["error"]["data"]["code"], "automation_not_licensed");
        assert_eq!(
            body["error"]["message"],
            "The licence does not include the automation API."
        );
        let french = body_json(not_licensed_rpc(Lang::Fr)).await;
        assert_eq!(
            french["error"]["message"],
            "La licence n'inclut pas l'API d'automatisation."
        );
    }
}
