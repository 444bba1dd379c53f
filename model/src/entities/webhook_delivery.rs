//! `webhook_deliveries`: the outbox of webhook calls, with retry state.

use crate::vocab::{CallbackEvent, WebhookState};
use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

/// One webhook delivery (one event, possibly one batch of a larger event).
#[derive(Clone, Debug, PartialEq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "webhook_deliveries")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    #[sea_orm(indexed)]
    pub request_id: String,
    pub event: CallbackEvent,
    /// Batch number of a `chapters.translated` event; `None` for the final one.
    pub batch: Option<i32>,
    pub url: String,
    /// The exact bytes sent (and signed). Empty for a final event until its
    /// first attempt renders it, so that it carries the stored result.
    #[sea_orm(column_type = "Text")]
    pub body: String,
    pub state: WebhookState,
    /// Calls made so far (a call is counted when it starts).
    pub attempts: i32,
    /// When the next call is due, in Unix **milliseconds** (retries of a
    /// few hundred milliseconds exist in tests); `None` once settled.
    pub next_attempt_at: Option<i64>,
    pub last_error: String,
    pub created_at: i64,
    pub updated_at: i64,
    pub delivered_at: Option<i64>,
}

/// `webhook_deliveries.request_id -> requests.id`.
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

impl ActiveModel {
    /// A call due now, not attempted yet.
    pub fn queued(
        request_id: &str,
        event: CallbackEvent,
        batch: Option<i32>,
        url: &str,
        body: String,
    ) -> ActiveModel {
        let now = crate::clock::now();
        ActiveModel {
            id: sea_orm::Set(crate::ids::new_id()),
            request_id: sea_orm::Set(request_id.to_owned()),
            event: sea_orm::Set(event),
            batch: sea_orm::Set(batch),
            url: sea_orm::Set(url.to_owned()),
            body: sea_orm::Set(body),
            state: sea_orm::Set(WebhookState::Pending),
            attempts: sea_orm::Set(0),
            next_attempt_at: sea_orm::Set(Some(crate::clock::now_millis())),
            last_error: sea_orm::Set(String::new()),
            created_at: sea_orm::Set(now),
            updated_at: sea_orm::Set(now),
            delivered_at: sea_orm::Set(None),
        }
    }
}
