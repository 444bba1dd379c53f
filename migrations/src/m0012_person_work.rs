//! `m0012_person_work`: what people add to a book, and its publication.
//!
//! - `reader_notes`: a book's reader note on a glossary term (the term may
//!   be the book's, its series' or a shared glossary's), with where it is
//!   placed and the `translator_notes` job whose proposal it came from.
//!   One per book and term.
//! - `note_proposals`: the notes a `translator_notes` job proposed, kept
//!   until a person accepts one through the reader-note route.
//! - `jobs.operation`: what a job does, `translate` (every job so far) or
//!   `translator_notes`.
//! - `publications`: a book's publication to the library folder, with its
//!   retry state. One per book.

use crate::keys::{fk, index, pk_string};
use sea_orm_migration::prelude::ForeignKeyAction::Cascade;
use sea_orm_migration::{prelude::*, schema::*};

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m0012_person_work"
    }
}

#[derive(DeriveIden)]
enum Projects {
    Table,
    Id,
}

#[derive(DeriveIden)]
enum Terms {
    Table,
    Id,
}

#[derive(DeriveIden)]
enum Jobs {
    Table,
    Operation,
}

#[derive(DeriveIden)]
enum ReaderNotes {
    Table,
    Id,
    ProjectId,
    TermId,
    Note,
    Placement,
    ProposalJob,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum NoteProposals {
    Table,
    Id,
    ProjectId,
    TermId,
    JobId,
    Note,
    Placement,
    CreatedAt,
}

#[derive(DeriveIden)]
enum Publications {
    Table,
    Id,
    ProjectId,
    Status,
    Attempts,
    NextAttemptAt,
    LastError,
    Path,
    CreatedAt,
    UpdatedAt,
    PublishedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Jobs::Table)
                    .add_column(string(Jobs::Operation).default("translate"))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(ReaderNotes::Table)
                    .col(pk_string(ReaderNotes::Id))
                    .col(string(ReaderNotes::ProjectId))
                    .col(string(ReaderNotes::TermId))
                    .col(text(ReaderNotes::Note))
                    .col(string(ReaderNotes::Placement))
                    .col(string_null(ReaderNotes::ProposalJob))
                    .col(big_integer(ReaderNotes::CreatedAt))
                    .col(big_integer(ReaderNotes::UpdatedAt))
                    .foreign_key(&mut fk(
                        "fk_reader_notes_project_id",
                        (ReaderNotes::Table, ReaderNotes::ProjectId),
                        (Projects::Table, Projects::Id),
                        Cascade,
                    ))
                    .foreign_key(&mut fk(
                        "fk_reader_notes_term_id",
                        (ReaderNotes::Table, ReaderNotes::TermId),
                        (Terms::Table, Terms::Id),
                        Cascade,
                    ))
                    .take(),
            )
            .await?;
        manager
            .create_index(index(
                "idx_reader_notes_project_id_term_id",
                ReaderNotes::Table,
                [ReaderNotes::ProjectId, ReaderNotes::TermId],
                true,
            ))
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(NoteProposals::Table)
                    .col(pk_string(NoteProposals::Id))
                    .col(string(NoteProposals::ProjectId))
                    .col(string(NoteProposals::TermId))
                    .col(string(NoteProposals::JobId))
                    .col(text(NoteProposals::Note))
                    .col(string(NoteProposals::Placement))
                    .col(big_integer(NoteProposals::CreatedAt))
                    .foreign_key(&mut fk(
                        "fk_note_proposals_project_id",
                        (NoteProposals::Table, NoteProposals::ProjectId),
                        (Projects::Table, Projects::Id),
                        Cascade,
                    ))
                    .foreign_key(&mut fk(
                        "fk_note_proposals_term_id",
                        (NoteProposals::Table, NoteProposals::TermId),
                        (Terms::Table, Terms::Id),
                        Cascade,
                    ))
                    .take(),
            )
            .await?;
        manager
            .create_index(index(
                "idx_note_proposals_project_id_term_id",
                NoteProposals::Table,
                [NoteProposals::ProjectId, NoteProposals::TermId],
                false,
            ))
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(Publications::Table)
                    .col(pk_string(Publications::Id))
                    .col(string(Publications::ProjectId))
                    .col(string(Publications::Status))
                    .col(integer(Publications::Attempts))
                    .col(big_integer_null(Publications::NextAttemptAt))
                    .col(text(Publications::LastError))
                    .col(text_null(Publications::Path))
                    .col(big_integer(Publications::CreatedAt))
                    .col(big_integer(Publications::UpdatedAt))
                    .col(big_integer_null(Publications::PublishedAt))
                    .foreign_key(&mut fk(
                        "fk_publications_project_id",
                        (Publications::Table, Publications::ProjectId),
                        (Projects::Table, Projects::Id),
                        Cascade,
                    ))
                    .take(),
            )
            .await?;
        manager
            .create_index(index(
                "idx_publications_project_id",
                Publications::Table,
                [Publications::ProjectId],
                true,
            ))
            .await?;
        manager
            .create_index(index(
                "idx_publications_status_next_attempt_at",
                Publications::Table,
                [Publications::Status, Publications::NextAttemptAt],
                false,
            ))
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in [
            Publications::Table.into_iden(),
            NoteProposals::Table.into_iden(),
            ReaderNotes::Table.into_iden(),
        ] {
            manager
                .drop_table(Table::drop().table(table).to_owned())
                .await?;
        }
        manager
            .alter_table(
                Table::alter()
                    .table(Jobs::Table)
                    .drop_column(Jobs::Operation)
                    .to_owned(),
            )
            .await
    }
}
