//! Shared glossaries (spec 2.9, 4.7): listing, creation, detail, export,
//! import and the glossary a series follows, answered by the memory
//! service, which owns glossaries and judges what the values mean. The
//! JSON shapes of a glossary are built here and nowhere else.

use super::{Caller, Needs};
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use dragoman_model::documents::glossary_import::ImportReport;
use dragoman_model::vocab::{CsvDelimiter, GlossaryFormat, ImportStrategy, Scope};
use dragoman_proto::v1::{
    self as proto, AttachGlossaryRequest, CreateGlossaryRequest, ExportGlossaryRequest,
    GlossaryFile, GlossaryRef, ImportGlossaryRequest, ListGlossariesRequest, SeriesGlossary,
    SeriesGlossaryRequest, SharedGlossary,
};
use dragoman_proto::wire::WireEnum;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use utoipa::ToSchema;

pub const READ: Needs = Needs::read(Scope::SeriesRead);
pub const WRITE: Needs = Needs {
    rest: Scope::ContentWrite,
    tools: Scope::LibraryWrite,
};

/// The create body (spec 2.9 input).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewGlossary {
    /// Unique among the caller's shared glossaries (else 409
    /// `glossary_exists`); not blank (else 422 `invalid_name`).
    #[schema(min_length = 1, max_length = 200)]
    pub name: String,
    #[serde(default)]
    #[schema(max_length = 4000)]
    pub description: Option<String>,
    /// BCP 47; with `target_language`, the glossary applies only to
    /// volumes of that pair.
    #[serde(default)]
    #[schema(pattern = "^[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*$", max_length = 35)]
    pub source_language: Option<String>,
    #[serde(default)]
    #[schema(pattern = "^[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*$", max_length = 35)]
    pub target_language: Option<String>,
}

/// The attachment body (spec 2.9): a glossary id, or null to detach. The
/// key itself is required so that a typo never detaches.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = GlossaryAttachment)]
pub struct Attachment {
    /// The shared glossary the series follows from now on; null detaches
    /// it. A series follows at most one.
    #[serde(deserialize_with = "present")]
    #[schema(required = true)]
    pub glossary_id: Option<String>,
}

fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Option::<String>::deserialize(d)
}

/// An import's file and options, once the form's shape is checked.
#[derive(Debug, Default)]
pub struct ImportForm {
    pub content: Vec<u8>,
    pub filename: String,
    pub strategy: ImportStrategy,
    pub delimiter: Option<CsvDelimiter>,
    pub mapping: BTreeMap<String, u32>,
    pub header: Option<bool>,
    pub skip_invalid: bool,
    pub dry_run: bool,
}

/// A file to download.
pub struct Download {
    pub content: Vec<u8>,
    pub media_type: String,
    pub filename: String,
}

/// The caller's shared glossaries as the memory service answers them (by
/// name): what the typed surfaces answer as it is.
pub async fn list_answer(state: &AppState, caller: &Caller) -> ApiResult<Vec<SharedGlossary>> {
    let answer = caller
        .call(state, READ, ListGlossariesRequest {}, |request| {
            state.memory.handle.list_glossaries(request)
        })
        .await?;
    Ok(answer.glossaries)
}

pub async fn list(state: &AppState, caller: &Caller) -> ApiResult<Vec<GlossaryView>> {
    let listed = list_answer(state, caller).await?;
    Ok(listed.iter().map(glossary_view).collect())
}

pub async fn create(
    state: &AppState,
    caller: &Caller,
    body: NewGlossary,
) -> ApiResult<GlossaryDetailView> {
    Ok(detail_view(&create_answer(state, caller, body).await?))
}

/// [`create`], answered as the memory service's glossary.
pub async fn create_answer(
    state: &AppState,
    caller: &Caller,
    body: NewGlossary,
) -> ApiResult<SharedGlossary> {
    let message = CreateGlossaryRequest {
        name: body.name,
        description: body.description.unwrap_or_default(),
        source_language: body.source_language,
        target_language: body.target_language,
    };
    caller
        .call(state, WRITE, message, |request| {
            state.memory.handle.create_glossary(request)
        })
        .await
}

pub async fn detail(
    state: &AppState,
    caller: &Caller,
    glossary_id: String,
) -> ApiResult<GlossaryDetailView> {
    Ok(detail_view(
        &detail_answer(state, caller, glossary_id).await?,
    ))
}

/// [`detail`], answered as the memory service's glossary.
pub async fn detail_answer(
    state: &AppState,
    caller: &Caller,
    glossary_id: String,
) -> ApiResult<SharedGlossary> {
    caller
        .call(state, READ, GlossaryRef { glossary_id }, |request| {
            state.memory.handle.get_glossary(request)
        })
        .await
}

pub async fn export(
    state: &AppState,
    caller: &Caller,
    glossary_id: String,
    format: GlossaryFormat,
    delimiter: CsvDelimiter,
    bom: bool,
) -> ApiResult<Download> {
    let message = ExportGlossaryRequest {
        glossary_id,
        format: format.to_wire(),
        delimiter: delimiter.to_wire(),
        bom,
    };
    let file: GlossaryFile = caller
        .call(state, READ, message, |request| {
            state.memory.handle.export_glossary(request)
        })
        .await?;
    Ok(Download {
        content: file.content,
        media_type: file.media_type,
        filename: file.filename,
    })
}

/// The import report (spec 4.7), as the memory service wrote it.
pub async fn import(
    state: &AppState,
    caller: &Caller,
    glossary_id: String,
    form: ImportForm,
) -> ApiResult<ImportReport> {
    let answer = import_answer(state, caller, glossary_id, form).await?;
    ImportReport::try_from(answer).map_err(|e| ApiError::server(format!("import report: {e}")))
}

/// [`import`], answered as the memory service's typed report.
pub async fn import_answer(
    state: &AppState,
    caller: &Caller,
    glossary_id: String,
    form: ImportForm,
) -> ApiResult<proto::ImportReport> {
    let message = ImportGlossaryRequest {
        glossary_id,
        content: form.content,
        filename: form.filename,
        strategy: form.strategy.to_wire(),
        delimiter: form.delimiter.map(WireEnum::to_wire),
        mapping: form.mapping.into_iter().collect(),
        header: form.header,
        skip_invalid: form.skip_invalid,
        dry_run: form.dry_run,
    };
    caller
        .call(state, WRITE, message, |request| {
            state.memory.handle.import_glossary(request)
        })
        .await
}

/// The glossary a series follows.
pub async fn followed(
    state: &AppState,
    caller: &Caller,
    series_id: String,
) -> ApiResult<SeriesGlossaryView> {
    Ok(series_glossary_view(
        &followed_answer(state, caller, series_id).await?,
    ))
}

/// [`followed`], answered as the memory service's message.
pub async fn followed_answer(
    state: &AppState,
    caller: &Caller,
    series_id: String,
) -> ApiResult<SeriesGlossary> {
    caller
        .call(
            state,
            READ,
            SeriesGlossaryRequest { series_id },
            |request| state.memory.handle.get_series_glossary(request),
        )
        .await
}

/// Attaches a glossary to a series, or detaches it.
pub async fn attach(
    state: &AppState,
    caller: &Caller,
    series_id: String,
    body: Attachment,
) -> ApiResult<SeriesGlossaryView> {
    Ok(series_glossary_view(
        &attach_answer(state, caller, series_id, body).await?,
    ))
}

/// [`attach`], answered as the memory service's message.
pub async fn attach_answer(
    state: &AppState,
    caller: &Caller,
    series_id: String,
    body: Attachment,
) -> ApiResult<SeriesGlossary> {
    let message = AttachGlossaryRequest {
        series_id,
        glossary_id: body.glossary_id,
    };
    caller
        .call(state, WRITE, message, |request| {
            state.memory.handle.attach_glossary(request)
        })
        .await
}

/// A shared glossary (spec 2.9), as the listing shows it.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = SharedGlossary)]
pub struct GlossaryView {
    pub created_at: i64,
    pub description: String,
    pub id: String,
    pub locked_count: i64,
    pub name: String,
    /// The series that follow it.
    pub series: Vec<FollowerView>,
    /// With `target_language`, the glossary applies only to volumes of
    /// that pair.
    #[schema(required = true)]
    pub source_language: Option<String>,
    #[schema(required = true)]
    pub target_language: Option<String>,
    pub term_count: i64,
    pub updated_at: i64,
}

/// A series that follows a shared glossary.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = GlossaryFollower)]
pub struct FollowerView {
    pub id: String,
    pub name: String,
}

/// A shared glossary with its terms, sorted by source (spec 2.9).
// The listing's fields and `terms`, in key order: the JSON is written as
// declared.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = SharedGlossaryDetail)]
pub struct GlossaryDetailView {
    pub created_at: i64,
    pub description: String,
    pub id: String,
    pub locked_count: i64,
    pub name: String,
    /// The series that follow it.
    pub series: Vec<FollowerView>,
    /// With `target_language`, the glossary applies only to volumes of
    /// that pair.
    #[schema(required = true)]
    pub source_language: Option<String>,
    #[schema(required = true)]
    pub target_language: Option<String>,
    pub term_count: i64,
    pub terms: Vec<TermView>,
    pub updated_at: i64,
}

/// A term of a shared glossary (spec 2.9).
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = SharedTerm)]
pub struct TermView {
    /// Only accepted terms are applied.
    pub accepted: bool,
    pub category: String,
    pub description: String,
    pub id: String,
    /// Enforced and checked in every passage.
    pub locked: bool,
    pub source: String,
    pub translation: String,
}

/// The answer of the series' shared-glossary routes.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = SeriesSharedGlossary)]
pub struct SeriesGlossaryView {
    /// The glossary the series follows; null when none.
    #[schema(required = true)]
    pub glossary: Option<GlossaryView>,
    pub series_id: String,
}

/// A shared glossary of spec 2.9, as the listing shows it.
pub fn glossary_view(g: &SharedGlossary) -> GlossaryView {
    GlossaryView {
        created_at: g.created_at,
        description: g.description.clone(),
        id: g.id.clone(),
        locked_count: g.locked_count,
        name: g.name.clone(),
        series: g
            .series
            .iter()
            .map(|s| FollowerView {
                id: s.id.clone(),
                name: s.name.clone(),
            })
            .collect(),
        source_language: g.source_language.clone(),
        target_language: g.target_language.clone(),
        term_count: g.term_count,
        updated_at: g.updated_at,
    }
}

/// A shared glossary with its terms.
pub fn detail_view(g: &SharedGlossary) -> GlossaryDetailView {
    let glossary = glossary_view(g);
    let terms = g
        .terms
        .iter()
        .map(|t| TermView {
            accepted: t.accepted,
            category: t.category.clone(),
            description: t.description.clone(),
            id: t.id.clone(),
            locked: t.locked,
            source: t.source.clone(),
            translation: t.translation.clone(),
        })
        .collect();
    GlossaryDetailView {
        created_at: glossary.created_at,
        description: glossary.description,
        id: glossary.id,
        locked_count: glossary.locked_count,
        name: glossary.name,
        series: glossary.series,
        source_language: glossary.source_language,
        target_language: glossary.target_language,
        term_count: glossary.term_count,
        terms,
        updated_at: glossary.updated_at,
    }
}

/// The answer of the series' shared-glossary routes: the series and the
/// glossary it follows (null when none).
fn series_glossary_view(answer: &SeriesGlossary) -> SeriesGlossaryView {
    SeriesGlossaryView {
        glossary: answer.glossary.as_ref().map(glossary_view),
        series_id: answer.series_id.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dragoman_proto::v1::{GlossarySeries, GlossaryTerm};
    use serde_json::json;

    fn glossary() -> SharedGlossary {
        SharedGlossary {
            id: "g".into(),
            name: "Names".into(),
            description: String::new(),
            source_language: Some("en".into()),
            target_language: None,
            created_at: 1,
            updated_at: 2,
            term_count: 1,
            locked_count: 0,
            series: vec![GlossarySeries {
                id: "s".into(),
                name: "Saga".into(),
            }],
            terms: vec![GlossaryTerm {
                id: "t".into(),
                source: "Lord".into(),
                translation: "Seigneur".into(),
                category: "title".into(),
                description: String::new(),
                locked: true,
                accepted: true,
            }],
        }
    }

    #[test]
    fn a_detail_reads_as_the_listing_with_its_terms() {
        let written = serde_json::to_string(&detail_view(&glossary())).expect("serializes");
        let wanted = json!({
            "id": "g",
            "name": "Names",
            "description": "",
            "source_language": "en",
            "target_language": null,
            "created_at": 1,
            "updated_at": 2,
            "term_count": 1,
            "locked_count": 0,
            "series": [{"id": "s", "name": "Saga"}],
            "terms": [{
                "id": "t",
                "source": "Lord",
                "translation": "Seigneur",
                "category": "title",
                "description": "",
                "locked": true,
                "accepted": true,
            }],
        });
        assert_eq!(written, wanted.to_string());
        let listed = serde_json::to_value(glossary_view(&glossary())).expect("serializes");
        assert!(listed.get("terms").is_none());
    }

    #[test]
    fn a_series_without_a_glossary_says_null() {
        let answer = SeriesGlossary {
            series_id: "s".into(),
            glossary: None,
        };
        let written = serde_json::to_string(&series_glossary_view(&answer)).expect("serializes");
        assert_eq!(written, r#"{"glossary":null,"series_id":"s"}"#);
    }
}
