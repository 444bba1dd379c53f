//! An import's reading and judging, without the database: which format a
//! file is, its rows checked and deduplicated, their comparison with the
//! glossary's terms under a strategy, and the report (spec 4.7).
//!
//! * Format: text starting with `<` is TBX, with `[` or `{` JSON, unless
//!   the file name ends in `.csv`, `.tsv` or `.txt`; other text is JSON or
//!   TBX by its extension (`.json`; `.tbx`, `.xml`), CSV otherwise.
//! * Rows: an unreadable or invalid row goes to `errors`; a valid row whose
//!   source (compared case-insensitively, [`crate::normalize::match_key`])
//!   an earlier valid row already gave goes to `duplicates`. `counts.terms`
//!   is the number of distinct valid sources.
//! * Against the glossary: a term equal in all six fields is `unchanged`;
//!   one that differs is a conflict whose action is `replace` under
//!   `replace` when the held term is unlocked and always under
//!   `replace_all`, `keep` otherwise; other sources are `new`.

use super::csv_file::{self, CsvOptions};
use super::fields::TermFields;
use super::fields::{Checked, Row, check};
use super::text::decode;
use super::{ImportOptions, json_file, tbx_file};
use crate::error::{MemoryError, MemoryResult};
use dragoman_model::documents::glossary_import::{
    ConflictAction, GlossaryFileTerm, ImportConflict, ImportCounts, ImportDuplicate, ImportReport,
    ImportRowError, ImportTruncated, ImportedTerm,
};
use dragoman_model::entities::{glossary, term};
use dragoman_model::vocab::{CsvDelimiter, GlossaryFormat, ImportStrategy};
use std::collections::{BTreeMap, HashMap};

/// Items each list of the report keeps (spec 8).
pub const REPORT_LIST_MAX: usize = 200;

/// How a CSV file was read.
#[derive(Debug)]
pub struct CsvDetails {
    pub delimiter: CsvDelimiter,
    pub header: bool,
    pub columns: Vec<String>,
    pub mapping: BTreeMap<&'static str, usize>,
}

/// A file read and its rows checked: everything an import knows before it
/// looks at the glossary's terms.
#[derive(Debug)]
pub struct Prepared {
    pub format: GlossaryFormat,
    pub encoding: &'static str,
    pub csv: Option<CsvDetails>,
    /// Valid rows with distinct sources, in the file's order.
    pub incoming: Vec<Incoming>,
    pub duplicates: Vec<Duplicate>,
    pub errors: Vec<RowError>,
}

#[derive(Debug)]
pub struct Incoming {
    pub line: usize,
    pub term: Checked,
}

#[derive(Debug)]
pub struct Duplicate {
    pub line: usize,
    pub source: String,
    pub first_line: usize,
}

#[derive(Debug)]
pub struct RowError {
    pub line: usize,
    pub message: String,
}

fn extension(filename: &str) -> String {
    filename
        .rsplit_once('.')
        .map(|(_, ext)| ext.to_ascii_lowercase())
        .unwrap_or_default()
}

/// The format of a decoded file.
pub fn sniff(text: &str, filename: &str) -> GlossaryFormat {
    let extension = extension(filename);
    let spreadsheet = matches!(extension.as_str(), "csv" | "tsv" | "txt");
    let start = text.trim_start();
    if !spreadsheet && start.starts_with('<') {
        GlossaryFormat::Tbx
    } else if !spreadsheet && (start.starts_with('[') || start.starts_with('{')) {
        GlossaryFormat::Json
    } else {
        match extension.as_str() {
            "json" => GlossaryFormat::Json,
            "tbx" | "xml" => GlossaryFormat::Tbx,
            _ => GlossaryFormat::Csv,
        }
    }
}

/// Reads and checks a file: CPU work only, done before any transaction.
pub fn prepare(
    content: &[u8],
    options: &ImportOptions,
    glossary: &glossary::Model,
) -> MemoryResult<Prepared> {
    let decoded = decode(content)?;
    let format = sniff(&decoded.text, &options.filename);
    let (rows, csv) = match format {
        GlossaryFormat::Json => (json_file::read(&decoded.text)?, None),
        GlossaryFormat::Tbx => {
            let languages = (
                glossary.source_language.as_deref(),
                glossary.target_language.as_deref(),
            );
            (tbx_file::read(&decoded.text, languages)?, None)
        }
        GlossaryFormat::Csv => {
            let read = csv_file::read(
                &decoded.text,
                &CsvOptions {
                    delimiter: options.delimiter,
                    header: options.header,
                    mapping: &options.mapping,
                },
            )?;
            let details = CsvDetails {
                delimiter: read.delimiter,
                header: read.header,
                columns: read.columns,
                mapping: read.mapping,
            };
            (read.rows, Some(details))
        }
    };
    if rows.is_empty() {
        return Err(MemoryError::InvalidFile {
            message: "the file holds no term".into(),
            line: None,
            column: None,
        });
    }
    let (incoming, duplicates, errors) = judge_rows(rows, &glossary.id);
    Ok(Prepared {
        format,
        encoding: decoded.encoding,
        csv,
        incoming,
        duplicates,
        errors,
    })
}

fn judge_rows(rows: Vec<Row>, glossary_id: &str) -> (Vec<Incoming>, Vec<Duplicate>, Vec<RowError>) {
    let mut incoming: Vec<Incoming> = Vec::new();
    let mut duplicates = Vec::new();
    let mut errors = Vec::new();
    let mut first_lines: HashMap<String, usize> = HashMap::new();
    for row in rows {
        match row.read.and_then(|fields| check(fields, glossary_id)) {
            Err(message) => errors.push(RowError {
                line: row.line,
                message,
            }),
            Ok(term) => match first_lines.get(&term.key) {
                Some(first_line) => duplicates.push(Duplicate {
                    line: row.line,
                    source: term.fields.source,
                    first_line: *first_line,
                }),
                None => {
                    first_lines.insert(term.key.clone(), row.line);
                    incoming.push(Incoming {
                        line: row.line,
                        term,
                    });
                }
            },
        }
    }
    (incoming, duplicates, errors)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Replace,
    Keep,
}

#[derive(Debug)]
pub struct Conflict<'a> {
    pub incoming: &'a Incoming,
    pub existing: &'a term::Model,
    pub fields: Vec<&'static str>,
    pub action: Action,
}

/// What an import does with each incoming term.
#[derive(Debug)]
pub struct Plan<'a> {
    pub new: Vec<&'a Incoming>,
    pub unchanged: usize,
    pub conflicts: Vec<Conflict<'a>>,
}

impl Plan<'_> {
    pub fn replaced(&self) -> usize {
        self.conflicts
            .iter()
            .filter(|c| c.action == Action::Replace)
            .count()
    }
}

/// Compares the incoming terms with the glossary's (`existing`).
pub fn plan<'a>(
    prepared: &'a Prepared,
    existing: &'a [term::Model],
    strategy: ImportStrategy,
) -> Plan<'a> {
    let held: HashMap<&str, &term::Model> = existing
        .iter()
        .map(|t| (t.source_key.as_str(), t))
        .collect();
    let mut plan = Plan {
        new: Vec::new(),
        unchanged: 0,
        conflicts: Vec::new(),
    };
    for incoming in &prepared.incoming {
        let Some(existing) = held.get(incoming.term.key.as_str()) else {
            plan.new.push(incoming);
            continue;
        };
        let fields = super::fields::TermFields::of(existing).differing(&incoming.term.fields);
        if fields.is_empty() {
            plan.unchanged += 1;
            continue;
        }
        let replace = match strategy {
            ImportStrategy::Skip => false,
            ImportStrategy::Replace => !existing.locked,
            ImportStrategy::ReplaceAll => true,
        };
        plan.conflicts.push(Conflict {
            incoming,
            existing,
            fields,
            action: if replace {
                Action::Replace
            } else {
                Action::Keep
            },
        });
    }
    plan
}

/// `items` cut to [`REPORT_LIST_MAX`], and whether they were.
fn cut<T>(items: impl ExactSizeIterator<Item = T>) -> (Vec<T>, bool) {
    let cut = items.len() > REPORT_LIST_MAX;
    (items.take(REPORT_LIST_MAX).collect(), cut)
}

/// A term as the report shows it.
fn file_term(fields: &TermFields) -> GlossaryFileTerm {
    GlossaryFileTerm {
        accepted: fields.accepted,
        category: fields.category.clone(),
        description: fields.description.clone(),
        locked: fields.locked,
        source: fields.source.clone(),
        translation: fields.translation.clone(),
    }
}

/// The import report; `applied` is whether the terms were written.
pub fn report(
    prepared: &Prepared,
    plan: &Plan<'_>,
    strategy: ImportStrategy,
    applied: bool,
) -> ImportReport {
    let (new, new_cut) = cut(plan.new.iter().map(|incoming| {
        let fields = &incoming.term.fields;
        ImportedTerm {
            accepted: fields.accepted,
            category: fields.category.clone(),
            description: fields.description.clone(),
            line: incoming.line,
            locked: fields.locked,
            source: fields.source.clone(),
            translation: fields.translation.clone(),
        }
    }));
    let (conflicts, conflicts_cut) = cut(plan.conflicts.iter().map(|c| ImportConflict {
        action: match c.action {
            Action::Replace => ConflictAction::Replace,
            Action::Keep => ConflictAction::Keep,
        },
        existing: file_term(&TermFields::of(c.existing)),
        fields: c.fields.iter().map(|f| (*f).to_owned()).collect(),
        incoming: file_term(&c.incoming.term.fields),
        line: c.incoming.line,
        locked: c.existing.locked,
        source: c.incoming.term.fields.source.clone(),
    }));
    let (duplicates, duplicates_cut) = cut(prepared.duplicates.iter().map(|d| ImportDuplicate {
        first_line: d.first_line,
        line: d.line,
        source: d.source.clone(),
    }));
    let (errors, errors_cut) = cut(prepared.errors.iter().map(|e| ImportRowError {
        line: e.line,
        message: e.message.clone(),
    }));
    let replaced = plan.replaced();
    let kept = plan.conflicts.len() - replaced;
    let skipped = plan.unchanged + kept + prepared.duplicates.len() + prepared.errors.len();
    let csv = prepared.csv.as_ref();
    ImportReport {
        applied,
        columns: csv.map(|c| c.columns.clone()),
        conflicts,
        counts: ImportCounts {
            conflicts: plan.conflicts.len(),
            duplicates: prepared.duplicates.len(),
            errors: prepared.errors.len(),
            kept,
            new: plan.new.len(),
            replaced,
            terms: prepared.incoming.len(),
            unchanged: plan.unchanged,
        },
        delimiter: csv.map(|c| c.delimiter),
        duplicates,
        encoding: prepared.encoding.to_owned(),
        errors,
        format: prepared.format,
        header: csv.map(|c| c.header),
        imported: applied.then_some(plan.new.len()),
        mapping: csv.map(|c| {
            c.mapping
                .iter()
                .map(|(field, column)| ((*field).to_owned(), *column))
                .collect()
        }),
        new,
        replaced: applied.then_some(replaced),
        skipped: applied.then_some(skipped),
        strategy,
        truncated: ImportTruncated {
            conflicts: conflicts_cut,
            duplicates: duplicates_cut,
            errors: errors_cut,
            new: new_cut,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_decides_unless_the_name_says_spreadsheet() {
        assert_eq!(
            sniff("  <?xml version='1.0'?><martif/>", "x"),
            GlossaryFormat::Tbx
        );
        assert_eq!(sniff("\n[{\"source\": 1}]", "terms"), GlossaryFormat::Json);
        assert_eq!(sniff("[a],b\n", "list.CSV"), GlossaryFormat::Csv);
        assert_eq!(sniff("<b>,bold\n", "list.txt"), GlossaryFormat::Csv);
        assert_eq!(sniff("a,b\n", "export.json"), GlossaryFormat::Json);
        assert_eq!(sniff("a,b\n", "export.tbx"), GlossaryFormat::Tbx);
        assert_eq!(sniff("a;b\n", ""), GlossaryFormat::Csv);
    }
}
