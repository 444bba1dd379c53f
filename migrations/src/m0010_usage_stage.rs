//! `m0010_usage_stage`: the stage each provider call was made for.
//!
//! - `provider_calls.stage`: `analysis`, `translation`, `review` or
//!   `autopilot` (the `UsageStage` vocabulary), by which the completion
//!   report splits its usage. Calls recorded before take `translation`:
//!   their stage was never stored, most calls are translation calls, and a
//!   stage for every call keeps the stages' sums equal to the report's
//!   totals for a request that runs across the upgrade.

use sea_orm_migration::{prelude::*, schema::*};

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m0010_usage_stage"
    }
}

#[derive(DeriveIden)]
enum ProviderCalls {
    Table,
    Stage,
}

/// The stage of the calls recorded before this migration.
const EARLIER_CALLS: &str = "translation";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(ProviderCalls::Table)
                    .add_column(string(ProviderCalls::Stage).default(EARLIER_CALLS).take())
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(ProviderCalls::Table)
                    .drop_column(ProviderCalls::Stage)
                    .to_owned(),
            )
            .await
    }
}
