//! `m0014_batch_commitments`: what a provider batch is expected to cost.
//!
//! - `provider_batches.expected_cost`: the expected cost of the batch's
//!   calls at the provider's batch discount, written with the batch. Until
//!   the batch is applied (or its request ends) it counts against the
//!   spending caps of its token and book, since its answers, and their
//!   usage records, come within the provider's completion window, long
//!   after an ordinary reservation would have expired. Null when the calls
//!   have no price.

use sea_orm_migration::{prelude::*, schema::*};

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m0014_batch_commitments"
    }
}

#[derive(DeriveIden)]
enum ProviderBatches {
    Table,
    ExpectedCost,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(ProviderBatches::Table)
                    .add_column(double_null(ProviderBatches::ExpectedCost))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(ProviderBatches::Table)
                    .drop_column(ProviderBatches::ExpectedCost)
                    .to_owned(),
            )
            .await
    }
}
