//! What a book's entity (`narrative_entities`) and its series' canonical
//! identity (`series_entities`) have in common: the description of one
//! named thing. The two tables keep their own rows (a book entity has its
//! mentions and observations, an identity its first volume), and code that
//! only reads the description takes either through [`NamedThing`].

use super::{narrative_entity, series_entity};
use crate::vocab::{EntityKind, Origin};

/// The description of a character, place, organisation or object.
pub trait NamedThing {
    fn id(&self) -> &str;
    fn kind(&self) -> EntityKind;
    fn name(&self) -> &str;
    /// The name as entities are matched (case-folded, NFC, spaces collapsed).
    fn name_key(&self) -> &str;
    /// Other names; a malformed stored list reads as none.
    fn aliases(&self) -> Vec<String>;
    /// The rendering in the target language.
    fn target_name(&self) -> Option<&str>;
    fn gender(&self) -> Option<&str>;
    /// Forms of address, as the text shows them.
    fn address(&self) -> Option<&str>;
    fn description(&self) -> &str;
    fn origin(&self) -> Origin;
}

macro_rules! named_thing {
    ($($model:path),+) => {
        $(
            impl NamedThing for $model {
                fn id(&self) -> &str {
                    &self.id
                }
                fn kind(&self) -> EntityKind {
                    self.kind
                }
                fn name(&self) -> &str {
                    &self.name
                }
                fn name_key(&self) -> &str {
                    &self.name_key
                }
                fn aliases(&self) -> Vec<String> {
                    serde_json::from_value(self.aliases.clone()).unwrap_or_default()
                }
                fn target_name(&self) -> Option<&str> {
                    self.target_name.as_deref()
                }
                fn gender(&self) -> Option<&str> {
                    self.gender.as_deref()
                }
                fn address(&self) -> Option<&str> {
                    self.address.as_deref()
                }
                fn description(&self) -> &str {
                    &self.description
                }
                fn origin(&self) -> Origin {
                    self.origin
                }
            }
        )+
    };
}

named_thing!(narrative_entity::Model, series_entity::Model);
