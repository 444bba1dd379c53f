//! `providers`: configured language-model endpoints.

use crate::vocab::ProviderKind;
use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

/// One provider. `name` is unique; the API key itself stays in the environment
/// variable named by `api_key_env`.
#[derive(Clone, Debug, PartialEq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "providers")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    #[sea_orm(unique)]
    pub name: String,
    pub kind: ProviderKind,
    pub model: String,
    pub base_url: String,
    pub api_key_env: String,
    /// Price per million prompt tokens.
    pub price_input: Option<f64>,
    /// Price per million completion tokens.
    pub price_output: Option<f64>,
    /// Price per million prompt tokens read from the provider's prompt
    /// cache; `None`: the kind's default share of `price_input`.
    pub price_cached_input: Option<f64>,
    pub capacity: i32,
    /// The share of the list price taken off calls sent by batch (0.5:
    /// half the price), applied to their recorded cost, the estimate and
    /// budgets.
    pub batch_discount: f64,
    /// The cheaper provider a job moves to near its budget.
    pub fallback_provider_id: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// Tables referencing `providers`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    #[sea_orm(has_many = "super::series::Entity")]
    Series,
    #[sea_orm(has_many = "super::project::Entity")]
    Project,
    #[sea_orm(has_many = "super::provider_call::Entity")]
    ProviderCall,
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

impl Related<super::provider_call::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::ProviderCall.def()
    }
}

/// The batch discount of a provider that names none: the providers'
/// batch APIs answer within a day at half the price.
pub const DEFAULT_BATCH_DISCOUNT: f64 = 0.5;

impl ActiveModelBehavior for ActiveModel {}
