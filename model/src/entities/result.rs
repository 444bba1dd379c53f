//! `results`: downloadable outputs of a request (EPUB, text, report, ...) in the blob store.

use crate::vocab::{ResultFormat, ResultScope};
use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

/// One result file; its bytes live in the blob store under `blob_key`.
#[derive(Clone, Debug, PartialEq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "results")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    #[sea_orm(indexed)]
    pub request_id: String,
    pub format: ResultFormat,
    pub scope: ResultScope,
    pub media_type: String,
    pub filename: String,
    pub size: i64,
    pub sha256: String,
    pub blob_key: String,
    pub created_at: i64,
    pub expires_at: Option<i64>,
}

/// `results.request_id -> requests.id`.
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
