//! Canonical JSON, and the SHA-256 fingerprints and checksums taken over it.
//!
//! Canonical form: object members sorted by key (byte order of their UTF-8,
//! which is code-point order), no whitespace outside strings, strings as
//! UTF-8 with only `"`, `\\` and control characters escaped (`\b`, `\f`,
//! `\n`, `\r`, `\t`, else `\u00xx`), integers in decimal: what
//! `serde_json` and RFC 8785 write for the values the bundles hold (they
//! hold no floating point number). So two equal documents always give the
//! same bytes, whether or not `serde_json`'s `preserve_order` feature is
//! active somewhere in the build: the key order is chosen here, never
//! inherited from the map type.
//!
//! The documents are the types of `dragoman_model::documents::narrative`;
//! what a fingerprint covers beyond one of their parts is put together with
//! [`Obj`] rather than `json!`, which can only fail through an `unwrap`.

use crate::error::MemoryResult;
use serde::Serialize;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// The canonical text of a JSON value.
pub fn canonical(value: &Value) -> String {
    let mut out = String::new();
    write(value, &mut out);
    out
}

fn write(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut members: Vec<(&String, &Value)> = map.iter().collect();
            members.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (key, member)) in members.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                push_string(key, out);
                out.push(':');
                write(member, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(item, out);
            }
            out.push(']');
        }
        Value::String(text) => push_string(text, out),
        Value::Null => out.push_str("null"),
        Value::Bool(flag) => out.push_str(if *flag { "true" } else { "false" }),
        Value::Number(number) => out.push_str(&number.to_string()),
    }
}

fn push_string(text: &str, out: &mut String) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Lower-case hex SHA-256 of some bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The fingerprint of a value: SHA-256 of its canonical text.
pub fn fingerprint(value: &Value) -> String {
    sha256_hex(canonical(value).as_bytes())
}

/// The fingerprint of a typed part: SHA-256 of the canonical text of what
/// it serialises to.
pub fn fingerprint_of(part: &impl Serialize) -> MemoryResult<String> {
    Ok(fingerprint(&serde_json::to_value(part)?))
}

/// The checksum of a document: SHA-256 of its canonical text without its
/// `generated_at` and `checksum` members, whatever they hold.
pub fn checksum(document: &impl Serialize) -> MemoryResult<String> {
    let mut body = serde_json::to_value(document)?;
    if let Value::Object(members) = &mut body {
        members.remove("checksum");
        members.remove("generated_at");
    }
    Ok(fingerprint(&body))
}

/// A JSON object under construction.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Obj(Map<String, Value>);

impl Obj {
    pub fn new() -> Obj {
        Obj::default()
    }

    /// Sets `key`; `Option::None` becomes `null`.
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Obj {
        self.0.insert(key.to_owned(), value.into());
        self
    }
}

impl From<Obj> for Value {
    fn from(obj: Obj) -> Value {
        Value::Object(obj.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_text_sorts_keys_at_every_depth_and_keeps_list_order() {
        let value = Value::from(Obj::new().with("zeta", vec![3, 1, 2]).with(
            "alpha",
            Obj::new().with("b", Value::Null).with("a", "é\"\n"),
        ));
        assert_eq!(
            canonical(&value),
            r#"{"alpha":{"a":"é\"\n","b":null},"zeta":[3,1,2]}"#
        );
    }

    #[test]
    fn strings_are_escaped_as_serde_json_escapes_them() {
        let text: String = (0u8..0x80).map(char::from).chain("é€𝄞".chars()).collect();
        let mut ours = String::new();
        push_string(&text, &mut ours);
        assert_eq!(ours, Value::from(text).to_string());
    }

    #[test]
    fn the_checksum_covers_the_body_without_its_two_varying_members() {
        let document = Value::from(
            Obj::new()
                .with("schema_version", 1)
                .with("x", "y")
                .with("checksum", "anything")
                .with("generated_at", 1_700_000_000),
        );
        let expected = sha256_hex(br#"{"schema_version":1,"x":"y"}"#);
        assert_eq!(checksum(&document).expect("JSON"), expected);
        let body = Value::from(Obj::new().with("x", "y").with("schema_version", 1));
        assert_eq!(fingerprint_of(&body).expect("JSON"), expected);
    }
}
