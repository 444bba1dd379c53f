//! `deleted_requests`: a request whose volume was deleted, as its owner can
//! still read it.

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

/// What is kept of one request when its volume is deleted: where it was,
/// and its status document as it stood then. Its id is the request's.
#[derive(Clone, Debug, PartialEq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "deleted_requests")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    #[sea_orm(indexed)]
    pub account_id: String,
    pub series_id: String,
    pub project_id: String,
    /// The status document (spec 2.2) with the deletion stated in it.
    pub document: Json,
    pub deleted_at: i64,
}

/// `deleted_requests.account_id -> accounts.id`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    #[sea_orm(
        belongs_to = "super::account::Entity",
        from = "Column::AccountId",
        to = "super::account::Column::Id",
        on_delete = "Cascade"
    )]
    Account,
}

impl Related<super::account::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Account.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
