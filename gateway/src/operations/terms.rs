//! Terms of a book and its series (spec 2.9, 4.10): the terms in force, a
//! person's new term, a term changed field by field or deleted, and a new
//! rendering carried into stored translations. The memory service owns
//! terms and judges what the values mean; the JSON shape of a term is
//! built here and nowhere else.
//!
//! These operations exist on the tool surface only; every one needs a
//! library scope (reading, writing, deleting), a preview of a propagation
//! included.

use super::{Caller, Needs, from_wire};
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use dragoman_model::documents::deletion::Deleted;
use dragoman_model::documents::propagation::PropagationReport;
use dragoman_model::vocab::{Origin, Scope, TermLayer};
use dragoman_proto::v1::{
    EditTermRequest, ProjectRef, PropagateTermRequest, PutTermRequest, Term, TermRef,
};
use dragoman_proto::wire::WireEnum;
use serde::Serialize;

pub const READ: Needs = Needs::both(Scope::LibraryRead);
pub const WRITE: Needs = Needs::both(Scope::LibraryWrite);
pub const DELETE: Needs = Needs::both(Scope::LibraryDelete);

/// Which terms in force a listing keeps.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TermFilter {
    pub layer: Option<TermLayer>,
    /// Kept when the source or the translation holds it, ignoring case.
    pub query: Option<String>,
}

/// A person's new term of a book or of the book's series.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewTerm {
    pub book_id: String,
    pub layer: TermLayer,
    pub source: String,
    pub translation: String,
    pub category: String,
    pub description: String,
    pub locked: bool,
}

/// The fields of a term to change; `None` leaves one as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TermChanges {
    pub source: Option<String>,
    pub translation: Option<String>,
    pub category: Option<String>,
    pub description: Option<String>,
    pub locked: Option<bool>,
}

/// A replacement in stored translations; `write` false is a preview.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Propagation {
    pub book_id: String,
    pub previous: String,
    pub replacement: String,
    pub series: bool,
    pub chapter_id: Option<String>,
    pub include_human: bool,
    pub write: bool,
}

/// The terms in force for one of the caller's books, sorted by source,
/// kept by `filter`.
pub async fn list(
    state: &AppState,
    caller: &Caller,
    book_id: String,
    filter: &TermFilter,
) -> ApiResult<Vec<TermView>> {
    let message = ProjectRef {
        project_id: book_id,
    };
    let answer = caller
        .call(state, READ, message, |request| {
            state.memory.handle.terms_in_force(request)
        })
        .await?;
    let query = filter.query.as_deref().map(str::to_lowercase);
    let mut terms = Vec::new();
    for term in &answer.terms {
        let layer: TermLayer = from_wire(term.layer, "layer")?;
        if filter.layer.is_some_and(|wanted| wanted != layer) {
            continue;
        }
        if let Some(query) = &query
            && !term.source.to_lowercase().contains(query)
            && !term.translation.to_lowercase().contains(query)
        {
            continue;
        }
        terms.push(term_view(term)?);
    }
    Ok(terms)
}

/// Adds a person's term; the same source in the same place is refused
/// (409 `conflict` with the existing `term_id`).
pub async fn add(state: &AppState, caller: &Caller, new: NewTerm) -> ApiResult<TermView> {
    let message = PutTermRequest {
        layer: new.layer.to_wire(),
        owner_id: new.book_id,
        source: new.source,
        translation: new.translation,
        category: new.category,
        description: new.description,
        locked: new.locked,
        accepted: true,
    };
    let answer = caller
        .call(state, WRITE, message, |request| {
            state.memory.handle.add_term(request)
        })
        .await?;
    term_view(&answer)
}

/// Changes the given fields of one of the caller's terms.
pub async fn edit(
    state: &AppState,
    caller: &Caller,
    term_id: String,
    changes: TermChanges,
) -> ApiResult<TermView> {
    let message = EditTermRequest {
        term_id,
        source: changes.source,
        translation: changes.translation,
        category: changes.category,
        description: changes.description,
        locked: changes.locked,
    };
    let answer = caller
        .call(state, WRITE, message, |request| {
            state.memory.handle.edit_term(request)
        })
        .await?;
    term_view(&answer)
}

/// Deletes one of the caller's terms.
pub async fn delete(state: &AppState, caller: &Caller, term_id: String) -> ApiResult<Deleted> {
    let answer = caller
        .call(state, DELETE, TermRef { term_id }, |request| {
            state.memory.handle.delete_term(request)
        })
        .await?;
    Ok(Deleted { deleted: answer.id })
}

/// Previews or writes a replacement; answers the memory's report.
pub async fn propagate(
    state: &AppState,
    caller: &Caller,
    ask: Propagation,
) -> ApiResult<PropagationReport> {
    let message = PropagateTermRequest {
        project_id: ask.book_id,
        previous: ask.previous,
        replacement: ask.replacement,
        series: ask.series,
        chapter_id: ask.chapter_id,
        include_human: ask.include_human,
        write: ask.write,
    };
    let answer = caller
        .call(state, WRITE, message, |request| {
            state.memory.handle.propagate_term(request)
        })
        .await?;
    PropagationReport::try_from(answer)
        .map_err(|e| ApiError::server(format!("propagation report: {e}")))
}

/// A term of spec 2.9: a rendering of the book's, its series' or the
/// shared glossary's.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TermView {
    pub accepted: bool,
    pub category: String,
    pub description: String,
    pub id: String,
    pub layer: TermLayer,
    pub locked: bool,
    pub origin: Origin,
    /// The book, series or shared glossary the term belongs to.
    pub owner_id: String,
    pub source: String,
    pub translation: String,
}

/// A term of spec 2.9.
pub fn term_view(term: &Term) -> ApiResult<TermView> {
    Ok(TermView {
        accepted: term.accepted,
        category: term.category.clone(),
        description: term.description.clone(),
        id: term.id.clone(),
        layer: from_wire(term.layer, "layer")?,
        locked: term.locked,
        origin: from_wire(term.origin, "origin")?,
        owner_id: term.owner_id.clone(),
        source: term.source.clone(),
        translation: term.translation.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use dragoman_model::vocab::ErrorCode;

    #[test]
    fn a_term_carries_typed_layer_and_origin() {
        let term = Term {
            id: "t".into(),
            layer: TermLayer::Series.to_wire(),
            owner_id: "s".into(),
            source: "Dark Lord".into(),
            translation: "Seigneur".into(),
            category: String::new(),
            description: String::new(),
            locked: true,
            accepted: true,
            origin: Origin::Human.to_wire(),
        };
        let view = term_view(&term).expect("known values");
        let value = serde_json::to_value(&view).expect("serializes");
        assert_eq!(value["layer"], "series");
        assert_eq!(value["origin"], "human");
        let unknown = Term { layer: 0, ..term };
        assert_eq!(
            term_view(&unknown).unwrap_err().code,
            ErrorCode::ServerError
        );
    }
}
