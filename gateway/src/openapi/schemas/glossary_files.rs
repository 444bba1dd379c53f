//! Shared glossary files (spec 4.7): a term as exports write it and JSON
//! imports read it, and the import report the memory service writes.

use dragoman_model::vocab::{CsvDelimiter, GlossaryFormat, ImportStrategy};
use serde::Serialize;
use std::collections::BTreeMap;
use utoipa::ToSchema;

/// A term as a glossary file carries it.
#[derive(Serialize, ToSchema)]
pub struct GlossaryFileTerm {
    pub source: String,
    pub translation: String,
    pub category: String,
    pub description: String,
    pub locked: bool,
    pub accepted: bool,
}

/// What an import found in the file and did (or, with `dry_run`, would
/// do). Lists are cut to 200 items (`truncated`).
#[derive(Serialize, ToSchema)]
pub struct ImportReport {
    pub format: GlossaryFormat,
    pub encoding: String,
    /// CSV only; null otherwise.
    #[schema(required = true)]
    pub delimiter: Option<CsvDelimiter>,
    /// CSV only: the column names read.
    #[schema(required = true)]
    pub columns: Option<Vec<String>>,
    /// CSV only: whether the first row holds column names.
    #[schema(required = true)]
    pub header: Option<bool>,
    /// CSV only: the column number of each field.
    #[schema(required = true)]
    pub mapping: Option<BTreeMap<String, i64>>,
    pub strategy: ImportStrategy,
    pub counts: ImportCounts,
    /// Terms the glossary does not hold yet.
    pub new: Vec<ImportedTerm>,
    pub conflicts: Vec<ImportConflict>,
    /// A source repeated in the file: the first row counts.
    pub duplicates: Vec<ImportDuplicate>,
    pub errors: Vec<ImportRowError>,
    pub truncated: ImportTruncated,
    /// Whether the terms were written.
    pub applied: bool,
    /// Applied imports only: terms added.
    pub imported: Option<i64>,
    /// Applied imports only: terms replaced.
    pub replaced: Option<i64>,
    /// Applied imports only: rows left out.
    pub skipped: Option<i64>,
}

#[derive(Serialize, ToSchema)]
pub struct ImportCounts {
    pub terms: i64,
    pub new: i64,
    pub unchanged: i64,
    pub conflicts: i64,
    pub replaced: i64,
    pub kept: i64,
    pub duplicates: i64,
    pub errors: i64,
}

/// A new term and the line it starts on.
#[derive(Serialize, ToSchema)]
pub struct ImportedTerm {
    #[serde(flatten)]
    pub term: GlossaryFileTerm,
    pub line: i64,
}

/// A term of the file whose source the glossary holds with other fields.
#[derive(Serialize, ToSchema)]
pub struct ImportConflict {
    pub line: i64,
    pub source: String,
    pub existing: GlossaryFileTerm,
    pub incoming: GlossaryFileTerm,
    /// The fields that differ.
    pub fields: Vec<String>,
    /// Whether the existing term is locked.
    pub locked: bool,
    pub action: ConflictAction,
}

/// What the strategy does with a conflict.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ConflictAction {
    Replace,
    Keep,
}

#[derive(Serialize, ToSchema)]
pub struct ImportDuplicate {
    pub line: i64,
    pub source: String,
    pub first_line: i64,
}

#[derive(Serialize, ToSchema)]
pub struct ImportRowError {
    pub line: i64,
    pub message: String,
}

/// Which lists were cut to 200 items.
#[derive(Serialize, ToSchema)]
pub struct ImportTruncated {
    pub new: bool,
    pub conflicts: bool,
    pub duplicates: bool,
    pub errors: bool,
}
