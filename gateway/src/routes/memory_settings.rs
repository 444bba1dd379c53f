//! External memory routes (spec 1, 4.9; session only): the administrator's
//! management of the mirror under `/api/settings/memory/…`, and the owner's
//! maintenance of one series' or volume's mirror. The memory service owns
//! the mirror, checks the meaning of every change and checks ownership, so
//! these handlers check only the session, the administrator flag and the
//! shape of bodies, then answer the service's document as it is (the types
//! of [`dragoman_model::documents::external_memory`]).
//!
//! Administrator routes (403 `admin_required` for anyone else):
//! - `GET /settings/memory/status`: the sync state (`configured: false`
//!   without an external memory).
//! - `POST /settings/memory/outbox/retry`: failed outbox rows due now.
//! - `GET`, `PUT`, `DELETE /settings/memory/cleanup`: the cleanup settings;
//!   `PUT` body `{"enabled": bool, "max_attempts": integer,
//!   "retain_days": integer}`, each optional; `DELETE` restores the defaults.
//! - `GET /settings/memory/cleanups`; `POST
//!   /settings/memory/cleanups/{id}/retry` and `…/retire`.
//! - `POST /settings/memory/orphans/scan` and `…/clean`.
//! - `GET`, `PUT /settings/memory/orphans/schedule`; `PUT` body
//!   `{"enabled": bool, "interval_hours": integer, "clean": bool}`, each
//!   optional.
//!
//! Owner routes (an administrator may act on any; another account's series
//! or volume answers as an absent one):
//! - `GET /series/{id}/memory`; `POST /series/{id}/memory/{resync|rebuild|reindex}`.
//! - `GET /projects/{id}/memory/status`;
//!   `POST /projects/{id}/memory/{synchronize|rebuild|reindex|check}`.
//!
//! Without an external memory every route but the two status reads answers
//! 409 `conflict`.

use crate::auth::session::SessionUser;
use crate::error::{ApiError, ApiResult};
use crate::extract::{JsonBody, parse_json};
use crate::state::AppState;
use axum::Json;
use axum::extract::{Path, State};
use dragoman_model::documents::external_memory::{
    CleanupList, CleanupRecord, CleanupSettingsChanges, CleanupSettingsView, ExternalMemoryStatus,
    MemoryScopeOutcome, MemoryScopeStatus, OrphanScan, OrphanScheduleChanges, OrphanScheduleView,
    OutboxRetried,
};
use dragoman_model::vocab::ErrorCode;
use dragoman_proto::v1::{
    MemoryCleanupAction, MemoryCleanupActionRequest, MemoryOrphansAction, MemoryOrphansRequest,
    MemoryScopeAction, MemoryScopeActionRequest, MemoryScopeKind, MemoryScopeRef, StatusRequest,
    UpdateMemoryCleanupSettingsRequest, UpdateMemoryOrphanScheduleRequest,
};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use std::fmt::Display;

/// The service's message as its document, so the envelope and the content
/// type are the gateway's like every other answer.
fn answer<M, D>(message: M) -> ApiResult<Json<D>>
where
    D: TryFrom<M>,
    D::Error: Display,
{
    D::try_from(message)
        .map(Json)
        .map_err(|e| ApiError::server(format!("memory view: {e}")))
}

/// The body's fields checked against `T`, read first as a JSON object
/// because a struct would also accept an array of its fields. (The
/// handlers take the body as a `Result`, so that anyone but an
/// administrator is refused before their body is judged.)
fn shape<T: DeserializeOwned>(body: Map<String, Value>) -> ApiResult<T> {
    let bytes = serde_json::to_vec(&Value::Object(body))
        .map_err(|e| ApiError::server(format!("memory changes: {e}")))?;
    parse_json(&bytes)
}

pub async fn get_status(
    State(state): State<AppState>,
    user: SessionUser,
) -> ApiResult<Json<ExternalMemoryStatus>> {
    user.require_admin()?;
    status(&state, &user).await.map(Json)
}

/// The installation's sync state, as the administrator `user` reads it
/// (the caller checked the flag).
pub async fn status(state: &AppState, user: &SessionUser) -> ApiResult<ExternalMemoryStatus> {
    let document = state
        .memory
        .handle
        .external_memory_status(state.call(&user.principal(), StatusRequest {}))
        .await?
        .into_inner();
    answer(document).map(|Json(status)| status)
}

pub async fn retry_outbox(
    State(state): State<AppState>,
    user: SessionUser,
) -> ApiResult<Json<OutboxRetried>> {
    user.require_admin()?;
    retry_failed(&state, &user).await.map(Json)
}

/// Makes the outbox's failed rows due now, for the administrator `user`
/// (the caller checked the flag).
pub async fn retry_failed(state: &AppState, user: &SessionUser) -> ApiResult<OutboxRetried> {
    let document = state
        .memory
        .handle
        .retry_memory_outbox(state.call(&user.principal(), StatusRequest {}))
        .await?
        .into_inner();
    answer(document).map(|Json(retried)| retried)
}

pub async fn get_cleanup(
    State(state): State<AppState>,
    user: SessionUser,
) -> ApiResult<Json<CleanupSettingsView>> {
    user.require_admin()?;
    let document = state
        .memory
        .handle
        .get_memory_cleanup_settings(state.call(&user.principal(), StatusRequest {}))
        .await?
        .into_inner();
    answer(document)
}

pub async fn put_cleanup(
    State(state): State<AppState>,
    user: SessionUser,
    body: Result<JsonBody<Map<String, Value>>, ApiError>,
) -> ApiResult<Json<CleanupSettingsView>> {
    user.require_admin()?;
    let JsonBody(body) = body?;
    let changes: CleanupSettingsChanges = shape(body)?;
    update_cleanup(&state, &user, Some(changes), false).await
}

pub async fn delete_cleanup(
    State(state): State<AppState>,
    user: SessionUser,
) -> ApiResult<Json<CleanupSettingsView>> {
    user.require_admin()?;
    update_cleanup(&state, &user, None, true).await
}

async fn update_cleanup(
    state: &AppState,
    user: &SessionUser,
    changes: Option<CleanupSettingsChanges>,
    reset: bool,
) -> ApiResult<Json<CleanupSettingsView>> {
    let document = state
        .memory
        .handle
        .update_memory_cleanup_settings(state.call(
            &user.principal(),
            UpdateMemoryCleanupSettingsRequest {
                changes: changes.map(Into::into),
                reset,
            },
        ))
        .await?
        .into_inner();
    answer(document)
}

pub async fn list_cleanups(
    State(state): State<AppState>,
    user: SessionUser,
) -> ApiResult<Json<CleanupList>> {
    user.require_admin()?;
    let document = state
        .memory
        .handle
        .list_memory_cleanups(state.call(&user.principal(), StatusRequest {}))
        .await?
        .into_inner();
    answer(document)
}

pub async fn retry_cleanup(
    State(state): State<AppState>,
    user: SessionUser,
    Path(cleanup_id): Path<String>,
) -> ApiResult<Json<CleanupRecord>> {
    act_on_cleanup(&state, &user, cleanup_id, MemoryCleanupAction::Retry).await
}

pub async fn retire_cleanup(
    State(state): State<AppState>,
    user: SessionUser,
    Path(cleanup_id): Path<String>,
) -> ApiResult<Json<CleanupRecord>> {
    act_on_cleanup(&state, &user, cleanup_id, MemoryCleanupAction::Retire).await
}

async fn act_on_cleanup(
    state: &AppState,
    user: &SessionUser,
    cleanup_id: String,
    action: MemoryCleanupAction,
) -> ApiResult<Json<CleanupRecord>> {
    user.require_admin()?;
    let document = state
        .memory
        .handle
        .act_on_memory_cleanup(state.call(
            &user.principal(),
            MemoryCleanupActionRequest {
                cleanup_id,
                action: action.into(),
            },
        ))
        .await?
        .into_inner();
    answer(document)
}

pub async fn scan_orphans(
    State(state): State<AppState>,
    user: SessionUser,
) -> ApiResult<Json<OrphanScan>> {
    act_on_orphans(&state, &user, MemoryOrphansAction::Scan).await
}

pub async fn clean_orphans(
    State(state): State<AppState>,
    user: SessionUser,
) -> ApiResult<Json<OrphanScan>> {
    act_on_orphans(&state, &user, MemoryOrphansAction::Clean).await
}

async fn act_on_orphans(
    state: &AppState,
    user: &SessionUser,
    action: MemoryOrphansAction,
) -> ApiResult<Json<OrphanScan>> {
    user.require_admin()?;
    let document = state
        .memory
        .handle
        .act_on_memory_orphans(state.call(
            &user.principal(),
            MemoryOrphansRequest {
                action: action.into(),
            },
        ))
        .await?
        .into_inner();
    answer(document)
}

pub async fn get_orphan_schedule(
    State(state): State<AppState>,
    user: SessionUser,
) -> ApiResult<Json<OrphanScheduleView>> {
    user.require_admin()?;
    let document = state
        .memory
        .handle
        .get_memory_orphan_schedule(state.call(&user.principal(), StatusRequest {}))
        .await?
        .into_inner();
    answer(document)
}

pub async fn put_orphan_schedule(
    State(state): State<AppState>,
    user: SessionUser,
    body: Result<JsonBody<Map<String, Value>>, ApiError>,
) -> ApiResult<Json<OrphanScheduleView>> {
    user.require_admin()?;
    let JsonBody(body) = body?;
    let changes: OrphanScheduleChanges = shape(body)?;
    let document = state
        .memory
        .handle
        .update_memory_orphan_schedule(state.call(
            &user.principal(),
            UpdateMemoryOrphanScheduleRequest {
                changes: Some(changes.into()),
            },
        ))
        .await?
        .into_inner();
    answer(document)
}

/// The action a path names; another word is an address that does not
/// exist. A series' `resync` is a volume's `synchronize`; `check` is a
/// volume's only (spec 4.9).
fn scope_action(kind: MemoryScopeKind, word: &str) -> ApiResult<MemoryScopeAction> {
    match (kind, word) {
        (MemoryScopeKind::Series, "resync") | (MemoryScopeKind::Project, "synchronize") => {
            Ok(MemoryScopeAction::Synchronize)
        }
        (_, "rebuild") => Ok(MemoryScopeAction::Rebuild),
        (_, "reindex") => Ok(MemoryScopeAction::Reindex),
        (MemoryScopeKind::Project, "check") => Ok(MemoryScopeAction::Check),
        _ => Err(ApiError::new(ErrorCode::NotFound)),
    }
}

async fn scope_status(
    state: &AppState,
    user: &SessionUser,
    kind: MemoryScopeKind,
    id: String,
) -> ApiResult<Json<MemoryScopeStatus>> {
    let document = state
        .memory
        .handle
        .memory_scope_status(state.call(
            &user.principal(),
            MemoryScopeRef {
                kind: kind.into(),
                id,
            },
        ))
        .await?
        .into_inner();
    answer(document)
}

async fn act_on_scope(
    state: &AppState,
    user: &SessionUser,
    kind: MemoryScopeKind,
    id: String,
    word: &str,
) -> ApiResult<Json<MemoryScopeOutcome>> {
    let action = scope_action(kind, word)?;
    let document = state
        .memory
        .handle
        .act_on_memory_scope(state.call(
            &user.principal(),
            MemoryScopeActionRequest {
                scope: Some(MemoryScopeRef {
                    kind: kind.into(),
                    id,
                }),
                action: action.into(),
            },
        ))
        .await?
        .into_inner();
    answer(document)
}

pub async fn series_memory(
    State(state): State<AppState>,
    user: SessionUser,
    Path(series_id): Path<String>,
) -> ApiResult<Json<MemoryScopeStatus>> {
    scope_status(&state, &user, MemoryScopeKind::Series, series_id).await
}

pub async fn series_action(
    State(state): State<AppState>,
    user: SessionUser,
    Path((series_id, action)): Path<(String, String)>,
) -> ApiResult<Json<MemoryScopeOutcome>> {
    act_on_scope(&state, &user, MemoryScopeKind::Series, series_id, &action).await
}

pub async fn project_status(
    State(state): State<AppState>,
    user: SessionUser,
    Path(project_id): Path<String>,
) -> ApiResult<Json<MemoryScopeStatus>> {
    scope_status(&state, &user, MemoryScopeKind::Project, project_id).await
}

pub async fn project_action(
    State(state): State<AppState>,
    user: SessionUser,
    Path((project_id, action)): Path<(String, String)>,
) -> ApiResult<Json<MemoryScopeOutcome>> {
    act_on_scope(&state, &user, MemoryScopeKind::Project, project_id, &action).await
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the handler does with a body: an object, then its fields.
    fn checked<T: DeserializeOwned>(body: &str) -> ApiResult<T> {
        parse_json::<Map<String, Value>>(body.as_bytes()).and_then(shape)
    }

    fn issue(body: &str) -> Value {
        let refused = checked::<CleanupSettingsChanges>(body).expect_err("a refusal");
        assert_eq!(refused.code, ErrorCode::InvalidPayload);
        serde_json::to_value(&refused.issues[0]).expect("an issue")
    }

    #[test]
    fn changes_keep_only_the_fields_given() {
        let changes: CleanupSettingsChanges =
            checked(r#"{"max_attempts": -3}"#).expect("an integer of any sign");
        assert_eq!(
            changes,
            CleanupSettingsChanges {
                max_attempts: Some(-3),
                ..Default::default()
            }
        );
        let schedule: OrphanScheduleChanges = checked("{}").expect("nothing to change");
        assert_eq!(schedule, OrphanScheduleChanges::default());
    }

    #[test]
    fn the_shape_is_checked_without_echoing_values() {
        let unknown = issue(r#"{"secret": 1}"#);
        assert_eq!(unknown["type"], "extra_forbidden");
        assert_eq!(unknown["loc"], serde_json::json!(["body", "secret"]));
        for body in [
            r#"{"enabled": null}"#,
            r#"{"enabled": "yes"}"#,
            r#"{"max_attempts": 1.5}"#,
            r#"{"retain_days": "30"}"#,
        ] {
            let wrong = issue(body);
            assert_eq!(wrong["type"], "type_error", "{body}");
        }
        let not_an_object = issue("[]");
        assert_eq!(not_an_object["type"], "type_error");
        assert_eq!(not_an_object["loc"], serde_json::json!(["body"]));
    }

    #[test]
    fn the_routes_register_without_conflict() {
        // A static segment next to a parameter (`memory/status` and
        // `memory/{action}`) must be accepted by the router.
        let _routes: axum::Router<AppState> = super::super::memory_routes();
    }

    #[test]
    fn actions_follow_the_spec_words() {
        use MemoryScopeKind::{Project, Series};
        assert_eq!(
            scope_action(Series, "resync").ok(),
            Some(MemoryScopeAction::Synchronize)
        );
        assert_eq!(
            scope_action(Project, "synchronize").ok(),
            Some(MemoryScopeAction::Synchronize)
        );
        assert_eq!(
            scope_action(Project, "check").ok(),
            Some(MemoryScopeAction::Check)
        );
        for (kind, word) in [
            (Series, "synchronize"),
            (Series, "check"),
            (Project, "resync"),
            (Project, "status"),
        ] {
            assert!(scope_action(kind, word).is_err(), "{word}");
        }
    }
}
