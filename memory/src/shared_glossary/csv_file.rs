//! Glossary CSV files: reading what spreadsheets and hand-kept lists give,
//! and writing the export.
//!
//! Reading, with the `csv` crate in its lenient settings (records of any
//! length, every field trimmed, a quote only special at the start of a
//! field — so `zz"zz` unquoted is read as written and `a, "b"` keeps its
//! quotes):
//! * the delimiter (`,` `;` tab) is the one that splits the first lines
//!   most consistently (most lines with the same number of fields, then
//!   most lines split); on a tie the rarer character in prose wins (tab,
//!   then semicolon, then comma), since it is there on purpose;
//! * blank lines are skipped, and so is a line whose first field starts
//!   with `#` and that has no other non-empty field: the section headings
//!   (`## Colours`) of hand-kept Markdown-like lists. A `#` line with a
//!   translation is a term;
//! * the first row is a header when two of its fields name distinct known
//!   fields (English or French, case and accents ignored, see
//!   [`header_field`]); a header naming neither source nor translation
//!   leaves them to the first columns no other field uses, as a file
//!   without header does with its first two columns;
//! * `mapping` (field → column from 0) overrides what the header says.

use super::fields::{
    DEFAULT_ACCEPTED, DEFAULT_LOCKED, FIELDS, Row, TermFields, field_name, flag_error, parse_flag,
};
use super::text::Lines;
use crate::error::{MemoryError, MemoryResult};
use dragoman_model::vocab::{CsvDelimiter, Issue, IssueContext, IssueKind};
use std::collections::BTreeMap;
use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

/// Records looked at to choose the delimiter.
const SAMPLE_RECORDS: usize = 50;

/// How the caller asks the file to be read; `None` and an empty mapping
/// leave it to detection.
pub struct CsvOptions<'a> {
    pub delimiter: Option<CsvDelimiter>,
    pub header: Option<bool>,
    pub mapping: &'a BTreeMap<String, u32>,
}

/// The rows of a CSV file and how it was read.
#[derive(Debug)]
pub struct CsvRead {
    pub rows: Vec<Row>,
    pub delimiter: CsvDelimiter,
    pub header: bool,
    /// The header's fields, or `column 1`, `column 2`… without header.
    pub columns: Vec<String>,
    /// The column each field was read from.
    pub mapping: BTreeMap<&'static str, usize>,
}

/// A record that is neither blank nor a section heading.
struct Record {
    line: usize,
    cells: Vec<String>,
}

fn reader(text: &str, delimiter: CsvDelimiter) -> csv::Reader<&[u8]> {
    csv::ReaderBuilder::new()
        .delimiter(delimiter.byte())
        .has_headers(false)
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(text.as_bytes())
}

/// The delimiter splitting the first records most consistently.
pub fn detect_delimiter(text: &str) -> CsvDelimiter {
    let mut best = (CsvDelimiter::Comma, (0, 0, 0));
    // Preference on ties: a tab or a semicolon is rarely there by chance.
    for (preference, delimiter) in [
        (0, CsvDelimiter::Comma),
        (1, CsvDelimiter::Semicolon),
        (2, CsvDelimiter::Tab),
    ] {
        let mut lengths: BTreeMap<usize, usize> = BTreeMap::new();
        for record in reader(text, delimiter)
            .records()
            .take(SAMPLE_RECORDS)
            .flatten()
        {
            if record.len() >= 2 {
                *lengths.entry(record.len()).or_default() += 1;
            }
        }
        let split: usize = lengths.values().sum();
        let consistent = lengths.values().copied().max().unwrap_or(0);
        let score = (consistent, split, preference);
        if split > 0 && score > best.1 {
            best = (delimiter, score);
        }
    }
    best.0
}

/// A header's name folded for comparison: lowercase, accents removed,
/// `_` and `-` as spaces, spaces collapsed.
fn fold(name: &str) -> String {
    let plain: String = name
        .nfd()
        .filter(|c| !is_combining_mark(*c))
        .map(|c| if c == '_' || c == '-' { ' ' } else { c })
        .collect::<String>()
        .to_lowercase();
    plain.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The field a header names, in English or French.
pub fn header_field(name: &str) -> Option<&'static str> {
    let folded = fold(name);
    let field = match folded.as_str() {
        "source" | "term" | "terme" | "original" | "source term" | "terme source"
        | "source text" | "texte source" | "texte original" => "source",
        "translation" | "traduction" | "target" | "cible" | "target term" | "terme cible"
        | "translated" | "target text" | "texte cible" => "translation",
        "category" | "categorie" | "type" | "domain" | "domaine" => "category",
        "description" | "definition" | "note" | "notes" | "comment" | "comments"
        | "commentaire" | "commentaires" | "context" | "contexte" => "description",
        "locked" | "lock" | "verrouille" | "verrou" => "locked",
        "accepted" | "accepte" | "valide" | "validated" | "approved" | "approuve" => "accepted",
        _ => return None,
    };
    Some(field)
}

/// Whether a first row is a header: two of its fields name distinct
/// known fields (one word alone is too often a term: `Type`, `Note`).
fn looks_like_header(cells: &[String]) -> bool {
    let mut named: Vec<&str> = cells.iter().filter_map(|c| header_field(c)).collect();
    named.sort_unstable();
    named.dedup();
    named.len() >= 2
}

fn is_section_heading(cells: &[String]) -> bool {
    let filled = cells.iter().filter(|c| !c.is_empty()).count();
    filled == 1 && cells.first().is_some_and(|c| c.starts_with('#'))
}

fn mapping_issue(kind: IssueKind, ctx: IssueContext) -> MemoryError {
    MemoryError::InvalidRequest(vec![Issue::at("body", "mapping", kind).with_ctx(ctx)])
}

pub fn read(text: &str, options: &CsvOptions<'_>) -> MemoryResult<CsvRead> {
    let delimiter = options.delimiter.unwrap_or_else(|| detect_delimiter(text));
    let mut records = Vec::new();
    let mut lines = Lines::new(text);
    for record in reader(text, delimiter).records() {
        // Only broken UTF-8 fails a lenient reader, and the text is a str.
        let record = record.map_err(|e| MemoryError::InvalidFile {
            message: "the CSV file cannot be read".into(),
            line: e.position().and_then(|p| usize::try_from(p.line()).ok()),
            column: None,
        })?;
        // The reader's own line count leaves out the blank lines it skips;
        // its byte offsets do not, but may point at those blank lines.
        let mut offset = record
            .position()
            .and_then(|p| usize::try_from(p.byte()).ok())
            .unwrap_or(0);
        let bytes = text.as_bytes();
        while bytes
            .get(offset)
            .is_some_and(|b| matches!(b, b'\r' | b'\n'))
        {
            offset += 1;
        }
        let line = lines.line(offset);
        let cells: Vec<String> = record.iter().map(str::to_owned).collect();
        if cells.iter().all(|c| c.is_empty()) || is_section_heading(&cells) {
            continue;
        }
        records.push(Record { line, cells });
    }
    let width = records.iter().map(|r| r.cells.len()).max().unwrap_or(0);
    if records.is_empty() {
        // Nothing to map: the import refuses the empty file as such.
        return Ok(CsvRead {
            rows: Vec::new(),
            delimiter,
            header: options.header.unwrap_or(false),
            columns: Vec::new(),
            mapping: BTreeMap::new(),
        });
    }
    let header = options
        .header
        .unwrap_or_else(|| records.first().is_some_and(|r| looks_like_header(&r.cells)));
    let (columns, data) = match (header, records.split_first()) {
        (true, Some((first, rest))) => {
            // A column the header leaves unnamed is called by its number.
            let names: Vec<String> = (0..width)
                .map(|i| match first.cells.get(i) {
                    Some(name) if !name.is_empty() => name.clone(),
                    _ => format!("column {}", i + 1),
                })
                .collect();
            (names, rest)
        }
        _ => (
            (1..=width).map(|i| format!("column {i}")).collect(),
            records.as_slice(),
        ),
    };
    let mapping = columns_of_fields(&columns, header, width, options.mapping)?;
    let rows = data
        .iter()
        .map(|record| Row {
            line: record.line,
            read: fields_of(&record.cells, &mapping),
        })
        .collect();
    Ok(CsvRead {
        rows,
        delimiter,
        header,
        columns,
        mapping,
    })
}

/// Which column each field comes from: the header's names, then the
/// caller's mapping over them, then the first free columns for the source
/// and the translation.
fn columns_of_fields(
    columns: &[String],
    header: bool,
    width: usize,
    requested: &BTreeMap<String, u32>,
) -> MemoryResult<BTreeMap<&'static str, usize>> {
    let mut mapping: BTreeMap<&'static str, usize> = BTreeMap::new();
    if header {
        for (index, name) in columns.iter().enumerate() {
            if let Some(field) = header_field(name) {
                mapping.entry(field).or_insert(index);
            }
        }
    }
    for (name, column) in requested {
        let Some(field) = field_name(name) else {
            return Err(mapping_issue(
                IssueKind::Enum,
                IssueContext::new().expected(FIELDS.join(", ")),
            ));
        };
        let column = usize::try_from(*column).unwrap_or(usize::MAX);
        if column >= width {
            return Err(mapping_issue(
                IssueKind::OutOfRange,
                IssueContext::new().min(0).max(width.saturating_sub(1)),
            ));
        }
        // A column the caller gave a field is that field's alone.
        mapping.retain(|f, c| *c != column || requested.contains_key(*f));
        mapping.insert(field, column);
    }
    for field in ["source", "translation"] {
        if mapping.contains_key(field) {
            continue;
        }
        let free = (0..width).find(|c| !mapping.values().any(|used| used == c));
        if let Some(column) = free {
            mapping.insert(field, column);
        }
    }
    Ok(mapping)
}

fn fields_of(
    cells: &[String],
    mapping: &BTreeMap<&'static str, usize>,
) -> Result<TermFields, String> {
    let cell = |field: &str| -> &str {
        mapping
            .get(field)
            .and_then(|c| cells.get(*c))
            .map_or("", String::as_str)
    };
    let flag = |field: &str, default: bool| {
        parse_flag(cell(field), default).ok_or_else(|| flag_error(field))
    };
    Ok(TermFields {
        source: cell("source").to_owned(),
        translation: cell("translation").to_owned(),
        category: cell("category").to_owned(),
        description: cell("description").to_owned(),
        locked: flag("locked", DEFAULT_LOCKED)?,
        accepted: flag("accepted", DEFAULT_ACCEPTED)?,
    })
}

/// The export: an English header, then one record per term; fields are
/// quoted when they hold the delimiter, a quote or a line break.
pub fn write(terms: &[TermFields], delimiter: CsvDelimiter, bom: bool) -> MemoryResult<Vec<u8>> {
    let start = if bom {
        b"\xEF\xBB\xBF".to_vec()
    } else {
        Vec::new()
    };
    let mut writer = csv::WriterBuilder::new()
        .delimiter(delimiter.byte())
        .from_writer(start);
    let failed = |e: csv::Error| MemoryError::Export(e.to_string());
    writer.write_record(FIELDS).map_err(failed)?;
    for term in terms {
        writer
            .write_record([
                term.source.as_str(),
                term.translation.as_str(),
                term.category.as_str(),
                term.description.as_str(),
                if term.locked { "true" } else { "false" },
                if term.accepted { "true" } else { "false" },
            ])
            .map_err(failed)?;
    }
    writer
        .into_inner()
        .map_err(|e| MemoryError::Export(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read_default(text: &str) -> CsvRead {
        read(
            text,
            &CsvOptions {
                delimiter: None,
                header: None,
                mapping: &BTreeMap::new(),
            },
        )
        .expect("readable")
    }

    fn sources(read: &CsvRead) -> Vec<String> {
        read.rows
            .iter()
            .map(|r| {
                r.read
                    .as_ref()
                    .map_or_else(|e| format!("error: {e}"), |f| f.source.clone())
            })
            .collect()
    }

    #[test]
    fn the_consistent_delimiter_wins() {
        assert_eq!(detect_delimiter("a,b\nc,d\n"), CsvDelimiter::Comma);
        assert_eq!(detect_delimiter("a;b, c\nd;e\n"), CsvDelimiter::Semicolon);
        assert_eq!(detect_delimiter("a\tb, c\nd\te, f\n"), CsvDelimiter::Tab);
        // One line with a semicolon in its text does not outvote commas.
        assert_eq!(
            detect_delimiter("kde,q\nkde; question,comma\nx,y\n"),
            CsvDelimiter::Comma
        );
        assert_eq!(detect_delimiter("single\n"), CsvDelimiter::Comma);
    }

    #[test]
    fn headers_are_recognised_in_french_and_english() {
        assert_eq!(header_field(" Terme  Source "), Some("source"));
        assert_eq!(header_field("CATÉGORIE"), Some("category"));
        assert_eq!(header_field("Définition"), Some("description"));
        assert_eq!(header_field("verrouillé"), Some("locked"));
        assert_eq!(header_field("Validé"), Some("accepted"));
        assert_eq!(header_field("target_term"), Some("translation"));
        assert_eq!(header_field("English"), None);
        let read = read_default("Terme;Traduction;Notes;Verrouillé\nchat;cat;animal;oui;x\n");
        assert!(read.header);
        assert_eq!(read.delimiter, CsvDelimiter::Semicolon);
        assert_eq!(
            read.columns,
            vec!["Terme", "Traduction", "Notes", "Verrouillé", "column 5"]
        );
        let row = read.rows[0].read.as_ref().expect("row");
        assert_eq!(read.rows[0].line, 2);
        assert_eq!(
            (
                row.source.as_str(),
                row.translation.as_str(),
                row.description.as_str()
            ),
            ("chat", "cat", "animal")
        );
        assert!(row.locked && row.accepted);
    }

    #[test]
    fn one_known_word_is_not_a_header() {
        let read = read_default("Type,类型\nNote,笔记\n");
        assert!(!read.header);
        assert_eq!(sources(&read), vec!["Type", "Note"]);
        assert_eq!(read.columns, vec!["column 1", "column 2"]);
    }

    #[test]
    fn headings_and_blank_lines_are_skipped_and_lines_kept() {
        let read = read_default("\n## Colours\n\nBlack, 黑色\n#hash, 井号\nRed\n");
        // "Red" has no translation: the row is read, and refused when checked.
        assert_eq!(sources(&read), vec!["Black", "#hash", "Red"]);
        let lines: Vec<usize> = read.rows.iter().map(|r| r.line).collect();
        assert_eq!(lines, vec![4, 5, 6]);
    }

    #[test]
    fn flags_that_are_not_words_are_row_errors() {
        let read = read_default("source,translation,locked\na,b,maybe\nc,d,\n");
        assert_eq!(read.rows[0].read, Err(flag_error("locked")),);
        assert_eq!(read.rows[0].line, 2);
        let second = read.rows[1].read.as_ref().expect("row");
        assert!(!second.locked && second.accepted);
    }

    #[test]
    fn a_mapping_overrides_the_header_and_is_checked() {
        let mapping = BTreeMap::from([("description".to_owned(), 2), ("source".to_owned(), 1)]);
        let options = CsvOptions {
            delimiter: Some(CsvDelimiter::Comma),
            header: Some(false),
            mapping: &mapping,
        };
        let read = read("x,chat,félin\n", &options).expect("mapped");
        assert_eq!(
            read.mapping,
            BTreeMap::from([("description", 2), ("source", 1), ("translation", 0)])
        );
        let row = read.rows[0].read.as_ref().expect("row");
        assert_eq!(
            (row.source.as_str(), row.translation.as_str()),
            ("chat", "x")
        );
        for mapping in [
            BTreeMap::from([("source".to_owned(), 3)]),
            BTreeMap::from([("nonsense".to_owned(), 0)]),
        ] {
            let refused = super::read(
                "a,b,c\n",
                &CsvOptions {
                    delimiter: None,
                    header: None,
                    mapping: &mapping,
                },
            )
            .expect_err("refused");
            let MemoryError::InvalidRequest(issues) = refused else {
                panic!("not an invalid request");
            };
            assert_eq!(issues[0].loc, vec![json!("body"), json!("mapping")]);
        }
    }

    #[test]
    fn quoting_follows_the_csv_crate_leniently() {
        let read = read_default("\"a, b\",x\nzz\"zz,y\n\"\"\"q\"\"\",z\n");
        assert_eq!(sources(&read), vec!["a, b", "zz\"zz", "\"q\""]);
    }

    #[test]
    fn the_export_quotes_what_needs_it() {
        let term = TermFields {
            source: "a;b".into(),
            translation: "c,d".into(),
            category: String::new(),
            description: "line\n\"two\"".into(),
            locked: true,
            accepted: false,
        };
        let bytes = write(std::slice::from_ref(&term), CsvDelimiter::Semicolon, true).expect("csv");
        let text = String::from_utf8(bytes).expect("utf-8");
        assert_eq!(
            text,
            "\u{feff}source;translation;category;description;locked;accepted\n\
             \"a;b\";c,d;;\"line\n\"\"two\"\"\";true;false\n"
        );
    }
}
