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
    AttachGlossaryRequest, CreateGlossaryRequest, ExportGlossaryRequest, GlossaryFile, GlossaryRef,
    ImportGlossaryRequest, ListGlossariesRequest, SeriesGlossary, SeriesGlossaryRequest,
    SharedGlossary,
};
use dragoman_proto::wire::WireEnum;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
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

pub async fn list(state: &AppState, caller: &Caller) -> ApiResult<Vec<Value>> {
    let answer = caller
        .call(state, READ, ListGlossariesRequest {}, |request| {
            state.memory.handle.list_glossaries(request)
        })
        .await?;
    Ok(answer
        .glossaries
        .iter()
        .map(|g| glossary_json(g, false))
        .collect())
}

pub async fn create(state: &AppState, caller: &Caller, body: NewGlossary) -> ApiResult<Value> {
    let message = CreateGlossaryRequest {
        name: body.name,
        description: body.description.unwrap_or_default(),
        source_language: body.source_language,
        target_language: body.target_language,
    };
    let answer = caller
        .call(state, WRITE, message, |request| {
            state.memory.handle.create_glossary(request)
        })
        .await?;
    Ok(glossary_json(&answer, true))
}

pub async fn detail(state: &AppState, caller: &Caller, glossary_id: String) -> ApiResult<Value> {
    let answer = caller
        .call(state, READ, GlossaryRef { glossary_id }, |request| {
            state.memory.handle.get_glossary(request)
        })
        .await?;
    Ok(glossary_json(&answer, true))
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
    let answer = caller
        .call(state, WRITE, message, |request| {
            state.memory.handle.import_glossary(request)
        })
        .await?;
    ImportReport::try_from(answer).map_err(|e| ApiError::server(format!("import report: {e}")))
}

/// The glossary a series follows.
pub async fn followed(state: &AppState, caller: &Caller, series_id: String) -> ApiResult<Value> {
    let answer = caller
        .call(
            state,
            READ,
            SeriesGlossaryRequest { series_id },
            |request| state.memory.handle.get_series_glossary(request),
        )
        .await?;
    Ok(series_glossary_json(&answer))
}

/// Attaches a glossary to a series, or detaches it.
pub async fn attach(
    state: &AppState,
    caller: &Caller,
    series_id: String,
    body: Attachment,
) -> ApiResult<Value> {
    let message = AttachGlossaryRequest {
        series_id,
        glossary_id: body.glossary_id,
    };
    let answer = caller
        .call(state, WRITE, message, |request| {
            state.memory.handle.attach_glossary(request)
        })
        .await?;
    Ok(series_glossary_json(&answer))
}

/// A shared glossary (spec 2.9), as the listing shows it.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = SharedGlossary)]
pub struct GlossaryView {
    pub id: String,
    pub name: String,
    pub description: String,
    /// With `target_language`, the glossary applies only to volumes of
    /// that pair.
    #[schema(required = true)]
    pub source_language: Option<String>,
    #[schema(required = true)]
    pub target_language: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
    pub term_count: i64,
    pub locked_count: i64,
    /// The series that follow it.
    pub series: Vec<FollowerView>,
}

/// A series that follows a shared glossary.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = GlossaryFollower)]
pub struct FollowerView {
    pub id: String,
    pub name: String,
}

/// A shared glossary with its terms, sorted by source (spec 2.9).
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = SharedGlossaryDetail)]
pub struct GlossaryDetailView {
    #[serde(flatten)]
    pub glossary: GlossaryView,
    pub terms: Vec<TermView>,
}

/// A term of a shared glossary (spec 2.9).
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = SharedTerm)]
pub struct TermView {
    pub id: String,
    pub source: String,
    pub translation: String,
    pub category: String,
    pub description: String,
    /// Enforced and checked in every passage.
    pub locked: bool,
    /// Only accepted terms are applied.
    pub accepted: bool,
}

/// The answer of the series' shared-glossary routes.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = SeriesSharedGlossary)]
pub struct SeriesGlossaryView {
    pub series_id: String,
    /// The glossary the series follows; null when none.
    #[schema(required = true)]
    pub glossary: Option<GlossaryView>,
}

fn glossary_view(g: &SharedGlossary) -> GlossaryView {
    GlossaryView {
        id: g.id.clone(),
        name: g.name.clone(),
        description: g.description.clone(),
        source_language: g.source_language.clone(),
        target_language: g.target_language.clone(),
        created_at: g.created_at,
        updated_at: g.updated_at,
        term_count: g.term_count,
        locked_count: g.locked_count,
        series: g
            .series
            .iter()
            .map(|s| FollowerView {
                id: s.id.clone(),
                name: s.name.clone(),
            })
            .collect(),
    }
}

/// A shared glossary of spec 2.9; the detail adds its terms.
pub fn glossary_json(g: &SharedGlossary, with_terms: bool) -> Value {
    if !with_terms {
        return json!(glossary_view(g));
    }
    let terms = g
        .terms
        .iter()
        .map(|t| TermView {
            id: t.id.clone(),
            source: t.source.clone(),
            translation: t.translation.clone(),
            category: t.category.clone(),
            description: t.description.clone(),
            locked: t.locked,
            accepted: t.accepted,
        })
        .collect();
    json!(GlossaryDetailView {
        glossary: glossary_view(g),
        terms,
    })
}

/// The answer of the series' shared-glossary routes: the series and the
/// glossary it follows (null when none).
fn series_glossary_json(answer: &SeriesGlossary) -> Value {
    json!(SeriesGlossaryView {
        series_id: answer.series_id.clone(),
        glossary: answer.glossary.as_ref().map(glossary_view),
    })
}
