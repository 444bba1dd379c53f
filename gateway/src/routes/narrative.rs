//! Narrative context routes (spec 4.8), over
//! [`operations::narrative`](crate::operations::narrative). The bundles
//! are answered as the memory service wrote them, byte for byte, so two
//! reads of an unchanged book differ only in `generated_at`.

use crate::auth::bearer::TokenCaller;
use crate::error::{ApiError, ApiResult};
use crate::operations::{Caller, narrative};
use crate::state::AppState;
use axum::Json;
use axum::extract::{Path, RawQuery, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use dragoman_model::vocab::{ErrorCode, Issue, IssueKind};
use serde_json::{Value, json};

pub async fn books(State(state): State<AppState>, token: TokenCaller) -> ApiResult<Json<Value>> {
    let listed = narrative::books(&state, &Caller::rest(token)).await?;
    Ok(Json(Value::Array(listed)))
}

fn query_issue(field: &str, kind: IssueKind) -> ApiError {
    ApiError::new(ErrorCode::InvalidRequest)
        .with_issues(vec![Issue::new([json!("query"), json!(field)], kind)])
}

/// The bundle query: `chapter_id` may repeat, `text` is `none` or absent.
fn context_query(raw: Option<&str>) -> ApiResult<(Vec<String>, bool)> {
    let mut chapter_ids = Vec::new();
    let mut with_text = true;
    for (key, value) in form_urlencoded::parse(raw.unwrap_or("").as_bytes()) {
        match key.as_ref() {
            "chapter_id" if !value.is_empty() => chapter_ids.push(value.into_owned()),
            "chapter_id" => {}
            "text" => match value.as_ref() {
                "none" => with_text = false,
                "" | "full" => with_text = true,
                _ => {
                    return Err(ApiError::new(ErrorCode::InvalidRequest).with_issues(vec![
                        Issue::new([json!("query"), json!("text")], IssueKind::Enum)
                            .with_ctx(json!({"expected": "none, full"})),
                    ]));
                }
            },
            other => return Err(query_issue(other, IssueKind::ExtraForbidden)),
        }
    }
    Ok((chapter_ids, with_text))
}

fn json_text(body: String) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

pub async fn book_context(
    State(state): State<AppState>,
    token: TokenCaller,
    Path(book_id): Path<String>,
    RawQuery(query): RawQuery,
) -> ApiResult<Response> {
    let caller = Caller::rest(token);
    let (chapter_ids, with_text) = context_query(query.as_deref())?;
    let body = narrative::book_context(&state, &caller, book_id, chapter_ids, with_text).await?;
    Ok(json_text(body))
}

pub async fn book_revision(
    State(state): State<AppState>,
    token: TokenCaller,
    Path(book_id): Path<String>,
) -> ApiResult<Response> {
    let body = narrative::book_revision(&state, &Caller::rest(token), book_id).await?;
    Ok(json_text(body))
}

pub async fn series_context(
    State(state): State<AppState>,
    token: TokenCaller,
    Path(series_id): Path<String>,
) -> ApiResult<Response> {
    let body = narrative::series_context(&state, &Caller::rest(token), series_id).await?;
    Ok(json_text(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chapter_ids_repeat_and_text_none_leaves_the_text_out() {
        let (ids, with_text) =
            context_query(Some("chapter_id=a&chapter_id=b&text=none")).expect("valid");
        assert_eq!(ids, ["a", "b"]);
        assert!(!with_text);
        let (ids, with_text) = context_query(None).expect("valid");
        assert!(ids.is_empty() && with_text);
        assert_eq!(
            context_query(Some("text=some")).unwrap_err().code,
            ErrorCode::InvalidRequest
        );
        assert_eq!(
            context_query(Some("chapters=a")).unwrap_err().code,
            ErrorCode::InvalidRequest
        );
    }
}
