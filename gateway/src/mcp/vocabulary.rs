//! The argument schema of a vocabulary (a closed set of spec strings): a
//! string schema listing the values, so a client sees what it may send.

use rmcp::schemars::Schema;
use serde_json::Value;

/// A string schema whose values are `values` (a vocabulary's spec
/// strings, in its order).
pub fn one_of<'a>(values: impl IntoIterator<Item = &'a str>) -> Schema {
    let values: Vec<&str> = values.into_iter().collect();
    let mut schema = Schema::default();
    schema.insert("type".into(), Value::from("string"));
    schema.insert("enum".into(), Value::from(values));
    schema
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_values_are_listed_in_order() {
        let schema = one_of(["pause", "resume", "cancel"]);
        assert_eq!(
            serde_json::to_value(&schema).expect("serializes"),
            json!({"enum": ["pause", "resume", "cancel"], "type": "string"})
        );
    }
}
