//! The translation stage in the provider's batch mode: the job's calls go
//! as remote batches ([`crate::batch_mode`]) and are answered within the
//! provider's completion window at its batch discount.
//!
//! A job leased again (after a crash or a drain) first drives the batches
//! it already wrote down and applies them; what is left untranslated and
//! was never in a batch is planned into new ones. Each answer goes through
//! the same checks as an ordinary answer; what a batch did not deliver
//! (a failed, expired or cancelled call, a passage missing from an answer
//! or with mismatched placeholders) is handed back to the ordinary calls
//! of the stage. A passage a batch already carried is never sent by batch
//! again. Each answered call is one usage record marked `batch`, at the
//! provider's discount, with the item's id, so applying a batch twice
//! records it once.

use super::{Stop, Worker, budget_guard::CallSize, scoring};
use crate::batch_mode::runner::{Answered, Halt, Interrupted, Runner};
use crate::batch_mode::{WAITING_FOR_BATCH, store};
use crate::llm::{Completion, LlmClient};
use crate::translate::{
    self, MAX_COMPLETION_TOKENS, PassageIn, PassageOutcome, SYSTEM_PROMPT, TranslateJob,
};
use dragoman_model::entities::{provider, provider_batch, provider_call};
use dragoman_model::vocab::UsageStage;
use dragoman_model::{clock, steps};
use dragoman_proto::v1::JobTicket;
use futures::StreamExt;
use sea_orm::sea_query::OnConflict;
use sea_orm::{EntityTrait, Set};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::time::Duration;
use tokio::sync::watch;

/// How long cancelling a job's batches at the provider may take when the
/// job is let go.
const CANCEL_TIMEOUT: Duration = Duration::from_secs(10);

/// Batches of one job driven side by side at most.
const BATCHES_AT_ONCE: usize = 8;

/// What a translation item is for: the passages of its call.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Subject {
    passages: Vec<PassageIn>,
}

impl Worker {
    /// Translates `passages` by batch; gives back those left for the
    /// ordinary calls.
    pub(super) async fn batch_translation(
        &self,
        ticket: &JobTicket,
        purse: &super::budget_guard::Purse,
        lost: &watch::Receiver<bool>,
        passages: Vec<PassageIn>,
        keys: &HashMap<String, String>,
    ) -> Result<Vec<PassageIn>, Stop> {
        let engine = self.current_engine(purse).await?;
        let owner = store::Owner {
            job_id: ticket.job_id.clone(),
            request_id: ticket.request_id.clone(),
            project_id: ticket.project_id.clone(),
            provider_id: engine.provider.id.clone(),
            stage: UsageStage::Translation,
        };
        if !engine.client.batch_supported() {
            tracing::info!(job = %ticket.job_id, provider = %engine.provider.name, "the provider's kind has no batch API: its calls go one by one at full price");
            self.database
                .ride(|| store::unsupported(&self.db, &owner))
                .await?;
            return Ok(passages);
        }
        let earlier = store::of_stage(&self.db, &ticket.job_id, UsageStage::Translation)
            .await
            .map_err(scoring::db_error)?;
        let mut carried: HashSet<String> = HashSet::new();
        for row in &earlier {
            for item in store::items(&self.db, &row.id)
                .await
                .map_err(scoring::db_error)?
            {
                if let Ok(subject) = serde_json::from_str::<Subject>(&item.subject) {
                    carried.extend(subject.passages.into_iter().map(|p| p.id));
                }
            }
        }
        let mut rows: Vec<provider_batch::Model> =
            earlier.into_iter().filter(store::pending).collect();
        let fresh: Vec<PassageIn> = passages
            .iter()
            .filter(|p| !carried.contains(&p.id))
            .cloned()
            .collect();
        if !fresh.is_empty() {
            rows.extend(
                self.open_translation_batches(ticket, purse, &owner, fresh)
                    .await?,
            );
        }
        let mut delivered: HashSet<String> = HashSet::new();
        if !rows.is_empty() {
            self.set_step(ticket, WAITING_FOR_BATCH).await;
            let halt = || {
                if *lost.borrow() {
                    Some(Halt::Lost)
                } else if purse.draining() {
                    Some(Halt::Drained)
                } else {
                    None
                }
            };
            let mut engines: HashMap<String, std::sync::Arc<super::Engine>> = HashMap::new();
            engines.insert(engine.provider.id.clone(), engine.clone());
            for row in &rows {
                if !engines.contains_key(&row.provider_id) {
                    let other = std::sync::Arc::new(self.engine(&row.provider_id).await?);
                    engines.insert(row.provider_id.clone(), other);
                }
            }
            let engines = &engines;
            let halt = &halt;
            let mut runs = futures::stream::iter(rows.into_iter().map(|row| async move {
                let engine = engines
                    .get(&row.provider_id)
                    .ok_or_else(|| Stop::Failed("provider_missing".into()))?;
                let runner = Runner {
                    db: &self.db,
                    client: &engine.client,
                    poll: self.config.batch_poll,
                };
                let answered = runner.drive(row, halt).await.map_err(|e| match e {
                    Interrupted::Halt(Halt::Lost) => Stop::Released,
                    Interrupted::Halt(Halt::Drained) => Stop::Drained,
                    Interrupted::Db(e) => scoring::db_error(e),
                })?;
                Ok::<_, Stop>((answered, engine.provider.clone(), engine.client.clone()))
            }))
            .buffer_unordered(BATCHES_AT_ONCE);
            while let Some(outcome) = runs.next().await {
                let (answered, provider, client) = outcome?;
                let ids = self
                    .apply_translations(ticket, &provider, &client, answered, keys)
                    .await?;
                delivered.extend(ids);
            }
            self.set_step(ticket, steps::TRANSLATING).await;
        }
        Ok(passages
            .into_iter()
            .filter(|p| !delivered.contains(&p.id))
            .collect())
    }

    /// Plans `passages` into calls as the ordinary stage would and writes
    /// them down as batches, their budget room taken at the discounted
    /// price.
    async fn open_translation_batches(
        &self,
        ticket: &JobTicket,
        purse: &super::budget_guard::Purse,
        owner: &store::Owner,
        passages: Vec<PassageIn>,
    ) -> Result<Vec<provider_batch::Model>, Stop> {
        let planned = translate::plan_translation(
            &passages,
            self.config.batch_tokens,
            &ticket.source_language,
            &ticket.target_language,
        );
        let contexts = self.contexts(ticket, &planned).await?;
        let mut calls = Vec::with_capacity(planned.len());
        let mut sizes = Vec::with_capacity(planned.len());
        for (batch, context) in planned.into_iter().zip(contexts) {
            let job = TranslateJob {
                source_language: ticket.source_language.clone(),
                target_language: ticket.target_language.clone(),
                passages: batch,
                context,
            };
            let refs: Vec<&PassageIn> = job.passages.iter().collect();
            calls.push(store::Call {
                subject: serde_json::to_value(Subject {
                    passages: job.passages.clone(),
                })
                .unwrap_or_default(),
                system: SYSTEM_PROMPT.to_owned(),
                user: translate::user_message(&job, &refs),
                max_tokens: MAX_COMPLETION_TOKENS,
            });
            sizes.push(CallSize::translation(&job));
        }
        self.admit_batch(purse, &sizes).await?;
        // The budget may have moved the job to a cheaper provider.
        let engine = self.current_engine(purse).await?;
        if !engine.client.batch_supported() {
            return Ok(Vec::new());
        }
        let owner = store::Owner {
            provider_id: engine.provider.id.clone(),
            ..owner.clone()
        };
        let rows = store::open(&self.db, &owner, &engine.client, &calls)
            .await
            .map_err(|e| match e {
                store::OpenError::Db(e) => scoring::db_error(e),
                store::OpenError::Line(e) => Stop::Failed(format!("provider batch: {e}")),
            })?;
        tracing::info!(job = %ticket.job_id, calls = calls.len(), batches = rows.len(), "translation calls written down as provider batches");
        Ok(rows)
    }

    /// Stores what a batch's answers gave: the passages each answer
    /// delivered (their ids given back), one usage record per call, and
    /// the batch as applied.
    async fn apply_translations(
        &self,
        ticket: &JobTicket,
        provider: &provider::Model,
        client: &LlmClient,
        answered: Answered,
        keys: &HashMap<String, String>,
    ) -> Result<Vec<String>, Stop> {
        let discount = provider.batch_discount.clamp(0.0, 1.0);
        let mut outcomes: Vec<PassageOutcome> = Vec::new();
        let mut records: Vec<provider_call::ActiveModel> = Vec::new();
        let mut item_outcomes: Vec<(String, bool)> = Vec::new();
        for (item, answer) in &answered.items {
            let subject = match serde_json::from_str::<Subject>(&item.subject) {
                Ok(subject) => subject,
                Err(e) => {
                    tracing::error!(item = %item.custom_id, error = %e, "a batch item's subject cannot be read: its answer is not applied");
                    item_outcomes.push((item.id.clone(), false));
                    continue;
                }
            };
            let (status, error) = match answer {
                Ok(completion) => {
                    let (given, problems) = delivered(&subject.passages, completion);
                    let status = if given.len() == subject.passages.len() {
                        "ok"
                    } else if completion.refusal {
                        "refused"
                    } else if given.is_empty() {
                        "malformed"
                    } else {
                        "incomplete"
                    };
                    outcomes.extend(given);
                    (status, problems)
                }
                Err(e) => (e.outcome(), e.to_string()),
            };
            item_outcomes.push((item.id.clone(), answer.is_ok()));
            records.push(usage_record(
                ticket,
                provider,
                client,
                item.id.clone(),
                answer.as_ref().ok(),
                discount,
                status,
                error,
            ));
        }
        self.database
            .ride(|| self.store_translations(&outcomes, keys))
            .await?;
        self.database
            .ride(|| {
                let rows = records.clone();
                async move {
                    if rows.is_empty() {
                        return Ok(());
                    }
                    provider_call::Entity::insert_many(rows)
                        .on_conflict(
                            OnConflict::column(provider_call::Column::Id)
                                .do_nothing()
                                .to_owned(),
                        )
                        .exec_without_returning(&self.db)
                        .await
                        .map(|_| ())
                }
            })
            .await?;
        self.database
            .ride(|| store::applied(&self.db, &answered.row.id, &item_outcomes))
            .await?;
        Ok(outcomes.into_iter().map(|o| o.id).collect())
    }

    /// Asks the provider to cancel the job's batches it still works on,
    /// once the job was let go (cancelled, paused or its lease lost);
    /// what they answered stays readable for the job's next run.
    pub(super) async fn cancel_batches(&self, ticket: &JobTicket) {
        if !ticket.batch {
            return;
        }
        let remote = match store::to_cancel(&self.db, &ticket.job_id).await {
            Ok(remote) => remote,
            Err(e) => {
                tracing::warn!(job = %ticket.job_id, error = %e, "the job's provider batches could not be read to cancel them");
                return;
            }
        };
        if remote.is_empty() {
            return;
        }
        let engine = match self.engine(&ticket.provider_id).await {
            Ok(engine) => engine,
            Err(_) => return,
        };
        for id in remote {
            match tokio::time::timeout(CANCEL_TIMEOUT, engine.client.batch_cancel(&id)).await {
                Ok(Ok(_)) => {
                    tracing::info!(job = %ticket.job_id, remote = %id, "provider batch cancelled")
                }
                Ok(Err(e)) => {
                    tracing::warn!(job = %ticket.job_id, remote = %id, error = %e, "cancelling the provider batch failed")
                }
                Err(_) => {
                    tracing::warn!(job = %ticket.job_id, remote = %id, "cancelling the provider batch timed out")
                }
            }
        }
    }
}

/// The passages an answer delivers, checked as an ordinary answer is, and
/// what it left out.
fn delivered(passages: &[PassageIn], completion: &Completion) -> (Vec<PassageOutcome>, String) {
    if completion.refusal {
        return (Vec::new(), "refused".into());
    }
    let items = match translate::parse_answer(&completion.text) {
        Ok(items) => items,
        Err(e) if completion.truncated => {
            return (Vec::new(), format!("answer cut at max_tokens: {e}"));
        }
        Err(e) => return (Vec::new(), e),
    };
    // A single passage's answer is taken whatever id the model wrote.
    let lone = (passages.len() == 1 && items.len() == 1)
        .then(|| items.first().map(|(_, t)| t.clone()))
        .flatten();
    let mut by_id: HashMap<String, String> = HashMap::new();
    for (id, text) in items {
        by_id.entry(id).or_insert(text);
    }
    let mut given = Vec::new();
    let mut problems = Vec::new();
    for p in passages {
        match lone.clone().or_else(|| by_id.get(&p.id).cloned()) {
            Some(t) if !t.trim().is_empty() || p.text.trim().is_empty() => {
                match translate::check_placeholders(&p.text, &t) {
                    Ok(()) => given.push(PassageOutcome {
                        id: p.id.clone(),
                        result: Ok(t),
                    }),
                    Err(e) => problems.push(format!("{}: {e}", p.id)),
                }
            }
            _ => problems.push(format!("{}: missing from the answer", p.id)),
        }
    }
    (given, problems.join("; "))
}

/// The usage record of one batch call, under the item's id.
#[allow(clippy::too_many_arguments)]
fn usage_record(
    ticket: &JobTicket,
    provider: &provider::Model,
    client: &LlmClient,
    id: String,
    completion: Option<&Completion>,
    discount: f64,
    status: &str,
    error: String,
) -> provider_call::ActiveModel {
    let tokens = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    let (cost, prompt, answer, cached, cache_write) = match completion {
        Some(c) => (
            client.completion_cost(c),
            c.prompt_tokens,
            c.completion_tokens,
            c.cached_prompt_tokens,
            c.cache_write_tokens,
        ),
        None => (client.cost(0, 0), 0, 0, 0, 0),
    };
    provider_call::ActiveModel {
        id: Set(id),
        provider_id: Set(provider.id.clone()),
        account_id: Set(ticket.account_id.clone()),
        token_id: Set(ticket.token_id.clone()),
        request_id: Set(Some(ticket.request_id.clone())),
        job_id: Set(Some(ticket.job_id.clone())),
        prompt_tokens: Set(tokens(prompt)),
        completion_tokens: Set(tokens(answer)),
        cached: Set(cached > 0),
        cached_prompt_tokens: Set(tokens(cached)),
        cache_write_tokens: Set(tokens(cache_write)),
        stage: Set(UsageStage::Translation),
        cost: Set(cost.map(|c| c * (1.0 - discount))),
        batch: Set(true),
        duration_ms: Set(0),
        status: Set(status.to_owned()),
        error: Set(crate::llm::clip(&error, 1000)),
        created_at: Set(clock::now()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(id: &str, text: &str) -> PassageIn {
        PassageIn {
            id: id.into(),
            text: text.into(),
        }
    }

    fn completion(text: &str) -> Completion {
        Completion {
            text: text.into(),
            prompt_tokens: 10,
            completion_tokens: 5,
            cached_prompt_tokens: 0,
            cache_write_tokens: 0,
            refusal: false,
            truncated: false,
        }
    }

    #[test]
    fn an_answer_delivers_only_the_passages_it_translated_well() {
        let passages = [p("a", "x ⟦1/⟧"), p("b", "y ⟦1/⟧"), p("c", "z")];
        let answer = r#"{"translations":[{"id":"a","text":"xx ⟦1/⟧"},{"id":"b","text":"yy"},{"id":"zz","text":"?"}]}"#;
        let (given, problems) = delivered(&passages, &completion(answer));
        let ids: Vec<&str> = given.iter().map(|o| o.id.as_str()).collect();
        assert_eq!(ids, ["a"]);
        assert!(problems.contains("b: "), "{problems}");
        assert!(
            problems.contains("c: missing from the answer"),
            "{problems}"
        );
    }

    #[test]
    fn a_refusal_or_an_unreadable_answer_delivers_nothing() {
        let passages = [p("a", "x")];
        let refusal = Completion {
            refusal: true,
            ..completion("no")
        };
        assert!(delivered(&passages, &refusal).0.is_empty());
        assert!(delivered(&passages, &completion("Bonjour")).0.is_empty());
        let (given, _) = delivered(
            &passages,
            &completion(r#"{"translations":[{"id":"1","text":"X"}]}"#),
        );
        assert_eq!(given.len(), 1);
    }
}
