//! Reading the send form (`multipart/form-data`) as the upload route reads
//! its forms (`crate::uploads`): each file streamed into the blob store by
//! the same function and judged by the same rules, the option fields kept
//! under the upload API's own names for the scheduler to judge.
//!
//! Two things are the console's own. The form's CSRF token comes first
//! and is checked before any file is stored: a form without it stores
//! nothing. And a browser sends an empty file part for a file input left
//! empty, and the pasted text in a field of its own: both are read here.

use crate::console::guard::{CSRF_FIELD, Person};
use crate::console::page;
use crate::error::ApiError;
use crate::state::AppState;
use crate::uploads;
use axum::extract::multipart::MultipartError;
use axum::extract::{FromRequest, Multipart, Request};
use axum::response::Response;
use dragoman_model::upload::UploadedFile;
use dragoman_model::vocab::{ErrorCode, InputKind, Issue, IssueContext, IssueKind};

/// The form's field of pasted text.
pub const TEXT_FIELD: &str = "text";

/// What the form sent.
#[derive(Default)]
pub struct Sent {
    /// The option fields under the upload API's names, empty ones dropped.
    pub fields: Vec<(String, String)>,
    /// The pasted text.
    pub text: String,
    /// The files, in the blob store.
    pub files: Vec<UploadedFile>,
    /// Their kind, when files were sent.
    pub input: Option<InputKind>,
}

impl Sent {
    /// The value of option `name`, or empty.
    pub fn field(&self, name: &str) -> &str {
        self.fields
            .iter()
            .find(|(k, _)| k == name)
            .map_or("", |(_, v)| v.as_str())
    }
}

/// Why a form was not read.
pub enum Stop {
    /// Without the person's CSRF token, first: the refusal page.
    Forged(Response),
    /// Refused as the upload route refuses it; the values read so far are
    /// kept for the form, the files deleted.
    Refused(ApiError, Sent),
}

/// Reads the form; on any refusal the files stored are deleted.
pub async fn read(state: &AppState, person: &Person, request: Request) -> Result<Sent, Stop> {
    let mut sent = Sent::default();
    let Ok(mut form) = Multipart::from_request(request, &()).await else {
        let refused = uploads::refused(Issue::new(["body"], IssueKind::ValueError));
        return Err(Stop::Refused(refused, sent));
    };
    let outcome = read_into(state, person, &mut form, &mut sent).await;
    match outcome {
        Ok(()) => Ok(sent),
        Err(stop) => {
            uploads::delete_all(state.blobs.as_ref(), &sent.files).await;
            sent.files.clear();
            sent.input = None;
            drain(&mut form).await;
            Err(match stop {
                Stop::Refused(error, _) => Stop::Refused(error, sent),
                forged => forged,
            })
        }
    }
}

/// Reads what is left of a refused form without keeping it: a browser
/// still sending its body when the answer comes would otherwise see the
/// connection cut instead of the refusal. The body limit bounds it.
async fn drain(form: &mut Multipart) {
    while let Ok(Some(mut field)) = form.next_field().await {
        while let Ok(Some(_)) = field.chunk().await {}
    }
}

impl From<ApiError> for Stop {
    fn from(error: ApiError) -> Stop {
        Stop::Refused(error, Sent::default())
    }
}

async fn read_into(
    state: &AppState,
    person: &Person,
    form: &mut Multipart,
    sent: &mut Sent,
) -> Result<(), Stop> {
    let mut checked = false;
    while let Some(field) = form
        .next_field()
        .await
        .map_err(|e| uploads::multipart_error(&e))?
    {
        let name = field.name().unwrap_or("").to_owned();
        match field.file_name().map(str::to_owned) {
            // A file input left empty.
            Some(file_name) if file_name.is_empty() => {}
            Some(file_name) => {
                if !checked {
                    return Err(Stop::Forged(forged(person)));
                }
                let kind = uploads::accept_file(&name, &file_name, sent.input, &sent.files, false)?;
                if kind == InputKind::Json {
                    // The form sends books; a JSON payload goes to the API.
                    return Err(uploads::refused(
                        Issue::at("body", &name, IssueKind::Enum)
                            .with_ctx(IssueContext::new().expected(".epub, .txt or .docx")),
                    )
                    .into());
                }
                let file = uploads::store_stream(
                    &state.blobs,
                    &uploads::base_name(&file_name),
                    field,
                    |e: MultipartError| uploads::multipart_error(&e),
                )
                .await?;
                sent.files.push(file);
                sent.input = Some(kind);
            }
            None => {
                let value = field
                    .text()
                    .await
                    .map_err(|e| uploads::multipart_error(&e))?;
                if name == CSRF_FIELD {
                    if let Err(refused) = person.check(&value) {
                        return Err(Stop::Forged(refused));
                    }
                    checked = true;
                } else if name == TEXT_FIELD {
                    sent.text = value;
                } else if !value.is_empty() {
                    sent.fields.push((name, value));
                }
            }
        }
    }
    if checked {
        Ok(())
    } else {
        Err(Stop::Forged(forged(person)))
    }
}

/// The refusal of a form without the person's token, as
/// [`Person::check`] refuses a wrong one.
fn forged(person: &Person) -> Response {
    page::refused(person.lang, ErrorCode::Forbidden)
}
