//! The memory's views as the messages of `dragoman/v1/internal.proto`, and the
//! vocabulary fields of the requests.

use crate::bundle::BookSummary;
use crate::domain::TermView;
use crate::error::MemoryError;
use crate::shared_glossary::GlossaryView;
use dragoman_model::vocab::{Issue, IssueKind, Quality};
use dragoman_proto::v1;
use dragoman_proto::wire::WireEnum;

/// A count in an `int32` field; one beyond saturates.
pub(super) fn count(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

/// A quality the caller left unspecified is the default one.
pub(super) fn quality(value: i32) -> Quality {
    Quality::from_wire(value, "quality").unwrap_or_default()
}

/// A term as the `Term` message.
pub(super) fn term(view: TermView) -> v1::Term {
    v1::Term {
        id: view.id,
        layer: view.layer.to_wire(),
        owner_id: view.owner_id,
        source: view.source,
        translation: view.translation,
        category: view.category,
        description: view.description,
        locked: view.locked,
        accepted: view.accepted,
        origin: view.origin.to_wire(),
    }
}

/// A vocabulary field the caller had to give.
pub(super) fn wire_field<T: WireEnum>(value: i32, field: &'static str) -> Result<T, MemoryError> {
    T::from_wire(value, field)
        .map_err(|_| MemoryError::InvalidRequest(vec![Issue::at("body", field, IssueKind::Enum)]))
}

/// A shared glossary as its message.
pub(super) fn glossary(view: GlossaryView) -> v1::SharedGlossary {
    let g = view.glossary;
    v1::SharedGlossary {
        id: g.id,
        name: g.name,
        description: g.description,
        source_language: g.source_language,
        target_language: g.target_language,
        created_at: g.created_at,
        updated_at: g.updated_at,
        term_count: view.term_count,
        locked_count: view.locked_count,
        series: view
            .series
            .into_iter()
            .map(|(id, name)| v1::GlossarySeries { id, name })
            .collect(),
        terms: view
            .terms
            .into_iter()
            .map(|t| v1::GlossaryTerm {
                id: t.id,
                source: t.source,
                translation: t.translation,
                category: t.category,
                description: t.description,
                locked: t.locked,
                accepted: t.accepted,
            })
            .collect(),
    }
}

/// A book of the books list as its message.
pub(super) fn book(b: BookSummary) -> v1::BookItem {
    v1::BookItem {
        id: b.id,
        title: b.title,
        series_id: b.series_id,
        series_name: b.series_name,
        volume_number: b.volume_number,
        volume_label: b.volume_label,
        source_language: b.source_language,
        target_language: b.target_language,
        source_format: b.source_format.map(WireEnum::to_wire),
        project_kind: b.project_kind.to_wire(),
        status: b.status.to_wire(),
        chapters: b.chapters,
        passages: b.passages,
        translated: b.translated,
        created_at: b.created_at,
        updated_at: b.updated_at,
    }
}
