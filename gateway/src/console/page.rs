//! What every page is made of: its frame ([`Chrome`]: title, language,
//! the person signed in, the navigation) and the rendering of a template
//! into an answer; and the pages that say something went wrong, in the
//! person's language, with the spec's message for the error's code.

use super::assets;
use super::guard::Person;
use super::text::{self, ChromeText, texts};
use crate::error::ApiError;
use crate::messages::{self, Lang};
use crate::validate::Checks;
use askama::Template;
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use dragoman_model::vocab::{ErrorCode, IssueKind, LocPart};

/// The person a page is shown to, as its frame names them.
#[derive(Debug, Clone)]
pub struct Signed {
    pub username: String,
    pub is_admin: bool,
    pub csrf: String,
}

/// A page's frame.
#[derive(Debug, Clone)]
pub struct Chrome {
    pub title: String,
    /// The `lang` attribute: `en` or `fr`.
    pub lang: &'static str,
    pub t: &'static ChromeText,
    pub signed: Option<Signed>,
    /// The page's own path and query, for the language switch to come
    /// back to, URL-encoded.
    pub back: String,
    pub css: String,
    pub js: String,
}

impl Chrome {
    /// The frame of a page shown to nobody signed in.
    pub fn anonymous(lang: Lang, title: &str, here: &str) -> Chrome {
        Chrome {
            title: title.to_owned(),
            lang: text::code(lang),
            t: ChromeText::of(lang),
            signed: None,
            back: form_urlencoded::byte_serialize(here.as_bytes()).collect(),
            css: assets::link("console.css"),
            js: assets::link("console.js"),
        }
    }

    /// The frame of a page shown to `person`.
    pub fn of(person: &Person, title: &str) -> Chrome {
        Chrome {
            signed: Some(Signed {
                username: person.user.account.username.clone(),
                is_admin: person.user.account.is_admin,
                csrf: person.csrf.clone(),
            }),
            ..Chrome::anonymous(person.lang, title, &person.here)
        }
    }
}

/// `template` rendered as a page with `status`; a template that fails to
/// render is a server error.
pub fn render_with(status: StatusCode, template: &impl Template) -> Response {
    match template.render() {
        Ok(body) => (status, Html(body)).into_response(),
        Err(e) => {
            let error = ApiError::server(format!("console template: {e}")).logged();
            tracing::error!(error = ?error.internal, "a console page could not be rendered");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                Html("<!doctype html><title>Error</title><p>Server error.</p>".to_owned()),
            )
                .into_response()
        }
    }
}

/// `template` rendered as a 200 page.
pub fn render(template: &impl Template) -> Response {
    render_with(StatusCode::OK, template)
}

texts! {
    /// The words of the error page.
    ErrorText {
        title: "Something went wrong" / "Un problème est survenu",
        home: "Back to your books" / "Retour à vos livres",
        reference: "Reference" / "Référence",
    }
}

#[derive(Template)]
#[template(path = "console/error.html")]
struct ErrorPage {
    chrome: Chrome,
    t: &'static ErrorText,
    message: String,
    reference: Option<String>,
}

/// The page of an error an operation answered, with the status its code
/// answers with and the spec's message in the person's language.
pub fn failed(lang: Lang, error: &ApiError) -> Response {
    let error = error.clone().logged();
    let reference = error
        .extra
        .get("reference")
        .and_then(|r| r.as_str())
        .map(str::to_owned);
    let t = ErrorText::of(lang);
    let page = ErrorPage {
        chrome: Chrome::anonymous(lang, t.title, "/"),
        t,
        message: messages::message(error.code, lang, reference.as_deref()),
        reference,
    };
    render_with(error.status(), &page)
}

/// The page of a refusal with `code` and nothing more to say.
pub fn refused(lang: Lang, code: ErrorCode) -> Response {
    failed(lang, &ApiError::new(code))
}

/// The words of an operation's refusal, for a form to show above itself:
/// the message of its code, then each issue's field and message.
pub fn said(lang: Lang, error: &ApiError) -> Vec<String> {
    said_with(lang, error, &[])
}

/// [`said`], with an issue at a field of `labels` (its name, then the
/// label the form shows) named by that label, as the person read it.
pub fn said_with(lang: Lang, error: &ApiError, labels: &[(&str, &str)]) -> Vec<String> {
    let mut lines = vec![messages::message(error.code, lang, None)];
    for issue in &error.issues {
        let field: Vec<String> = issue
            .loc
            .iter()
            .skip(1)
            .map(|part| match part {
                LocPart::Field(name) => name.clone(),
                LocPart::Index(index) => index.to_string(),
            })
            .collect();
        let labelled = issue.loc.last().and_then(|part| match part {
            LocPart::Field(name) => labels
                .iter()
                .find(|(field, _)| field == name)
                .map(|(_, label)| *label),
            LocPart::Index(_) => None,
        });
        let message = messages::issue_message(issue.kind, lang, issue.ctx.as_deref());
        match labelled {
            Some(label) => lines.push(format!("{label}: {message}")),
            None if field.is_empty() => lines.push(message),
            None => lines.push(format!("{}: {message}", field.join("."))),
        }
    }
    lines
}

/// A moment (Unix seconds) as the pages write it: `2026-03-01 14:05 UTC`.
pub fn moment(unix_seconds: i64) -> String {
    match time::OffsetDateTime::from_unix_timestamp(unix_seconds) {
        Ok(at) => format!("{} {:02}:{:02} UTC", at.date(), at.hour(), at.minute()),
        Err(_) => unix_seconds.to_string(),
    }
}

/// A number typed in a form's field: none when left empty, an issue at
/// `field` when it is not one.
pub fn number<T: std::str::FromStr>(checks: &mut Checks, field: &str, text: &str) -> Option<T> {
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    match text.parse::<T>() {
        Ok(value) => Some(value),
        Err(_) => {
            checks.fail(field, IssueKind::TypeError);
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_names_fields_by_their_labels_when_the_form_has_them() {
        let mut checks = Checks::new();
        checks.fail("batch_discount", IssueKind::OutOfRange);
        checks.fail("capacity", IssueKind::TypeError);
        let error = checks.finish().expect_err("two issues");
        let lines = said_with(Lang::En, &error, &[("batch_discount", "Batch discount")]);
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert!(lines[1].starts_with("Batch discount: "), "{lines:?}");
        assert!(lines[2].starts_with("capacity: "), "{lines:?}");
        assert_eq!(
            said(Lang::En, &error)[1].split(':').next(),
            Some("batch_discount")
        );
    }
}
