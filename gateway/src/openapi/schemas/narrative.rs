//! The narrative context documents (spec 2.11, 4.8) in the OpenAPI
//! document. Their shapes are those of `docs/narrative-context.schema.json`,
//! the JSON Schema the memory service's tests hold its answers to; each of
//! its `$defs` becomes a component named `Narrative<Def>`, so the two
//! descriptions are one.

use serde_json::{Map, Value};
use std::borrow::Cow;
use utoipa::openapi::{Ref, RefOr, Schema};
use utoipa::{PartialSchema, ToSchema};

/// The JSON Schema of the narrative context documents.
const NARRATIVE_SCHEMA: &str = include_str!("../../../../docs/narrative-context.schema.json");

const DEFS: &str = "#/$defs/";

/// The component name of a `$defs` entry: `book_bundle` is
/// `NarrativeBookBundle`.
pub fn component_name(def: &str) -> String {
    let mut name = String::from("Narrative");
    for word in def.split('_') {
        let mut chars = word.chars();
        if let Some(first) = chars.next() {
            name.extend(first.to_uppercase());
            name.push_str(chars.as_str());
        }
    }
    name
}

/// `$ref`s into `$defs` pointed at the components instead.
fn repoint(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(target)) = map.get_mut("$ref")
                && let Some(def) = target.strip_prefix(DEFS)
            {
                *target = format!("#/components/schemas/{}", component_name(def));
            }
            map.values_mut().for_each(repoint);
        }
        Value::Array(items) => items.iter_mut().for_each(repoint),
        _ => {}
    }
}

/// Every `$defs` entry as a component schema, by component name.
pub fn components() -> Result<Map<String, Value>, serde_json::Error> {
    let mut schema: Value = serde_json::from_str(NARRATIVE_SCHEMA)?;
    let defs = match schema.get_mut("$defs").map(Value::take) {
        Some(Value::Object(defs)) => defs,
        _ => Map::new(),
    };
    Ok(defs
        .into_iter()
        .map(|(def, mut value)| {
            repoint(&mut value);
            (component_name(&def), value)
        })
        .collect())
}

/// A type standing for one document of the narrative schema in route
/// annotations; its component is filled from the schema file.
macro_rules! narrative_document {
    ($(#[$meta:meta])* $name:ident = $def:literal) => {
        $(#[$meta])*
        pub struct $name;

        impl PartialSchema for $name {
            fn schema() -> RefOr<Schema> {
                RefOr::Ref(Ref::from_schema_name(component_name($def)))
            }
        }

        impl ToSchema for $name {
            fn name() -> Cow<'static, str> {
                Cow::Owned(component_name($def))
            }
        }
    };
}

narrative_document!(
    /// A book's narrative context bundle.
    BookBundle = "book_bundle"
);
narrative_document!(
    /// A book's fingerprints alone.
    BookRevision = "book_revision"
);
narrative_document!(
    /// A series' narrative context bundle.
    SeriesBundle = "series_bundle"
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_definition_becomes_a_component_and_refs_follow() {
        let components = components().expect("the schema file is JSON");
        for name in [
            "NarrativeBookBundle",
            "NarrativeBookRevision",
            "NarrativeSeriesBundle",
            "NarrativeId",
        ] {
            assert!(components.contains_key(name), "{name}");
        }
        let text = Value::Object(components.clone()).to_string();
        assert!(!text.contains("#/$defs/"), "every $ref repointed");
        assert!(text.contains("#/components/schemas/NarrativeSha256"));
    }
}
