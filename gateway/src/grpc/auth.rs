//! Who may call the public gRPC services, checked once before any of them
//! runs: the API token of `authorization: Bearer …` metadata (the REST
//! rule: a session cookie or the internal credential opens nothing here),
//! the licence's automation feature, demo mode's read-only rule, and the
//! token's rate limit (each call costs one, a stream as one call). A
//! refusal is answered as the rich status of [`super::status`]; the caller
//! and its language reach the handlers in the request's extensions.

use super::status::status;
use crate::auth::bearer::{TokenCaller, authenticate};
use crate::auth::rate_limit::RateLimit;
use crate::error::ApiError;
use crate::messages::Lang;
use crate::operations::Caller;
use crate::state::AppState;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use dragoman_model::vocab::ErrorCode;

/// Methods that only read: the ones demo mode lets through.
const READING_PREFIXES: [&str; 4] = ["Get", "List", "Watch", "Export"];

/// Middleware of the public services.
pub async fn require_token(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Response {
    let lang = Lang::from_headers(request.headers());
    let path = request.uri().path().to_owned();
    match admit(&state, request.headers(), &path).await {
        Ok(caller) => {
            request.extensions_mut().insert(caller);
            request.extensions_mut().insert(lang);
            next.run(request).await
        }
        Err(error) => status(error, lang)
            .into_http::<axum::body::Body>()
            .into_response(),
    }
}

async fn admit(
    state: &AppState,
    headers: &axum::http::HeaderMap,
    path: &str,
) -> Result<TokenCaller, ApiError> {
    let caller = crate::outage::bounded(state, authenticate(state, headers)).await?;
    if !crate::auth::licence::features(state).await?.automation_api {
        return Err(ApiError::new(ErrorCode::AutomationNotLicensed));
    }
    if state.settings.demo_mode && !reads(path) {
        return Err(ApiError::new(ErrorCode::DemoReadOnly));
    }
    if let Some(seconds) = RateLimit::of(state).check(&caller.token.id, 1).await {
        let mut refusal = ApiError::new(ErrorCode::RateLimited);
        refusal.retry_after = Some(seconds);
        return Err(refusal);
    }
    Ok(caller)
}

/// Whether the method of a gRPC path (`/package.Service/Method`) only reads.
fn reads(path: &str) -> bool {
    let method = path.rsplit('/').next().unwrap_or_default();
    READING_PREFIXES
        .iter()
        .any(|prefix| method.starts_with(prefix))
}

/// The caller the middleware admitted, and the language it asked for.
pub fn caller<T>(request: &tonic::Request<T>) -> Result<(Caller, Lang), tonic::Status> {
    let lang = request
        .extensions()
        .get::<Lang>()
        .copied()
        .unwrap_or(Lang::Fr);
    match request.extensions().get::<TokenCaller>() {
        Some(token) => Ok((Caller::grpc(token.clone()), lang)),
        // Only a service mounted without the middleware gets here.
        None => Err(status(ApiError::new(ErrorCode::MissingToken), lang)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demo_mode_lets_only_reading_methods_through() {
        assert!(reads("/dragoman.api.v1.TranslationsService/GetTranslation"));
        assert!(reads(
            "/dragoman.api.v1.TranslationsService/WatchTranslation"
        ));
        assert!(reads("/dragoman.api.v1.GlossariesService/ExportGlossary"));
        assert!(!reads(
            "/dragoman.api.v1.TranslationsService/SubmitTranslation"
        ));
        assert!(!reads(
            "/dragoman.api.v1.TranslationsService/ControlTranslation"
        ));
        assert!(!reads("/dragoman.api.v1.GlossariesService/ImportGlossary"));
    }
}
