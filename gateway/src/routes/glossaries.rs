//! Shared glossary routes of the automation API (spec 4.7), over
//! [`operations::glossaries`](crate::operations::glossaries): the bodies'
//! and the import form's shape is checked here; the file itself is the
//! memory service's to read.

use crate::auth::bearer::TokenCaller;
use crate::error::{ApiError, ApiResult};
use crate::extract::{Query, is_json, parse_json};
use crate::openapi::refusals::refusals;
use crate::operations::Caller;
use crate::operations::glossaries::{
    self, Attachment, GlossaryDetailView, GlossaryView, ImportForm, NewGlossary, SeriesGlossaryView,
};
use crate::state::AppState;
use axum::Json;
use axum::body::{Body, Bytes};
use axum::extract::multipart::MultipartError;
use axum::extract::{FromRequest, Multipart, Path, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use dragoman_model::documents::glossary_import::{GlossaryFileTerm, ImportReport};
use dragoman_model::vocab::{
    CsvDelimiter, ErrorCode, GlossaryFormat, ImportStrategy, Issue, IssueContext, IssueKind,
    LocPart,
};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use utoipa::{IntoParams, ToSchema};

/// Largest glossary file an import takes (spec 8): 2 MiB.
pub const MAX_IMPORT_BYTES: usize = 2 * 1024 * 1024;

fn invalid(issue: Issue) -> ApiError {
    ApiError::new(ErrorCode::InvalidRequest).with_issues(vec![issue])
}

/// A JSON body whose shape errors are 422 `invalid_request` (spec 4.7).
fn json_body<T: DeserializeOwned>(headers: &HeaderMap, bytes: &Bytes) -> ApiResult<T> {
    if !is_json(headers) {
        return Err(ApiError::new(ErrorCode::UnsupportedMediaType));
    }
    parse_json(bytes).map_err(|mut error| {
        error.code = ErrorCode::InvalidRequest;
        error
    })
}

refusals!(
    /// Listing shared glossaries refuses only what every operation may.
    ListRefusals: []
);

/// `GET /api/v1/glossaries` (spec 4.7).
#[utoipa::path(
    get,
    path = "/glossaries",
    operation_id = "listGlossaries",
    tag = "glossaries",
    summary = "List the caller's shared glossaries",
    description = "Sorted by name.",
    responses(
        (status = 200, description = "The shared glossaries.", body = Vec<GlossaryView>),
        ListRefusals,
    ),
    extensions(("x-required-scopes" = json!([glossaries::READ.rest]))),
)]
pub async fn list(
    State(state): State<AppState>,
    token: TokenCaller,
) -> ApiResult<Json<Vec<GlossaryView>>> {
    let listed = glossaries::list(&state, &Caller::rest(token)).await?;
    Ok(Json(listed))
}

refusals!(
    /// What creating a shared glossary may answer besides it.
    CreateRefusals: [
        GlossaryExists, InvalidRequest, InvalidName, UnsupportedMediaType, PayloadTooLarge,
        DemoReadOnly,
    ]
);

/// `POST /api/v1/glossaries` (spec 4.7).
#[utoipa::path(
    post,
    path = "/glossaries",
    operation_id = "createGlossary",
    tag = "glossaries",
    summary = "Create a shared glossary",
    description = "A shared glossary can be followed by several series (each series follows \
        at most one). Precedence: book > series > shared glossary; a locked shared term is \
        enforced and beats an unlocked term proposed by an earlier volume.",
    request_body(content = NewGlossary, content_type = "application/json"),
    responses(
        (status = 201, description = "The new glossary (no terms yet).",
            body = GlossaryDetailView),
        CreateRefusals,
    ),
    extensions(("x-required-scopes" = json!([glossaries::WRITE.rest]))),
)]
pub async fn create(
    State(state): State<AppState>,
    token: TokenCaller,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<impl IntoResponse> {
    let caller = Caller::rest(token);
    caller.require(glossaries::WRITE)?;
    let body: NewGlossary = json_body(&headers, &body)?;
    let created = glossaries::create(&state, &caller, body).await?;
    Ok((StatusCode::CREATED, Json(created)))
}

refusals!(
    /// What a shared glossary's detail may answer besides it.
    DetailRefusals: [GlossaryNotFound]
);

/// `GET /api/v1/glossaries/{glossary_id}` (spec 4.7).
#[utoipa::path(
    get,
    path = "/glossaries/{glossary_id}",
    operation_id = "getGlossary",
    tag = "glossaries",
    summary = "Read a shared glossary with its terms",
    description = "Terms sorted by source. A glossary of another owner answers 404 like an \
        unknown one.",
    params(("glossary_id" = String, Path, description = "The glossary's id.")),
    responses(
        (status = 200, description = "The glossary with its terms.",
            body = GlossaryDetailView),
        DetailRefusals,
    ),
    extensions(("x-required-scopes" = json!([glossaries::READ.rest]))),
)]
pub async fn detail(
    State(state): State<AppState>,
    token: TokenCaller,
    Path(glossary_id): Path<String>,
) -> ApiResult<Json<GlossaryDetailView>> {
    let detail = glossaries::detail(&state, &Caller::rest(token), glossary_id).await?;
    Ok(Json(detail))
}

#[derive(Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ExportQuery {
    /// CSV only: `comma` (default), `semicolon` or `tab`.
    #[serde(default)]
    #[param(inline)]
    delimiter: Option<CsvDelimiter>,
    /// CSV only: starts the file with a UTF-8 byte order mark. Default
    /// false.
    #[serde(default)]
    #[param(value_type = Option<bool>)]
    bom: Option<String>,
}

/// A boolean query or form value: `true` or `false`.
fn boolean(raw: Option<&str>, root: &str, field: &str) -> ApiResult<Option<bool>> {
    match raw {
        None | Some("") => Ok(None),
        Some("true") => Ok(Some(true)),
        Some("false") => Ok(Some(false)),
        Some(_) => Err(invalid(Issue::new(
            [LocPart::from(root), LocPart::from(field)],
            IssueKind::TypeError,
        ))),
    }
}

refusals!(
    /// What a glossary export may answer besides the file; `not_found`
    /// for a format that does not exist.
    ExportRefusals: [GlossaryNotFound, NotFound, InvalidRequest]
);

/// `GET /api/v1/glossaries/{glossary_id}/export/{format}` (spec 4.7).
#[utoipa::path(
    get,
    path = "/glossaries/{glossary_id}/export/{format}",
    operation_id = "exportGlossary",
    tag = "glossaries",
    summary = "Download a shared glossary as a file",
    description = "JSON (a list of terms), CSV or TBX, each term with `source`, \
        `translation`, `category`, `description`, `locked`, `accepted`.",
    params(
        ("glossary_id" = String, Path, description = "The glossary's id."),
        ("format" = inline(GlossaryFormat), Path, description = "The file format."),
        ExportQuery,
    ),
    responses(
        (status = 200, description = "The glossary file.",
            content(
                (Vec<GlossaryFileTerm> = "application/json"),
                (String = "text/csv"),
                (String = "application/x-tbx+xml"),
            ),
            headers(("Content-Disposition" = String,
                description = "`attachment` with the file name."))),
        ExportRefusals,
    ),
    extensions(("x-required-scopes" = json!([glossaries::READ.rest]))),
)]
pub async fn export(
    State(state): State<AppState>,
    token: TokenCaller,
    Path((glossary_id, format)): Path<(String, String)>,
    Query(query): Query<ExportQuery>,
) -> ApiResult<Response> {
    // An unknown format is an address that does not exist.
    let format: GlossaryFormat = format
        .parse()
        .map_err(|_| ApiError::new(ErrorCode::NotFound))?;
    let bom = boolean(query.bom.as_deref(), "query", "bom")?.unwrap_or(false);
    let delimiter = query.delimiter.unwrap_or(CsvDelimiter::Comma);
    let file = glossaries::export(
        &state,
        &Caller::rest(token),
        glossary_id,
        format,
        delimiter,
        bom,
    )
    .await?;
    let mut response = Response::new(Body::from(file.content));
    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(&file.media_type) {
        headers.insert(header::CONTENT_TYPE, value);
    }
    if let Ok(value) = HeaderValue::from_str(&format!("attachment; filename=\"{}\"", file.filename))
    {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
    Ok(response)
}

#[derive(Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ImportQuery {
    /// Previews without applying, and lists invalid rows instead of
    /// refusing the file. Default false.
    #[serde(default)]
    #[param(value_type = Option<bool>)]
    dry_run: Option<String>,
}

/// A glossary file to import, as a multipart form. Empty fields count as
/// not given; unknown fields are refused.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GlossaryImportForm {
    /// A JSON list of terms, a CSV file or a TBX file (v2 and v3); at most
    /// 2 MiB.
    #[schema(value_type = String, format = Binary)]
    pub file: Vec<u8>,
    /// Default `skip`.
    pub strategy: Option<ImportStrategy>,
    /// CSV only; detected by default.
    pub delimiter: Option<CsvDelimiter>,
    /// A JSON object from field name (`source`, `translation`, `category`,
    /// `description`, `locked`, `accepted`) to column number from 0;
    /// default: from the headers.
    pub mapping: Option<String>,
    /// Whether the first row holds column names; detected by default.
    pub header: Option<bool>,
    /// True leaves invalid rows out instead of refusing the file.
    pub skip_invalid: Option<bool>,
}

refusals!(
    /// What a glossary import may answer besides its report.
    ImportRefusals: [
        GlossaryNotFound, InvalidRequest, PayloadTooLarge, UnsupportedMediaType, DemoReadOnly,
    ]
);

/// `POST /api/v1/glossaries/{glossary_id}/import` (spec 4.7).
#[utoipa::path(
    post,
    path = "/glossaries/{glossary_id}/import",
    operation_id = "importGlossary",
    tag = "glossaries",
    summary = "Import terms into a shared glossary",
    description = "A JSON list of terms, a CSV file or a TBX file (v2 and v3), at most 2 MiB. \
        CSV may carry a byte order mark; headers are recognised in French or English; a file \
        without header uses its first two columns. Sources are matched case-insensitively. \
        With `dry_run=true` nothing is written.",
    params(
        ("glossary_id" = String, Path, description = "The glossary's id."),
        ImportQuery,
    ),
    request_body(content = GlossaryImportForm, content_type = "multipart/form-data"),
    responses(
        (status = 200, description = "The import report.", body = ImportReport),
        ImportRefusals,
    ),
    extensions(("x-required-scopes" = json!([glossaries::WRITE.rest]))),
)]
pub async fn import(
    State(state): State<AppState>,
    token: TokenCaller,
    Path(glossary_id): Path<String>,
    Query(query): Query<ImportQuery>,
    request: Request,
) -> ApiResult<Json<ImportReport>> {
    let caller = Caller::rest(token);
    // The scope is judged before the file is read.
    caller.require(glossaries::WRITE)?;
    let dry_run = boolean(query.dry_run.as_deref(), "query", "dry_run")?.unwrap_or(false);
    let mut form = read_import_form(request).await?;
    form.dry_run = dry_run;
    let report = glossaries::import(&state, &caller, glossary_id, form).await?;
    Ok(Json(report))
}

fn body_issue(field: &str, kind: IssueKind) -> Issue {
    Issue::at("body", field, kind)
}

fn multipart_error(error: &MultipartError) -> ApiError {
    if error.status() == StatusCode::PAYLOAD_TOO_LARGE {
        ApiError::new(ErrorCode::PayloadTooLarge)
    } else {
        invalid(Issue::new(["body"], IssueKind::ValueError))
    }
}

/// Reads the import form: `file` (at most [`MAX_IMPORT_BYTES`], read chunk
/// by chunk so a larger one is refused without being held), `strategy`,
/// `delimiter`, `mapping`, `header`, `skip_invalid`.
async fn read_import_form(request: Request) -> ApiResult<ImportForm> {
    let is_form =
        crate::extract::media_type(request.headers()).as_deref() == Some("multipart/form-data");
    if !is_form {
        return Err(ApiError::new(ErrorCode::UnsupportedMediaType));
    }
    let mut multipart = Multipart::from_request(request, &())
        .await
        .map_err(|_| invalid(Issue::new(["body"], IssueKind::ValueError)))?;
    let mut form = ImportForm::default();
    let mut has_file = false;
    // An oversized file is read to its end (within the body limit) but not
    // kept, so the 413 reaches a client still writing it.
    let mut too_large = false;
    while let Some(mut field) = multipart
        .next_field()
        .await
        .map_err(|e| multipart_error(&e))?
    {
        let name = field.name().unwrap_or("").to_owned();
        if name == "file" {
            if has_file {
                return Err(invalid(body_issue("file", IssueKind::ExtraForbidden)));
            }
            has_file = true;
            form.filename = field.file_name().unwrap_or("").to_owned();
            while let Some(chunk) = field.chunk().await.map_err(|e| multipart_error(&e))? {
                if form.content.len() + chunk.len() > MAX_IMPORT_BYTES {
                    too_large = true;
                    form.content.clear();
                }
                if !too_large {
                    form.content.extend_from_slice(&chunk);
                }
            }
            continue;
        }
        let value = field.text().await.map_err(|e| multipart_error(&e))?;
        let value = value.trim();
        if value.is_empty() {
            continue;
        }
        match name.as_str() {
            "strategy" => {
                form.strategy = value.parse().map_err(|_| {
                    invalid(
                        body_issue("strategy", IssueKind::Enum).with_ctx(
                            IssueContext::new()
                                .expected(dragoman_model::vocab::ImportStrategy::expected()),
                        ),
                    )
                })?;
            }
            "delimiter" => {
                form.delimiter = Some(value.parse().map_err(|_| {
                    invalid(
                        body_issue("delimiter", IssueKind::Enum)
                            .with_ctx(IssueContext::new().expected(CsvDelimiter::expected())),
                    )
                })?);
            }
            "mapping" => form.mapping = mapping(value)?,
            "header" => form.header = boolean(Some(value), "body", "header")?,
            "skip_invalid" => {
                form.skip_invalid = boolean(Some(value), "body", "skip_invalid")?.unwrap_or(false);
            }
            _ => return Err(invalid(body_issue(&name, IssueKind::ExtraForbidden))),
        }
    }
    if too_large {
        return Err(ApiError::new(ErrorCode::PayloadTooLarge).with("limit", MAX_IMPORT_BYTES));
    }
    if !has_file {
        return Err(invalid(body_issue("file", IssueKind::Missing)));
    }
    Ok(form)
}

/// `mapping`: a JSON object from a name to a column number from 0. Which
/// names are term fields, and which columns the file has, the memory
/// service judges with the file.
fn mapping(raw: &str) -> ApiResult<BTreeMap<String, u32>> {
    let parsed: BTreeMap<String, Value> = serde_json::from_str(raw)
        .map_err(|_| invalid(body_issue("mapping", IssueKind::JsonInvalid)))?;
    let mut mapping = BTreeMap::new();
    for (field, column) in parsed {
        let loc = [
            LocPart::from("body"),
            LocPart::from("mapping"),
            LocPart::from(field.as_str()),
        ];
        let Some(column) = column.as_u64().and_then(|c| u32::try_from(c).ok()) else {
            return Err(invalid(Issue::new(loc, IssueKind::TypeError)));
        };
        mapping.insert(field, column);
    }
    Ok(mapping)
}

refusals!(
    /// What reading a series' shared glossary may answer besides it.
    FollowedRefusals: [SeriesNotFound]
);

/// `GET /api/v1/series/{series_id}/shared-glossary` (spec 4.7).
#[utoipa::path(
    get,
    path = "/series/{series_id}/shared-glossary",
    operation_id = "getSeriesSharedGlossary",
    tag = "glossaries",
    summary = "Read the shared glossary a series follows",
    params(("series_id" = String, Path, description = "The series' id.")),
    responses(
        (status = 200, description = "The series and the glossary it follows (null when none).",
            body = SeriesGlossaryView),
        FollowedRefusals,
    ),
    extensions(("x-required-scopes" = json!([glossaries::READ.rest]))),
)]
pub async fn followed(
    State(state): State<AppState>,
    token: TokenCaller,
    Path(series_id): Path<String>,
) -> ApiResult<Json<SeriesGlossaryView>> {
    let answer = glossaries::followed(&state, &Caller::rest(token), series_id).await?;
    Ok(Json(answer))
}

refusals!(
    /// What attaching a shared glossary may answer besides the result.
    AttachRefusals: [
        SeriesNotFound, GlossaryNotFound, InvalidRequest, UnsupportedMediaType, PayloadTooLarge,
        DemoReadOnly,
    ]
);

/// `PUT /api/v1/series/{series_id}/shared-glossary` (spec 4.7).
#[utoipa::path(
    put,
    path = "/series/{series_id}/shared-glossary",
    operation_id = "setSeriesSharedGlossary",
    tag = "glossaries",
    summary = "Attach a shared glossary to a series, or detach it",
    description = "With both languages set, a glossary applies only to volumes of that pair.",
    params(("series_id" = String, Path, description = "The series' id.")),
    request_body(content = Attachment, content_type = "application/json"),
    responses(
        (status = 200, description = "The series and the glossary it now follows.",
            body = SeriesGlossaryView),
        AttachRefusals,
    ),
    extensions(("x-required-scopes" = json!([glossaries::WRITE.rest]))),
)]
pub async fn attach(
    State(state): State<AppState>,
    token: TokenCaller,
    Path(series_id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<SeriesGlossaryView>> {
    let caller = Caller::rest(token);
    caller.require(glossaries::WRITE)?;
    let body: Attachment = json_body(&headers, &body)?;
    let answer = glossaries::attach(&state, &caller, series_id, body).await?;
    Ok(Json(answer))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mapping_is_an_object_of_column_numbers() {
        let parsed = mapping(r#"{"source": 2, "translation": 0}"#).expect("valid");
        assert_eq!(parsed.get("source"), Some(&2));
        assert_eq!(parsed.get("translation"), Some(&0));
        for bad in [r#"{"source": -1}"#, r#"{"source": "1"}"#, "[1, 2]", "{"] {
            assert_eq!(
                mapping(bad).unwrap_err().code,
                ErrorCode::InvalidRequest,
                "{bad}"
            );
        }
    }

    #[test]
    fn booleans_are_true_or_false() {
        assert_eq!(boolean(Some("true"), "query", "bom").ok(), Some(Some(true)));
        assert_eq!(boolean(None, "query", "bom").ok(), Some(None));
        assert!(boolean(Some("yes"), "query", "bom").is_err());
    }
}
