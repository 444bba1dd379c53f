//! Shared glossaries (spec 2.9, 4.7): listing, creation, detail, export,
//! import and the glossary a series follows, answered by the memory
//! service, which owns glossaries and judges what the values mean. The
//! JSON shapes of a glossary are built here and nowhere else.

use super::{Caller, Needs};
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use dragoman_model::vocab::{CsvDelimiter, GlossaryFormat, ImportStrategy, Scope};
use dragoman_proto::v1::{
    AttachGlossaryRequest, CreateGlossaryRequest, ExportGlossaryRequest, GlossaryFile, GlossaryRef,
    ImportGlossaryRequest, ListGlossariesRequest, SeriesGlossary, SeriesGlossaryRequest,
    SharedGlossary,
};
use dragoman_proto::wire::WireEnum;
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::BTreeMap;

const READ: Needs = Needs::read(Scope::SeriesRead);
pub const WRITE: Needs = Needs {
    rest: Scope::ContentWrite,
    tools: Scope::LibraryWrite,
};

/// The create body (spec 2.9 input).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewGlossary {
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub source_language: Option<String>,
    #[serde(default)]
    pub target_language: Option<String>,
}

/// The attachment body (spec 2.9): a glossary id, or null to detach. The
/// key itself is required so that a typo never detaches.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Attachment {
    #[serde(deserialize_with = "present")]
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
) -> ApiResult<Value> {
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
    serde_json::from_str(&answer.json).map_err(ApiError::server)
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

/// A shared glossary of spec 2.9; the detail adds its terms.
pub fn glossary_json(g: &SharedGlossary, with_terms: bool) -> Value {
    let mut value = json!({
        "id": g.id,
        "name": g.name,
        "description": g.description,
        "source_language": g.source_language,
        "target_language": g.target_language,
        "created_at": g.created_at,
        "updated_at": g.updated_at,
        "term_count": g.term_count,
        "locked_count": g.locked_count,
        "series": g.series.iter().map(|s| json!({"id": s.id, "name": s.name})).collect::<Vec<_>>(),
    });
    if with_terms && let Value::Object(map) = &mut value {
        let terms = g
            .terms
            .iter()
            .map(|t| {
                json!({
                    "id": t.id,
                    "source": t.source,
                    "translation": t.translation,
                    "category": t.category,
                    "description": t.description,
                    "locked": t.locked,
                    "accepted": t.accepted,
                })
            })
            .collect();
        map.insert("terms".into(), Value::Array(terms));
    }
    value
}

/// The answer of the series' shared-glossary routes: the series and the
/// glossary it follows (null when none).
fn series_glossary_json(answer: &SeriesGlossary) -> Value {
    json!({
        "series_id": answer.series_id,
        "glossary": answer.glossary.as_ref().map(|g| glossary_json(g, false)),
    })
}
