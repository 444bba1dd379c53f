//! Forms and query strings of uploads: a book sent as a multipart form or
//! as a raw EPUB body with its options in the query (spec 2.5, 4.2), and a
//! glossary file sent to an import (spec 4.7). The book options are
//! [`UploadForm`]'s, the type the gateway reads them into, so the form,
//! the query and the reader cannot disagree.

use dragoman_model::upload::UploadForm;
use dragoman_model::vocab::{CsvDelimiter, ImportStrategy};
use serde::Serialize;
use std::borrow::Cow;
use utoipa::openapi::path::{Parameter, ParameterBuilder, ParameterIn};
use utoipa::openapi::schema::{ArrayBuilder, KnownFormat, ObjectBuilder, SchemaFormat, Type};
use utoipa::openapi::{RefOr, Required, Schema};
use utoipa::{IntoParams, PartialSchema, ToSchema};

/// A file part of a form.
fn binary() -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .format(Some(SchemaFormat::KnownFormat(KnownFormat::Binary)))
}

/// The upload options as an object schema (its derive makes one).
fn upload_options() -> utoipa::openapi::schema::Object {
    match UploadForm::schema() {
        RefOr::T(Schema::Object(object)) => object,
        _ => utoipa::openapi::schema::Object::new(),
    }
}

/// A book as a multipart form: `file` (the EPUB, the JSON document, or one
/// TXT or DOCX chapter) or `files` (TXT or DOCX chapters, one per file,
/// numbered from their names), and the upload options. One kind of file
/// per request; a `.json` file comes alone, without other fields. Empty
/// fields count as not given; unknown fields are refused.
pub struct UploadRequest;

impl PartialSchema for UploadRequest {
    fn schema() -> RefOr<Schema> {
        let mut object = upload_options();
        object.description = Some(
            "A book as a multipart form: `file` or `files`, and the upload options (spec 2.5)."
                .into(),
        );
        object
            .properties
            .insert("file".into(), RefOr::T(binary().into()));
        object.properties.insert(
            "files".into(),
            RefOr::T(ArrayBuilder::new().items(binary()).into()),
        );
        RefOr::T(Schema::Object(object))
    }
}

impl ToSchema for UploadRequest {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("UploadRequest")
    }

    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        UploadForm::schemas(schemas);
    }
}

/// The options of a raw EPUB body (`Content-Type: application/epub+zip`):
/// the upload fields as query parameters, plus `filename`.
pub struct EpubQuery;

impl IntoParams for EpubQuery {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        let options = upload_options();
        let mut params: Vec<Parameter> = options
            .properties
            .into_iter()
            .map(|(name, schema)| {
                let description = match &schema {
                    RefOr::T(Schema::Object(object)) => object.description.clone(),
                    _ => None,
                };
                ParameterBuilder::new()
                    .name(name)
                    .parameter_in(ParameterIn::Query)
                    .required(Required::False)
                    .description(Some(format!(
                        "Raw EPUB body only. {}",
                        description.unwrap_or_default()
                    )))
                    .schema(Some(schema))
                    .build()
            })
            .collect();
        params.push(
            ParameterBuilder::new()
                .name("filename")
                .parameter_in(ParameterIn::Query)
                .required(Required::False)
                .description(Some(
                    "Raw EPUB body only: the book's file name, ending in `.epub` (it may \
                     give the volume number); default `book.epub`.",
                ))
                .schema(Some(
                    ObjectBuilder::new()
                        .schema_type(Type::String)
                        .pattern(Some("\\.[Ee][Pp][Uu][Bb]$")),
                ))
                .build(),
        );
        params
    }
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
