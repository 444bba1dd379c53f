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
//! The licence is read at each call, so an administrator's change applies
//! at once.

use crate::error::ApiError;
use crate::messages::Lang;
use crate::state::AppState;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use dragoman_model::licence::Features;
use dragoman_model::vocab::ErrorCode;

/// The JSON-RPC error code of a tool-protocol call the licence refuses.
pub const NOT_LICENSED_RPC_CODE: i64 = -32002;

async fn features(state: &AppState) -> Result<Features, ApiError> {
    let in_force = state
        .settings
        .licence
        .in_force(&state.db)
        .await
        .map_err(|e| ApiError::server(format!("licence: {e}")))?;
    Ok(in_force.features())
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
        ErrorCode::AutomationNotLicensed,
        serde_json::Value::Null,
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
