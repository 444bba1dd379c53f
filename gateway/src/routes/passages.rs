//! A person's passages (session routes; the book's owner or an
//! administrator):
//!
//! * `GET /api/projects/{pid}/chapters/{chapter_id}/passages`: the
//!   chapter's passages in reading order, each with its source (inline
//!   markup as the numbered placeholders a translation must keep), its
//!   translation, status, score and signals, whether a person wrote it
//!   (`human`) or validated it (`validated`), and its `version`.
//! * `PUT /api/projects/{pid}/passages/{passage_id}`: `{"version", "translation"?,
//!   "validated"?}`, at least one of the two. The pipeline's checks assess
//!   the translation (`Pipeline.AssessEdit`, against the volume's quality
//!   sheet from the memory service); the memory service, which owns the
//!   translation memory and the passages' history, judges and writes the
//!   edit (`Memory.EditPassage`: the version, the placeholders, what may be
//!   validated). Answers the passage as the listing shows it now. Logged
//!   in the audit log with the fields changed, never the text.
//!
//! An absent book and another account's answer `volume_not_found`; a
//! passage outside the book `passage_not_found`; a chapter outside it
//! `not_found`. The console's review page reads and changes passages
//! through the same functions ([`read_chapter`], [`change_passage`]).

use crate::auth::session::SessionUser;
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::identity::audit;
use crate::state::AppState;
use crate::validate::Checks;
use axum::extract::{Path, State};
use axum::routing::{get, put};
use axum::{Json, Router};
use dragoman_model::entities::{chapter, passage, project};
use dragoman_model::passages::version_of;
use dragoman_model::quality::{Signal, signals_of};
use dragoman_model::tenancy;
use dragoman_model::vocab::{AuditAction, ErrorCode, IssueKind, PassageStatus};
use dragoman_proto::principal::Principal;
use dragoman_proto::v1::{AssessEditRequest, EditAssessment, EditPassageRequest, ProjectRef};
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, QueryOrder};
use serde::{Deserialize, Serialize};

/// Characters of a person's translation at most: a passage is a
/// paragraph, a heading or a table cell; this leaves room for the longest.
const TRANSLATION_MAX: usize = 100_000;

/// The routes of this module, mounted under `/api`.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route(
            "/projects/{project_id}/chapters/{chapter_id}/passages",
            get(list),
        )
        .route("/projects/{project_id}/passages/{passage_id}", put(edit))
}

/// One passage as a person reads it.
#[derive(Debug, Serialize)]
pub struct PassageView {
    pub id: String,
    pub chapter_id: String,
    pub position: i32,
    pub source: String,
    pub translation: Option<String>,
    pub status: PassageStatus,
    pub score: Option<i32>,
    pub signals: Vec<Signal>,
    pub human: bool,
    pub validated: bool,
    /// Echoed back with an edit; changes with every change of the passage.
    pub version: String,
}

impl From<passage::Model> for PassageView {
    fn from(p: passage::Model) -> Self {
        PassageView {
            version: version_of(&p),
            signals: signals_of(&p),
            id: p.id,
            chapter_id: p.chapter_id,
            position: p.position,
            source: p.source,
            translation: p.translation,
            status: p.status,
            score: p.score,
            human: p.human,
            validated: p.validated,
        }
    }
}

/// A chapter's passages in reading order.
#[derive(Debug, Serialize)]
pub struct ChapterPassages {
    pub project_id: String,
    pub chapter_id: String,
    pub passages: Vec<PassageView>,
}

/// A person's edit of one passage.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PassageChange {
    /// The passage's `version` as listed.
    pub version: String,
    #[serde(default)]
    pub translation: Option<String>,
    #[serde(default)]
    pub validated: Option<bool>,
}

/// What the audit log keeps of an edit: never the text.
#[derive(Serialize)]
struct EditLogged<'a> {
    passage_id: &'a str,
    changed: &'a [String],
}

pub async fn list(
    State(state): State<AppState>,
    user: SessionUser,
    Path((project_id, chapter_id)): Path<(String, String)>,
) -> ApiResult<Json<ChapterPassages>> {
    let read = read_chapter(&state, &user, &project_id, &chapter_id).await?;
    Ok(Json(ChapterPassages {
        project_id: read.book.id,
        chapter_id,
        passages: read.passages.into_iter().map(PassageView::from).collect(),
    }))
}

pub async fn edit(
    State(state): State<AppState>,
    user: SessionUser,
    Path((project_id, passage_id)): Path<(String, String)>,
    JsonBody(change): JsonBody<PassageChange>,
) -> ApiResult<Json<PassageView>> {
    let view = change_passage(&state, &user, &project_id, &passage_id, change).await?;
    Ok(Json(view))
}

/// A chapter of a book the person administers, with its passages in
/// reading order.
pub struct ChapterRead {
    pub book: project::Model,
    pub chapter: chapter::Model,
    pub passages: Vec<passage::Model>,
}

/// The chapter `chapter_id` of the book `project_id` and its passages, as
/// the listing and the console's review page read them: an absent book or
/// another account's is `volume_not_found`, a chapter outside it
/// `not_found`.
pub async fn read_chapter(
    state: &AppState,
    user: &SessionUser,
    project_id: &str,
    chapter_id: &str,
) -> ApiResult<ChapterRead> {
    let (book, _) = tenancy::administered_book(&state.db, user.acting(), project_id).await?;
    let chapter = chapter::Entity::find_by_id(chapter_id.to_owned())
        .filter(chapter::Column::ProjectId.eq(book.id.as_str()))
        .one(&state.db)
        .await?
        .ok_or_else(|| ApiError::new(ErrorCode::NotFound))?;
    let passages = passage::Entity::find()
        .filter(passage::Column::ChapterId.eq(chapter_id))
        .order_by_asc(passage::Column::Position)
        .all(&state.db)
        .await?;
    Ok(ChapterRead {
        book,
        chapter,
        passages,
    })
}

/// A person's edit or validation of one passage, judged and written as
/// the module says; answers the passage as the listing shows it now.
pub async fn change_passage(
    state: &AppState,
    user: &SessionUser,
    project_id: &str,
    passage_id: &str,
    change: PassageChange,
) -> ApiResult<PassageView> {
    let mut checks = Checks::new();
    checks.length("version", &change.version, 1, 64);
    if let Some(text) = &change.translation {
        checks.length("translation", text.trim(), 1, TRANSLATION_MAX);
    }
    if change.translation.is_none() && change.validated.is_none() {
        checks.fail("translation", IssueKind::Missing);
    }
    checks.finish()?;
    let (book, _) = tenancy::administered_book(&state.db, user.acting(), project_id).await?;
    let stored = read_passage(state, &book.id, passage_id).await?;
    let principal = user.principal();
    let assessment = match &change.translation {
        Some(text) => Some(assess(state, &principal, &book, &stored, text).await?),
        None => None,
    };
    let edited = state
        .memory
        .handle
        .edit_passage(state.call(
            &principal,
            EditPassageRequest {
                project_id: book.id.clone(),
                passage_id: stored.id.clone(),
                version: change.version,
                translation: change.translation,
                validated: change.validated,
                assessment,
            },
        ))
        .await?
        .into_inner();
    audit(
        &state.db,
        Some(&user.account.id),
        AuditAction::PassageEdit,
        Some(&book.id),
        EditLogged {
            passage_id: &edited.passage_id,
            changed: &edited.changed,
        },
    )
    .await?;
    let now = read_passage(state, &book.id, &edited.passage_id).await?;
    Ok(PassageView::from(now))
}

/// The passage of the book, or `passage_not_found`.
async fn read_passage(
    state: &AppState,
    project_id: &str,
    passage_id: &str,
) -> ApiResult<passage::Model> {
    passage::Entity::find_by_id(passage_id.to_owned())
        .filter(passage::Column::ProjectId.eq(project_id))
        .one(&state.db)
        .await?
        .ok_or_else(|| ApiError::new(ErrorCode::PassageNotFound))
}

/// The pipeline's checks of a person's translation, against what the
/// volume's translations are held to.
async fn assess(
    state: &AppState,
    principal: &Principal,
    book: &project::Model,
    stored: &passage::Model,
    translation: &str,
) -> ApiResult<EditAssessment> {
    let sheet = state
        .memory
        .handle
        .quality_sheet(state.call(
            principal,
            ProjectRef {
                project_id: book.id.clone(),
            },
        ))
        .await?
        .into_inner();
    Ok(state
        .pipeline
        .handle
        .assess_edit(state.call(
            principal,
            AssessEditRequest {
                source: stored.source.clone(),
                translation: translation.to_owned(),
                source_language: book.source_language.clone(),
                target_language: book.target_language.clone(),
                sheet: Some(sheet),
            },
        ))
        .await?
        .into_inner())
}
