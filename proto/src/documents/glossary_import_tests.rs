//! Round trip of the import report: document → message → document gives
//! the document back, and its JSON text is the one clients have read,
//! keys sorted at every level.

use super::*;
use dragoman_model::vocab::{CsvDelimiter, GlossaryFormat, ImportStrategy};
use serde_json::json;
use std::collections::BTreeMap;

fn term(source: &str) -> GlossaryFileTerm {
    GlossaryFileTerm {
        accepted: true,
        category: "name".into(),
        description: "a lord".into(),
        locked: false,
        source: source.into(),
        translation: "Seigneur".into(),
    }
}

fn report() -> ImportReport {
    ImportReport {
        applied: true,
        columns: Some(vec!["source".into(), "target".into()]),
        conflicts: vec![ImportConflict {
            action: ConflictAction::Keep,
            existing: term("Dark Lord"),
            fields: vec!["translation".into()],
            incoming: term("dark LORD"),
            line: 3,
            locked: true,
            source: "dark LORD".into(),
        }],
        counts: ImportCounts {
            conflicts: 1,
            duplicates: 1,
            errors: 1,
            kept: 1,
            new: 1,
            replaced: 0,
            terms: 3,
            unchanged: 1,
        },
        delimiter: Some(CsvDelimiter::Semicolon),
        duplicates: vec![ImportDuplicate {
            first_line: 2,
            line: 5,
            source: "cat".into(),
        }],
        encoding: "utf-8".into(),
        errors: vec![ImportRowError {
            line: 6,
            message: "no translation".into(),
        }],
        format: GlossaryFormat::Csv,
        header: Some(true),
        imported: Some(1),
        mapping: Some(BTreeMap::from([
            ("source".into(), 0),
            ("translation".into(), 1),
        ])),
        new: vec![ImportedTerm {
            accepted: false,
            category: String::new(),
            description: String::new(),
            line: 2,
            locked: true,
            source: "cat".into(),
            translation: "chat".into(),
        }],
        replaced: Some(0),
        skipped: Some(3),
        strategy: ImportStrategy::Skip,
        truncated: ImportTruncated {
            conflicts: false,
            duplicates: false,
            errors: true,
            new: false,
        },
    }
}

#[test]
fn an_import_report_crosses_the_wire_and_reads_as_before() {
    let doc = report();
    let back = ImportReport::try_from(v1::ImportReport::from(doc.clone())).expect("converts back");
    assert_eq!(back, doc);
    let term = |source: &str| {
        json!({"source": source, "translation": "Seigneur", "category": "name",
               "description": "a lord", "locked": false, "accepted": true})
    };
    // Built as the service built it before it was typed: `json!` values,
    // whose keys serialize sorted.
    let before = json!({
        "format": "csv", "encoding": "utf-8", "delimiter": "semicolon",
        "columns": ["source", "target"], "header": true,
        "mapping": {"source": 0, "translation": 1}, "strategy": "skip",
        "counts": {"terms": 3, "new": 1, "unchanged": 1, "conflicts": 1, "replaced": 0,
                   "kept": 1, "duplicates": 1, "errors": 1},
        "new": [{"source": "cat", "translation": "chat", "category": "", "description": "",
                 "locked": true, "accepted": false, "line": 2}],
        "conflicts": [{"line": 3, "source": "dark LORD", "existing": term("Dark Lord"),
                       "incoming": term("dark LORD"), "fields": ["translation"],
                       "locked": true, "action": "keep"}],
        "duplicates": [{"line": 5, "source": "cat", "first_line": 2}],
        "errors": [{"line": 6, "message": "no translation"}],
        "truncated": {"new": false, "conflicts": false, "duplicates": false, "errors": true},
        "applied": true, "imported": 1, "replaced": 0, "skipped": 3
    });
    assert_eq!(
        serde_json::to_string(&doc).expect("serializes"),
        before.to_string()
    );
}

#[test]
fn a_dry_run_has_no_applied_counts_and_a_missing_part_is_refused() {
    let mut doc = report();
    doc.applied = false;
    doc.imported = None;
    doc.replaced = None;
    doc.skipped = None;
    doc.columns = None;
    doc.delimiter = None;
    doc.header = None;
    doc.mapping = None;
    let back = ImportReport::try_from(v1::ImportReport::from(doc.clone())).expect("converts back");
    assert_eq!(back, doc);
    let value = serde_json::to_value(&doc).expect("serializes");
    assert!(value.get("imported").is_none());
    assert_eq!(value["mapping"], serde_json::Value::Null);
    let mut message = v1::ImportReport::from(doc);
    message.counts = None;
    assert_eq!(
        ImportReport::try_from(message),
        Err(WireError { field: "counts" })
    );
}
