//! `autopilot_runs`: the autopilot's state for one job, written by the
//! pipeline as it goes, so that a job resumed after a crash continues the
//! round in progress and the report can say how it ended (spec 2.7
//! `autopilot`).

use crate::vocab::AutopilotOutcome;
use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "autopilot_runs")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub job_id: String,
    #[sea_orm(indexed)]
    pub request_id: String,
    /// The round in progress, or the last one once `finished`.
    pub round: i32,
    /// Rounds that took at least one passage up.
    pub rounds: i32,
    pub finished: bool,
    /// How it ended; null while it runs.
    pub outcome: Option<AutopilotOutcome>,
    /// What is left when it ended unresolved.
    pub reason: Option<String>,
    pub updated_at: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    #[sea_orm(
        belongs_to = "super::request::Entity",
        from = "Column::RequestId",
        to = "super::request::Column::Id",
        on_delete = "Cascade"
    )]
    Request,
}

impl Related<super::request::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Request.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
