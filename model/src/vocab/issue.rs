//! Validation issues (spec 2.12): where a value is wrong and what kind of
//! wrong, never the value itself. Every service reports issues with this
//! type; the gateway renders their message in the caller's language.

use sea_orm::sea_query::StringLen;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Where an issue is: `["body", "chapters", 3, "title"]`, `["query", "wait"]`.
pub type Loc = Vec<LocPart>;

/// One step of a location: a list index or a field name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum LocPart {
    Index(u64),
    Field(String),
}

impl From<&str> for LocPart {
    fn from(name: &str) -> Self {
        Self::Field(name.to_owned())
    }
}

impl From<String> for LocPart {
    fn from(name: String) -> Self {
        Self::Field(name)
    }
}

impl From<&String> for LocPart {
    fn from(name: &String) -> Self {
        Self::Field(name.clone())
    }
}

impl From<u64> for LocPart {
    fn from(index: u64) -> Self {
        Self::Index(index)
    }
}

impl From<usize> for LocPart {
    fn from(index: usize) -> Self {
        Self::Index(index as u64)
    }
}

impl LocPart {
    /// The field name, when this step is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Self::Field(name) => Some(name),
            Self::Index(_) => None,
        }
    }
}

impl std::fmt::Display for LocPart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Index(index) => write!(f, "{index}"),
            Self::Field(name) => f.write_str(name),
        }
    }
}

impl PartialEq<&str> for LocPart {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == Some(*other)
    }
}

impl PartialEq<Value> for LocPart {
    fn eq(&self, other: &Value) -> bool {
        match self {
            Self::Index(index) => other.as_u64() == Some(*index),
            Self::Field(name) => other.as_str() == Some(name.as_str()),
        }
    }
}

/// A value an issue's message states: a number (`min`, `max`, `position`)
/// or a text (`expected`, `conflicts_with`, …).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ContextValue {
    Number(serde_json::Number),
    Text(String),
    List(Vec<String>),
}

macro_rules! context_numbers {
    ($($t:ty),+) => {
        $(impl From<$t> for ContextValue {
            fn from(n: $t) -> Self {
                Self::Number(n.into())
            }
        })+
    };
}
context_numbers!(u8, u16, u32, u64, usize, i8, i16, i32, i64, isize);

impl From<f64> for ContextValue {
    fn from(n: f64) -> Self {
        serde_json::Number::from_f64(n).map_or_else(|| Self::Text(n.to_string()), Self::Number)
    }
}

impl From<&str> for ContextValue {
    fn from(text: &str) -> Self {
        Self::Text(text.to_owned())
    }
}

impl From<String> for ContextValue {
    fn from(text: String) -> Self {
        Self::Text(text)
    }
}

impl From<&String> for ContextValue {
    fn from(text: &String) -> Self {
        Self::Text(text.clone())
    }
}

impl<const N: usize> From<[&str; N]> for ContextValue {
    fn from(items: [&str; N]) -> Self {
        Self::List(items.iter().map(|&i| i.to_owned()).collect())
    }
}

impl ContextValue {
    /// The value as a whole number, when it is one.
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Self::Number(n) => n.as_u64(),
            _ => None,
        }
    }
}

impl std::fmt::Display for ContextValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Number(n) => write!(f, "{n}"),
            Self::Text(text) => f.write_str(text),
            Self::List(items) => f.write_str(&items.join(", ")),
        }
    }
}

macro_rules! issue_context {
    ($($(#[$doc:meta])* $field:ident),+ $(,)?) => {
        /// The limits and choices an issue's message states. The fields are
        /// in alphabetical order, the order clients have always seen.
        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
        pub struct IssueContext {
            $(
                $(#[$doc])*
                #[serde(default, skip_serializing_if = "Option::is_none")]
                pub $field: Option<ContextValue>,
            )+
        }

        impl IssueContext {
            $(
                $(#[$doc])*
                pub fn $field(mut self, value: impl Into<ContextValue>) -> Self {
                    self.$field = Some(value.into());
                    self
                }
            )+

            /// The value of the field `name`, for messages.
            pub fn get(&self, name: &str) -> Option<&ContextValue> {
                match name {
                    $(stringify!($field) => self.$field.as_ref(),)+
                    _ => None,
                }
            }
        }
    };
}

issue_context! {
    /// The chapter a per-chapter issue is about.
    chapter,
    /// The column of a file where the issue is.
    column,
    /// The field this one cannot be given with.
    conflicts_with,
    /// The values or form accepted.
    expected,
    /// The fields of which one is needed.
    fields,
    /// What the files of a request must be.
    files,
    /// How many there are.
    found,
    /// What `latest` applies to.
    latest,
    /// How many are allowed.
    limit,
    /// The line of a file where the issue is.
    line,
    /// The largest value or length accepted.
    max,
    /// What `limit` and `found` count.
    measure,
    /// The smallest value or length accepted.
    min,
    /// What is wrong with a multipart body.
    multipart,
    /// The fields of which exactly one must be given.
    one_of,
    /// The 1-based position of a list item.
    position,
    /// Why a value was refused.
    reason,
    /// The field this one requires.
    requires,
    /// What `split` applies to.
    split,
    /// The values accepted.
    values,
    /// What the field must come with.
    with,
}

impl IssueContext {
    pub fn new() -> Self {
        Self::default()
    }
}

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
    /// Boxed: most issues have none, and an issue travels in every
    /// refusal's `Result`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ctx: Option<Box<IssueContext>>,
}

impl Issue {
    pub fn new<P: Into<LocPart>>(loc: impl IntoIterator<Item = P>, kind: IssueKind) -> Self {
        Self {
            loc: loc.into_iter().map(Into::into).collect(),
            kind,
            ctx: None,
        }
    }

    /// An issue under `root` (`body` or `query`) at a dotted path whose
    /// numeric parts are list indexes: `at("body", "chapters.3.title", …)`.
    pub fn at(root: &str, path: &str, kind: IssueKind) -> Self {
        let mut loc = vec![LocPart::from(root)];
        loc.extend(path.split('.').filter(|p| !p.is_empty()).map(
            |part| match part.parse::<u64>() {
                Ok(index) => LocPart::Index(index),
                Err(_) => LocPart::from(part),
            },
        ));
        Self::new(loc, kind)
    }

    /// Adds limits such as `min` and `max` used in the message.
    pub fn with_ctx(mut self, ctx: IssueContext) -> Self {
        self.ctx = Some(Box::new(ctx));
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
