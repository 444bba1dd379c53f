//! The book's named things as the merge works on them: alias sets, keys,
//! observations, and the JSON columns they are stored in.

use crate::normalize::{match_key, normalize_text};
use dragoman_model::entities::{narrative_entity, series_entity};
use serde::{Deserialize, Serialize};

/// At most this many observations per entity: the first ones, which
/// introduce it.
pub const MAX_OBSERVATIONS: usize = 5;

/// What the text says of an entity, with the words it rests on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Observation {
    pub passage_id: String,
    pub words: String,
    pub note: String,
}

/// The aliases of a JSON column (a malformed one counts as none).
pub fn aliases(json: &serde_json::Value) -> Vec<String> {
    serde_json::from_value(json.clone()).unwrap_or_default()
}

pub fn aliases_json(aliases: &[String]) -> serde_json::Value {
    serde_json::Value::from(aliases.to_vec())
}

pub fn observations(json: &serde_json::Value) -> Vec<Observation> {
    serde_json::from_value(json.clone()).unwrap_or_default()
}

pub fn observations_json(observations: &[Observation]) -> serde_json::Value {
    serde_json::to_value(observations).unwrap_or_else(|_| serde_json::Value::Array(Vec::new()))
}

/// The match keys of a name and its aliases.
pub fn keys<'a>(name_key: &str, aliases: impl IntoIterator<Item = &'a String>) -> Vec<String> {
    let mut keys = vec![name_key.to_owned()];
    keys.extend(aliases.into_iter().map(|a| match_key(a)));
    keys
}

/// Adds the `names` not yet known (by key) as aliases; `true` when one was
/// added.
pub fn union_aliases<'a>(
    name_key: &str,
    aliases: &mut Vec<String>,
    names: impl IntoIterator<Item = &'a String>,
) -> bool {
    let mut changed = false;
    for name in names {
        let key = match_key(name);
        if key.is_empty() || key == name_key || aliases.iter().any(|a| match_key(a) == key) {
            continue;
        }
        aliases.push(normalize_text(name));
        changed = true;
    }
    changed
}

/// Sets `slot` to `value` when the slot is empty and the value is not;
/// `true` when it did.
pub fn fill(slot: &mut Option<String>, value: Option<&str>) -> bool {
    let value = value.map(str::trim).filter(|v| !v.is_empty());
    match (slot.as_deref().map(str::trim), value) {
        (None | Some(""), Some(v)) => {
            *slot = Some(v.to_owned());
            true
        }
        _ => false,
    }
}

/// Like [`fill`] for a text column that is never null.
pub fn fill_text(slot: &mut String, value: &str) -> bool {
    if slot.trim().is_empty() && !value.trim().is_empty() {
        *slot = value.trim().to_owned();
        true
    } else {
        false
    }
}

/// The keys a book entity answers to.
pub fn book_keys(entity: &narrative_entity::Model) -> Vec<String> {
    keys(&entity.name_key, &aliases(&entity.aliases))
}

/// The keys a series identity answers to.
pub fn series_keys(entity: &series_entity::Model) -> Vec<String> {
    keys(&entity.name_key, &aliases(&entity.aliases))
}

/// Whether two key sets share a key.
pub fn share_a_key(a: &[String], b: &[String]) -> bool {
    a.iter().any(|k| b.contains(k))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alias_union_skips_known_names_by_key() {
        let mut known = vec!["Rin".to_owned()];
        let added = union_aliases(
            "rinoa",
            &mut known,
            &["RINOA".to_owned(), "rin".to_owned(), " Lady  R ".to_owned()],
        );
        assert!(added);
        assert_eq!(known, vec!["Rin".to_owned(), "Lady R".to_owned()]);
        assert!(!union_aliases("rinoa", &mut known, &["lady r".to_owned()]));
    }

    #[test]
    fn fill_only_writes_empty_slots() {
        let mut slot = None;
        assert!(fill(&mut slot, Some(" Rinoa ")));
        assert_eq!(slot.as_deref(), Some("Rinoa"));
        assert!(!fill(&mut slot, Some("Other")));
        assert_eq!(slot.as_deref(), Some("Rinoa"));
        let mut empty = Some(String::new());
        assert!(!fill(&mut empty, Some("  ")));
        assert!(fill(&mut empty, Some("x")));
    }
}
