//! The memory operations' own types: what the analysis of a passage gave,
//! and what each operation answers. The gRPC adapter converts the wire
//! messages to and from these; the backends never see a proto type.

pub use dragoman_model::analysis::{
    ExtractedEntity, ExtractedTerm, Extraction, PassageExtraction, StyleNote,
};
use dragoman_model::vocab::{Origin, TermLayer};

/// A passage still to analyse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingPassage {
    pub id: String,
    pub text: String,
}

/// The analysis plan of some chapters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AnalysisPlan {
    /// Still to analyse, in reading order.
    pub passages: Vec<PendingPassage>,
    /// Passages with a stored analysis (recalled ones included).
    pub done: usize,
    /// Of `done`, those that took an earlier analysis in this call.
    pub recalled: usize,
    /// Passages of the chapters in all.
    pub total: usize,
}

/// The volume's memory after a reconciliation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReconcileOutcome {
    /// Analyses merged by this call.
    pub reconciled: usize,
    pub entities: usize,
    pub terms: usize,
}

/// A passage's translation-memory key, and the earlier translation of the
/// same owner under it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreparedPassage {
    pub passage_id: String,
    pub memory_key: String,
    pub recalled: Option<String>,
}

/// The context of one translation batch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BatchContext {
    pub text: String,
    /// Estimated tokens of `text`.
    pub tokens: usize,
}

/// The series' memory after a volume was closed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CloseOutcome {
    pub series_entities: usize,
    pub series_terms: usize,
}

/// A person's term decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TermInput {
    pub layer: TermLayer,
    /// The volume, series or shared glossary it belongs to.
    pub owner_id: String,
    pub source: String,
    pub translation: String,
    pub category: String,
    pub description: String,
    pub locked: bool,
    pub accepted: bool,
}

/// A stored term as callers see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TermView {
    pub id: String,
    pub layer: TermLayer,
    pub owner_id: String,
    pub source: String,
    pub translation: String,
    pub category: String,
    pub description: String,
    pub locked: bool,
    pub accepted: bool,
    pub origin: Origin,
}

impl From<&dragoman_model::entities::term::Model> for TermView {
    fn from(term: &dragoman_model::entities::term::Model) -> TermView {
        let owner_id = match term.layer {
            TermLayer::Book => term.project_id.clone(),
            TermLayer::Series => term.series_id.clone(),
            TermLayer::Shared => term.glossary_id.clone(),
        };
        TermView {
            id: term.id.clone(),
            layer: term.layer,
            owner_id: owner_id.unwrap_or_default(),
            source: term.source.clone(),
            translation: term.translation.clone(),
            category: term.category.clone(),
            description: term.description.clone(),
            locked: term.locked,
            accepted: term.accepted,
            origin: term.origin,
        }
    }
}

/// What a volume's translations are held to: the glossary in force and the
/// characters that have a canonical rendering.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QualitySheet {
    /// (source, translation, locked), sorted by source.
    pub terms: Vec<(String, String, bool)>,
    pub names: Vec<SheetName>,
}

/// A character's names in the source and its canonical rendering.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SheetName {
    pub name: String,
    pub aliases: Vec<String>,
    pub rendering: String,
}
