//! What the analysis of a passage finds: the named things, term
//! candidates, style notes, summary and events a model reports, typed once
//! for the pipeline that reads the model's answer and the memory that
//! stores and merges it.
//!
//! Reading is lenient item by item: an entity of a kind the vocabulary
//! does not name, a style note of an unknown aspect or a malformed item is
//! left out, and a `null` list counts as empty, so a model that invents
//! one value still gives the rest of its analysis (and a stored analysis
//! written by an older release still reads).

use crate::vocab::{BibleAspect, EntityKind};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// A named thing the model found in a passage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExtractedEntity {
    pub kind: EntityKind,
    pub name: String,
    #[serde(default, deserialize_with = "lenient")]
    pub aliases: Vec<String>,
    #[serde(default)]
    pub target_name: Option<String>,
    #[serde(default)]
    pub gender: Option<String>,
    #[serde(default)]
    pub address: Option<String>,
    #[serde(default, deserialize_with = "text")]
    pub description: String,
    /// The words of the passage it rests on.
    #[serde(default, deserialize_with = "text")]
    pub evidence: String,
}

/// A term the model found, with the translation it suggests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExtractedTerm {
    pub source: String,
    #[serde(default)]
    pub translation: Option<String>,
    #[serde(default, deserialize_with = "text")]
    pub category: String,
    #[serde(default, deserialize_with = "text")]
    pub evidence: String,
}

/// A remark on the style of a passage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StyleNote {
    pub aspect: BibleAspect,
    pub text: String,
    #[serde(default, deserialize_with = "text")]
    pub evidence: String,
}

/// What the analysis of one passage gave; stored as JSON in
/// `passage_analyses.extraction`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Extraction {
    #[serde(default, deserialize_with = "lenient")]
    pub entities: Vec<ExtractedEntity>,
    #[serde(default, deserialize_with = "lenient")]
    pub terms: Vec<ExtractedTerm>,
    #[serde(default, deserialize_with = "lenient")]
    pub style: Vec<StyleNote>,
    #[serde(default, deserialize_with = "text")]
    pub summary: String,
    #[serde(default, deserialize_with = "lenient")]
    pub events: Vec<String>,
}

/// One passage's analysis as handed to the memory.
#[derive(Debug, Clone, PartialEq)]
pub struct PassageExtraction {
    pub passage_id: String,
    pub extraction: Extraction,
    /// No usable analysis after every attempt: stored, never retried.
    pub failed: bool,
}

/// A list whose items that do not read as `T` are left out; `null` is
/// empty.
fn lenient<'de, D, T>(deserializer: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned,
{
    let items: Option<Vec<Value>> = Option::deserialize(deserializer)?;
    Ok(items
        .unwrap_or_default()
        .into_iter()
        .filter_map(|item| serde_json::from_value(item).ok())
        .collect())
}

/// A text that may be `null` (empty).
fn text<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    Ok(Option::<String>::deserialize(deserializer)?.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_kinds_and_malformed_items_are_left_out() {
        let read: Extraction = serde_json::from_str(
            r#"{"entities": [{"kind": "character", "name": "Alice"}, {"kind": "dragon", "name": "Smaug"}, 3],
                "terms": null,
                "style": [{"aspect": "tense", "text": "past"}, {"aspect": "mood", "text": "x"}],
                "summary": null,
                "events": ["runs", 4]}"#,
        )
        .expect("lenient");
        assert_eq!(read.entities.len(), 1);
        assert_eq!(read.entities[0].kind, EntityKind::Character);
        assert!(read.terms.is_empty());
        assert_eq!(read.style.len(), 1);
        assert_eq!(read.summary, "");
        assert_eq!(read.events, ["runs"]);
    }
}
