//! A book's edition choices: `ai_disclosure` on a volume (spec 4.9 `PATCH
//! /api/projects/{pid}/edition`); null follows the installation's setting.

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::boolean_null;

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m0002_book_edition"
    }
}

#[derive(DeriveIden)]
enum Projects {
    Table,
    AiDisclosure,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Projects::Table)
                    .add_column(boolean_null(Projects::AiDisclosure))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Projects::Table)
                    .drop_column(Projects::AiDisclosure)
                    .to_owned(),
            )
            .await
    }
}
