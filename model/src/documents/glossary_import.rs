//! What a shared glossary import found in the file and did (spec 4.7), and
//! a term as glossary files carry it.
//!
//! Fields are declared in the order of their names: the order in which
//! clients have always read them.

use crate::vocab::{CsvDelimiter, GlossaryFormat, ImportStrategy};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use utoipa::ToSchema;

/// A term as a glossary file carries it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct GlossaryFileTerm {
    pub accepted: bool,
    pub category: String,
    pub description: String,
    pub locked: bool,
    pub source: String,
    pub translation: String,
}

/// What an import found in the file and did (or, with `dry_run`, would
/// do). Lists are cut to 200 items (`truncated`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ImportReport {
    /// Whether the terms were written.
    pub applied: bool,
    /// CSV only: the column names read.
    #[schema(required = true)]
    pub columns: Option<Vec<String>>,
    pub conflicts: Vec<ImportConflict>,
    pub counts: ImportCounts,
    /// CSV only; null otherwise.
    #[schema(required = true)]
    pub delimiter: Option<CsvDelimiter>,
    /// A source repeated in the file: the first row counts.
    pub duplicates: Vec<ImportDuplicate>,
    pub encoding: String,
    pub errors: Vec<ImportRowError>,
    pub format: GlossaryFormat,
    /// CSV only: whether the first row holds column names.
    #[schema(required = true)]
    pub header: Option<bool>,
    /// Applied imports only: terms added.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub imported: Option<usize>,
    /// CSV only: the column number of each field.
    #[schema(required = true)]
    pub mapping: Option<BTreeMap<String, usize>>,
    /// Terms the glossary does not hold yet.
    pub new: Vec<ImportedTerm>,
    /// Applied imports only: terms replaced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaced: Option<usize>,
    /// Applied imports only: rows left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<usize>,
    pub strategy: ImportStrategy,
    pub truncated: ImportTruncated,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ImportCounts {
    pub conflicts: usize,
    pub duplicates: usize,
    pub errors: usize,
    pub kept: usize,
    pub new: usize,
    pub replaced: usize,
    pub terms: usize,
    pub unchanged: usize,
}

/// A new term and the line it starts on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ImportedTerm {
    pub accepted: bool,
    pub category: String,
    pub description: String,
    pub line: usize,
    pub locked: bool,
    pub source: String,
    pub translation: String,
}

/// A term of the file whose source the glossary holds with other fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ImportConflict {
    pub action: ConflictAction,
    pub existing: GlossaryFileTerm,
    /// The fields that differ.
    pub fields: Vec<String>,
    pub incoming: GlossaryFileTerm,
    pub line: usize,
    /// Whether the existing term is locked.
    pub locked: bool,
    pub source: String,
}

/// What the strategy does with a conflict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ConflictAction {
    Replace,
    Keep,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ImportDuplicate {
    pub first_line: usize,
    pub line: usize,
    pub source: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ImportRowError {
    pub line: usize,
    pub message: String,
}

/// Which lists were cut to 200 items.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ImportTruncated {
    pub conflicts: bool,
    pub duplicates: bool,
    pub errors: bool,
    pub new: bool,
}
