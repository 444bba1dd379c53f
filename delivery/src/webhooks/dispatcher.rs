//! The delivery role's webhook loop: finds the calls that are due, takes
//! them, and makes them — calls of one request in order (batches by number,
//! then the final event), requests side by side. It sleeps until the next
//! call is due, or until a wake-up says a new one was queued. It never
//! builds a result: the final event of a completed request waits a little
//! for the results loop to store it.

use super::events;
use super::outbox;
use super::schedule::RetrySchedule;
use super::sender::{Outgoing, Sender};
use super::sign;
use crate::error::DeliveryError;
use crate::stored;
use dragoman_model::clock;
use dragoman_model::coordination::Coordination;
use dragoman_model::entities::{api_token, request, webhook_delivery};
use dragoman_model::vocab::Channel;
use dragoman_model::webhook::{WebhookPolicy, WebhookSettings};
use sea_orm::{DatabaseConnection, EntityTrait};
use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{Notify, Semaphore, watch};

/// Longest sleep between two looks at the outbox (another process may have
/// scheduled a retry this one was not woken for).
const LONGEST_SLEEP: Duration = Duration::from_secs(2);
/// How long a final event waits for the results loop to store the result
/// it describes; after that it goes without `artifact`.
const RESULT_GRACE_SECONDS: i64 = 20;
/// How soon a final event waiting for its result is looked at again.
const RESULT_POLL_MS: i64 = 500;
/// Requests whose calls are made at once.
const CONCURRENT_REQUESTS: usize = 16;
/// How long a taken call is out of other processes' reach: longer than the
/// call can last (name resolution, then the timeout).
fn lease_ms(settings: &WebhookSettings) -> i64 {
    i64::try_from(settings.timeout_seconds + 30).unwrap_or(60) * 1000
}

/// Look again this soon while due calls wait for their request's task.
const BUSY_POLL_MS: i64 = 250;

pub struct Dispatcher {
    db: DatabaseConnection,
    coordination: Arc<dyn Coordination>,
    policy: WebhookPolicy,
    schedule: RetrySchedule,
    sender: Sender,
    kick: Notify,
    slots: Arc<Semaphore>,
    /// Requests whose calls a task of this process is making.
    busy: Arc<Mutex<HashSet<String>>>,
    /// Set when the process stops: the tasks make no further call.
    stopping: AtomicBool,
}

/// Marks a request as served by a task of this process until dropped (also
/// when the task ends abnormally).
struct Serving {
    busy: Arc<Mutex<HashSet<String>>>,
    request_id: String,
}

impl Serving {
    fn start(busy: &Arc<Mutex<HashSet<String>>>, request_id: String) -> Serving {
        if let Ok(mut set) = busy.lock() {
            set.insert(request_id.clone());
        }
        Serving {
            busy: busy.clone(),
            request_id,
        }
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        if let Ok(mut set) = self.busy.lock() {
            set.remove(&self.request_id);
        }
    }
}

impl Dispatcher {
    pub fn new(
        db: DatabaseConnection,
        coordination: Arc<dyn Coordination>,
        policy: WebhookPolicy,
        schedule: RetrySchedule,
    ) -> Self {
        let sender = Sender::new(policy.resolver.clone());
        Self {
            db,
            coordination,
            policy,
            schedule,
            sender,
            kick: Notify::new(),
            slots: Arc::new(Semaphore::new(CONCURRENT_REQUESTS)),
            busy: Arc::new(Mutex::new(HashSet::new())),
            stopping: AtomicBool::new(false),
        }
    }

    /// Runs until `stop` turns true, then lets the calls in flight end:
    /// each records its attempt, and the calls not made yet stay due for
    /// the next process. A call cut short (the process stopped before it
    /// ended) is made again once its claim expires.
    pub async fn run(self: Arc<Self>, mut stop: watch::Receiver<bool>) {
        while !*stop.borrow() {
            // Subscribed before looking, so a call queued meanwhile wakes us.
            let mut wake = self.coordination.subscribe(&Channel::Webhooks);
            let sleep = match self.tick().await {
                Ok(Some(next)) => {
                    // Calls still due belong to requests being served; their
                    // task wakes us when it is done.
                    let ms = next.saturating_sub(clock::now_millis());
                    let ms = if ms <= 0 { BUSY_POLL_MS } else { ms };
                    Duration::from_millis(u64::try_from(ms).unwrap_or(0)).min(LONGEST_SLEEP)
                }
                Ok(None) => LONGEST_SLEEP,
                Err(e) => {
                    tracing::warn!(error = %e, "webhook outbox");
                    LONGEST_SLEEP
                }
            };
            tokio::select! {
                _ = wake.wait(sleep) => {}
                _ = self.kick.notified() => {}
                _ = stop.changed() => {}
            }
        }
        self.stopping.store(true, Ordering::SeqCst);
        let every = u32::try_from(CONCURRENT_REQUESTS).unwrap_or(u32::MAX);
        let _in_flight_ended = self.slots.acquire_many(every).await;
    }

    /// Starts making every due call, one task per request; returns when the
    /// next pending call is due.
    pub async fn tick(self: &Arc<Self>) -> Result<Option<i64>, DeliveryError> {
        let settings = self.policy.current(&self.db).await?;
        let mut groups: BTreeMap<String, Vec<webhook_delivery::Model>> = BTreeMap::new();
        for row in outbox::due(&self.db, clock::now_millis(), 200).await? {
            if self.is_busy(&row.request_id) {
                continue;
            }
            // One broken row must not hold up the others.
            match self.prepare(row, &settings).await {
                Ok(Some(row)) => groups.entry(row.request_id.clone()).or_default().push(row),
                Ok(None) => {}
                Err(e) => tracing::warn!(error = %e, "webhook outbox row"),
            }
        }
        for (request_id, mut rows) in groups {
            // Batches by number, the final event last.
            rows.sort_by_key(|r| (r.batch.is_none(), r.batch));
            let Ok(permit) = self.slots.clone().acquire_owned().await else {
                break;
            };
            let serving = Serving::start(&self.busy, request_id);
            let this = self.clone();
            tokio::spawn(async move {
                for row in rows {
                    if this.stopping.load(Ordering::SeqCst) {
                        break;
                    }
                    // Taken right before the call, so its lease covers the
                    // call and not the calls queued before it.
                    // The settings in force for this call (they may have
                    // changed while earlier calls of the request were made).
                    let settings = match this.policy.current(&this.db).await {
                        Ok(settings) => settings,
                        Err(e) => {
                            tracing::warn!(error = %e, "webhook settings");
                            break;
                        }
                    };
                    match outbox::claim(&this.db, &row, lease_ms(&settings)).await {
                        Ok(Some(taken)) => this.attempt(taken, &settings).await,
                        Ok(None) => {}
                        Err(e) => tracing::warn!(error = %e, "taking a webhook call"),
                    }
                }
                drop(serving);
                drop(permit);
                this.kick.notify_one();
            });
        }
        outbox::next_due(&self.db).await
    }

    fn is_busy(&self, request_id: &str) -> bool {
        self.busy.lock().is_ok_and(|b| b.contains(request_id))
    }

    /// Gets a due call ready; `None` when it is not to be made now
    /// (exhausted, or its result not stored yet).
    async fn prepare(
        &self,
        mut row: webhook_delivery::Model,
        settings: &WebhookSettings,
    ) -> Result<Option<webhook_delivery::Model>, DeliveryError> {
        if u32::try_from(row.attempts).unwrap_or(0) >= settings.max_attempts {
            outbox::fail_exhausted(&self.db, &row).await?;
            crate::request_changed(self.coordination.as_ref(), &row.request_id).await;
            return Ok(None);
        }
        if row.body.is_empty() {
            let rendered = match self.render_finished(&row).await {
                // Nothing left to describe: the call ends here.
                Err(DeliveryError::RequestNotFound) => {
                    outbox::fail_exhausted(&self.db, &row).await?;
                    crate::request_changed(self.coordination.as_ref(), &row.request_id).await;
                    return Ok(None);
                }
                other => other?,
            };
            let Some(body) = rendered else {
                outbox::postpone(&self.db, &row, clock::now_millis() + RESULT_POLL_MS).await?;
                return Ok(None);
            };
            if !outbox::set_body(&self.db, &row, &body).await? {
                return Ok(None);
            }
            row.body = body;
        }
        Ok(Some(row))
    }

    /// The final event's body, or `None` while the result it should
    /// describe is not stored yet (within the grace).
    async fn render_finished(
        &self,
        row: &webhook_delivery::Model,
    ) -> Result<Option<String>, DeliveryError> {
        let Some(request) = request::Entity::find_by_id(row.request_id.clone())
            .one(&self.db)
            .await?
        else {
            return Err(DeliveryError::RequestNotFound);
        };
        let stored = stored::find(&self.db, &request.id).await?;
        if stored.is_none() && stored::STORED_FOR.contains(&request.status) {
            if row.created_at + RESULT_GRACE_SECONDS > clock::now() {
                return Ok(None);
            }
            tracing::warn!(request = %request.id, "final webhook sent without the result, not stored in time");
        }
        events::finished_body(&request, stored.as_ref()).map(Some)
    }

    /// The request's signing secret: its token's own, else the global one.
    async fn secret(&self, request_id: &str, settings: &WebhookSettings) -> Result<String, String> {
        let token = match request::Entity::find_by_id(request_id.to_owned())
            .one(&self.db)
            .await
        {
            Ok(Some(request)) => match request.token_id {
                Some(id) => api_token::Entity::find_by_id(id)
                    .one(&self.db)
                    .await
                    .map_err(|e| format!("database: {e}"))?,
                None => None,
            },
            Ok(None) => None,
            Err(e) => return Err(format!("database: {e}")),
        };
        if let Some(sealed) = token.and_then(|t| t.webhook_secret_enc) {
            return self
                .policy
                .key
                .open(&sealed)
                .map_err(|e| format!("token secret: {e}"));
        }
        settings.secret.clone().ok_or_else(|| {
            "no signing secret: the token has none and no global secret is set".into()
        })
    }

    async fn attempt(&self, row: webhook_delivery::Model, settings: &WebhookSettings) {
        let delivery_id = sign::delivery_id(&row.request_id, row.batch, row.attempts);
        let outcome = match self.secret(&row.request_id, settings).await {
            Ok(secret) => self
                .sender
                .send(
                    settings,
                    &Outgoing {
                        url: &row.url,
                        event: row.event,
                        delivery_id: &delivery_id,
                        body: row.body.as_bytes(),
                        secret: &secret,
                    },
                )
                .await
                .map(|_| ()),
            Err(e) => Err(e),
        };
        match &outcome {
            Ok(()) => {
                tracing::info!(delivery = %delivery_id, event = %row.event, "webhook delivered")
            }
            Err(e) => {
                tracing::warn!(delivery = %delivery_id, event = %row.event, error = %e, "webhook call failed")
            }
        }
        if let Err(e) = outbox::settle(
            &self.db,
            &row,
            outcome,
            settings.max_attempts,
            &self.schedule,
        )
        .await
        {
            tracing::warn!(delivery = %delivery_id, error = %e, "recording a webhook outcome failed");
        }
        crate::request_changed(self.coordination.as_ref(), &row.request_id).await;
    }
}
