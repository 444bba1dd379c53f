//! Reader notes of a book's glossary terms (spec 2.6, 4.9): the accepted
//! terms in force for the book with their note and the notes
//! `translator_notes` jobs proposed, and a person's note on one of them.
//!
//! A note is plain text of at most 2,000 characters: markup (a tag, an
//! entity) and control characters are refused. An edit names the note and
//! placement the person read; a note changed since is a stale edit, so two
//! people never overwrite each other unknowingly. An empty note removes the
//! note: the row stays, empty, so that results built before it are known
//! to be outdated (see the delivery's freshness rule).
//!
//! The book's owner and administrators reach its notes; any other book
//! answers as an absent one.

use crate::error::{MemoryError, MemoryResult};
use crate::{glossary, store};
use dragoman_model::entities::{note_proposal, project, reader_note, term};
use dragoman_model::tenancy::{self, Acting};
use dragoman_model::vocab::{Issue, IssueContext, IssueKind, NotePlacement};
use dragoman_model::{clock, ids};
use dragoman_proto::v1;
use dragoman_proto::wire::WireEnum;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DatabaseConnection, EntityTrait, QueryFilter,
    QueryOrder, QuerySelect, Set,
};
use std::collections::HashMap;

/// The longest note, in characters after trimming.
pub const NOTE_MAX: usize = 2000;

/// A person's note on one term of a book.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoteEdit {
    pub project_id: String,
    pub term_id: String,
    /// Empty: the note is removed.
    pub note: String,
    /// The note the person read; empty when there was none.
    pub previous_note: String,
    pub placement: NotePlacement,
    pub previous_placement: Option<NotePlacement>,
    pub proposal_job: Option<String>,
}

/// An accepted term in force for the book, with its note and proposals.
#[derive(Debug, Clone, PartialEq)]
pub struct TermNotes {
    pub term: term::Model,
    pub note: Option<reader_note::Model>,
    /// Newest first.
    pub proposals: Vec<note_proposal::Model>,
}

impl TermNotes {
    /// The note's text; none when there is none (or it was removed).
    pub fn text(&self) -> Option<&str> {
        self.note
            .as_ref()
            .map(|n| n.note.as_str())
            .filter(|n| !n.is_empty())
    }

    /// Where the note goes; `first`, what a new note gets, without one.
    pub fn placement(&self) -> NotePlacement {
        self.note
            .as_ref()
            .map_or(NotePlacement::First, |n| n.placement)
    }
}

/// The problems of a note's text (never the text).
pub fn validate(note: &str) -> Vec<Issue> {
    let note = note.trim();
    let mut issues = Vec::new();
    if note.chars().count() > NOTE_MAX {
        issues.push(
            Issue::at("body", "reader_note", IssueKind::StringTooLong)
                .with_ctx(IssueContext::new().max(NOTE_MAX)),
        );
    } else if has_markup(note)
        || note
            .chars()
            .any(|c| c.is_control() && c != '\n' && c != '\t')
    {
        issues.push(Issue::at("body", "reader_note", IssueKind::ValueError));
    }
    issues
}

/// Whether a text holds markup: a tag (`<b>`, `</p>`, `<!--`, `<?`) or a
/// character entity (`&amp;`, `&#39;`). A lone `<` or `&` is text.
fn has_markup(text: &str) -> bool {
    let chars: Vec<char> = text.chars().collect();
    chars.iter().enumerate().any(|(i, c)| match c {
        '<' => chars
            .get(i + 1)
            .is_some_and(|n| n.is_ascii_alphabetic() || matches!(n, '/' | '!' | '?')),
        '&' => {
            let rest: String = chars[i + 1..].iter().take(40).collect();
            rest.split_once(';')
                .is_some_and(|(name, _)| is_entity_name(name))
        }
        _ => false,
    })
}

/// Whether `name` (between `&` and `;`) names a character entity.
fn is_entity_name(name: &str) -> bool {
    match name.strip_prefix('#') {
        Some(number) => match number.strip_prefix(['x', 'X']) {
            Some(hex) => !hex.is_empty() && hex.chars().all(|d| d.is_ascii_hexdigit()),
            None => !number.is_empty() && number.chars().all(|d| d.is_ascii_digit()),
        },
        None => !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric()),
    }
}

/// The book `who` may reach: as for a person's passage edits, its owner's
/// or, for an administrator, any.
async fn book(
    db: &impl ConnectionTrait,
    who: Acting<'_>,
    project_id: &str,
) -> MemoryResult<project::Model> {
    Ok(tenancy::administered_book(db, who, project_id).await?.0)
}

/// The accepted terms in force for the book.
async fn in_force(
    db: &impl ConnectionTrait,
    book: &project::Model,
) -> MemoryResult<Vec<term::Model>> {
    let series = store::series_of(db, book).await?;
    glossary::load_in_force(db, book, &series).await
}

/// The book's accepted terms in force, sorted by source, each with its note
/// and the proposals of the book's `translator_notes` jobs.
pub async fn list(
    db: &impl ConnectionTrait,
    who: Acting<'_>,
    project_id: &str,
) -> MemoryResult<Vec<TermNotes>> {
    let book = book(db, who, project_id).await?;
    let terms = in_force(db, &book).await?;
    let mut notes: HashMap<String, reader_note::Model> = reader_note::Entity::find()
        .filter(reader_note::Column::ProjectId.eq(book.id.as_str()))
        .all(db)
        .await?
        .into_iter()
        .map(|n| (n.term_id.clone(), n))
        .collect();
    let mut proposals: HashMap<String, Vec<note_proposal::Model>> = HashMap::new();
    for p in note_proposal::Entity::find()
        .filter(note_proposal::Column::ProjectId.eq(book.id.as_str()))
        .order_by_desc(note_proposal::Column::CreatedAt)
        .order_by_asc(note_proposal::Column::Id)
        .all(db)
        .await?
    {
        proposals.entry(p.term_id.clone()).or_default().push(p);
    }
    Ok(terms
        .into_iter()
        .map(|t| TermNotes {
            note: notes.remove(&t.id),
            proposals: proposals.remove(&t.id).unwrap_or_default(),
            term: t,
        })
        .collect())
}

/// Sets (or, with an empty note, removes) a person's note on one term of
/// the book; answers the term with its note.
pub async fn set(
    db: &DatabaseConnection,
    who: Acting<'_>,
    edit: NoteEdit,
) -> MemoryResult<TermNotes> {
    let issues = validate(&edit.note);
    if !issues.is_empty() {
        return Err(MemoryError::InvalidRequest(issues));
    }
    let txn = dragoman_model::db::begin_write(db).await?;
    let book = book(&txn, who, &edit.project_id).await?;
    // One edit of the book's notes at a time (on PostgreSQL; a SQLite write
    // transaction holds the whole database), so a stale edit is always seen.
    project::Entity::find_by_id(book.id.clone())
        .lock_exclusive()
        .one(&txn)
        .await?;
    let term = in_force(&txn, &book)
        .await?
        .into_iter()
        .find(|t| t.id == edit.term_id)
        .ok_or(MemoryError::TermNotFound)?;
    let held = reader_note::Entity::find()
        .filter(reader_note::Column::ProjectId.eq(book.id.as_str()))
        .filter(reader_note::Column::TermId.eq(term.id.as_str()))
        .one(&txn)
        .await?;
    let current = TermNotes {
        term,
        note: held,
        proposals: Vec::new(),
    };
    let seen_note = edit.previous_note.trim();
    let stale_note = current.text().unwrap_or("") != seen_note;
    let stale_placement = edit
        .previous_placement
        .is_some_and(|p| p != current.placement());
    if stale_note || stale_placement {
        return Err(MemoryError::StaleReaderNote {
            note: current.text().map(str::to_owned),
            placement: current.placement(),
        });
    }
    if let Some(job) = &edit.proposal_job {
        let proposed = note_proposal::Entity::find()
            .filter(note_proposal::Column::ProjectId.eq(book.id.as_str()))
            .filter(note_proposal::Column::TermId.eq(current.term.id.as_str()))
            .filter(note_proposal::Column::JobId.eq(job.as_str()))
            .one(&txn)
            .await?;
        if proposed.is_none() {
            return Err(MemoryError::InvalidRequest(vec![Issue::at(
                "body",
                "proposal_job",
                IssueKind::ValueError,
            )]));
        }
    }
    let now = clock::now();
    let note = edit.note.trim().to_owned();
    let stored = match current.note {
        Some(held) => {
            let mut row: reader_note::ActiveModel = held.into();
            row.note = Set(note);
            row.placement = Set(edit.placement);
            row.proposal_job = Set(edit.proposal_job);
            row.updated_at = Set(now);
            row.update(&txn).await?
        }
        None => {
            reader_note::ActiveModel {
                id: Set(ids::new_id()),
                project_id: Set(book.id.clone()),
                term_id: Set(current.term.id.clone()),
                note: Set(note),
                placement: Set(edit.placement),
                proposal_job: Set(edit.proposal_job),
                created_at: Set(now),
                updated_at: Set(now),
            }
            .insert(&txn)
            .await?
        }
    };
    let proposals = note_proposal::Entity::find()
        .filter(note_proposal::Column::ProjectId.eq(book.id.as_str()))
        .filter(note_proposal::Column::TermId.eq(current.term.id.as_str()))
        .order_by_desc(note_proposal::Column::CreatedAt)
        .order_by_asc(note_proposal::Column::Id)
        .all(&txn)
        .await?;
    txn.commit().await?;
    Ok(TermNotes {
        term: current.term,
        note: Some(stored),
        proposals,
    })
}

/// The message of one term with its note.
pub fn to_wire(notes: TermNotes) -> v1::TermReaderNote {
    let text = notes.text().map(str::to_owned);
    let placement = notes.placement();
    v1::TermReaderNote {
        term_id: notes.term.id,
        source: notes.term.source,
        translation: notes.term.translation,
        category: notes.term.category,
        layer: notes.term.layer.to_wire(),
        updated_at: notes
            .note
            .as_ref()
            .filter(|_| text.is_some())
            .map(|n| n.updated_at),
        proposal_job: notes
            .note
            .and_then(|n| n.proposal_job)
            .filter(|_| text.is_some()),
        reader_note: text,
        note_placement: placement.to_wire(),
        proposals: notes
            .proposals
            .into_iter()
            .map(|p| v1::NoteProposal {
                job_id: p.job_id,
                note: p.note,
                placement: p.placement.to_wire(),
                created_at: p.created_at,
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::term_edit;
    use crate::testing::{Fixture, decision};
    use dragoman_model::vocab::TermLayer;

    #[test]
    fn notes_are_plain_text_of_bounded_length() {
        for ok in [
            "A fortified tower.",
            "1 < 2 & 3 > 2; R&D, AT&T",
            "Two lines\nand a\ttab.",
        ] {
            assert!(validate(ok).is_empty(), "{ok}");
        }
        for markup in [
            "A <b>bold</b> note",
            "</p>",
            "<!-- c -->",
            "Caf&eacute;",
            "&#39;",
            "&#x27;",
            "bell\u{7}",
        ] {
            let issues = validate(markup);
            assert_eq!(issues.len(), 1, "{markup}");
            assert_eq!(issues[0].kind, IssueKind::ValueError);
        }
        assert!(validate(&"é".repeat(NOTE_MAX)).is_empty());
        let long = validate(&"é".repeat(NOTE_MAX + 1));
        assert_eq!(long[0].kind, IssueKind::StringTooLong);
    }

    fn edit(book: &str, term: &str, note: &str, previous: &str) -> NoteEdit {
        NoteEdit {
            project_id: book.into(),
            term_id: term.into(),
            note: note.into(),
            previous_note: previous.into(),
            placement: NotePlacement::First,
            previous_placement: None,
            proposal_job: None,
        }
    }

    #[tokio::test]
    async fn a_note_is_set_changed_and_a_stale_edit_refused() {
        let fx = Fixture::new().await;
        let series = fx.series("Saga").await;
        let volume = fx.volume(&series, 1).await;
        let keep = term_edit::add(
            &fx.db,
            &fx.account,
            term_edit::NewTerm {
                book_id: volume.id.clone(),
                input: decision(TermLayer::Book, "", "Keep", "Donjon"),
            },
        )
        .await
        .expect("term");
        let me = Acting::account(&fx.account);
        let listed = list(&fx.db, me, &volume.id).await.expect("list");
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].text(), None);
        assert_eq!(listed[0].placement(), NotePlacement::First);

        let set_once = set(&fx.db, me, edit(&volume.id, &keep.id, " A tower. ", ""))
            .await
            .expect("set");
        assert_eq!(set_once.text(), Some("A tower."));

        // Someone read no note, but there is one now.
        let stale = set(&fx.db, me, edit(&volume.id, &keep.id, "Mine.", "")).await;
        assert!(
            matches!(&stale, Err(MemoryError::StaleReaderNote { note: Some(n), .. }) if n == "A tower."),
            "{stale:?}"
        );
        let mut moved = edit(&volume.id, &keep.id, "A tower.", "A tower.");
        moved.placement = NotePlacement::Each;
        moved.previous_placement = Some(NotePlacement::Each);
        assert!(matches!(
            set(&fx.db, me, moved.clone()).await,
            Err(MemoryError::StaleReaderNote { .. })
        ));
        moved.previous_placement = Some(NotePlacement::First);
        let each = set(&fx.db, me, moved).await.expect("placement");
        assert_eq!(each.placement(), NotePlacement::Each);

        let removed = set(&fx.db, me, edit(&volume.id, &keep.id, "", "A tower."))
            .await
            .expect("removed");
        assert_eq!(removed.text(), None);
        let listed = list(&fx.db, me, &volume.id).await.expect("list");
        assert_eq!(listed[0].text(), None);
    }

    #[tokio::test]
    async fn only_the_books_terms_in_force_and_its_owner_are_reached() {
        let fx = Fixture::new().await;
        let series = fx.series("Saga").await;
        let volume = fx.volume(&series, 1).await;
        let other = fx.add_account("other").await;
        let me = Acting::account(&fx.account);
        assert!(matches!(
            set(&fx.db, me, edit(&volume.id, "no-such-term", "x", "")).await,
            Err(MemoryError::TermNotFound)
        ));
        assert!(matches!(
            list(&fx.db, Acting::account(&other), &volume.id).await,
            Err(MemoryError::VolumeNotFound)
        ));
        let keep = term_edit::add(
            &fx.db,
            &fx.account,
            term_edit::NewTerm {
                book_id: volume.id.clone(),
                input: decision(TermLayer::Book, "", "Keep", "Donjon"),
            },
        )
        .await
        .expect("term");
        assert!(matches!(
            set(
                &fx.db,
                Acting::account(&other),
                edit(&volume.id, &keep.id, "x", "")
            )
            .await,
            Err(MemoryError::VolumeNotFound)
        ));
        let mut proposed = edit(&volume.id, &keep.id, "x", "");
        proposed.proposal_job = Some("no-such-job".into());
        assert!(matches!(
            set(&fx.db, me, proposed).await,
            Err(MemoryError::InvalidRequest(issues)) if issues.len() == 1
        ));
    }

    #[tokio::test]
    async fn a_proposal_is_listed_and_accepted_by_its_job() {
        let fx = Fixture::new().await;
        let series = fx.series("Saga").await;
        let volume = fx.volume(&series, 1).await;
        let keep = term_edit::add(
            &fx.db,
            &fx.account,
            term_edit::NewTerm {
                book_id: volume.id.clone(),
                input: decision(TermLayer::Book, "", "Keep", "Donjon"),
            },
        )
        .await
        .expect("term");
        note_proposal::ActiveModel {
            id: Set(ids::new_id()),
            project_id: Set(volume.id.clone()),
            term_id: Set(keep.id.clone()),
            job_id: Set("job-1".into()),
            note: Set("A fortified tower.".into()),
            placement: Set(NotePlacement::Each),
            created_at: Set(clock::now()),
        }
        .insert(&fx.db)
        .await
        .expect("proposal");
        let me = Acting::account(&fx.account);
        let listed = list(&fx.db, me, &volume.id).await.expect("list");
        assert_eq!(listed[0].proposals.len(), 1);
        assert_eq!(listed[0].proposals[0].job_id, "job-1");
        let mut accepted = edit(&volume.id, &keep.id, "A fortified tower.", "");
        accepted.placement = NotePlacement::Each;
        accepted.proposal_job = Some("job-1".into());
        let stored = set(&fx.db, me, accepted).await.expect("accepted");
        let wire = to_wire(stored);
        assert_eq!(wire.proposal_job.as_deref(), Some("job-1"));
        assert_eq!(wire.reader_note.as_deref(), Some("A fortified tower."));
        assert_eq!(wire.proposals.len(), 1);
    }
}
