//! Reader notes of a book's glossary terms (spec 4.9, session only):
//! `GET /api/projects/{pid}/reader-notes` lists the accepted terms in force
//! for the book with their note and the proposals of `translator_notes`
//! jobs; `PUT /api/projects/{pid}/glossary/{gid}/reader-note` sets one
//! term's note (`reader_note` empty or null removes it), naming the note
//! the person read (`previous_note`, null when none): a note changed since
//! is 409 `conflict`. The memory service owns the notes and checks their
//! meaning (plain text, 2,000 characters, the term in force, the proposal
//! job); this route checks the shape and logs the change.

use crate::auth::session::SessionUser;
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::identity::audit;
use crate::state::AppState;
use axum::extract::{Path, State};
use axum::routing::{get, put};
use axum::{Json, Router};
use dragoman_model::vocab::{AuditAction, ErrorCode, Issue, IssueKind, NotePlacement, TermLayer};
use dragoman_proto::v1;
use dragoman_proto::wire::WireEnum;
use serde::{Deserialize, Serialize};

/// The routes of this module, mounted under `/api`.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/projects/{project_id}/reader-notes", get(list))
        .route(
            "/projects/{project_id}/glossary/{term_id}/reader-note",
            put(set),
        )
}

/// A note a `translator_notes` job proposed.
#[derive(Debug, Serialize)]
pub struct ProposalView {
    pub job_id: String,
    pub note: String,
    pub placement: NotePlacement,
    pub created_at: i64,
}

/// An accepted term in force for the book, with its note.
#[derive(Debug, Serialize)]
pub struct TermNoteView {
    pub term_id: String,
    pub source: String,
    pub translation: String,
    pub category: String,
    pub layer: TermLayer,
    pub reader_note: Option<String>,
    pub note_placement: NotePlacement,
    pub proposal_job: Option<String>,
    pub updated_at: Option<i64>,
    pub proposals: Vec<ProposalView>,
}

impl TryFrom<v1::TermReaderNote> for TermNoteView {
    type Error = ApiError;

    fn try_from(m: v1::TermReaderNote) -> Result<Self, ApiError> {
        Ok(TermNoteView {
            term_id: m.term_id,
            source: m.source,
            translation: m.translation,
            category: m.category,
            layer: TermLayer::from_wire(m.layer, "layer")?,
            reader_note: m.reader_note,
            note_placement: NotePlacement::from_wire(m.note_placement, "note_placement")?,
            proposal_job: m.proposal_job,
            updated_at: m.updated_at,
            proposals: m
                .proposals
                .into_iter()
                .map(|p| {
                    Ok(ProposalView {
                        job_id: p.job_id,
                        note: p.note,
                        placement: NotePlacement::from_wire(p.placement, "placement")?,
                        created_at: p.created_at,
                    })
                })
                .collect::<Result<_, ApiError>>()?,
        })
    }
}

/// The answer of the list.
#[derive(Debug, Serialize)]
pub struct ReaderNotesView {
    pub project_id: String,
    pub terms: Vec<TermNoteView>,
}

pub async fn list(
    State(state): State<AppState>,
    user: SessionUser,
    Path(project_id): Path<String>,
) -> ApiResult<Json<ReaderNotesView>> {
    let answer = state
        .memory
        .handle
        .list_reader_notes(state.call(&user.principal(), v1::ListReaderNotesRequest { project_id }))
        .await?
        .into_inner();
    Ok(Json(ReaderNotesView {
        project_id: answer.project_id,
        terms: answer
            .terms
            .into_iter()
            .map(TermNoteView::try_from)
            .collect::<Result<_, _>>()?,
    }))
}

/// The body of a note edit. `reader_note` and `previous_note` must be
/// there, null allowed.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoteChange {
    #[serde(
        default,
        deserialize_with = "dragoman_model::serde_fields::null_or_value"
    )]
    reader_note: Option<Option<String>>,
    #[serde(
        default,
        deserialize_with = "dragoman_model::serde_fields::null_or_value"
    )]
    previous_note: Option<Option<String>>,
    note_placement: NotePlacement,
    #[serde(default)]
    previous_placement: Option<NotePlacement>,
    #[serde(default)]
    proposal_job: Option<String>,
}

/// What the audit log keeps of a note edit: never the note itself.
#[derive(Debug, Serialize)]
struct NoteAudit<'a> {
    term_id: &'a str,
    removed: bool,
    note_placement: NotePlacement,
    proposal_job: Option<&'a str>,
}

/// A field the body must hold, absent: a shape error, as the body's other
/// shape errors are.
fn missing(field: &str) -> ApiError {
    ApiError::new(ErrorCode::InvalidPayload).with_issues(vec![Issue::at(
        "body",
        field,
        IssueKind::Missing,
    )])
}

pub async fn set(
    State(state): State<AppState>,
    user: SessionUser,
    Path((project_id, term_id)): Path<(String, String)>,
    JsonBody(body): JsonBody<NoteChange>,
) -> ApiResult<Json<TermNoteView>> {
    let note = body.reader_note.ok_or_else(|| missing("reader_note"))?;
    let previous = body.previous_note.ok_or_else(|| missing("previous_note"))?;
    let message = v1::SetReaderNoteRequest {
        project_id: project_id.clone(),
        term_id,
        reader_note: note.unwrap_or_default(),
        previous_note: previous,
        note_placement: body.note_placement.to_wire(),
        previous_placement: body.previous_placement.map(WireEnum::to_wire),
        proposal_job: body.proposal_job,
    };
    let answer = state
        .memory
        .handle
        .set_reader_note(state.call(&user.principal(), message))
        .await?
        .into_inner();
    let view = TermNoteView::try_from(answer)?;
    audit(
        &state.db,
        Some(&user.account.id),
        AuditAction::ReaderNoteSet,
        Some(&project_id),
        NoteAudit {
            term_id: &view.term_id,
            removed: view.reader_note.is_none(),
            note_placement: view.note_placement,
            proposal_job: view.proposal_job.as_deref(),
        },
    )
    .await?;
    Ok(Json(view))
}
