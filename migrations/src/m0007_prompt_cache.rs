//! `m0007_prompt_cache`: provider prompt caching in usage and prices.
//!
//! - `providers.price_cached_input`: the price per million prompt tokens a
//!   provider reads from its prompt cache (null: the kind's default share
//!   of the input price).
//! - `provider_calls.cached_prompt_tokens`, `provider_calls.cache_write_tokens`:
//!   the prompt tokens of a call read from and written to the provider's
//!   cache, both within `prompt_tokens`; 0 for calls recorded before.

use sea_orm_migration::{prelude::*, schema::*};

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m0007_prompt_cache"
    }
}

#[derive(DeriveIden)]
enum Providers {
    Table,
    PriceCachedInput,
}

#[derive(DeriveIden)]
enum ProviderCalls {
    Table,
    CachedPromptTokens,
    CacheWriteTokens,
}

/// Adds one column (SQLite alters a table a column at a time).
async fn add_column(
    manager: &SchemaManager<'_>,
    table: impl IntoTableRef,
    mut column: ColumnDef,
) -> Result<(), DbErr> {
    manager
        .alter_table(
            Table::alter()
                .table(table)
                .add_column(&mut column)
                .to_owned(),
        )
        .await
}

async fn drop_column(
    manager: &SchemaManager<'_>,
    table: impl IntoTableRef,
    column: impl IntoIden,
) -> Result<(), DbErr> {
    manager
        .alter_table(Table::alter().table(table).drop_column(column).to_owned())
        .await
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        add_column(
            manager,
            Providers::Table,
            double_null(Providers::PriceCachedInput),
        )
        .await?;
        add_column(
            manager,
            ProviderCalls::Table,
            big_integer(ProviderCalls::CachedPromptTokens)
                .default(0)
                .take(),
        )
        .await?;
        add_column(
            manager,
            ProviderCalls::Table,
            big_integer(ProviderCalls::CacheWriteTokens)
                .default(0)
                .take(),
        )
        .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        drop_column(
            manager,
            ProviderCalls::Table,
            ProviderCalls::CacheWriteTokens,
        )
        .await?;
        drop_column(
            manager,
            ProviderCalls::Table,
            ProviderCalls::CachedPromptTokens,
        )
        .await?;
        drop_column(manager, Providers::Table, Providers::PriceCachedInput).await
    }
}
