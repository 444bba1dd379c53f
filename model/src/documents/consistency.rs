//! Where the volumes of a series disagree (spec 4.10 `series_consistency`):
//! the report the memory service reads from their memories and
//! translations. Volumes come in reading order; each list is cut, with its
//! total stated.

use crate::vocab::EntityKind;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// A list cut at some number of entries, with its total.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Listed<T> {
    pub items: Vec<T>,
    pub total: usize,
}

impl<T> Listed<T> {
    /// `items` cut at `max` entries, with their number before the cut.
    pub fn cut(mut items: Vec<T>, max: usize) -> Self {
        let total = items.len();
        items.truncate(max);
        Listed { items, total }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct VolumeRef {
    pub book_id: String,
    pub title: String,
    #[schema(required = true)]
    pub volume_number: Option<i32>,
    #[schema(required = true)]
    pub volume_label: Option<String>,
}

/// One rendering and the volumes (book ids, reading order) that hold it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Rendering {
    pub rendering: String,
    pub book_ids: Vec<String>,
}

/// A source that the accepted book-layer terms of two volumes or more
/// render differently.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TermDisagreement {
    pub source: String,
    /// The series' own rendering in force, if any.
    #[schema(required = true)]
    pub series_rendering: Option<String>,
    pub renderings: Vec<Rendering>,
}

/// A named thing whose rendering differs between the volumes' memories.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct CharacterDisagreement {
    /// The canonical identity, when the volumes' entities are linked to one.
    #[schema(required = true)]
    pub series_entity_id: Option<String>,
    pub kind: EntityKind,
    pub name: String,
    /// The identity's own rendering, if any.
    #[schema(required = true)]
    pub series_rendering: Option<String>,
    pub renderings: Vec<Rendering>,
}

/// A locked term a volume's translations do not follow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct MissedTerm {
    pub source: String,
    pub translation: String,
    /// Passages whose source has the term and whose translation lacks it.
    pub passages: usize,
}

/// A volume whose translations miss locked terms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Unfollowed {
    pub book_id: String,
    /// Translated passages read.
    pub translated_passages: usize,
    /// Those missing at least one locked term.
    pub passages_missing: usize,
    pub terms: Listed<MissedTerm>,
}

/// The consistency report of a series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ConsistencyReport {
    pub series_id: String,
    pub volumes: Listed<VolumeRef>,
    pub terms: Listed<TermDisagreement>,
    pub characters: Listed<CharacterDisagreement>,
    /// Volumes with at least one missed locked term.
    pub unfollowed: Listed<Unfollowed>,
}
