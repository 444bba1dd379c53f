//! The machine-readable description of the automation API: an OpenAPI
//! 3.1.0 document (API version 1, spec 9) generated from the routes and
//! the types, served without a token at `GET /api/v1/openapi.json`.
//!
//! Each route of `/api/v1` is registered from its `#[utoipa::path]`
//! annotation ([`crate::routes::automation_routes`]), so the router and
//! the document list the same operations. The annotations give parameters,
//! bodies, success responses and headers; [`refusals`] adds each
//! operation's error codes grouped by status from [`ErrorCode`];
//! [`security`] turns the scopes an operation checks into its security
//! requirement; [`schemas`] describes the upload forms.
//! `docs/openapi.json` is the committed copy; a test fails when it drifts.

pub mod refusals;
pub mod schemas;
pub mod security;

use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use std::borrow::Cow;
use std::sync::LazyLock;
use utoipa::openapi::path::{Parameter, ParameterBuilder, ParameterIn};
use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, Type};
use utoipa::openapi::{Components, RefOr, Required, Schema};
use utoipa::{IntoParams, OpenApi, PartialSchema, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

/// Where the automation API is mounted.
pub const API_ROOT: &str = "/api/v1";

/// Where the document is served, under [`API_ROOT`].
pub const DOCUMENT_PATH: &str = "/openapi.json";

/// Response headers sent every time a response documents them.
const ALWAYS_SENT: &[&str] = &[
    "Content-Language",
    "WWW-Authenticate",
    "Location",
    "Idempotent-Replayed",
    "X-Service-Complete",
    "X-Service-Status",
];

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Dragoman automation API",
        version = "1",
        description = "Translate whole books with language models, without a person in \
            between: send a book (EPUB, TXT or DOCX chapters, or JSON), follow the request by \
            polling its status (optionally long polling) or by a signed webhook, then download \
            the result and its completion report. Every operation needs a bearer API token \
            with the scope it names. Every error body is the envelope `{\"detail\": {\"code\", \
            \"message\", …}}` with a stable `code`; `message` is French, or English with \
            `Accept-Language: en`. Identifiers are UUID strings; times are Unix seconds.",
        license(name = "AGPL-3.0-only", identifier = "AGPL-3.0-only"),
    ),
    // Relative: the document is served by the installation it describes,
    // whatever its host, so its operations resolve against that origin.
    servers((url = "/", description = "The installation serving this document.")),
    components(schemas(refusals::ErrorEnvelope)),
    tags(
        (name = "translation-requests", description = "Send books, follow them, control them, download results (spec 4.2 to 4.5)."),
        (name = "providers", description = "The installation's language-model providers (spec 4.6)."),
        (name = "series", description = "Series, their volumes and whole-series job actions (spec 4.7)."),
        (name = "glossaries", description = "Shared glossaries and the one a series follows (spec 4.7)."),
        (name = "narrative", description = "Read-only narrative context of books and series (spec 4.8)."),
        (name = "meta", description = "This document."),
    ),
)]
struct ApiDoc;

/// The optional `Idempotency-Key` header of a send (spec 4.2).
pub struct IdempotencyKey;

impl IntoParams for IdempotencyKey {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        vec![
            ParameterBuilder::new()
                .name("Idempotency-Key")
                .parameter_in(ParameterIn::Header)
                .required(Required::False)
                .description(Some(
                    "1 to 200 printable characters. The same content sent again with the same \
                     key answers 200 with the original request (header `Idempotent-Replayed: \
                     true`), even when queue quotas are full; other content with the same key \
                     answers 409 `idempotency_conflict`; a malformed key 422 \
                     `invalid_idempotency_key`. Priority is not part of the content.",
                ))
                .schema(Some(
                    ObjectBuilder::new()
                        .schema_type(Type::String)
                        .min_length(Some(1))
                        .max_length(Some(200))
                        .pattern(Some("^[\\x20-\\x7E]{1,200}$")),
                ))
                .build(),
        ]
    }
}

/// A file's bytes.
pub struct Binary;

impl PartialSchema for Binary {
    fn schema() -> RefOr<Schema> {
        RefOr::T(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .format(Some(SchemaFormat::KnownFormat(KnownFormat::Binary)))
                .into(),
        )
    }
}

impl ToSchema for Binary {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("Binary")
    }
}

/// `GET /api/v1/openapi.json`: this document, without a token.
#[utoipa::path(
    get,
    path = "/openapi.json",
    operation_id = "getOpenApiDocument",
    tag = "meta",
    summary = "This API's OpenAPI 3.1.0 document",
    description = "Needs no token.",
    responses(
        (status = 200, description = "The OpenAPI 3.1.0 document of the automation API.",
            content_type = "application/json", body = Object),
    ),
    extensions(("x-required-scopes" = json!([]))),
)]
pub async fn serve() -> ApiResult<Response> {
    match DOCUMENT.as_ref() {
        Ok(text) => {
            Ok(([(header::CONTENT_TYPE, "application/json")], text.as_str()).into_response())
        }
        Err(problem) => Err(ApiError::server(format!("OpenAPI document: {problem}"))),
    }
}

/// The document as served: built once, pretty-printed.
static DOCUMENT: LazyLock<Result<String, String>> = LazyLock::new(text);

/// The document as `docs/openapi.json` holds it: pretty-printed JSON and a
/// final newline.
pub fn text() -> Result<String, String> {
    let document = document().map_err(|e| e.to_string())?;
    let mut text = serde_json::to_string_pretty(&document).map_err(|e| e.to_string())?;
    text.push('\n');
    Ok(text)
}

/// The OpenAPI document of `/api/v1`.
pub fn document() -> Result<Value, serde_json::Error> {
    let routes = crate::routes::automation_routes().routes(routes!(serve));
    let mut api = OpenApiRouter::<AppState>::with_openapi(ApiDoc::openapi())
        .nest(API_ROOT, routes)
        .into_openapi();
    security::apply(&mut api.paths);
    let components = api.components.get_or_insert_with(Components::new);
    components.security_schemes = [(security::SCHEME.to_owned(), security::scheme())].into();
    components.responses = refusals::shared()
        .into_iter()
        .map(|(name, response)| (name, RefOr::T(response)))
        .collect();
    // A header's `required` is not in utoipa's model: set in the JSON.
    let mut document = serde_json::to_value(&api)?;
    if let Some(paths) = document.get_mut("paths").and_then(Value::as_object_mut) {
        paths
            .values_mut()
            .filter_map(Value::as_object_mut)
            .flat_map(|item| item.values_mut())
            .filter_map(|operation| operation.get_mut("responses"))
            .filter_map(Value::as_object_mut)
            .flat_map(|responses| responses.values_mut())
            .for_each(mark_always_sent);
    }
    if let Some(Value::Object(shared)) = document.pointer_mut("/components/responses") {
        shared.values_mut().for_each(mark_always_sent);
    }
    Ok(document)
}

/// Marks the headers of [`ALWAYS_SENT`] as required in `response`.
fn mark_always_sent(response: &mut Value) {
    let Some(headers) = response.get_mut("headers").and_then(Value::as_object_mut) else {
        return;
    };
    for (name, header) in headers.iter_mut() {
        if ALWAYS_SENT.contains(&name.as_str())
            && let Value::Object(header) = header
        {
            header.insert("required".into(), Value::Bool(true));
        }
    }
}

#[cfg(test)]
mod tests;
