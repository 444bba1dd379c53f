//! A provider that stops answering: its jobs wait for it instead of
//! leaving every passage untranslated, their `step` saying why, for at most
//! the provider outage limit (`DRAGOMAN_PROVIDER_OUTAGE_MINUTES`), past
//! which they fail with a reason that says so.
//!
//! A batch whose every attempt failed without an answer (connection
//! refused or reset, timeout, server error) is not enough: a provider that
//! fails a share of its calls does that too, and its passages end as
//! residuals, as they should. The provider is unreachable when, besides,
//! none of this process's calls to it got an answer since the batch began.

use super::{Stop, Worker};
use crate::translate::CallRecord;
use dragoman_model::entities::request;
use dragoman_model::vocab::{Channel, RequestStatus};
use dragoman_model::{clock, steps};
use dragoman_proto::v1::JobTicket;
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a job waits before it asks an unreachable provider again.
const ASK_AGAIN_AFTER: Duration = Duration::from_secs(5);

/// When each provider last answered a call of this process.
#[derive(Debug, Default)]
pub struct ProviderReach {
    answered: Mutex<HashMap<String, Instant>>,
}

impl ProviderReach {
    fn answers(&self) -> std::sync::MutexGuard<'_, HashMap<String, Instant>> {
        self.answered
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `calls` to `provider` came back; notes whether one was answered.
    fn saw(&self, provider: &str, calls: &[CallRecord]) {
        if calls.iter().any(|c| !unanswered(c)) {
            self.answers().insert(provider.to_owned(), Instant::now());
        }
    }

    fn answered_since(&self, provider: &str, since: Instant) -> bool {
        self.answers().get(provider).is_some_and(|at| *at >= since)
    }
}

/// An attempt that got no answer from the provider at all.
fn unanswered(call: &CallRecord) -> bool {
    matches!(
        call.outcome.as_str(),
        "network_error" | "timeout" | "server_error"
    )
}

/// How long a batch's provider has not answered, while it does not.
#[derive(Debug, Default)]
pub(super) struct Silence {
    since: Option<(Instant, i64)>,
}

impl Worker {
    /// Whether the attempts of a batch begun at `began`, which left every
    /// passage without a translation, found `provider` unreachable.
    pub(super) fn provider_unreachable(
        &self,
        provider: &str,
        began: Instant,
        calls: &[CallRecord],
        all_failed: bool,
    ) -> bool {
        self.providers.saw(provider, calls);
        all_failed
            && !calls.is_empty()
            && calls.iter().all(unanswered)
            && !self.providers.answered_since(provider, began)
    }

    /// Waits before a batch asks its unreachable provider again, the
    /// request's step saying so; past the provider outage limit (counted
    /// from the batch's first unanswered attempt, `began`) the job fails.
    pub(super) async fn wait_for_provider(
        &self,
        ticket: &JobTicket,
        provider: &str,
        began: Instant,
        silence: &mut Silence,
    ) -> Result<(), Stop> {
        let (since, since_unix) = *silence.since.get_or_insert_with(|| {
            let lasted = i64::try_from(began.elapsed().as_secs()).unwrap_or(0);
            (began, clock::now() - lasted)
        });
        if since.elapsed() >= self.config.provider_outage {
            return Err(Stop::Failed(self.unreachable_for(provider)));
        }
        tracing::warn!(job = %ticket.job_id, provider, "the provider does not answer: the job waits for it");
        self.set_step(ticket, &steps::waiting_for_provider(provider, since_unix))
            .await;
        tokio::time::sleep(ASK_AGAIN_AFTER).await;
        Ok(())
    }

    /// Why a job whose provider stayed away past the outage limit failed.
    pub(super) fn unreachable_for(&self, provider: &str) -> String {
        let minutes = self.config.provider_outage.as_secs().div_ceil(60);
        let unit = if minutes == 1 { "minute" } else { "minutes" };
        format!("the provider {provider} was unreachable for more than {minutes} {unit}")
    }

    /// The provider answered again after a wait: the step says the job
    /// translates.
    pub(super) async fn provider_back(&self, ticket: &JobTicket, silence: &mut Silence) {
        if silence.since.take().is_some() {
            tracing::info!(job = %ticket.job_id, "the provider answers again");
            self.set_step(ticket, steps::TRANSLATING).await;
        }
    }

    /// Sets the step of the job's running request. The step only informs:
    /// a failure to store it is logged, not the job's end.
    pub(super) async fn set_step(&self, ticket: &JobTicket, step: &str) {
        let stored = request::Entity::update_many()
            .col_expr(request::Column::Step, Expr::value(step))
            .filter(request::Column::Id.eq(ticket.request_id.clone()))
            .filter(request::Column::Status.eq(RequestStatus::Running))
            .exec(&self.db)
            .await;
        match stored {
            Ok(_) => {
                if let Err(e) = self
                    .coordination
                    .notify(&Channel::request(&ticket.request_id))
                    .await
                {
                    tracing::warn!(error = %e, "coordination notify failed");
                }
            }
            Err(e) => tracing::warn!(job = %ticket.job_id, error = %e, "the step was not stored"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(outcome: &str) -> CallRecord {
        CallRecord {
            passages: 1,
            prompt_tokens: 0,
            completion_tokens: 0,
            cached: false,
            cached_prompt_tokens: 0,
            cache_write_tokens: 0,
            cost: None,
            duration_ms: 1,
            outcome: outcome.into(),
            error: String::new(),
        }
    }

    #[test]
    fn a_provider_is_unreachable_only_when_nothing_answered_since_the_batch_began() {
        let reach = ProviderReach::default();
        let began = Instant::now();
        let refused = [call("network_error"), call("timeout")];
        reach.saw("p", &refused);
        assert!(!reach.answered_since("p", began));
        assert!(refused.iter().all(unanswered));
        // Another batch's call was answered meanwhile: the provider is up,
        // this batch was unlucky.
        reach.saw("p", &[call("ok")]);
        assert!(reach.answered_since("p", began));
        assert!(!reach.answered_since("q", began));
        // A refusal or an unreadable answer is an answer.
        assert!(!unanswered(&call("refused")));
        assert!(!unanswered(&call("malformed")));
        assert!(!unanswered(&call("rate_limited")));
    }
}
