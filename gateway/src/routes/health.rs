//! `GET /health`: the roles this installation reaches (asked through the same
//! service traits as every call, so a remote role is really called), the
//! database, the coordination backend and the demo flag. It answers at once
//! during a database outage, which it reports (`database.ok` false, since
//! when in `database.down_since`).

use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use dragoman_model::documents::health::{
    CoordinationHealth, DatabaseHealth, Health, Location, Overall, RoleHealth, Roles,
};
use dragoman_proto::v1::{RoleStatus, StatusRequest};
use std::future::Future;
use std::time::Duration;

const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// What a role answered to its status call.
enum Asked {
    Answered(RoleStatus),
    Refused(String),
    Late,
    /// The database is known away and the role did not answer within the
    /// API's grace: it asks the database too.
    DatabaseAway,
}

/// A role's status, within [`PROBE_TIMEOUT`], and within the API's grace
/// ([`crate::outage::GRACE`]) while the database is known away, so that
/// `/health` answers at once during an outage.
async fn ask<F>(state: &AppState, call: F) -> Asked
where
    F: Future<Output = Result<tonic::Response<RoleStatus>, tonic::Status>>,
{
    let call = tokio::time::timeout(PROBE_TIMEOUT, call);
    match state.database.bounded(call, crate::outage::GRACE).await {
        Ok(Ok(Ok(answer))) => Asked::Answered(answer.into_inner()),
        Ok(Ok(Err(status))) => Asked::Refused(status.message().to_owned()),
        Ok(Err(_)) => Asked::Late,
        Err(_) => Asked::DatabaseAway,
    }
}

fn role_health(local: bool, asked: Asked) -> RoleHealth {
    let location = if local {
        Location::Local
    } else {
        Location::Remote
    };
    let (ok, detail) = match asked {
        Asked::Answered(status) => (status.ok, status.detail),
        Asked::Refused(message) => (false, message),
        Asked::Late => (false, "no answer in time".to_owned()),
        Asked::DatabaseAway => (false, "no answer: the database is unreachable".to_owned()),
    };
    RoleHealth {
        detail,
        location,
        ok,
    }
}

/// Whether the database answers. Known away: no at once. Else a ping
/// through the pool, given up as soon as the database is known away (a
/// pool that cannot connect would wait its whole acquire timeout) and
/// after [`PROBE_TIMEOUT`] in any case; a ping failing for want of a
/// connection marks it away for the whole process.
async fn database_answers(state: &AppState) -> bool {
    if !state.database.is_up() {
        return false;
    }
    let ping = tokio::time::timeout(PROBE_TIMEOUT, state.db.ping());
    match state.database.bounded(ping, Duration::ZERO).await {
        Ok(Ok(Ok(()))) => true,
        Ok(Ok(Err(error))) => {
            state.database.report(&error);
            false
        }
        Ok(Err(_)) | Err(_) => false,
    }
}

pub async fn health(State(state): State<AppState>) -> (StatusCode, Json<Health>) {
    let cred = &state.credential;
    let (scheduler, pipeline, delivery, memory, database, coordination) = tokio::join!(
        ask(
            &state,
            state
                .scheduler
                .handle
                .status(cred.system_request(StatusRequest {}))
        ),
        ask(
            &state,
            state
                .pipeline
                .handle
                .status(cred.system_request(StatusRequest {}))
        ),
        ask(
            &state,
            state
                .delivery
                .handle
                .status(cred.system_request(StatusRequest {}))
        ),
        ask(
            &state,
            state
                .memory
                .handle
                .status(cred.system_request(StatusRequest {}))
        ),
        database_answers(&state),
        state.coordination.ping(),
    );
    let roles = Roles {
        delivery: role_health(state.delivery.local, delivery),
        gateway: RoleHealth {
            detail: String::new(),
            location: Location::Local,
            ok: true,
        },
        memory: role_health(state.memory.local, memory),
        pipeline: role_health(state.pipeline.local, pipeline),
        scheduler: role_health(state.scheduler.local, scheduler),
    };
    let database_ok = database;
    let coordination_ok = coordination.is_ok();
    let healthy = roles.delivery.ok
        && roles.memory.ok
        && roles.pipeline.ok
        && roles.scheduler.ok
        && database_ok
        && coordination_ok;
    let body = Health {
        coordination: CoordinationHealth {
            backend: state.coordination.backend_name().to_owned(),
            ok: coordination_ok,
        },
        database: DatabaseHealth {
            backend: dragoman_model::db::backend_name(&state.db).to_owned(),
            down_since: state.database.health().down_since_unix(),
            ok: database_ok,
        },
        demo: state.settings.demo_mode,
        process_roles: state.settings.roles.clone(),
        roles,
        status: if healthy {
            Overall::Ok
        } else {
            Overall::Degraded
        },
        version: env!("CARGO_PKG_VERSION").to_owned(),
    };
    let status = if healthy {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, Json(body))
}
