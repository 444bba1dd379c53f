//! The library as the tool protocol changes it (spec 4.10): books, series
//! and the work on them, each a module of its own.

pub mod book_settings;
pub mod books;
pub mod jobs;
pub mod series;

use crate::error::SchedulerError;
use dragoman_model::entities::provider;
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter};

/// The provider registered under `name` (a tool names providers as an
/// administrator registered them), or 422 `unknown_provider`.
pub(crate) async fn provider_named(
    db: &impl ConnectionTrait,
    name: &str,
) -> Result<provider::Model, SchedulerError> {
    provider::Entity::find()
        .filter(provider::Column::Name.eq(name.trim()))
        .one(db)
        .await?
        .ok_or(SchedulerError::UnknownProvider)
}
