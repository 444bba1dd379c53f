//! `provider_calls`: one row per call to a language model, for usage and cost accounting.

use crate::vocab::UsageStage;
use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

/// One provider call. `token_id`, `request_id` and `job_id` are kept without foreign
/// keys so that accounting survives the deletion of what it refers to.
#[derive(Clone, Debug, PartialEq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "provider_calls")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub provider_id: String,
    pub account_id: String,
    pub token_id: Option<String>,
    #[sea_orm(indexed)]
    pub request_id: Option<String>,
    pub job_id: Option<String>,
    pub prompt_tokens: i64,
    pub completion_tokens: i64,
    /// A passage served from the translation memory, or a call whose
    /// prompt the provider partly served from its prompt cache.
    pub cached: bool,
    /// Prompt tokens (within `prompt_tokens`) the provider read from its
    /// prompt cache, billed at its cached-input price.
    pub cached_prompt_tokens: i64,
    /// Prompt tokens (within `prompt_tokens`) the provider wrote to its
    /// prompt cache (Anthropic bills them above the input price).
    pub cache_write_tokens: i64,
    /// The pipeline stage the call was made for, by which the report
    /// splits its usage (`translation` for calls recorded before stages
    /// were).
    pub stage: UsageStage,
    /// The cost of the call; for a call sent by batch, at the provider's
    /// batch discount.
    pub cost: Option<f64>,
    /// Sent in a provider batch rather than on its own.
    pub batch: bool,
    pub duration_ms: i64,
    pub status: String,
    pub error: String,
    pub created_at: i64,
}

/// `provider_calls.provider_id -> providers.id`, `provider_calls.account_id -> accounts.id`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    #[sea_orm(
        belongs_to = "super::provider::Entity",
        from = "Column::ProviderId",
        to = "super::provider::Column::Id",
        on_delete = "Restrict"
    )]
    Provider,
    #[sea_orm(
        belongs_to = "super::account::Entity",
        from = "Column::AccountId",
        to = "super::account::Column::Id",
        on_delete = "Cascade"
    )]
    Account,
}

impl Related<super::provider::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Provider.def()
    }
}

impl Related<super::account::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Account.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}

/// The `status` of a record for a passage served from the translation
/// memory: no provider was called, so it has no tokens and no cost, and it
/// counts among `cached_calls`, never among provider `calls`.
pub const MEMORY_OUTCOME: &str = "memory";

impl Model {
    /// Whether a provider was actually called.
    pub fn reached_provider(&self) -> bool {
        self.status != MEMORY_OUTCOME
    }
}
