//! `m0008_external_memory`: what the external semantic memory (Chroma)
//! keeps in the database.
//!
//! - `memory_outbox`: one row per change of what a volume (`project`) or a
//!   series mirrors, written by the triggers below in the transaction of the
//!   change itself, so no change can commit without its row. The rows carry
//!   no content: the sync loop reads the scope as it is when it syncs
//!   (a state-based outbox), so replaying rows never sends an old state.
//! - `memory_mirror`: what the sync loop last wrote to Chroma, one row per
//!   remote item with its content hash, embedding model and collection.
//! - `memory_cleanups`: the remote items of a deleted volume or series,
//!   removed by the sync loop and retried until done or retired.
//! - `memory_retrievals`: per translation job, which memory answered its
//!   batches (the status document's `memory` object).
//!
//! The triggers are the one exception to "schema builder only": the schema
//! builder has no triggers, and writing the outbox row from the database
//! is what makes it transactional whatever code changes the row (the
//! pipeline, the memory service, an administrator's edit, a cascade).
//! They are written once for SQLite and once for PostgreSQL (a plpgsql
//! function per table). What fires them:
//!
//! - `passages`: a translated passage inserted or deleted; an update that
//!   changes the translation, `validated`, `human`, the position, the
//!   chapter, or whether the status is usable (`ok`/`check`, the statuses
//!   whose translation is mirrored), when the passage had or has a
//!   translation. Status-only changes that keep it usable (scores, review)
//!   do not fire.
//! - `narrative_entities`, `series_entities`: insert, delete, and updates
//!   of kind, name, aliases, target name or description (not the
//!   `mentions`/`observations` counters analysis bumps all the time).
//! - `terms` of the book and series layers (`glossary_id` null): insert,
//!   delete, and updates of source, translation, acceptance or owner.
//! - `bible_lines`: insert, delete, and updates of aspect, text or owner.
//! - `projects.series_id` changed: the volume's items carry their series.
//! - `projects`, `series` deleted: a `memory_cleanups` row.
//!
//! Rows deleted by the cascade of a deleted volume or series add no outbox
//! row (the owner is already gone when the cascade runs): the cleanup row
//! covers them, and a book of thousands of passages does not flood the
//! outbox. Times are Unix seconds like every other table.

use crate::keys::index;
use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::*;
use sea_orm_migration::sea_orm::{ConnectionTrait, DatabaseBackend};

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m0008_external_memory"
    }
}

#[derive(DeriveIden)]
enum MemoryOutbox {
    Table,
    Id,
    ScopeKind,
    ScopeId,
    CreatedAt,
    SyncedAt,
    Attempts,
    NextAttemptAt,
    LastError,
}

#[derive(DeriveIden)]
enum MemoryMirror {
    Table,
    ItemId,
    ScopeKind,
    ScopeId,
    ProjectId,
    SeriesId,
    Kind,
    ContentHash,
    EmbeddingModel,
    Collection,
    SyncedAt,
}

#[derive(DeriveIden)]
enum MemoryCleanups {
    Table,
    Id,
    ScopeKind,
    ScopeId,
    Label,
    State,
    Attempts,
    NextAttemptAt,
    LastError,
    Removed,
    CreatedAt,
    FinishedAt,
}

#[derive(DeriveIden)]
enum MemoryRetrievals {
    Table,
    JobId,
    ProjectId,
    ExternalBatches,
    InternalBatches,
    Fallbacks,
    LastError,
    UpdatedAt,
}

/// The tables that carry triggers, for `down`.
const TRIGGER_TABLES: [&str; 7] = [
    "passages",
    "narrative_entities",
    "series_entities",
    "terms",
    "bible_lines",
    "projects",
    "series",
];

/// The SQLite triggers, by name (`down` drops them by these names).
const SQLITE_TRIGGERS: [&str; 18] = [
    "memory_passages_insert",
    "memory_passages_update",
    "memory_passages_delete",
    "memory_narrative_entities_insert",
    "memory_narrative_entities_update",
    "memory_narrative_entities_delete",
    "memory_series_entities_insert",
    "memory_series_entities_update",
    "memory_series_entities_delete",
    "memory_terms_insert",
    "memory_terms_update",
    "memory_terms_delete",
    "memory_bible_lines_insert",
    "memory_bible_lines_update",
    "memory_bible_lines_delete",
    "memory_projects_update",
    "memory_projects_delete",
    "memory_series_delete",
];

/// Now, in Unix seconds, as SQLite computes it.
const SQLITE_NOW: &str = "CAST(strftime('%s','now') AS INTEGER)";

/// An outbox row for the scope `kind`/`id` (SQL expressions).
fn sqlite_outbox(kind: &str, id: &str) -> String {
    format!(
        "INSERT INTO memory_outbox (scope_kind, scope_id, created_at, attempts) \
         VALUES ({kind}, {id}, {SQLITE_NOW}, 0);"
    )
}

/// An outbox row for the scope of a bible line or term row `r` (`NEW` or
/// `OLD`): the volume when it has one, else the series; only when `also`
/// (an SQL condition) holds.
fn sqlite_owner_outbox(r: &str, also: &str) -> String {
    format!(
        "INSERT INTO memory_outbox (scope_kind, scope_id, created_at, attempts) \
         SELECT CASE WHEN {r}.project_id IS NOT NULL THEN 'project' ELSE 'series' END, \
         COALESCE({r}.project_id, {r}.series_id), {SQLITE_NOW}, 0 \
         WHERE COALESCE({r}.project_id, {r}.series_id) IS NOT NULL AND ({also});"
    )
}

/// The owner of a term or bible line changed (the old owner changes too).
const SQLITE_OWNER_MOVED: &str =
    "OLD.project_id IS NOT NEW.project_id OR OLD.series_id IS NOT NEW.series_id";

/// Whether the owner of `r` (a bible line or term row) still exists: rows
/// removed by the cascade of their deleted owner add nothing.
fn sqlite_owner_exists(r: &str) -> String {
    format!(
        "(EXISTS (SELECT 1 FROM projects WHERE id = {r}.project_id) \
         OR EXISTS (SELECT 1 FROM series WHERE id = {r}.series_id))"
    )
}

/// A memory cleanup row for a deleted scope, with a random id in the
/// canonical UUID form the other tables use.
fn sqlite_cleanup(kind: &str, label: &str) -> String {
    format!(
        "INSERT INTO memory_cleanups (id, scope_kind, scope_id, label, state, attempts, \
         removed, created_at) VALUES (\
         lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-' || \
         hex(randomblob(2)) || '-' || hex(randomblob(2)) || '-' || hex(randomblob(6))), \
         '{kind}', OLD.id, {label}, 'pending', 0, 0, {SQLITE_NOW});"
    )
}

fn sqlite_triggers() -> Vec<String> {
    // The statuses whose translation is delivered (PassageStatus::USABLE);
    // a migration is history, so the list is written out here.
    let usable = |r: &str| format!("({r}.status IN ('ok','check'))");
    let entity_changed = "NEW.kind IS NOT OLD.kind OR NEW.name IS NOT OLD.name \
        OR NEW.aliases IS NOT OLD.aliases OR NEW.target_name IS NOT OLD.target_name \
        OR NEW.description IS NOT OLD.description";
    vec![
        format!(
            "CREATE TRIGGER memory_passages_insert AFTER INSERT ON passages \
             WHEN NEW.translation IS NOT NULL BEGIN {} END",
            sqlite_outbox("'project'", "NEW.project_id")
        ),
        format!(
            "CREATE TRIGGER memory_passages_update AFTER UPDATE OF translation, validated, \
             human, status, position, chapter_id ON passages \
             WHEN (OLD.translation IS NOT NULL OR NEW.translation IS NOT NULL) AND (\
             NEW.translation IS NOT OLD.translation OR NEW.validated IS NOT OLD.validated \
             OR NEW.human IS NOT OLD.human OR NEW.position IS NOT OLD.position \
             OR NEW.chapter_id IS NOT OLD.chapter_id OR {} IS NOT {}) BEGIN {} END",
            usable("OLD"),
            usable("NEW"),
            sqlite_outbox("'project'", "NEW.project_id")
        ),
        format!(
            "CREATE TRIGGER memory_passages_delete AFTER DELETE ON passages \
             WHEN OLD.translation IS NOT NULL \
             AND EXISTS (SELECT 1 FROM projects WHERE id = OLD.project_id) BEGIN {} END",
            sqlite_outbox("'project'", "OLD.project_id")
        ),
        format!(
            "CREATE TRIGGER memory_narrative_entities_insert AFTER INSERT ON narrative_entities \
             BEGIN {} END",
            sqlite_outbox("'project'", "NEW.project_id")
        ),
        format!(
            "CREATE TRIGGER memory_narrative_entities_update AFTER UPDATE OF kind, name, \
             aliases, target_name, description, project_id ON narrative_entities \
             WHEN {entity_changed} OR NEW.project_id IS NOT OLD.project_id BEGIN {} {} END",
            sqlite_outbox("'project'", "NEW.project_id"),
            // A move to another volume changes the old one too.
            format!(
                "INSERT INTO memory_outbox (scope_kind, scope_id, created_at, attempts) \
                 SELECT 'project', OLD.project_id, {SQLITE_NOW}, 0 \
                 WHERE OLD.project_id IS NOT NEW.project_id;"
            )
        ),
        format!(
            "CREATE TRIGGER memory_narrative_entities_delete AFTER DELETE ON narrative_entities \
             WHEN EXISTS (SELECT 1 FROM projects WHERE id = OLD.project_id) BEGIN {} END",
            sqlite_outbox("'project'", "OLD.project_id")
        ),
        format!(
            "CREATE TRIGGER memory_series_entities_insert AFTER INSERT ON series_entities \
             BEGIN {} END",
            sqlite_outbox("'series'", "NEW.series_id")
        ),
        format!(
            "CREATE TRIGGER memory_series_entities_update AFTER UPDATE OF kind, name, \
             aliases, target_name, description, series_id ON series_entities \
             WHEN {entity_changed} OR NEW.series_id IS NOT OLD.series_id BEGIN {} {} END",
            sqlite_outbox("'series'", "NEW.series_id"),
            format!(
                "INSERT INTO memory_outbox (scope_kind, scope_id, created_at, attempts) \
                 SELECT 'series', OLD.series_id, {SQLITE_NOW}, 0 \
                 WHERE OLD.series_id IS NOT NEW.series_id;"
            )
        ),
        format!(
            "CREATE TRIGGER memory_series_entities_delete AFTER DELETE ON series_entities \
             WHEN EXISTS (SELECT 1 FROM series WHERE id = OLD.series_id) BEGIN {} END",
            sqlite_outbox("'series'", "OLD.series_id")
        ),
        // Terms of shared glossaries (glossary_id set) are not mirrored.
        format!(
            "CREATE TRIGGER memory_terms_insert AFTER INSERT ON terms \
             WHEN NEW.glossary_id IS NULL BEGIN {} END",
            sqlite_owner_outbox("NEW", "1")
        ),
        format!(
            "CREATE TRIGGER memory_terms_update AFTER UPDATE OF source, translation, accepted, \
             layer, project_id, series_id, glossary_id ON terms \
             WHEN (OLD.glossary_id IS NULL OR NEW.glossary_id IS NULL) AND (\
             NEW.source IS NOT OLD.source OR NEW.translation IS NOT OLD.translation \
             OR NEW.accepted IS NOT OLD.accepted OR NEW.layer IS NOT OLD.layer \
             OR NEW.project_id IS NOT OLD.project_id OR NEW.series_id IS NOT OLD.series_id \
             OR NEW.glossary_id IS NOT OLD.glossary_id) BEGIN {} {} END",
            sqlite_owner_outbox("NEW", "1"),
            sqlite_owner_outbox("OLD", SQLITE_OWNER_MOVED)
        ),
        format!(
            "CREATE TRIGGER memory_terms_delete AFTER DELETE ON terms \
             WHEN OLD.glossary_id IS NULL AND {} BEGIN {} END",
            sqlite_owner_exists("OLD"),
            sqlite_owner_outbox("OLD", "1")
        ),
        format!(
            "CREATE TRIGGER memory_bible_lines_insert AFTER INSERT ON bible_lines BEGIN {} END",
            sqlite_owner_outbox("NEW", "1")
        ),
        format!(
            "CREATE TRIGGER memory_bible_lines_update AFTER UPDATE OF aspect, text, project_id, \
             series_id ON bible_lines \
             WHEN NEW.aspect IS NOT OLD.aspect OR NEW.text IS NOT OLD.text \
             OR NEW.project_id IS NOT OLD.project_id OR NEW.series_id IS NOT OLD.series_id \
             BEGIN {} {} END",
            sqlite_owner_outbox("NEW", "1"),
            sqlite_owner_outbox("OLD", SQLITE_OWNER_MOVED)
        ),
        format!(
            "CREATE TRIGGER memory_bible_lines_delete AFTER DELETE ON bible_lines \
             WHEN {} BEGIN {} END",
            sqlite_owner_exists("OLD"),
            sqlite_owner_outbox("OLD", "1")
        ),
        format!(
            "CREATE TRIGGER memory_projects_update AFTER UPDATE OF series_id ON projects \
             WHEN NEW.series_id IS NOT OLD.series_id BEGIN {} END",
            sqlite_outbox("'project'", "NEW.id")
        ),
        format!(
            "CREATE TRIGGER memory_projects_delete AFTER DELETE ON projects BEGIN {} END",
            sqlite_cleanup("project", "OLD.title")
        ),
        format!(
            "CREATE TRIGGER memory_series_delete AFTER DELETE ON series BEGIN {} END",
            sqlite_cleanup("series", "OLD.name")
        ),
    ]
}

/// Now, in Unix seconds, as PostgreSQL computes it.
const PG_NOW: &str = "CAST(FLOOR(EXTRACT(EPOCH FROM clock_timestamp())) AS BIGINT)";

/// A plpgsql function `dragoman_memory_<table>()` with `body`, and the row
/// trigger `memory_<table>` that runs it on `events`.
fn pg_trigger(table: &str, events: &str, body: &str) -> [String; 2] {
    [
        format!(
            "CREATE OR REPLACE FUNCTION dragoman_memory_{table}() RETURNS trigger \
             LANGUAGE plpgsql AS $fn$ BEGIN {body} RETURN NULL; END $fn$"
        ),
        format!(
            "CREATE TRIGGER memory_{table} AFTER {events} ON {table} \
             FOR EACH ROW EXECUTE FUNCTION dragoman_memory_{table}()"
        ),
    ]
}

fn pg_outbox(kind: &str, id: &str) -> String {
    format!(
        "INSERT INTO memory_outbox (scope_kind, scope_id, created_at, attempts) \
         VALUES ({kind}, {id}, {PG_NOW}, 0);"
    )
}

/// The outbox row of a bible line's or term's owner (`r` is NEW or OLD).
fn pg_owner_outbox(r: &str) -> String {
    format!(
        "IF COALESCE({r}.project_id, {r}.series_id) IS NOT NULL THEN \
         INSERT INTO memory_outbox (scope_kind, scope_id, created_at, attempts) VALUES (\
         CASE WHEN {r}.project_id IS NOT NULL THEN 'project' ELSE 'series' END, \
         COALESCE({r}.project_id, {r}.series_id), {PG_NOW}, 0); END IF;"
    )
}

fn pg_owner_exists(r: &str) -> String {
    format!(
        "(EXISTS (SELECT 1 FROM projects WHERE id = {r}.project_id) \
         OR EXISTS (SELECT 1 FROM series WHERE id = {r}.series_id))"
    )
}

fn pg_cleanup(kind: &str, label: &str) -> String {
    format!(
        "INSERT INTO memory_cleanups (id, scope_kind, scope_id, label, state, attempts, \
         removed, created_at) VALUES (gen_random_uuid()::text, '{kind}', OLD.id, {label}, \
         'pending', 0, 0, {PG_NOW});"
    )
}

fn pg_triggers() -> Vec<String> {
    let usable = |r: &str| format!("({r}.status IN ('ok','check'))");
    let entity_changed = "NEW.kind IS DISTINCT FROM OLD.kind \
        OR NEW.name IS DISTINCT FROM OLD.name \
        OR NEW.aliases::text IS DISTINCT FROM OLD.aliases::text \
        OR NEW.target_name IS DISTINCT FROM OLD.target_name \
        OR NEW.description IS DISTINCT FROM OLD.description";
    let owner_moved = "OLD.project_id IS DISTINCT FROM NEW.project_id \
        OR OLD.series_id IS DISTINCT FROM NEW.series_id";
    let mut statements = Vec::new();
    statements.extend(pg_trigger(
        "passages",
        "INSERT OR DELETE OR UPDATE OF translation, validated, human, status, position, \
         chapter_id",
        &format!(
            "IF TG_OP = 'INSERT' THEN \
               IF NEW.translation IS NOT NULL THEN {insert} END IF; \
             ELSIF TG_OP = 'DELETE' THEN \
               IF OLD.translation IS NOT NULL \
                  AND EXISTS (SELECT 1 FROM projects WHERE id = OLD.project_id) THEN {delete} \
               END IF; \
             ELSIF (OLD.translation IS NOT NULL OR NEW.translation IS NOT NULL) AND (\
               NEW.translation IS DISTINCT FROM OLD.translation \
               OR NEW.validated IS DISTINCT FROM OLD.validated \
               OR NEW.human IS DISTINCT FROM OLD.human \
               OR NEW.position IS DISTINCT FROM OLD.position \
               OR NEW.chapter_id IS DISTINCT FROM OLD.chapter_id \
               OR {old_usable} IS DISTINCT FROM {new_usable}) THEN {insert} \
             END IF;",
            insert = pg_outbox("'project'", "NEW.project_id"),
            delete = pg_outbox("'project'", "OLD.project_id"),
            old_usable = usable("OLD"),
            new_usable = usable("NEW"),
        ),
    ));
    for (table, kind, owner, owner_table) in [
        ("narrative_entities", "'project'", "project_id", "projects"),
        ("series_entities", "'series'", "series_id", "series"),
    ] {
        statements.extend(pg_trigger(
            table,
            &format!(
                "INSERT OR DELETE OR UPDATE OF kind, name, aliases, target_name, description, \
                 {owner}"
            ),
            &format!(
                "IF TG_OP = 'INSERT' THEN {insert} \
                 ELSIF TG_OP = 'DELETE' THEN \
                   IF EXISTS (SELECT 1 FROM {owner_table} WHERE id = OLD.{owner}) THEN {delete} \
                   END IF; \
                 ELSIF {entity_changed} OR NEW.{owner} IS DISTINCT FROM OLD.{owner} THEN \
                   {insert} \
                   IF NEW.{owner} IS DISTINCT FROM OLD.{owner} THEN {delete} END IF; \
                 END IF;",
                insert = pg_outbox(kind, &format!("NEW.{owner}")),
                delete = pg_outbox(kind, &format!("OLD.{owner}")),
            ),
        ));
    }
    statements.extend(pg_trigger(
        "terms",
        "INSERT OR DELETE OR UPDATE OF source, translation, accepted, layer, project_id, \
         series_id, glossary_id",
        &format!(
            "IF TG_OP = 'INSERT' THEN \
               IF NEW.glossary_id IS NULL THEN {new} END IF; \
             ELSIF TG_OP = 'DELETE' THEN \
               IF OLD.glossary_id IS NULL AND {exists} THEN {old} END IF; \
             ELSIF (OLD.glossary_id IS NULL OR NEW.glossary_id IS NULL) AND (\
               NEW.source IS DISTINCT FROM OLD.source \
               OR NEW.translation IS DISTINCT FROM OLD.translation \
               OR NEW.accepted IS DISTINCT FROM OLD.accepted \
               OR NEW.layer IS DISTINCT FROM OLD.layer \
               OR NEW.glossary_id IS DISTINCT FROM OLD.glossary_id \
               OR {owner_moved}) THEN \
               {new} IF {owner_moved} THEN {old} END IF; \
             END IF;",
            new = pg_owner_outbox("NEW"),
            old = pg_owner_outbox("OLD"),
            exists = pg_owner_exists("OLD"),
        ),
    ));
    statements.extend(pg_trigger(
        "bible_lines",
        "INSERT OR DELETE OR UPDATE OF aspect, text, project_id, series_id",
        &format!(
            "IF TG_OP = 'INSERT' THEN {new} \
             ELSIF TG_OP = 'DELETE' THEN \
               IF {exists} THEN {old} END IF; \
             ELSIF NEW.aspect IS DISTINCT FROM OLD.aspect \
               OR NEW.text IS DISTINCT FROM OLD.text OR {owner_moved} THEN \
               {new} IF {owner_moved} THEN {old} END IF; \
             END IF;",
            new = pg_owner_outbox("NEW"),
            old = pg_owner_outbox("OLD"),
            exists = pg_owner_exists("OLD"),
        ),
    ));
    statements.extend(pg_trigger(
        "projects",
        "DELETE OR UPDATE OF series_id",
        &format!(
            "IF TG_OP = 'DELETE' THEN {cleanup} \
             ELSIF NEW.series_id IS DISTINCT FROM OLD.series_id THEN {outbox} END IF;",
            cleanup = pg_cleanup("project", "OLD.title"),
            outbox = pg_outbox("'project'", "NEW.id"),
        ),
    ));
    statements.extend(pg_trigger(
        "series",
        "DELETE",
        &pg_cleanup("series", "OLD.name"),
    ));
    statements
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(MemoryOutbox::Table)
                    .col(big_pk_auto(MemoryOutbox::Id))
                    .col(string(MemoryOutbox::ScopeKind))
                    .col(string(MemoryOutbox::ScopeId))
                    .col(big_integer(MemoryOutbox::CreatedAt))
                    .col(big_integer_null(MemoryOutbox::SyncedAt))
                    .col(integer(MemoryOutbox::Attempts).default(0).take())
                    .col(big_integer_null(MemoryOutbox::NextAttemptAt))
                    .col(text_null(MemoryOutbox::LastError))
                    .to_owned(),
            )
            .await?;
        // The sync loop's reads: due rows of a scope, oldest first.
        manager
            .create_index(index(
                "ix_memory_outbox_pending",
                MemoryOutbox::Table,
                [
                    MemoryOutbox::SyncedAt,
                    MemoryOutbox::ScopeKind,
                    MemoryOutbox::ScopeId,
                    MemoryOutbox::Id,
                ],
                false,
            ))
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(MemoryMirror::Table)
                    .col(string(MemoryMirror::ItemId).primary_key())
                    .col(string(MemoryMirror::ScopeKind))
                    .col(string(MemoryMirror::ScopeId))
                    .col(string_null(MemoryMirror::ProjectId))
                    .col(string_null(MemoryMirror::SeriesId))
                    .col(string(MemoryMirror::Kind))
                    .col(string(MemoryMirror::ContentHash))
                    .col(string(MemoryMirror::EmbeddingModel))
                    .col(string(MemoryMirror::Collection))
                    .col(big_integer(MemoryMirror::SyncedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(index(
                "ix_memory_mirror_scope",
                MemoryMirror::Table,
                [MemoryMirror::ScopeKind, MemoryMirror::ScopeId],
                false,
            ))
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(MemoryCleanups::Table)
                    .col(string(MemoryCleanups::Id).primary_key())
                    .col(string(MemoryCleanups::ScopeKind))
                    .col(string(MemoryCleanups::ScopeId))
                    .col(string(MemoryCleanups::Label))
                    .col(string(MemoryCleanups::State))
                    .col(integer(MemoryCleanups::Attempts).default(0).take())
                    .col(big_integer_null(MemoryCleanups::NextAttemptAt))
                    .col(text_null(MemoryCleanups::LastError))
                    .col(big_integer(MemoryCleanups::Removed).default(0).take())
                    .col(big_integer(MemoryCleanups::CreatedAt))
                    .col(big_integer_null(MemoryCleanups::FinishedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(index(
                "ix_memory_cleanups_state",
                MemoryCleanups::Table,
                [MemoryCleanups::State, MemoryCleanups::NextAttemptAt],
                false,
            ))
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(MemoryRetrievals::Table)
                    .col(string(MemoryRetrievals::JobId).primary_key())
                    .col(string(MemoryRetrievals::ProjectId))
                    .col(
                        big_integer(MemoryRetrievals::ExternalBatches)
                            .default(0)
                            .take(),
                    )
                    .col(
                        big_integer(MemoryRetrievals::InternalBatches)
                            .default(0)
                            .take(),
                    )
                    .col(big_integer(MemoryRetrievals::Fallbacks).default(0).take())
                    .col(text_null(MemoryRetrievals::LastError))
                    .col(big_integer(MemoryRetrievals::UpdatedAt))
                    .to_owned(),
            )
            .await?;

        let db = manager.get_connection();
        let statements = match manager.get_database_backend() {
            DatabaseBackend::Postgres => pg_triggers(),
            _ => sqlite_triggers(),
        };
        for statement in statements {
            db.execute_unprepared(&statement).await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        match manager.get_database_backend() {
            DatabaseBackend::Postgres => {
                for table in TRIGGER_TABLES {
                    db.execute_unprepared(&format!(
                        "DROP TRIGGER IF EXISTS memory_{table} ON {table}"
                    ))
                    .await?;
                    db.execute_unprepared(&format!(
                        "DROP FUNCTION IF EXISTS dragoman_memory_{table}()"
                    ))
                    .await?;
                }
            }
            _ => {
                for trigger in SQLITE_TRIGGERS {
                    db.execute_unprepared(&format!("DROP TRIGGER IF EXISTS {trigger}"))
                        .await?;
                }
            }
        }
        for table in [
            MemoryRetrievals::Table.into_iden(),
            MemoryCleanups::Table.into_iden(),
            MemoryMirror::Table.into_iden(),
            MemoryOutbox::Table.into_iden(),
        ] {
            manager
                .drop_table(Table::drop().table(table).to_owned())
                .await?;
        }
        Ok(())
    }
}
