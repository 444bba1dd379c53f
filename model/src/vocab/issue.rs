//! Validation issues (spec 2.12): where a value is wrong and what kind of
//! wrong, never the value itself. Every service reports issues with this
//! type; the gateway renders their message in the caller's language.

use sea_orm::sea_query::StringLen;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Where an issue is: `["body", "chapters", 3, "title"]`, `["query", "wait"]`.
pub type Loc = Vec<Value>;

vocabulary! {
    /// What is wrong with a value; the human message is derived from it.
    IssueKind {
        Missing = "missing",
        ExtraForbidden = "extra_forbidden",
        TypeError = "type_error",
        JsonInvalid = "json_invalid",
        StringTooShort = "string_too_short",
        StringTooLong = "string_too_long",
        OutOfRange = "out_of_range",
        Enum = "enum",
        EmptyList = "empty_list",
        Duplicate = "duplicate",
        TooMany = "too_many",
        Pattern = "pattern",
        NotPositive = "not_positive",
        ValueError = "value_error",
    }
}

/// One located problem, with the limits its message states (`min`, `max`,
/// `expected`, …).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Issue {
    pub loc: Loc,
    #[serde(rename = "type")]
    pub kind: IssueKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ctx: Option<Value>,
}

impl Issue {
    pub fn new(loc: impl IntoIterator<Item = Value>, kind: IssueKind) -> Self {
        Self {
            loc: loc.into_iter().collect(),
            kind,
            ctx: None,
        }
    }

    /// An issue under `root` (`body` or `query`) at a dotted path whose
    /// numeric parts are list indexes: `at("body", "chapters.3.title", …)`.
    pub fn at(root: &str, path: &str, kind: IssueKind) -> Self {
        let mut loc = vec![Value::from(root)];
        loc.extend(path.split('.').filter(|p| !p.is_empty()).map(
            |part| match part.parse::<u64>() {
                Ok(index) => Value::from(index),
                Err(_) => Value::from(part),
            },
        ));
        Self::new(loc, kind)
    }

    /// Adds limits such as `{"min": 1, "max": 100}` used in the message.
    pub fn with_ctx(mut self, ctx: Value) -> Self {
        self.ctx = Some(ctx);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn dotted_paths_become_locations() {
        let issue = Issue::at("body", "chapters.3.title", IssueKind::StringTooLong);
        assert_eq!(
            issue.loc,
            vec![json!("body"), json!("chapters"), json!(3), json!("title")]
        );
        let text = serde_json::to_value(&issue).expect("serializes");
        assert_eq!(text["type"], "string_too_long");
        assert!(text.get("ctx").is_none());
    }
}
