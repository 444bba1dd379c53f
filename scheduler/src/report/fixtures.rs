//! What the report's and the status document's tests write in the database
//! in the pipeline's stead: passages' scores, signals and statuses, the
//! autopilot's run and its decisions.

use dragoman_model::entities::{autopilot_decision, autopilot_run, passage, request};
use dragoman_model::ids;
use dragoman_model::vocab::{AutopilotAction, AutopilotOutcome, PassageStatus, SignalCode};
use sea_orm::{ActiveModelTrait, DatabaseConnection, Set};
use serde_json::{Value, json};

/// One stored signal.
pub fn signal(code: SignalCode, penalty: u32) -> Value {
    json!({"code": code, "count": 1, "penalty": penalty, "message": format!("{code} here")})
}

/// Rewrites a passage with `edit` applied.
pub async fn edit(
    db: &DatabaseConnection,
    p: &passage::Model,
    edit: impl FnOnce(&mut passage::ActiveModel),
) -> passage::Model {
    let mut model: passage::ActiveModel = p.clone().into();
    edit(&mut model);
    model.update(db).await.expect("passage")
}

/// A translated passage with `status`, `score` and `signals`.
pub async fn scored(
    db: &DatabaseConnection,
    p: &passage::Model,
    status: PassageStatus,
    score: Option<i32>,
    signals: Value,
) -> passage::Model {
    edit(db, p, |m| {
        m.translation = Set(Some(format!("{} (fr)", p.source)));
        m.status = Set(status);
        m.score = Set(score);
        m.signals = Set(Some(signals));
    })
    .await
}

/// The autopilot's run for the request's job.
pub async fn run(
    db: &DatabaseConnection,
    row: &request::Model,
    round: i32,
    outcome: Option<AutopilotOutcome>,
    reason: Option<&str>,
) -> autopilot_run::Model {
    autopilot_run::ActiveModel {
        job_id: Set(row.job_id.clone().expect("a job")),
        request_id: Set(row.id.clone()),
        round: Set(round),
        rounds: Set(round),
        finished: Set(outcome.is_some()),
        outcome: Set(outcome),
        reason: Set(reason.map(str::to_owned)),
        updated_at: Set(0),
    }
    .insert(db)
    .await
    .expect("autopilot run")
}

/// A decision of the autopilot about `p`, logged at `at`.
pub async fn decision(
    db: &DatabaseConnection,
    row: &request::Model,
    p: &passage::Model,
    action: AutopilotAction,
    reason: &str,
    at: i64,
) {
    autopilot_decision::ActiveModel {
        id: Set(ids::new_id()),
        request_id: Set(row.id.clone()),
        job_id: Set(row.job_id.clone().unwrap_or_default()),
        passage_id: Set(p.id.clone()),
        round: Set(1),
        action: Set(action),
        reason: Set(reason.to_owned()),
        score_before: Set(p.score),
        score_after: Set(p.score),
        created_at: Set(at),
    }
    .insert(db)
    .await
    .expect("decision");
}
