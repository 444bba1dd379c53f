//! `m0003_narrative_memory`: what the memory service keeps about books and
//! series (spec 2.9, 2.11): shared glossaries and the terms of every layer,
//! the characters, places, organisations and objects of a book and their
//! canonical series identities, the Bible lines of a book or a series, the
//! analysis of each passage, and the translation-memory key of a passage.
//!
//! Every row carries its provenance (`origin`, the passage it rests on and
//! the words of the text it rests on). Book rows cascade with their volume,
//! series rows with their series, shared terms with their glossary. A
//! passage's analysis outlives the passage (a replaced chapter's passages
//! are new rows): it stays the owner's analysis of that text, so the same
//! text is never analysed and paid for again.

use crate::keys::{fk, index};
use sea_orm_migration::{prelude::*, schema::*};

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m0003_narrative_memory"
    }
}

#[derive(DeriveIden)]
enum Accounts {
    Table,
    Id,
}

#[derive(DeriveIden)]
enum Series {
    Table,
    Id,
}

#[derive(DeriveIden)]
enum Projects {
    Table,
    Id,
}

#[derive(DeriveIden)]
enum Passages {
    Table,
    Id,
    MemoryKey,
}

#[derive(DeriveIden)]
enum Glossaries {
    Table,
    Id,
    AccountId,
    Name,
    Description,
    SourceLanguage,
    TargetLanguage,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum Terms {
    Table,
    Id,
    Layer,
    ProjectId,
    SeriesId,
    GlossaryId,
    Source,
    SourceKey,
    Translation,
    Category,
    Description,
    Locked,
    Accepted,
    Origin,
    ProposedBy,
    PassageId,
    Evidence,
    Occurrences,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum SeriesEntities {
    Table,
    Id,
    SeriesId,
    Kind,
    Name,
    NameKey,
    Aliases,
    TargetName,
    Gender,
    Address,
    Description,
    Origin,
    FirstProjectId,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum NarrativeEntities {
    Table,
    Id,
    ProjectId,
    SeriesEntityId,
    Kind,
    Name,
    NameKey,
    Aliases,
    TargetName,
    Gender,
    Address,
    Description,
    Origin,
    PassageId,
    Evidence,
    Mentions,
    Observations,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum PassageAnalyses {
    Table,
    PassageId,
    ProjectId,
    AccountId,
    SourceKey,
    Extraction,
    Reconciled,
    Failed,
    CreatedAt,
}

#[derive(DeriveIden)]
enum BibleLines {
    Table,
    Id,
    ProjectId,
    SeriesId,
    Aspect,
    Text,
    Origin,
    PassageId,
    Evidence,
    CreatedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    // Long by design: a released migration stays as written.
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        use ForeignKeyAction::{Cascade, SetNull};

        manager
            .create_table(
                Table::create()
                    .table(Glossaries::Table)
                    .col(string(Glossaries::Id).primary_key())
                    .col(string(Glossaries::AccountId))
                    .col(string(Glossaries::Name))
                    .col(text(Glossaries::Description))
                    .col(string_null(Glossaries::SourceLanguage))
                    .col(string_null(Glossaries::TargetLanguage))
                    .col(big_integer(Glossaries::CreatedAt))
                    .col(big_integer(Glossaries::UpdatedAt))
                    .foreign_key(&mut fk(
                        "fk_glossaries_account_id",
                        (Glossaries::Table, Glossaries::AccountId),
                        (Accounts::Table, Accounts::Id),
                        Cascade,
                    ))
                    .take(),
            )
            .await?;
        manager
            .create_index(index(
                "ux_glossaries_account_name",
                Glossaries::Table,
                [Glossaries::AccountId, Glossaries::Name],
                true,
            ))
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(Terms::Table)
                    .col(string(Terms::Id).primary_key())
                    .col(string(Terms::Layer))
                    .col(string_null(Terms::ProjectId))
                    .col(string_null(Terms::SeriesId))
                    .col(string_null(Terms::GlossaryId))
                    .col(string(Terms::Source))
                    .col(string(Terms::SourceKey))
                    .col(string(Terms::Translation))
                    .col(string(Terms::Category))
                    .col(text(Terms::Description))
                    .col(boolean(Terms::Locked))
                    .col(boolean(Terms::Accepted))
                    .col(string(Terms::Origin))
                    .col(string_null(Terms::ProposedBy))
                    .col(string_null(Terms::PassageId))
                    .col(text_null(Terms::Evidence))
                    .col(integer(Terms::Occurrences))
                    .col(big_integer(Terms::CreatedAt))
                    .col(big_integer(Terms::UpdatedAt))
                    .foreign_key(&mut fk(
                        "fk_terms_project_id",
                        (Terms::Table, Terms::ProjectId),
                        (Projects::Table, Projects::Id),
                        Cascade,
                    ))
                    .foreign_key(&mut fk(
                        "fk_terms_series_id",
                        (Terms::Table, Terms::SeriesId),
                        (Series::Table, Series::Id),
                        Cascade,
                    ))
                    .foreign_key(&mut fk(
                        "fk_terms_glossary_id",
                        (Terms::Table, Terms::GlossaryId),
                        (Glossaries::Table, Glossaries::Id),
                        Cascade,
                    ))
                    .foreign_key(&mut fk(
                        "fk_terms_proposed_by",
                        (Terms::Table, Terms::ProposedBy),
                        (Projects::Table, Projects::Id),
                        SetNull,
                    ))
                    .foreign_key(&mut fk(
                        "fk_terms_passage_id",
                        (Terms::Table, Terms::PassageId),
                        (Passages::Table, Passages::Id),
                        SetNull,
                    ))
                    .take(),
            )
            .await?;
        for (name, col) in [
            ("ix_terms_project_id", Terms::ProjectId),
            ("ix_terms_series_id", Terms::SeriesId),
            ("ix_terms_glossary_id", Terms::GlossaryId),
        ] {
            manager
                .create_index(index(name, Terms::Table, [col], false))
                .await?;
        }

        manager
            .create_table(
                Table::create()
                    .table(SeriesEntities::Table)
                    .col(string(SeriesEntities::Id).primary_key())
                    .col(string(SeriesEntities::SeriesId))
                    .col(string(SeriesEntities::Kind))
                    .col(string(SeriesEntities::Name))
                    .col(string(SeriesEntities::NameKey))
                    .col(json(SeriesEntities::Aliases))
                    .col(string_null(SeriesEntities::TargetName))
                    .col(string_null(SeriesEntities::Gender))
                    .col(string_null(SeriesEntities::Address))
                    .col(text(SeriesEntities::Description))
                    .col(string(SeriesEntities::Origin))
                    .col(string_null(SeriesEntities::FirstProjectId))
                    .col(big_integer(SeriesEntities::CreatedAt))
                    .col(big_integer(SeriesEntities::UpdatedAt))
                    .foreign_key(&mut fk(
                        "fk_series_entities_series_id",
                        (SeriesEntities::Table, SeriesEntities::SeriesId),
                        (Series::Table, Series::Id),
                        Cascade,
                    ))
                    .foreign_key(&mut fk(
                        "fk_series_entities_first_project_id",
                        (SeriesEntities::Table, SeriesEntities::FirstProjectId),
                        (Projects::Table, Projects::Id),
                        SetNull,
                    ))
                    .take(),
            )
            .await?;
        manager
            .create_index(index(
                "ix_series_entities_series_id",
                SeriesEntities::Table,
                [SeriesEntities::SeriesId],
                false,
            ))
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(NarrativeEntities::Table)
                    .col(string(NarrativeEntities::Id).primary_key())
                    .col(string(NarrativeEntities::ProjectId))
                    .col(string_null(NarrativeEntities::SeriesEntityId))
                    .col(string(NarrativeEntities::Kind))
                    .col(string(NarrativeEntities::Name))
                    .col(string(NarrativeEntities::NameKey))
                    .col(json(NarrativeEntities::Aliases))
                    .col(string_null(NarrativeEntities::TargetName))
                    .col(string_null(NarrativeEntities::Gender))
                    .col(string_null(NarrativeEntities::Address))
                    .col(text(NarrativeEntities::Description))
                    .col(string(NarrativeEntities::Origin))
                    .col(string_null(NarrativeEntities::PassageId))
                    .col(text_null(NarrativeEntities::Evidence))
                    .col(integer(NarrativeEntities::Mentions))
                    .col(json(NarrativeEntities::Observations))
                    .col(big_integer(NarrativeEntities::CreatedAt))
                    .col(big_integer(NarrativeEntities::UpdatedAt))
                    .foreign_key(&mut fk(
                        "fk_narrative_entities_project_id",
                        (NarrativeEntities::Table, NarrativeEntities::ProjectId),
                        (Projects::Table, Projects::Id),
                        Cascade,
                    ))
                    .foreign_key(&mut fk(
                        "fk_narrative_entities_series_entity_id",
                        (NarrativeEntities::Table, NarrativeEntities::SeriesEntityId),
                        (SeriesEntities::Table, SeriesEntities::Id),
                        SetNull,
                    ))
                    .foreign_key(&mut fk(
                        "fk_narrative_entities_passage_id",
                        (NarrativeEntities::Table, NarrativeEntities::PassageId),
                        (Passages::Table, Passages::Id),
                        SetNull,
                    ))
                    .take(),
            )
            .await?;
        manager
            .create_index(index(
                "ix_narrative_entities_project_id",
                NarrativeEntities::Table,
                [NarrativeEntities::ProjectId],
                false,
            ))
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(PassageAnalyses::Table)
                    .col(string(PassageAnalyses::PassageId).primary_key())
                    .col(string(PassageAnalyses::ProjectId))
                    .col(string(PassageAnalyses::AccountId))
                    .col(string(PassageAnalyses::SourceKey))
                    .col(json(PassageAnalyses::Extraction))
                    .col(boolean(PassageAnalyses::Reconciled))
                    .col(boolean(PassageAnalyses::Failed))
                    .col(big_integer(PassageAnalyses::CreatedAt))
                    .foreign_key(&mut fk(
                        "fk_passage_analyses_project_id",
                        (PassageAnalyses::Table, PassageAnalyses::ProjectId),
                        (Projects::Table, Projects::Id),
                        Cascade,
                    ))
                    .take(),
            )
            .await?;
        manager
            .create_index(index(
                "ix_passage_analyses_project_id",
                PassageAnalyses::Table,
                [PassageAnalyses::ProjectId],
                false,
            ))
            .await?;
        manager
            .create_index(index(
                "ix_passage_analyses_account_source",
                PassageAnalyses::Table,
                [PassageAnalyses::AccountId, PassageAnalyses::SourceKey],
                false,
            ))
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(BibleLines::Table)
                    .col(string(BibleLines::Id).primary_key())
                    .col(string_null(BibleLines::ProjectId))
                    .col(string_null(BibleLines::SeriesId))
                    .col(string(BibleLines::Aspect))
                    .col(text(BibleLines::Text))
                    .col(string(BibleLines::Origin))
                    .col(string_null(BibleLines::PassageId))
                    .col(text_null(BibleLines::Evidence))
                    .col(big_integer(BibleLines::CreatedAt))
                    .foreign_key(&mut fk(
                        "fk_bible_lines_project_id",
                        (BibleLines::Table, BibleLines::ProjectId),
                        (Projects::Table, Projects::Id),
                        Cascade,
                    ))
                    .foreign_key(&mut fk(
                        "fk_bible_lines_series_id",
                        (BibleLines::Table, BibleLines::SeriesId),
                        (Series::Table, Series::Id),
                        Cascade,
                    ))
                    .foreign_key(&mut fk(
                        "fk_bible_lines_passage_id",
                        (BibleLines::Table, BibleLines::PassageId),
                        (Passages::Table, Passages::Id),
                        SetNull,
                    ))
                    .take(),
            )
            .await?;
        for (name, col) in [
            ("ix_bible_lines_project_id", BibleLines::ProjectId),
            ("ix_bible_lines_series_id", BibleLines::SeriesId),
        ] {
            manager
                .create_index(index(name, BibleLines::Table, [col], false))
                .await?;
        }

        manager
            .alter_table(
                Table::alter()
                    .table(Passages::Table)
                    .add_column(string_null(Passages::MemoryKey))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(index(
                "ix_passages_memory_key",
                Passages::Table,
                [Passages::MemoryKey],
                false,
            ))
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_index(
                Index::drop()
                    .name("ix_passages_memory_key")
                    .table(Passages::Table)
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Passages::Table)
                    .drop_column(Passages::MemoryKey)
                    .to_owned(),
            )
            .await?;
        for table in [
            BibleLines::Table.into_iden(),
            PassageAnalyses::Table.into_iden(),
            NarrativeEntities::Table.into_iden(),
            SeriesEntities::Table.into_iden(),
            Terms::Table.into_iden(),
            Glossaries::Table.into_iden(),
        ] {
            manager
                .drop_table(Table::drop().table(table).to_owned())
                .await?;
        }
        Ok(())
    }
}
