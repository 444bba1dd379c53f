//! `autopilot_decisions`: every decision the autopilot logged about a
//! passage (spec 2.7 `decisions.autopilot`): what it did, in which round,
//! why, and the score before and after. A retained passage's residual
//! reason is its last `retain` decision's.

use crate::vocab::AutopilotAction;
use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "autopilot_decisions")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    #[sea_orm(indexed)]
    pub request_id: String,
    pub job_id: String,
    pub passage_id: String,
    pub round: i32,
    pub action: AutopilotAction,
    pub reason: String,
    pub score_before: Option<i32>,
    pub score_after: Option<i32>,
    pub created_at: i64,
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
