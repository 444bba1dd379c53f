//! `GET /health`: the roles this installation reaches (asked through the same
//! service traits as every call, so a remote role is really called), the
//! database, the coordination backend and the demo flag.

use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use dragoman_proto::v1::{RoleStatus, StatusRequest};
use serde::Serialize;
use serde_json::{Map, Value, json};
use std::time::Duration;

const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// Where a role runs, seen from this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum Location {
    Local,
    Remote,
}

/// The installation as a whole: every role, the database and the
/// coordination backend answer, or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum Overall {
    Ok,
    Degraded,
}

fn role_json(
    local: bool,
    result: Result<Result<tonic::Response<RoleStatus>, tonic::Status>, tokio::time::error::Elapsed>,
) -> (bool, Value) {
    let place = if local {
        Location::Local
    } else {
        Location::Remote
    };
    match result {
        Ok(Ok(answer)) => {
            let status = answer.into_inner();
            (
                status.ok,
                json!({"ok": status.ok, "detail": status.detail, "location": place}),
            )
        }
        Ok(Err(status)) => (
            false,
            json!({"ok": false, "detail": status.message(), "location": place}),
        ),
        Err(_) => (
            false,
            json!({"ok": false, "detail": "no answer in time", "location": place}),
        ),
    }
}

pub async fn health(State(state): State<AppState>) -> (StatusCode, Json<Value>) {
    let cred = &state.credential;
    let (scheduler, pipeline, delivery, memory, database, coordination) = tokio::join!(
        tokio::time::timeout(
            PROBE_TIMEOUT,
            state
                .scheduler
                .handle
                .status(cred.system_request(StatusRequest {}))
        ),
        tokio::time::timeout(
            PROBE_TIMEOUT,
            state
                .pipeline
                .handle
                .status(cred.system_request(StatusRequest {}))
        ),
        tokio::time::timeout(
            PROBE_TIMEOUT,
            state
                .delivery
                .handle
                .status(cred.system_request(StatusRequest {}))
        ),
        tokio::time::timeout(
            PROBE_TIMEOUT,
            state
                .memory
                .handle
                .status(cred.system_request(StatusRequest {}))
        ),
        dragoman_model::db::ping(&state.db),
        state.coordination.ping(),
    );
    let mut roles = Map::new();
    let mut healthy = true;
    for (name, local, result) in [
        ("scheduler", state.scheduler.local, scheduler),
        ("pipeline", state.pipeline.local, pipeline),
        ("delivery", state.delivery.local, delivery),
        ("memory", state.memory.local, memory),
    ] {
        let (ok, value) = role_json(local, result);
        healthy &= ok;
        roles.insert(name.into(), value);
    }
    roles.insert(
        "gateway".into(),
        json!({"ok": true, "detail": "", "location": Location::Local}),
    );
    let database_ok = database.is_ok();
    let coordination_ok = coordination.is_ok();
    healthy &= database_ok && coordination_ok;
    let body = json!({
        "status": if healthy { Overall::Ok } else { Overall::Degraded },
        "roles": roles,
        "process_roles": state.settings.roles,
        "database": {
            "backend": dragoman_model::db::backend_name(&state.db),
            "ok": database_ok,
        },
        "coordination": {
            "backend": state.coordination.backend_name(),
            "ok": coordination_ok,
        },
        "demo": state.settings.demo_mode,
        "version": env!("CARGO_PKG_VERSION"),
    });
    let status = if healthy {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, Json(body))
}
