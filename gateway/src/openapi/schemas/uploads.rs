//! The forms of a book upload (spec 2.5, 4.2): a multipart form, or a raw
//! EPUB body with its options in the query. The book options are
//! [`UploadForm`]'s, the type the gateway reads them into, so the form,
//! the query and the reader cannot disagree.

use dragoman_model::upload::UploadForm;
use std::borrow::Cow;
use utoipa::openapi::path::{Parameter, ParameterBuilder, ParameterIn};
use utoipa::openapi::schema::Object;
use utoipa::openapi::{RefOr, Required, Schema};
use utoipa::{IntoParams, PartialSchema, ToSchema};

/// A derived schema as the object it is (empty if it is not one).
fn object(schema: RefOr<Schema>) -> Object {
    match schema {
        RefOr::T(Schema::Object(object)) => object,
        _ => Object::new(),
    }
}

/// A book as a multipart form: `file` or `files`, and the upload options (spec 2.5).
#[derive(ToSchema)]
pub struct BookFiles {
    #[schema(value_type = String, format = Binary)]
    pub file: (),
    #[schema(value_type = Vec<String>, format = Binary)]
    pub files: (),
}

/// [`BookFiles`] with the upload options: `file` (an EPUB, a JSON document,
/// one TXT or DOCX chapter) or `files` (TXT or DOCX chapters).
pub struct UploadRequest;

impl PartialSchema for UploadRequest {
    fn schema() -> RefOr<Schema> {
        let (mut form, files) = (object(UploadForm::schema()), object(BookFiles::schema()));
        form.description = files.description;
        form.properties.extend(files.properties);
        RefOr::T(Schema::Object(form))
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
/// the upload fields as query parameters, plus [`EpubFilename`].
pub struct EpubQuery;

/// The query parameter only a raw EPUB body has.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EpubFilename {
    /// Raw EPUB body only: the book's file name, ending in `.epub` (it may
    /// give the volume number); default `book.epub`.
    #[param(pattern = r"\.[Ee][Pp][Uu][Bb]$")]
    pub filename: Option<String>,
}

impl IntoParams for EpubQuery {
    fn into_params(parameter_in: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        let options = object(UploadForm::schema()).properties.into_iter();
        let mut params: Vec<Parameter> = options
            .map(|(name, schema)| {
                let said = object(schema.clone()).description.unwrap_or_default();
                ParameterBuilder::new()
                    .name(name)
                    .parameter_in(ParameterIn::Query)
                    .required(Required::False)
                    .description(Some(format!("Raw EPUB body only. {said}")))
                    .schema(Some(schema))
                    .build()
            })
            .collect();
        params.extend(EpubFilename::into_params(parameter_in));
        params
    }
}
