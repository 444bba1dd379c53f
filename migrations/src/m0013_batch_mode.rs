//! `m0013_batch_mode`: the provider's batch mode (half the price, answered
//! within a day).
//!
//! - `providers.batch_discount`: the share of the list price the provider
//!   takes off calls sent by batch (0.5 unless configured).
//! - `projects.batch`: a volume's default for its requests' `batch`.
//! - `provider_calls.batch`: whether a call went by batch (its cost is
//!   already discounted).
//! - `provider_batches`: one remote batch of a job's stage, from the moment
//!   its `submission_key` is chosen (before anything is uploaded) to the
//!   moment its results are applied. The key is unique: a batch found by it
//!   after a crash is never submitted again.
//! - `provider_batch_items`: the calls a batch carries, by `custom_id`,
//!   with what each answer is for (`subject`) and the request line sent.

use crate::keys::{fk, index, pk_string};
use sea_orm_migration::prelude::ForeignKeyAction::Cascade;
use sea_orm_migration::{prelude::*, schema::*};

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m0013_batch_mode"
    }
}

#[derive(DeriveIden)]
enum Providers {
    Table,
    BatchDiscount,
}

#[derive(DeriveIden)]
enum Projects {
    Table,
    Batch,
}

#[derive(DeriveIden)]
enum ProviderCalls {
    Table,
    Batch,
}

#[derive(DeriveIden)]
enum Jobs {
    Table,
    Id,
}

#[derive(DeriveIden)]
enum ProviderBatches {
    Table,
    Id,
    JobId,
    RequestId,
    ProjectId,
    ProviderId,
    Stage,
    SubmissionKey,
    State,
    RemoteId,
    InputFileId,
    Items,
    Done,
    Failed,
    SubmittedAt,
    ExpectedBy,
    NextPollAt,
    Polls,
    AppliedAt,
    LastError,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum ProviderBatchItems {
    Table,
    Id,
    BatchId,
    CustomId,
    Subject,
    Line,
    Outcome,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        // One column per statement: SQLite alters one at a time.
        manager
            .alter_table(
                Table::alter()
                    .table(Providers::Table)
                    .add_column(double(Providers::BatchDiscount).default(0.5))
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Projects::Table)
                    .add_column(boolean_null(Projects::Batch))
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(ProviderCalls::Table)
                    .add_column(boolean(ProviderCalls::Batch).default(false))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(ProviderBatches::Table)
                    .col(pk_string(ProviderBatches::Id))
                    .col(string(ProviderBatches::JobId))
                    .col(string(ProviderBatches::RequestId))
                    .col(string(ProviderBatches::ProjectId))
                    .col(string(ProviderBatches::ProviderId))
                    .col(string(ProviderBatches::Stage))
                    .col(string(ProviderBatches::SubmissionKey))
                    .col(string(ProviderBatches::State))
                    .col(string_null(ProviderBatches::RemoteId))
                    .col(string_null(ProviderBatches::InputFileId))
                    .col(integer(ProviderBatches::Items))
                    .col(integer(ProviderBatches::Done))
                    .col(integer(ProviderBatches::Failed))
                    .col(big_integer_null(ProviderBatches::SubmittedAt))
                    .col(big_integer_null(ProviderBatches::ExpectedBy))
                    .col(big_integer_null(ProviderBatches::NextPollAt))
                    .col(integer(ProviderBatches::Polls))
                    .col(big_integer_null(ProviderBatches::AppliedAt))
                    .col(text(ProviderBatches::LastError))
                    .col(big_integer(ProviderBatches::CreatedAt))
                    .col(big_integer(ProviderBatches::UpdatedAt))
                    .foreign_key(&mut fk(
                        "fk_provider_batches_job_id",
                        (ProviderBatches::Table, ProviderBatches::JobId),
                        (Jobs::Table, Jobs::Id),
                        Cascade,
                    ))
                    .take(),
            )
            .await?;
        manager
            .create_index(index(
                "idx_provider_batches_submission_key",
                ProviderBatches::Table,
                [ProviderBatches::SubmissionKey],
                true,
            ))
            .await?;
        manager
            .create_index(index(
                "idx_provider_batches_job_id",
                ProviderBatches::Table,
                [ProviderBatches::JobId],
                false,
            ))
            .await?;
        manager
            .create_index(index(
                "idx_provider_batches_project_id",
                ProviderBatches::Table,
                [ProviderBatches::ProjectId],
                false,
            ))
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(ProviderBatchItems::Table)
                    .col(pk_string(ProviderBatchItems::Id))
                    .col(string(ProviderBatchItems::BatchId))
                    .col(string(ProviderBatchItems::CustomId))
                    .col(text(ProviderBatchItems::Subject))
                    .col(text(ProviderBatchItems::Line))
                    .col(string_null(ProviderBatchItems::Outcome))
                    .foreign_key(&mut fk(
                        "fk_provider_batch_items_batch_id",
                        (ProviderBatchItems::Table, ProviderBatchItems::BatchId),
                        (ProviderBatches::Table, ProviderBatches::Id),
                        Cascade,
                    ))
                    .take(),
            )
            .await?;
        manager
            .create_index(index(
                "idx_provider_batch_items_batch_id_custom_id",
                ProviderBatchItems::Table,
                [ProviderBatchItems::BatchId, ProviderBatchItems::CustomId],
                true,
            ))
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in [
            ProviderBatchItems::Table.into_iden(),
            ProviderBatches::Table.into_iden(),
        ] {
            manager
                .drop_table(Table::drop().table(table).to_owned())
                .await?;
        }
        manager
            .alter_table(
                Table::alter()
                    .table(ProviderCalls::Table)
                    .drop_column(ProviderCalls::Batch)
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Projects::Table)
                    .drop_column(Projects::Batch)
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Providers::Table)
                    .drop_column(Providers::BatchDiscount)
                    .to_owned(),
            )
            .await
    }
}
