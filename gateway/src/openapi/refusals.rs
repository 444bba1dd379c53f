//! Refusals in the OpenAPI document: the error envelope of spec 2.12 and,
//! for each operation, the error codes it may answer (spec 4, 7), grouped
//! by the HTTP status [`ErrorCode::http_status`] gives them, with `code`
//! limited to those codes and described by the English message the
//! envelope writes. Codes, statuses and messages all come from
//! [`ErrorCode`] and [`crate::messages`]; nothing here spells a code.
//!
//! An operation names its own codes with [`refusals!`] next to its route;
//! [`COMMON`] are added to every operation.

use crate::messages::texts;
use dragoman_model::vocab::{ErrorCode, IssueKind, Priority, RequestStatus};
use serde::Serialize;
use std::collections::BTreeMap;
use utoipa::ToSchema;
use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::response::{Response, ResponseBuilder};
use utoipa::openapi::schema::{AllOfBuilder, ObjectBuilder, OneOfBuilder, Schema, Type};
use utoipa::openapi::{ContentBuilder, Ref, RefOr};

/// Codes every automation operation may answer (spec 4, 5, 7): the
/// bearer's refusals, the licence without the automation API, a missing
/// scope, the rate limit, a server error and a database outage.
pub const COMMON: &[ErrorCode] = &[
    ErrorCode::MissingToken,
    ErrorCode::InvalidToken,
    ErrorCode::RevokedToken,
    ErrorCode::ExpiredToken,
    ErrorCode::InactiveAccount,
    ErrorCode::Unauthorized,
    ErrorCode::AutomationNotLicensed,
    ErrorCode::InsufficientScope,
    ErrorCode::RateLimited,
    ErrorCode::ServerError,
    ErrorCode::ServiceUnavailable,
];

/// Codes whose answer carries a `Retry-After` header (seconds).
const RETRY_AFTER: &[ErrorCode] = &[
    ErrorCode::RateLimited,
    ErrorCode::ResultNotReady,
    ErrorCode::ServiceUnavailable,
];

/// Declares a type whose responses (for `#[utoipa::path(responses(…))]`)
/// are the refusals of the codes given plus [`COMMON`].
macro_rules! refusals {
    ($(#[$meta:meta])* $name:ident: [$($code:ident),* $(,)?]) => {
        $(#[$meta])*
        pub struct $name;

        impl utoipa::IntoResponses for $name {
            fn responses() -> std::collections::BTreeMap<
                String,
                utoipa::openapi::RefOr<utoipa::openapi::response::Response>,
            > {
                $crate::openapi::refusals::responses(&[
                    $(dragoman_model::vocab::ErrorCode::$code),*
                ])
            }
        }
    };
}
pub(crate) use refusals;

/// The responses of `codes` and [`COMMON`], one per HTTP status. A status
/// whose codes are only the common ones refers to its shared response
/// ([`shared`]).
pub fn responses(codes: &[ErrorCode]) -> BTreeMap<String, RefOr<Response>> {
    by_status(COMMON.iter().chain(codes))
        .into_iter()
        .map(|(status, codes)| {
            let answer = if codes == common_of(status) {
                RefOr::Ref(Ref::from_response_name(shared_name(status)))
            } else {
                RefOr::T(response(status, &codes))
            };
            (status.to_string(), answer)
        })
        .collect()
}

/// The shared responses of the common codes, by name, for the document's
/// `components.responses`.
pub fn shared() -> BTreeMap<String, Response> {
    by_status(COMMON.iter())
        .into_iter()
        .map(|(status, codes)| (shared_name(status), response(status, &codes)))
        .collect()
}

/// `codes` grouped by HTTP status, each once, in the order given.
fn by_status<'a>(codes: impl Iterator<Item = &'a ErrorCode>) -> BTreeMap<u16, Vec<ErrorCode>> {
    let mut grouped: BTreeMap<u16, Vec<ErrorCode>> = BTreeMap::new();
    for code in codes {
        let listed = grouped.entry(code.http_status()).or_default();
        if !listed.contains(code) {
            listed.push(*code);
        }
    }
    grouped
}

/// The common codes answering with `status`.
fn common_of(status: u16) -> Vec<ErrorCode> {
    by_status(COMMON.iter()).remove(&status).unwrap_or_default()
}

/// `Unauthorized`, `PaymentRequired`, `TooManyRequests`, …
fn shared_name(status: u16) -> String {
    let reason = axum::http::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("Refused");
    reason.split_whitespace().collect()
}

/// The spec codes of `codes`, each once, with the messages of the
/// variants that answer it.
fn spec_codes(codes: &[ErrorCode]) -> Vec<(&'static str, Vec<&'static str>)> {
    let mut listed: Vec<(&'static str, Vec<&'static str>)> = Vec::new();
    for code in codes {
        let message = texts(*code).1;
        match listed.iter_mut().find(|(name, _)| *name == code.code()) {
            Some((_, messages)) if !messages.contains(&message) => messages.push(message),
            Some(_) => {}
            None => listed.push((code.code(), vec![message])),
        }
    }
    listed
}

fn response(status: u16, codes: &[ErrorCode]) -> Response {
    let listed = spec_codes(codes);
    let mut description = String::from("Refused (error envelope, spec 2.12):");
    for (code, messages) in &listed {
        description.push_str(&format!("\n- `{code}`: {}", messages.join(" / ")));
    }
    let names: Vec<&str> = listed.iter().map(|(code, _)| *code).collect();
    let detail = AllOfBuilder::new()
        .item(Ref::from_schema_name("ErrorDetail"))
        .item(
            ObjectBuilder::new().property(
                "code",
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .enum_values(Some(names)),
            ),
        );
    let body = ObjectBuilder::new()
        .property("detail", detail)
        .required("detail");
    let mut builder = ResponseBuilder::new()
        .description(description)
        .content(
            "application/json",
            ContentBuilder::new().schema(Some(body)).build(),
        )
        .header(
            "Content-Language",
            HeaderBuilder::new()
                .schema(
                    ObjectBuilder::new()
                        .schema_type(Type::String)
                        .enum_values(Some(["fr", "en"])),
                )
                .description(Some(
                    "The language of `message`: English when the request has \
                     `Accept-Language: en`, else French.",
                ))
                .build(),
        );
    if status == 401 {
        builder = builder.header(
            "WWW-Authenticate",
            HeaderBuilder::new()
                .schema(ObjectBuilder::new().schema_type(Type::String))
                .description(Some("`Bearer realm=\"service\"`."))
                .build(),
        );
    }
    if codes.iter().any(|code| RETRY_AFTER.contains(code)) {
        let which: Vec<String> = spec_codes(
            &codes
                .iter()
                .copied()
                .filter(|code| RETRY_AFTER.contains(code))
                .collect::<Vec<_>>(),
        )
        .into_iter()
        .map(|(code, _)| format!("`{code}`"))
        .collect();
        builder = builder.header(
            "Retry-After",
            HeaderBuilder::new()
                .schema(
                    ObjectBuilder::new()
                        .schema_type(Type::Integer)
                        .minimum(Some(0)),
                )
                .description(Some(format!(
                    "Seconds to wait before asking again; sent with {}.",
                    which.join(", ")
                )))
                .build(),
        );
    }
    builder.build()
}

/// Every error body (spec 2.12): one key, `detail`.
#[derive(Serialize, ToSchema)]
pub struct ErrorEnvelope {
    pub detail: ErrorDetail,
}

/// What went wrong: a stable `code`, a `message` for people, and the
/// fields some codes add (spec 7). Validation errors list their `issues`
/// and never echo the submitted values.
#[derive(Serialize, ToSchema)]
pub struct ErrorDetail {
    /// Stable error code (spec 7).
    #[schema(schema_with = every_code)]
    pub code: String,
    /// French, or English when the request has `Accept-Language: en`.
    /// For `server_error` it quotes the diagnostic `reference`.
    pub message: String,
    /// The located problems of a validation error.
    pub issues: Option<Vec<ValidationIssue>>,
    /// `insufficient_scope`: the missing scope; `queue_full`: `token` or
    /// `account`, the quota that is full.
    pub scope: Option<String>,
    /// `priority_not_allowed`: the highest priority allowed.
    pub max_priority: Option<Priority>,
    /// `budget_exceeded` at intake: the token's cap.
    pub budget: Option<TokenBudget>,
    /// `licence_quota_insufficient`, `allowance_insufficient`: the words
    /// the request needs.
    pub words: Option<i64>,
    /// `licence_quota_insufficient`, `allowance_insufficient`: the words
    /// left, margin included.
    pub left: Option<i64>,
    /// `queue_full`: the quota; `payload_too_large`: the size allowed.
    pub limit: Option<i64>,
    /// `result_not_ready`: the request's status.
    pub status: Option<RequestStatus>,
    /// `result_not_ready`: the chapters not fully translated yet.
    pub incomplete_chapters: Option<Vec<String>>,
    /// `request_failed`, `request_cancelled`, `conflict`,
    /// `volume_conflict`, `invalid_placement`: why.
    pub reason: Option<String>,
    /// `volume_conflict` for a volume in another language pair: the pair
    /// the volume is translated in.
    pub volume_languages: Option<VolumeLanguages>,
    /// `chapter_conflict`, `conflict`, `invalid_placement`: the chapters
    /// concerned (their external ids, else their labels).
    pub chapters: Option<Vec<String>>,
    /// `invalid_epub`, `delivery_failed`: the reader's or validator's own
    /// words (also appended to `message`).
    pub problem: Option<String>,
    /// `server_error`: the reference of the diagnostic in the server logs.
    pub reference: Option<String>,
}

/// The languages of a volume.
#[derive(Serialize, ToSchema)]
pub struct VolumeLanguages {
    pub source_language: String,
    pub target_language: String,
}

/// A token's spending cap (spec 8), as the completion report gives it too.
pub use dragoman_model::documents::report::TokenBudget;

/// One located problem of a validation error.
#[derive(Serialize, ToSchema)]
pub struct ValidationIssue {
    /// Where: `["body", "chapters", 3, "title"]`, `["query", "wait"]`.
    #[schema(schema_with = location)]
    pub loc: Vec<serde_json::Value>,
    /// What is wrong, in the language of `message`.
    pub msg: String,
    #[serde(rename = "type")]
    pub kind: IssueKind,
}

/// `code`: every spec code.
fn every_code() -> Schema {
    let names: Vec<&str> = spec_codes(ErrorCode::ALL)
        .into_iter()
        .map(|(code, _)| code)
        .collect();
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(names))
        .into()
}

/// `loc`: names and list indexes.
fn location() -> Schema {
    let part = OneOfBuilder::new()
        .item(ObjectBuilder::new().schema_type(Type::String))
        .item(
            ObjectBuilder::new()
                .schema_type(Type::Integer)
                .minimum(Some(0)),
        );
    utoipa::openapi::schema::ArrayBuilder::new()
        .items(part)
        .min_items(Some(1))
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_grouped_by_their_status_with_the_common_ones() {
        let answered = responses(&[
            ErrorCode::RequestNotFound,
            ErrorCode::Conflict,
            ErrorCode::QueueFull,
        ]);
        let statuses: Vec<&str> = answered.keys().map(String::as_str).collect();
        assert_eq!(
            statuses,
            ["401", "402", "403", "404", "409", "429", "500", "503"]
        );
        let RefOr::T(not_found) = &answered["404"] else {
            panic!("inline response");
        };
        assert!(not_found.description.contains("`request_not_found`"));
        // Only the common codes: the shared response.
        let RefOr::Ref(unauthorized) = &answered["401"] else {
            panic!("shared response");
        };
        assert_eq!(
            unauthorized.ref_location,
            "#/components/responses/Unauthorized"
        );
        let RefOr::T(limited) = &answered["429"] else {
            panic!("inline response");
        };
        assert!(limited.description.contains("`queue_full`"));
        assert!(limited.headers.contains_key("Retry-After"));
        let shared = shared();
        assert!(
            shared["Unauthorized"]
                .headers
                .contains_key("WWW-Authenticate")
        );
        assert!(
            shared["TooManyRequests"]
                .headers
                .contains_key("Retry-After")
        );
        assert!(shared.contains_key("InternalServerError"));
        assert!(
            shared["ServiceUnavailable"]
                .headers
                .contains_key("Retry-After")
        );
    }

    #[test]
    fn a_spec_code_two_variants_share_is_listed_once() {
        let listed = spec_codes(&[
            ErrorCode::Conflict,
            ErrorCode::SeriesSuspended,
            ErrorCode::NotOwnJob,
        ]);
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].0, "conflict");
        assert_eq!(listed[0].1.len(), 3);
    }
}
