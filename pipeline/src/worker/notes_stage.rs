//! The reader-note pass of a `translator_notes` job (spec 4.9), run instead
//! of the translation stages: the accepted glossary terms in force for the
//! book that occur in its translated passages go to the model in batches,
//! each with a few passages where it occurs, and the notes it proposes are
//! stored as `note_proposals` of the job, for a person to accept or not.
//!
//! - Terms: those of the memory's `TermsInForce` (the book's, its
//!   series', a shared glossary's, after precedence) that are accepted,
//!   occur in the source of a passage with a usable translation (matched
//!   case-insensitively), and have no reader note in the book yet (a
//!   person already decided those).
//! - Each batch's proposals are stored as soon as they come back, so a job
//!   resumed after a crash asks (and pays) for no term twice: terms the
//!   job already proposed for are left out.
//! - Calls take budget room, are recorded and priced like the review's,
//!   and count under the `review` stage of the report's usage: like the
//!   review, the pass reads the translation.
//! - A batch with no readable answer after its retries fails the job with
//!   the reason; the proposals of the other batches stay.

use std::collections::HashSet;

use dragoman_model::entities::{note_proposal, passage, reader_note};
use dragoman_model::vocab::{PassageStatus, UsageStage};
use dragoman_model::{clock, ids};
use dragoman_proto::v1::{JobTicket, ProjectRef, Term};
use futures::StreamExt;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, QueryOrder, QuerySelect, Set};
use tokio::sync::watch;

use super::analysis_stage::memory_unavailable;
use super::budget_guard::{CallKind, CallSize, Purse};
use super::by_batch::NotesByBatch;
use super::scoring::db_error;
use super::{Stop, Worker};
use crate::analysis::Languages;
use crate::notes::{self, NOTES_SYSTEM_PROMPT, NotesExample, NotesTerm, Proposal, notes_message};
use crate::translate::{CallRecord, PassageIn, estimate_tokens, plan_batches};

/// Passages shown with a term: enough to tell how the book uses it.
const EXAMPLES_PER_TERM: usize = 2;

/// Completion tokens expected per term asked about (a short note and its
/// JSON), and at most.
const EXPECTED_PER_TERM: usize = 120;
const CEILING_PER_TERM: usize = 400;

/// A translated passage as the pass reads it.
struct Read {
    source: String,
    translation: String,
}

/// The terms to ask about: accepted, occurring in `read`, without a
/// reader note and not proposed for by this job yet, each with its first
/// passages.
fn terms_to_ask(terms: Vec<Term>, read: &[Read], skip: &HashSet<String>) -> Vec<NotesTerm> {
    let lowered: Vec<String> = read.iter().map(|p| p.source.to_lowercase()).collect();
    terms
        .into_iter()
        .filter(|t| t.accepted && !skip.contains(&t.id))
        .filter_map(|t| {
            let needle = t.source.trim().to_lowercase();
            if needle.is_empty() {
                return None;
            }
            let examples: Vec<NotesExample> = lowered
                .iter()
                .zip(read)
                .filter(|(source, _)| source.contains(&needle))
                .take(EXAMPLES_PER_TERM)
                .map(|(_, p)| NotesExample {
                    source: p.source.clone(),
                    translation: p.translation.clone(),
                })
                .collect();
            (!examples.is_empty()).then_some(NotesTerm {
                id: t.id,
                source: t.source,
                translation: t.translation,
                category: t.category,
                description: t.description,
                examples,
            })
        })
        .collect()
}

/// The estimated size of a call about `terms`.
pub(super) fn call_size(languages: Languages<'_>, terms: &[NotesTerm]) -> CallSize {
    let user = notes_message(languages, terms);
    CallSize {
        kind: CallKind::Review,
        prompt_tokens: estimate_tokens(NOTES_SYSTEM_PROMPT) + estimate_tokens(&user),
        completion_tokens: terms.len().saturating_mul(EXPECTED_PER_TERM),
        ceiling_tokens: terms.len().saturating_mul(CEILING_PER_TERM),
    }
}

impl Worker {
    /// Proposes reader notes for the book's terms (see the module doc).
    pub(super) async fn notes_job(
        &self,
        ticket: &JobTicket,
        purse: &Purse,
        lost: &watch::Receiver<bool>,
    ) -> Result<(), Stop> {
        let terms = self
            .memory
            .terms_in_force(self.credential.system_request(ProjectRef {
                project_id: ticket.project_id.clone(),
            }))
            .await
            .map_err(|s| memory_unavailable(ticket, &s))?
            .into_inner()
            .terms;
        let read = self.translated(ticket).await?;
        let skip = self.decided_terms(ticket).await?;
        let mut asked = terms_to_ask(terms, &read, &skip);
        if asked.is_empty() {
            return Ok(());
        }
        if ticket.batch {
            let stage = NotesByBatch::new(self, ticket, &asked);
            self.by_batch(ticket, purse, lost, None, &stage).await?;
            let answered = stage.answered();
            asked.retain(|t| !answered.contains(&t.id));
            if asked.is_empty() {
                return Ok(());
            }
        }
        let languages = Languages {
            source: &ticket.source_language,
            target: &ticket.target_language,
        };
        let by_id: std::collections::HashMap<&str, &NotesTerm> =
            asked.iter().map(|t| (t.id.as_str(), t)).collect();
        let batches = self.notes_calls(&asked);
        let threads = self.calls_at_once(ticket, purse, None).await?;
        let mut runs = futures::stream::iter(batches.into_iter().map(|batch| {
            let by_id = &by_id;
            let lost = lost.clone();
            async move {
                if *lost.borrow() {
                    return Err(Stop::Released);
                }
                let terms: Vec<NotesTerm> = batch
                    .iter()
                    .filter_map(|b| by_id.get(b.id.as_str()).map(|t| (*t).clone()))
                    .collect();
                let admitted = self
                    .admit(purse, None, &call_size(languages, &terms))
                    .await?;
                let mut calls: Vec<CallRecord> = Vec::new();
                let outcome = notes::propose(
                    &admitted.engine.client,
                    languages,
                    &terms,
                    &self.config.retry,
                    &mut |record| calls.push(record),
                )
                .await;
                self.close_call(ticket, UsageStage::Review, admitted, calls)
                    .await?;
                self.store_proposals(ticket, &outcome.proposals).await?;
                match outcome.errors.first() {
                    None => Ok(()),
                    Some(error) => Err(Stop::Failed(format!(
                        "reader notes: the provider gave no readable answer for {} term(s): {error}",
                        terms.len()
                    ))),
                }
            }
        }))
        .buffer_unordered(threads);
        while let Some(outcome) = runs.next().await {
            if let Err(stop) = outcome {
                return Err(purse.wind_down(&mut runs, stop).await);
            }
        }
        Ok(())
    }

    /// The terms asked about in each call: sized on what is sent of each
    /// term, within the translation calls' budget less the instructions.
    pub(super) fn notes_calls(&self, asked: &[NotesTerm]) -> Vec<Vec<PassageIn>> {
        let sized: Vec<PassageIn> = asked
            .iter()
            .map(|t| PassageIn {
                id: t.id.clone(),
                text: serde_json::to_string(t).unwrap_or_default(),
            })
            .collect();
        let budget = self
            .config
            .batch_tokens
            .saturating_sub(estimate_tokens(NOTES_SYSTEM_PROMPT))
            .max(64);
        plan_batches(&sized, budget)
    }

    /// The job's passages with a usable translation, in reading order.
    async fn translated(&self, ticket: &JobTicket) -> Result<Vec<Read>, Stop> {
        let rows: Vec<(String, String, Option<String>)> = passage::Entity::find()
            .select_only()
            .column(passage::Column::ChapterId)
            .column(passage::Column::Source)
            .column(passage::Column::Translation)
            .filter(passage::Column::ChapterId.is_in(ticket.chapter_ids.clone()))
            .filter(passage::Column::Translation.is_not_null())
            .filter(passage::Column::Status.is_in(PassageStatus::USABLE))
            .order_by_asc(passage::Column::Position)
            .into_tuple()
            .all(&self.db)
            .await
            .map_err(db_error)?;
        let mut rows: Vec<(usize, Read)> = rows
            .into_iter()
            .map(|(chapter_id, source, translation)| {
                let place = ticket
                    .chapter_ids
                    .iter()
                    .position(|c| *c == chapter_id)
                    .unwrap_or(usize::MAX);
                let read = Read {
                    source,
                    translation: translation.unwrap_or_default(),
                };
                (place, read)
            })
            .collect();
        // Stable: positions stay in order within a chapter.
        rows.sort_by_key(|(place, _)| *place);
        Ok(rows.into_iter().map(|(_, read)| read).collect())
    }

    /// Terms not to ask about: those with a reader note in the book, and
    /// those this job already proposed for.
    async fn decided_terms(&self, ticket: &JobTicket) -> Result<HashSet<String>, Stop> {
        let noted: Vec<String> = reader_note::Entity::find()
            .select_only()
            .column(reader_note::Column::TermId)
            .filter(reader_note::Column::ProjectId.eq(ticket.project_id.clone()))
            .into_tuple()
            .all(&self.db)
            .await
            .map_err(db_error)?;
        let proposed: Vec<String> = note_proposal::Entity::find()
            .select_only()
            .column(note_proposal::Column::TermId)
            .filter(note_proposal::Column::JobId.eq(ticket.job_id.clone()))
            .into_tuple()
            .all(&self.db)
            .await
            .map_err(db_error)?;
        Ok(noted.into_iter().chain(proposed).collect())
    }

    /// Stores the proposals of one batch (paid for: kept until the
    /// database takes them).
    pub(super) async fn store_proposals(
        &self,
        ticket: &JobTicket,
        proposals: &[Proposal],
    ) -> Result<(), Stop> {
        if proposals.is_empty() {
            return Ok(());
        }
        let now = clock::now();
        let rows: Vec<note_proposal::ActiveModel> = proposals
            .iter()
            .map(|p| note_proposal::ActiveModel {
                id: Set(ids::new_id()),
                project_id: Set(ticket.project_id.clone()),
                term_id: Set(p.term_id.clone()),
                job_id: Set(ticket.job_id.clone()),
                note: Set(p.note.clone()),
                placement: Set(p.placement),
                created_at: Set(now),
            })
            .collect();
        // An attempt after a broken connection may find the rows of one
        // that committed: the job's proposals of these terms are replaced.
        let terms: Vec<String> = proposals.iter().map(|p| p.term_id.clone()).collect();
        self.database
            .ride(|| {
                let rows = rows.clone();
                let terms = terms.clone();
                async move {
                    note_proposal::Entity::delete_many()
                        .filter(note_proposal::Column::JobId.eq(ticket.job_id.clone()))
                        .filter(note_proposal::Column::TermId.is_in(terms))
                        .exec(&self.db)
                        .await?;
                    note_proposal::Entity::insert_many(rows)
                        .exec(&self.db)
                        .await
                        .map(|_| ())
                }
            })
            .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn term(id: &str, source: &str, accepted: bool) -> Term {
        Term {
            id: id.into(),
            source: source.into(),
            translation: format!("{source}-fr"),
            category: "name".into(),
            accepted,
            ..Term::default()
        }
    }

    fn read(source: &str) -> Read {
        Read {
            source: source.into(),
            translation: format!("[fr] {source}"),
        }
    }

    #[test]
    fn only_accepted_terms_of_the_book_without_a_decision_are_asked() {
        let book = [
            read("Hogmanay came early."),
            read("Nobody at the hogmanay party knew Alice."),
            read("HOGMANAY again."),
        ];
        let terms = vec![
            term("t1", "Hogmanay", true),
            term("t2", "Alice", false),
            term("t3", "Bob", true),
            term("t4", "Alice", true),
            term("t5", "  ", true),
        ];
        let skip: HashSet<String> = ["t4".to_owned()].into();
        let asked = terms_to_ask(terms, &book, &skip);
        let ids: Vec<&str> = asked.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(
            ids,
            ["t1"],
            "not accepted, absent, decided or blank: left out"
        );
        let examples: Vec<&str> = asked[0]
            .examples
            .iter()
            .map(|e| e.source.as_str())
            .collect();
        assert_eq!(
            examples,
            [
                "Hogmanay came early.",
                "Nobody at the hogmanay party knew Alice."
            ],
            "the first passages, matched whatever the case"
        );
        assert_eq!(
            asked[0].examples[0].translation,
            "[fr] Hogmanay came early."
        );
        assert_eq!(asked[0].translation, "Hogmanay-fr");
    }
}
