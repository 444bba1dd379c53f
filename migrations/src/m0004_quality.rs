//! `m0004_quality`: what the review stage and the autopilot keep (spec 2.6,
//! 2.7): each passage's quality score and the signals that lowered it,
//! whether the review pass has read its current translation, the last
//! autopilot round that took it up; the autopilot's state per job (so a job
//! resumed after a crash continues the round in progress) and every
//! decision it logged.

use crate::keys::{fk, index};
use sea_orm_migration::{prelude::*, schema::*};

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m0004_quality"
    }
}

#[derive(DeriveIden)]
enum Requests {
    Table,
    Id,
}

#[derive(DeriveIden)]
enum Passages {
    Table,
    Score,
    Signals,
    Reviewed,
    AutopilotRound,
}

#[derive(DeriveIden)]
enum AutopilotRuns {
    Table,
    JobId,
    RequestId,
    Round,
    Rounds,
    Finished,
    Outcome,
    Reason,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum AutopilotDecisions {
    Table,
    Id,
    RequestId,
    JobId,
    PassageId,
    Round,
    Action,
    Reason,
    ScoreBefore,
    ScoreAfter,
    CreatedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        // One column per statement: SQLite alters a table a column at a time.
        for column in [
            integer_null(Passages::Score),
            json_null(Passages::Signals),
            boolean(Passages::Reviewed).default(false).take(),
            integer(Passages::AutopilotRound).default(0).take(),
        ] {
            manager
                .alter_table(
                    Table::alter()
                        .table(Passages::Table)
                        .add_column(column)
                        .to_owned(),
                )
                .await?;
        }
        manager
            .create_table(
                Table::create()
                    .table(AutopilotRuns::Table)
                    .col(string(AutopilotRuns::JobId).primary_key())
                    .col(string(AutopilotRuns::RequestId))
                    .col(integer(AutopilotRuns::Round))
                    .col(integer(AutopilotRuns::Rounds))
                    .col(boolean(AutopilotRuns::Finished))
                    .col(string_null(AutopilotRuns::Outcome))
                    .col(text_null(AutopilotRuns::Reason))
                    .col(big_integer(AutopilotRuns::UpdatedAt))
                    .foreign_key(&mut fk(
                        "fk_autopilot_runs_request",
                        (AutopilotRuns::Table, AutopilotRuns::RequestId),
                        (Requests::Table, Requests::Id),
                        ForeignKeyAction::Cascade,
                    ))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(index(
                "ix_autopilot_runs_request",
                AutopilotRuns::Table,
                [AutopilotRuns::RequestId],
                false,
            ))
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(AutopilotDecisions::Table)
                    .col(string(AutopilotDecisions::Id).primary_key())
                    .col(string(AutopilotDecisions::RequestId))
                    .col(string(AutopilotDecisions::JobId))
                    .col(string(AutopilotDecisions::PassageId))
                    .col(integer(AutopilotDecisions::Round))
                    .col(string(AutopilotDecisions::Action))
                    .col(text(AutopilotDecisions::Reason))
                    .col(integer_null(AutopilotDecisions::ScoreBefore))
                    .col(integer_null(AutopilotDecisions::ScoreAfter))
                    .col(big_integer(AutopilotDecisions::CreatedAt))
                    .foreign_key(&mut fk(
                        "fk_autopilot_decisions_request",
                        (AutopilotDecisions::Table, AutopilotDecisions::RequestId),
                        (Requests::Table, Requests::Id),
                        ForeignKeyAction::Cascade,
                    ))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(index(
                "ix_autopilot_decisions_request",
                AutopilotDecisions::Table,
                [AutopilotDecisions::RequestId],
                false,
            ))
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in [
            AutopilotDecisions::Table.into_iden(),
            AutopilotRuns::Table.into_iden(),
        ] {
            manager
                .drop_table(Table::drop().table(table).to_owned())
                .await?;
        }
        for column in [
            Passages::AutopilotRound.into_iden(),
            Passages::Reviewed.into_iden(),
            Passages::Signals.into_iden(),
            Passages::Score.into_iden(),
        ] {
            manager
                .alter_table(
                    Table::alter()
                        .table(Passages::Table)
                        .drop_column(column)
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }
}
