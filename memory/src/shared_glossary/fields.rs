//! The six fields of a glossary file and what every reader hands over: one
//! row per term with the line it starts on. A row is checked with the rules
//! of a person's term ([`crate::terms::validate`]) and normalized the way
//! [`crate::terms::put`] stores it, so a file can never hold a term a person
//! could not have entered.

use crate::domain::TermInput;
use crate::normalize::{match_key, normalize_text};
use crate::terms;
use dragoman_model::entities::term;
use dragoman_model::vocab::{ContextValue, IssueKind, LocPart, TermLayer};
use serde::Serialize;

/// The fields of a term in a file, in the order exports write them.
pub const FIELDS: [&str; 6] = [
    "source",
    "translation",
    "category",
    "description",
    "locked",
    "accepted",
];

/// A field name of [`FIELDS`] as the `'static` string it is.
pub fn field_name(name: &str) -> Option<&'static str> {
    FIELDS.iter().copied().find(|f| *f == name)
}

/// A term as a file carries it, and the object exports write and the
/// JSON import reads (keys in alphabetical order).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TermFields {
    pub accepted: bool,
    pub category: String,
    pub description: String,
    pub locked: bool,
    pub source: String,
    pub translation: String,
}

impl TermFields {
    pub fn of(term: &term::Model) -> TermFields {
        TermFields {
            source: term.source.clone(),
            translation: term.translation.clone(),
            category: term.category.clone(),
            description: term.description.clone(),
            locked: term.locked,
            accepted: term.accepted,
        }
    }

    /// The names of the fields that differ, in [`FIELDS`] order.
    pub fn differing(&self, other: &TermFields) -> Vec<&'static str> {
        let same = [
            self.source == other.source,
            self.translation == other.translation,
            self.category == other.category,
            self.description == other.description,
            self.locked == other.locked,
            self.accepted == other.accepted,
        ];
        FIELDS
            .iter()
            .zip(same)
            .filter(|(_, same)| !same)
            .map(|(name, _)| *name)
            .collect()
    }
}

/// One row a reader found: the line it starts on (for JSON, the item's
/// index from 1), and its fields or why they cannot be read. Messages are
/// English and never quote the row's values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub line: usize,
    pub read: Result<TermFields, String>,
}

/// Defaults of the two flags when a file leaves them out: a term imported
/// from a file is applied (accepted) but not enforced (locked).
pub const DEFAULT_LOCKED: bool = false;
pub const DEFAULT_ACCEPTED: bool = true;

/// The words a flag may be written with (case-insensitive); an empty value
/// takes the default.
pub const TRUE_WORDS: [&str; 4] = ["true", "yes", "oui", "1"];
pub const FALSE_WORDS: [&str; 4] = ["false", "no", "non", "0"];

/// Reads a flag: `None` when the text is not one of the words.
pub fn parse_flag(text: &str, default: bool) -> Option<bool> {
    let word = text.trim().to_lowercase();
    if word.is_empty() {
        Some(default)
    } else if TRUE_WORDS.contains(&word.as_str()) {
        Some(true)
    } else if FALSE_WORDS.contains(&word.as_str()) {
        Some(false)
    } else {
        None
    }
}

/// The row error of a flag written with another word.
pub fn flag_error(field: &str) -> String {
    format!("{field} must be one of true, false, yes, no, oui, non, 1, 0 (or empty)")
}

/// A row that passed the rules, as it would be stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    pub fields: TermFields,
    /// The source as terms are matched ([`match_key`]).
    pub key: String,
}

/// Checks a row's fields with the rules of a person's term and normalizes
/// them as stored: the source's spaces collapsed, the other texts trimmed.
pub fn check(fields: TermFields, glossary_id: &str) -> Result<Checked, String> {
    let input = TermInput {
        layer: TermLayer::Shared,
        owner_id: glossary_id.to_owned(),
        source: fields.source,
        translation: fields.translation,
        category: fields.category,
        description: fields.description,
        locked: fields.locked,
        accepted: fields.accepted,
    };
    let issues = terms::validate(&input);
    if !issues.is_empty() {
        let messages: Vec<String> = issues
            .iter()
            .map(|issue| {
                let field = issue
                    .loc
                    .last()
                    .and_then(LocPart::as_str)
                    .unwrap_or("value")
                    .to_owned();
                let limit = |key: &str| {
                    issue
                        .ctx
                        .as_ref()
                        .and_then(|ctx| ctx.get(key))
                        .and_then(ContextValue::as_u64)
                        .unwrap_or_default()
                };
                match issue.kind {
                    IssueKind::StringTooShort => format!("{field} is empty"),
                    IssueKind::StringTooLong => {
                        format!("{field} is longer than {} characters", limit("max"))
                    }
                    _ => format!("{field} is invalid"),
                }
            })
            .collect();
        return Err(messages.join("; "));
    }
    let source = normalize_text(&input.source);
    let key = match_key(&source);
    Ok(Checked {
        fields: TermFields {
            source,
            translation: input.translation.trim().to_owned(),
            category: input.category.trim().to_owned(),
            description: input.description.trim().to_owned(),
            locked: input.locked,
            accepted: input.accepted,
        },
        key,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(source: &str, translation: &str) -> TermFields {
        TermFields {
            source: source.into(),
            translation: translation.into(),
            category: String::new(),
            description: String::new(),
            locked: false,
            accepted: true,
        }
    }

    #[test]
    fn flags_take_english_french_and_digits() {
        for word in ["true", "YES", " Oui ", "1"] {
            assert_eq!(parse_flag(word, false), Some(true), "{word}");
        }
        for word in ["false", "No", "NON", "0"] {
            assert_eq!(parse_flag(word, true), Some(false), "{word}");
        }
        assert_eq!(parse_flag("  ", true), Some(true));
        assert_eq!(parse_flag("", false), Some(false));
        assert_eq!(parse_flag("vrai", false), None);
        assert_eq!(parse_flag("2", false), None);
    }

    #[test]
    fn rows_follow_the_rules_of_a_persons_term() {
        let checked = check(fields("  Dark \n Lord ", " Seigneur "), "g").expect("valid");
        assert_eq!(checked.fields.source, "Dark Lord");
        assert_eq!(checked.fields.translation, "Seigneur");
        assert_eq!(checked.key, "dark lord");
        let refused = check(fields("secret", &"x".repeat(501)), "g").expect_err("too long");
        assert_eq!(refused, "translation is longer than 500 characters");
        assert!(!refused.contains("secret"));
        let refused = check(fields(" ", ""), "g").expect_err("empty");
        assert_eq!(refused, "source is empty; translation is empty");
    }

    #[test]
    fn differing_fields_are_named_in_order() {
        let a = fields("a", "b");
        let mut b = fields("A", "b");
        b.locked = true;
        assert_eq!(a.differing(&b), vec!["source", "locked"]);
        assert!(a.differing(&a).is_empty());
    }
}
