//! `requests`: one translation request as submitted through the API, and its outcome.

use crate::request_options::StoredOptions;
use crate::vocab::{CallbackEvent, InputKind, Priority, RequestStatus, Stage};
use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

/// One request. `job_id` names the current job (no foreign key: jobs reference
/// requests, not the other way round).
#[derive(Clone, Debug, PartialEq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "requests")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub account_id: String,
    pub token_id: Option<String>,
    pub external_id: Option<String>,
    pub idempotency_key: Option<String>,
    pub content_hash: String,
    pub series_id: String,
    #[sea_orm(indexed)]
    pub project_id: String,
    pub job_id: Option<String>,
    pub input: InputKind,
    #[sea_orm(indexed)]
    pub status: RequestStatus,
    pub stage: Stage,
    pub step: String,
    pub error: String,
    pub stop_reason: String,
    pub priority: Priority,
    pub options: StoredOptions,
    pub callback_url: Option<String>,
    pub callback_events: Json,
    /// Chapter bookkeeping: created / unchanged / replaced / new.
    pub chapters: Json,
    pub result: Option<Json>,
    pub report: Option<Json>,
    pub next_attempt: i64,
    pub created_at: i64,
    pub updated_at: i64,
    pub finished_at: Option<i64>,
}

/// `requests.account_id -> accounts.id`, `requests.token_id -> api_tokens.id`,
/// `requests.series_id -> series.id`, `requests.project_id -> projects.id`; jobs,
/// results and webhook deliveries of the request.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    #[sea_orm(
        belongs_to = "super::account::Entity",
        from = "Column::AccountId",
        to = "super::account::Column::Id",
        on_delete = "Cascade"
    )]
    Account,
    #[sea_orm(
        belongs_to = "super::api_token::Entity",
        from = "Column::TokenId",
        to = "super::api_token::Column::Id",
        on_delete = "SetNull"
    )]
    ApiToken,
    #[sea_orm(
        belongs_to = "super::series::Entity",
        from = "Column::SeriesId",
        to = "super::series::Column::Id",
        on_delete = "Cascade"
    )]
    Series,
    #[sea_orm(
        belongs_to = "super::project::Entity",
        from = "Column::ProjectId",
        to = "super::project::Column::Id",
        on_delete = "Cascade"
    )]
    Project,
    #[sea_orm(has_many = "super::job::Entity")]
    Job,
    #[sea_orm(has_many = "super::result::Entity")]
    Result,
    #[sea_orm(has_many = "super::webhook_delivery::Entity")]
    WebhookDelivery,
}

impl Related<super::account::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Account.def()
    }
}

impl Related<super::api_token::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::ApiToken.def()
    }
}

impl Related<super::series::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Series.def()
    }
}

impl Related<super::project::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Project.def()
    }
}

impl Related<super::job::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Job.def()
    }
}

impl Related<super::result::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Result.def()
    }
}

impl Related<super::webhook_delivery::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::WebhookDelivery.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}

impl Model {
    /// Whether the request asked for `chapters.translated` batches (spec 6.2).
    pub fn wants_chapter_events(&self) -> bool {
        self.callback_url.is_some()
            && self.callback_events.as_array().is_some_and(|events| {
                events
                    .iter()
                    .any(|e| e.as_str() == Some(CallbackEvent::ChaptersTranslated.as_str()))
            })
    }

    /// The chapter ids the request covers, in the order it sent them
    /// (`chapters.ids`, written at intake).
    pub fn chapter_ids(&self) -> Vec<String> {
        self.chapter_list("ids")
    }

    /// A list of chapter ids kept in the `chapters` bookkeeping (`ids`,
    /// `new`, `translated_at_import`).
    pub fn chapter_list(&self, key: &str) -> Vec<String> {
        chapter_list(&self.chapters, key)
    }
}

/// A list of chapter ids of a `chapters` bookkeeping object.
pub fn chapter_list(chapters: &serde_json::Value, key: &str) -> Vec<String> {
    chapters
        .get(key)
        .and_then(serde_json::Value::as_array)
        .map(|ids| {
            ids.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}
