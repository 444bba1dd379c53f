//! The report of a shared glossary import and the messages of
//! `glossary_import.proto` that carry it from the memory service to the
//! gateway.

use super::required;
use crate::v1;
use crate::wire::{WireEnum, WireError};
use dragoman_model::documents::glossary_import::{
    ConflictAction, GlossaryFileTerm, ImportConflict, ImportCounts, ImportDuplicate, ImportReport,
    ImportRowError, ImportTruncated, ImportedTerm,
};

/// A count or line on the wire; a `usize` always fits.
fn wire(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

/// A count or line from the wire.
fn number(value: u64, field: &'static str) -> Result<usize, WireError> {
    usize::try_from(value).map_err(|_| WireError { field })
}

impl From<GlossaryFileTerm> for v1::GlossaryFileTerm {
    fn from(t: GlossaryFileTerm) -> Self {
        v1::GlossaryFileTerm {
            accepted: t.accepted,
            category: t.category,
            description: t.description,
            locked: t.locked,
            source: t.source,
            translation: t.translation,
        }
    }
}

impl From<v1::GlossaryFileTerm> for GlossaryFileTerm {
    fn from(t: v1::GlossaryFileTerm) -> Self {
        GlossaryFileTerm {
            accepted: t.accepted,
            category: t.category,
            description: t.description,
            locked: t.locked,
            source: t.source,
            translation: t.translation,
        }
    }
}

impl From<ImportReport> for v1::ImportReport {
    fn from(r: ImportReport) -> Self {
        let c = r.counts;
        v1::ImportReport {
            applied: r.applied,
            columns: r.columns.map(|names| v1::ImportColumns { names }),
            conflicts: r
                .conflicts
                .into_iter()
                .map(|c| v1::ImportConflict {
                    action: match c.action {
                        ConflictAction::Replace => v1::ConflictAction::Replace,
                        ConflictAction::Keep => v1::ConflictAction::Keep,
                    } as i32,
                    existing: Some(c.existing.into()),
                    fields: c.fields,
                    incoming: Some(c.incoming.into()),
                    line: wire(c.line),
                    locked: c.locked,
                    source: c.source,
                })
                .collect(),
            counts: Some(v1::ImportCounts {
                conflicts: wire(c.conflicts),
                duplicates: wire(c.duplicates),
                errors: wire(c.errors),
                kept: wire(c.kept),
                new: wire(c.new),
                replaced: wire(c.replaced),
                terms: wire(c.terms),
                unchanged: wire(c.unchanged),
            }),
            delimiter: r.delimiter.map(WireEnum::to_wire),
            duplicates: r
                .duplicates
                .into_iter()
                .map(|d| v1::ImportDuplicate {
                    first_line: wire(d.first_line),
                    line: wire(d.line),
                    source: d.source,
                })
                .collect(),
            encoding: r.encoding,
            errors: r
                .errors
                .into_iter()
                .map(|e| v1::ImportRowError {
                    line: wire(e.line),
                    message: e.message,
                })
                .collect(),
            format: r.format.to_wire(),
            header: r.header,
            imported: r.imported.map(wire),
            mapping: r.mapping.map(|mapping| v1::ImportMapping {
                columns: mapping.into_iter().map(|(k, n)| (k, wire(n))).collect(),
            }),
            new: r
                .new
                .into_iter()
                .map(|t| v1::ImportedTerm {
                    term: Some(v1::GlossaryFileTerm {
                        accepted: t.accepted,
                        category: t.category,
                        description: t.description,
                        locked: t.locked,
                        source: t.source,
                        translation: t.translation,
                    }),
                    line: wire(t.line),
                })
                .collect(),
            replaced: r.replaced.map(wire),
            skipped: r.skipped.map(wire),
            strategy: r.strategy.to_wire(),
            truncated: Some(v1::ImportTruncated {
                conflicts: r.truncated.conflicts,
                duplicates: r.truncated.duplicates,
                errors: r.truncated.errors,
                new: r.truncated.new,
            }),
        }
    }
}

fn conflict(c: v1::ImportConflict) -> Result<ImportConflict, WireError> {
    Ok(ImportConflict {
        action: match v1::ConflictAction::try_from(c.action) {
            Ok(v1::ConflictAction::Replace) => ConflictAction::Replace,
            Ok(v1::ConflictAction::Keep) => ConflictAction::Keep,
            _ => {
                return Err(WireError {
                    field: "conflicts.action",
                });
            }
        },
        existing: required(c.existing, "conflicts.existing")?.into(),
        fields: c.fields,
        incoming: required(c.incoming, "conflicts.incoming")?.into(),
        line: number(c.line, "conflicts.line")?,
        locked: c.locked,
        source: c.source,
    })
}

impl TryFrom<v1::ImportReport> for ImportReport {
    type Error = WireError;

    fn try_from(r: v1::ImportReport) -> Result<Self, WireError> {
        let c = required(r.counts, "counts")?;
        let truncated = required(r.truncated, "truncated")?;
        Ok(ImportReport {
            applied: r.applied,
            columns: r.columns.map(|c| c.names),
            conflicts: r
                .conflicts
                .into_iter()
                .map(conflict)
                .collect::<Result<_, _>>()?,
            counts: ImportCounts {
                conflicts: number(c.conflicts, "counts.conflicts")?,
                duplicates: number(c.duplicates, "counts.duplicates")?,
                errors: number(c.errors, "counts.errors")?,
                kept: number(c.kept, "counts.kept")?,
                new: number(c.new, "counts.new")?,
                replaced: number(c.replaced, "counts.replaced")?,
                terms: number(c.terms, "counts.terms")?,
                unchanged: number(c.unchanged, "counts.unchanged")?,
            },
            delimiter: WireEnum::from_wire_opt(r.delimiter, "delimiter")?,
            duplicates: r
                .duplicates
                .into_iter()
                .map(|d| {
                    Ok(ImportDuplicate {
                        first_line: number(d.first_line, "duplicates.first_line")?,
                        line: number(d.line, "duplicates.line")?,
                        source: d.source,
                    })
                })
                .collect::<Result<_, WireError>>()?,
            encoding: r.encoding,
            errors: r
                .errors
                .into_iter()
                .map(|e| {
                    Ok(ImportRowError {
                        line: number(e.line, "errors.line")?,
                        message: e.message,
                    })
                })
                .collect::<Result<_, WireError>>()?,
            format: WireEnum::from_wire(r.format, "format")?,
            header: r.header,
            imported: r.imported.map(|n| number(n, "imported")).transpose()?,
            mapping: r
                .mapping
                .map(|m| {
                    m.columns
                        .into_iter()
                        .map(|(k, n)| Ok((k, number(n, "mapping")?)))
                        .collect::<Result<_, WireError>>()
                })
                .transpose()?,
            new: r
                .new
                .into_iter()
                .map(|t| {
                    let term = required(t.term, "new.term")?;
                    Ok(ImportedTerm {
                        accepted: term.accepted,
                        category: term.category,
                        description: term.description,
                        line: number(t.line, "new.line")?,
                        locked: term.locked,
                        source: term.source,
                        translation: term.translation,
                    })
                })
                .collect::<Result<_, WireError>>()?,
            replaced: r.replaced.map(|n| number(n, "replaced")).transpose()?,
            skipped: r.skipped.map(|n| number(n, "skipped")).transpose()?,
            strategy: WireEnum::from_wire(r.strategy, "strategy")?,
            truncated: ImportTruncated {
                conflicts: truncated.conflicts,
                duplicates: truncated.duplicates,
                errors: truncated.errors,
                new: truncated.new,
            },
        })
    }
}

#[cfg(test)]
#[path = "glossary_import_tests.rs"]
mod tests;
