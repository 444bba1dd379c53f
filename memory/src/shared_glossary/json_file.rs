//! Glossary JSON files: a list of objects with the six fields, which the
//! export writes and the import reads. `category` and `description` may be
//! missing or null; the flags may be booleans, null (the default) or one
//! of the flag words; other keys (an `id` from another tool) are ignored.
//! A row's line is the item's index from 1.

use super::fields::{DEFAULT_ACCEPTED, DEFAULT_LOCKED, Row, TermFields, flag_error, parse_flag};
use super::text::line_column;
use crate::error::{MemoryError, MemoryResult};
use serde_json::{Map, Value};

pub fn read(text: &str) -> MemoryResult<Vec<Row>> {
    let value: Value = serde_json::from_str(text).map_err(|e| MemoryError::InvalidFile {
        message: format!("not valid JSON at line {}, column {}", e.line(), e.column()),
        line: Some(e.line()),
        column: Some(e.column()),
    })?;
    let Value::Array(items) = value else {
        let (line, column) = line_column(text, text.len() - text.trim_start().len());
        return Err(MemoryError::InvalidFile {
            message: "a JSON glossary is a list of terms".into(),
            line: Some(line),
            column: Some(column),
        });
    };
    Ok(items
        .iter()
        .enumerate()
        .map(|(index, item)| Row {
            line: index + 1,
            read: match item {
                Value::Object(object) => fields_of(object),
                _ => Err("the item is not an object".into()),
            },
        })
        .collect())
}

fn fields_of(object: &Map<String, Value>) -> Result<TermFields, String> {
    let text = |field: &str, required: bool| match object.get(field) {
        Some(Value::String(s)) => Ok(s.clone()),
        None | Some(Value::Null) if !required => Ok(String::new()),
        None | Some(Value::Null) => Err(format!("{field} is missing")),
        Some(_) => Err(format!("{field} must be a string")),
    };
    let flag = |field: &str, default: bool| match object.get(field) {
        None | Some(Value::Null) => Ok(default),
        Some(Value::Bool(b)) => Ok(*b),
        Some(Value::String(s)) => parse_flag(s, default).ok_or_else(|| flag_error(field)),
        Some(Value::Number(n)) if n.as_u64() == Some(1) => Ok(true),
        Some(Value::Number(n)) if n.as_u64() == Some(0) => Ok(false),
        Some(_) => Err(flag_error(field)),
    };
    Ok(TermFields {
        source: text("source", true)?,
        translation: text("translation", true)?,
        category: text("category", false)?,
        description: text("description", false)?,
        locked: flag("locked", DEFAULT_LOCKED)?,
        accepted: flag("accepted", DEFAULT_ACCEPTED)?,
    })
}

/// The export: the terms as a pretty-printed list.
pub fn write(terms: &[TermFields]) -> MemoryResult<Vec<u8>> {
    let mut bytes =
        serde_json::to_vec_pretty(terms).map_err(|e| MemoryError::Export(e.to_string()))?;
    bytes.push(b'\n');
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_are_rows_numbered_from_one() {
        let rows = read(
            r#"[
              {"source": "chat", "translation": "cat", "id": 7},
              {"source": "chien", "translation": "dog", "category": null,
               "locked": "oui", "accepted": 0},
              {"source": "x"},
              "text",
              {"source": "y", "translation": "z", "locked": "peut-être"},
              {"source": 3, "translation": "z"}
            ]"#,
        )
        .expect("list");
        let first = rows[0].read.as_ref().expect("first");
        assert!(!first.locked && first.accepted && first.category.is_empty());
        let second = rows[1].read.as_ref().expect("second");
        assert!(second.locked && !second.accepted);
        let errors: Vec<(usize, String)> = rows
            .iter()
            .filter_map(|r| r.read.as_ref().err().map(|e| (r.line, e.clone())))
            .collect();
        assert_eq!(
            errors,
            vec![
                (3, "translation is missing".to_owned()),
                (4, "the item is not an object".to_owned()),
                (5, flag_error("locked")),
                (6, "source must be a string".to_owned()),
            ]
        );
    }

    #[test]
    fn broken_json_is_refused_with_its_position() {
        let refused = read("[\n  {\"source\": }\n]").expect_err("broken");
        let MemoryError::InvalidFile { line, .. } = refused else {
            panic!("not a file error");
        };
        assert_eq!(line, Some(2));
        assert!(matches!(
            read("{\"terms\": []}"),
            Err(MemoryError::InvalidFile { .. })
        ));
    }
}
