//! `m0006_passage_versions`: the history of translations changed outside a
//! translation job. Each row keeps a passage's translation before and
//! after one change, why it changed and who asked, so a replacement
//! carried through a book (`propagate_term`) can be read back and undone
//! passage by passage. Rows go with their passage.

use crate::keys::{fk, index};
use sea_orm_migration::{prelude::*, schema::*};

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m0006_passage_versions"
    }
}

#[derive(DeriveIden)]
enum Passages {
    Table,
    Id,
}

#[derive(DeriveIden)]
enum PassageVersions {
    Table,
    Id,
    PassageId,
    ProjectId,
    PreviousTranslation,
    NewTranslation,
    Reason,
    AccountId,
    TokenId,
    CreatedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(PassageVersions::Table)
                    .col(string(PassageVersions::Id).primary_key())
                    .col(string(PassageVersions::PassageId))
                    .col(string(PassageVersions::ProjectId))
                    .col(text_null(PassageVersions::PreviousTranslation))
                    .col(text_null(PassageVersions::NewTranslation))
                    .col(string(PassageVersions::Reason))
                    .col(string(PassageVersions::AccountId))
                    .col(string_null(PassageVersions::TokenId))
                    .col(big_integer(PassageVersions::CreatedAt))
                    .foreign_key(&mut fk(
                        "fk_passage_versions_passage",
                        (PassageVersions::Table, PassageVersions::PassageId),
                        (Passages::Table, Passages::Id),
                        ForeignKeyAction::Cascade,
                    ))
                    .to_owned(),
            )
            .await?;
        for (name, column) in [
            ("ix_passage_versions_passage", PassageVersions::PassageId),
            ("ix_passage_versions_project", PassageVersions::ProjectId),
        ] {
            manager
                .create_index(index(name, PassageVersions::Table, [column], false))
                .await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(PassageVersions::Table).to_owned())
            .await
    }
}
