//! `m0005_limits`: what the limits of spec 8 keep.
//!
//! - `licence_words`: the licence's word ledger, one row per count (a book
//!   added, chapters appended, an older book counted at its job start).
//!   Rows carry no foreign key: a book counted stays counted when it is
//!   deleted.
//! - `projects.licence_counted`: whether the book's words are in the
//!   ledger; books added before the ledger existed are counted passage by
//!   passage when a job starts them.
//! - `projects.budget_amount`: a book's spending cap over its life.
//! - `accounts.word_allowance`: an account's own words per licence cycle.
//! - `providers.fallback_provider_id`: the cheaper provider a job moves to
//!   near its budget.
//! - `jobs.paused_at`, `jobs.pause_reason`, `jobs.provider_switches`: a job
//!   paused by a budget (which never resumes on its own and fails after the
//!   stall time) and its moves to a cheaper provider.
//! - An index that serves the dispatch decision: waiting jobs grouped by
//!   priority, account and token, oldest first.

use crate::keys::index;
use sea_orm_migration::{prelude::*, schema::*};

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m0005_limits"
    }
}

#[derive(DeriveIden)]
enum LicenceWords {
    Table,
    Id,
    AccountId,
    ProjectId,
    RequestId,
    Words,
    CountedAt,
}

#[derive(DeriveIden)]
enum Projects {
    Table,
    LicenceCounted,
    BudgetAmount,
}

#[derive(DeriveIden)]
enum Accounts {
    Table,
    WordAllowance,
}

#[derive(DeriveIden)]
enum Providers {
    Table,
    FallbackProviderId,
}

#[derive(DeriveIden)]
enum Jobs {
    Table,
    Status,
    Priority,
    AccountId,
    TokenId,
    CreatedAt,
    PausedAt,
    PauseReason,
    ProviderSwitches,
}

/// Adds one column (SQLite alters a table a column at a time).
async fn add_column(
    manager: &SchemaManager<'_>,
    table: impl IntoTableRef,
    column: ColumnDef,
) -> Result<(), DbErr> {
    let mut column = column;
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
        manager
            .create_table(
                Table::create()
                    .table(LicenceWords::Table)
                    .col(string(LicenceWords::Id).primary_key())
                    .col(string(LicenceWords::AccountId))
                    .col(string_null(LicenceWords::ProjectId))
                    .col(string_null(LicenceWords::RequestId))
                    .col(big_integer(LicenceWords::Words))
                    .col(big_integer(LicenceWords::CountedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(index(
                "ix_licence_words_counted_at",
                LicenceWords::Table,
                [LicenceWords::CountedAt],
                false,
            ))
            .await?;
        manager
            .create_index(index(
                "ix_licence_words_account",
                LicenceWords::Table,
                [LicenceWords::AccountId, LicenceWords::CountedAt],
                false,
            ))
            .await?;
        // Books already stored were added before the ledger: counted at
        // their next job start.
        add_column(
            manager,
            Projects::Table,
            boolean(Projects::LicenceCounted).default(false).take(),
        )
        .await?;
        add_column(
            manager,
            Projects::Table,
            double_null(Projects::BudgetAmount),
        )
        .await?;
        add_column(
            manager,
            Accounts::Table,
            big_integer_null(Accounts::WordAllowance),
        )
        .await?;
        add_column(
            manager,
            Providers::Table,
            string_null(Providers::FallbackProviderId),
        )
        .await?;
        add_column(manager, Jobs::Table, big_integer_null(Jobs::PausedAt)).await?;
        add_column(manager, Jobs::Table, string_null(Jobs::PauseReason)).await?;
        add_column(
            manager,
            Jobs::Table,
            integer(Jobs::ProviderSwitches).default(0).take(),
        )
        .await?;
        manager
            .create_index(index(
                "ix_jobs_dispatch",
                Jobs::Table,
                [
                    Jobs::Status,
                    Jobs::Priority,
                    Jobs::AccountId,
                    Jobs::TokenId,
                    Jobs::CreatedAt,
                ],
                false,
            ))
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_index(
                Index::drop()
                    .name("ix_jobs_dispatch")
                    .table(Jobs::Table)
                    .to_owned(),
            )
            .await?;
        for column in [
            Jobs::ProviderSwitches.into_iden(),
            Jobs::PauseReason.into_iden(),
            Jobs::PausedAt.into_iden(),
        ] {
            drop_column(manager, Jobs::Table, column).await?;
        }
        drop_column(manager, Providers::Table, Providers::FallbackProviderId).await?;
        drop_column(manager, Accounts::Table, Accounts::WordAllowance).await?;
        drop_column(manager, Projects::Table, Projects::BudgetAmount).await?;
        drop_column(manager, Projects::Table, Projects::LicenceCounted).await?;
        manager
            .drop_table(Table::drop().table(LicenceWords::Table).to_owned())
            .await
    }
}
