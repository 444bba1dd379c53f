//! `m0009_deleted_requests`: what is kept of a request when its volume is
//! deleted.
//!
//! - `deleted_requests`: one row per request of a deleted volume: its
//!   owner, where it was, its status document as it stood when the volume
//!   went, and when that was. The request's own row goes with the volume
//!   (its chapters, passages, jobs and results are gone); this one lets its
//!   status answer say what happened and its result answer 404
//!   `volume_not_found` (spec 4.5). It follows its account.

use crate::keys::{fk, index};
use sea_orm_migration::{prelude::*, schema::*};

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m0009_deleted_requests"
    }
}

#[derive(DeriveIden)]
enum DeletedRequests {
    Table,
    Id,
    AccountId,
    SeriesId,
    ProjectId,
    Document,
    DeletedAt,
}

#[derive(DeriveIden)]
enum Accounts {
    Table,
    Id,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(DeletedRequests::Table)
                    .col(string(DeletedRequests::Id).primary_key())
                    .col(string(DeletedRequests::AccountId))
                    .col(string(DeletedRequests::SeriesId))
                    .col(string(DeletedRequests::ProjectId))
                    .col(json(DeletedRequests::Document))
                    .col(big_integer(DeletedRequests::DeletedAt))
                    .foreign_key(&mut fk(
                        "fk_deleted_requests_account_id",
                        (DeletedRequests::Table, DeletedRequests::AccountId),
                        (Accounts::Table, Accounts::Id),
                        ForeignKeyAction::Cascade,
                    ))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(index(
                "ix_deleted_requests_account",
                DeletedRequests::Table,
                [DeletedRequests::AccountId],
                false,
            ))
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(DeletedRequests::Table).to_owned())
            .await
    }
}
