//! Translation memory on the worker's side: before translating, the memory
//! service gives each passage its memory key and, when the same owner
//! already has a translation of the same text under the same glossary in
//! force, that translation (titles are taken from the owner's chapters by
//! [`crate::titles::recall`]); such passages are stored at once and never
//! sent to the provider. Each one leaves a usage record with outcome
//! `memory` (no tokens, no cost) that the report counts among
//! `cached_calls` and not among provider `calls`. A recalled translation
//! is not reviewed again; it is scored like any other.

use std::collections::{HashMap, HashSet};

use dragoman_model::clock;
use dragoman_model::entities::{passage, provider};
use dragoman_model::passages;
use dragoman_model::vocab::UsageStage;
use dragoman_proto::v1::{JobTicket, PrepareTranslationRequest};

use super::analysis_stage::memory_unavailable;
use super::{Stop, Worker};
use crate::translate::{CallRecord, check_placeholders};

pub use dragoman_model::entities::provider_call::MEMORY_OUTCOME;

/// Passages asked of the memory service per call.
const PREPARE_CHUNK: usize = 500;

/// What the translation memory gave for a job's passages.
#[derive(Debug, Default)]
pub(super) struct Recall {
    /// Memory key of every passage, stored with its translation.
    pub keys: HashMap<String, String>,
    /// Passages translated from memory.
    pub recalled: HashSet<String>,
}

/// The usage record of one passage or title served from memory.
fn memory_record() -> CallRecord {
    CallRecord {
        passages: 1,
        prompt_tokens: 0,
        completion_tokens: 0,
        cached: true,
        cached_prompt_tokens: 0,
        cache_write_tokens: 0,
        cost: None,
        duration_ms: 0,
        outcome: MEMORY_OUTCOME.into(),
        error: String::new(),
    }
}

impl Worker {
    pub(super) async fn recall(
        &self,
        ticket: &JobTicket,
        provider: &provider::Model,
        todo: &[passage::Model],
        recalled_titles: usize,
    ) -> Result<Recall, Stop> {
        let mut recall = Recall::default();
        let by_id: HashMap<&str, &passage::Model> =
            todo.iter().map(|p| (p.id.as_str(), p)).collect();
        let mut calls: Vec<CallRecord> = (0..recalled_titles).map(|_| memory_record()).collect();
        for chunk in todo.chunks(PREPARE_CHUNK) {
            let prepared = self
                .memory
                .prepare_translation(self.credential.system_request(PrepareTranslationRequest {
                    project_id: ticket.project_id.clone(),
                    passage_ids: chunk.iter().map(|p| p.id.clone()).collect(),
                }))
                .await
                .map_err(|s| memory_unavailable(ticket, &s))?
                .into_inner();
            for item in prepared.passages {
                let Some(found) = by_id.get(item.passage_id.as_str()) else {
                    continue;
                };
                // Same text means same placeholders; checked anyway, since a
                // stored translation must never break the markup.
                let usable = item
                    .recalled
                    .filter(|text| check_placeholders(&found.source, text).is_ok());
                if let Some(text) = usable {
                    let key = item.memory_key.clone();
                    passages::record_recall(&self.db, found, text, key, clock::now())
                        .await
                        .map_err(super::scoring::db_error)?;
                    recall.recalled.insert(item.passage_id.clone());
                    calls.push(memory_record());
                }
                recall.keys.insert(item.passage_id, item.memory_key);
            }
        }
        // A recalled passage stands for its translation call.
        self.record_calls(ticket, provider, UsageStage::Translation, calls)
            .await?;
        Ok(recall)
    }
}
