//! Budgets while a job runs (spec 8, "Token budget rules"): before each
//! provider call the worker reserves what the call is expected to cost
//! under every cap that covers the job (its token's, its book's), so that
//! the calls in flight across all jobs of a token count against what each
//! cap leaves, and the cap is reached without being run far past.
//!
//! - What a call reserves: prompt tokens are [`estimate_tokens`] of what
//!   is sent (system prompt and user message), both figures below at the
//!   provider's prices. Until a call of its kind ([`CallKind`]) came back
//!   for the job, its answer counts at its ceiling: the passages' estimate
//!   times [`TRANSLATION_ANSWER_FACTOR`], [`ANALYSIS_ANSWER_FACTOR`] or
//!   [`REVIEW_ANSWER_FACTOR`]. From then on it reserves what it is expected
//!   to cost: the job estimate's figure for its kind (the passages'
//!   estimate times [`TRANSLATION_COMPLETION_RATIO`],
//!   [`ANALYSIS_COMPLETION_SHARE`] or [`REVIEW_COMPLETION_SHARE`]) scaled
//!   by what the job's calls of that kind really cost against that figure
//!   ([`Tally`]): retries, longer answers and the provider's own tokenizer
//!   all show there. A provider without both prices costs nothing known:
//!   nothing is reserved and no cap is read.
//! - Below the threshold: while the job is on its original provider and a
//!   cheaper one exists, a call must fit whole below each cap's threshold
//!   (`BUDGET_SWITCH_PERCENT` of it) with what was spent and the calls in
//!   flight. Refused, the job moves to the cheaper fallback
//!   ([`dragoman_model::fallback`]) through the scheduler and the call asks
//!   again, up to the cap.
//! - Up to the cap: once the job moved, or when there is nothing cheaper,
//!   a call starts while what was spent and the calls in flight leave some
//!   of the cap, so the last calls may cross it, by what they were
//!   expected to cost (spec 8, rule 5: a single call can cross the cap; a
//!   cap smaller than one call is crossed by that call). Refused while calls of the job are in
//!   flight, the call waits for one of them to come back (what it really
//!   cost decides) and asks again; refused again with none in flight, the
//!   scheduler pauses the job (`budget_exceeded`) and the worker lets it
//!   go. What was spent is read again after reserving ([`Guard::reserve`]),
//!   so a call coming back meanwhile is not missed.
//! - Every cap must take a reservation, else what was taken is given back.
//!   The room is asked once the call holds its capacity slot, so calls
//!   waiting for a slot hold none.
//! - After the call, its usage is recorded and only then its reservations
//!   released, so a reader always sees a call's cost reserved or recorded.
//! - A reservation expires on its own after the time its call may take with
//!   every retry ([`Worker::reservation_ttl`]): a worker that dies holding
//!   one does not keep the room from the others.
//!
//! One [`Purse`] per job holds the provider the job's calls go to now and
//! which room they ask for. The stages run calls side by side; a move swaps
//! the provider for every call admitted after it, and a job leased again
//! after a move knows it moved from its ticket (`provider_switches`).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use dragoman_model::coordination::Coordination;
use dragoman_model::entities::provider;
use dragoman_model::tokens::estimate_tokens;
use dragoman_model::vocab::UsageStage;
use dragoman_model::{budget, clock, fallback, ids};
use dragoman_proto::v1::{JobTicket, PauseForBudgetRequest, SwitchProviderRequest};
use futures::{Stream, StreamExt};
use sea_orm::DatabaseConnection;
use tokio::sync::futures::Notified;
use tokio::sync::{Mutex, Notify, RwLock, watch};

use super::slots::{self, JobSlots, Slot};
use super::{Engine, Stop, Worker, scoring};
use crate::analysis::{ANALYSIS_SYSTEM_PROMPT, Languages, analysis_message};
use crate::review::{REVIEW_SYSTEM_PROMPT, ReviewName, ReviewPassage, ReviewTerm, review_message};
use crate::translate::{
    CallRecord, PASSAGE_OVERHEAD_TOKENS, PassageIn, SYSTEM_PROMPT, TranslateJob, passage_tokens,
    user_message,
};

/// Completion tokens of a translation answer at its ceiling, in times its
/// passages' estimate: a translation runs longer than its source (and real
/// tokenizers split accented and other scripts finer), and the answer
/// repeats each passage's id in the same JSON wrapping.
pub(super) const TRANSLATION_ANSWER_FACTOR: usize = 2;

/// Completion tokens of an analysis answer at its ceiling, in times its
/// passages' estimate: names, terms and evidence quote the text with JSON
/// around them.
pub(super) const ANALYSIS_ANSWER_FACTOR: usize = 3;

/// Completion tokens of a review answer at its ceiling, in times the
/// translations' estimate: a correction of every translation, plus flags.
pub(super) const REVIEW_ANSWER_FACTOR: usize = 2;

/// Completion tokens expected of a translation, of an analysis and of a
/// review, per token of the passages they read: the job estimate's figures.
pub(super) use dragoman_model::estimate::{
    ANALYSIS_COMPLETION_SHARE, DEFAULT_COMPLETION_RATIO as TRANSLATION_COMPLETION_RATIO,
    REVIEW_COMPLETION_SHARE,
};

/// Reservations asked at most for one call while calls coming back change
/// what was spent under it; the last one stands.
const SETTLE_ATTEMPTS: u32 = 4;

/// Time a reservation outlives its call's worst case, so a slow but live
/// call never loses its reservation before it is recorded.
const TTL_MARGIN: Duration = Duration::from_secs(60);

/// What a provider call does, and so what its answer is expected to hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) enum CallKind {
    #[default]
    Translation,
    Analysis,
    Review,
}

impl CallKind {
    const COUNT: usize = 3;

    fn index(self) -> usize {
        match self {
            CallKind::Translation => 0,
            CallKind::Analysis => 1,
            CallKind::Review => 2,
        }
    }
}

/// Estimated tokens of one provider call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct CallSize {
    pub kind: CallKind,
    pub prompt_tokens: usize,
    /// What the answer is expected to hold.
    pub completion_tokens: usize,
    /// What the answer holds at most, as far as the job knows nothing of
    /// its calls yet.
    pub ceiling_tokens: usize,
}

/// `tokens` times `share`, rounded up.
fn scaled(tokens: usize, share: f64) -> usize {
    let scaled = (tokens as f64 * share).ceil();
    if scaled >= usize::MAX as f64 {
        usize::MAX
    } else {
        scaled as usize
    }
}

impl CallSize {
    /// A translation of the job's passages with its context.
    pub fn translation(job: &TranslateJob) -> CallSize {
        let passages: Vec<&PassageIn> = job.passages.iter().collect();
        let sent = estimate_tokens(SYSTEM_PROMPT) + estimate_tokens(&user_message(job, &passages));
        let passages: usize = job.passages.iter().map(passage_tokens).sum();
        CallSize {
            kind: CallKind::Translation,
            prompt_tokens: sent,
            completion_tokens: scaled(passages, TRANSLATION_COMPLETION_RATIO),
            ceiling_tokens: passages.saturating_mul(TRANSLATION_ANSWER_FACTOR),
        }
    }

    /// An analysis of these passages.
    pub fn analysis(languages: Languages<'_>, passages: &[PassageIn]) -> CallSize {
        let user = analysis_message(languages.source, languages.target, passages);
        let read: usize = passages.iter().map(passage_tokens).sum();
        CallSize {
            kind: CallKind::Analysis,
            prompt_tokens: estimate_tokens(ANALYSIS_SYSTEM_PROMPT) + estimate_tokens(&user),
            completion_tokens: scaled(read, ANALYSIS_COMPLETION_SHARE),
            ceiling_tokens: read.saturating_mul(ANALYSIS_ANSWER_FACTOR),
        }
    }

    /// A review of these passages against the glossary and the characters.
    pub fn review(
        languages: Languages<'_>,
        terms: &[ReviewTerm],
        names: &[ReviewName],
        passages: &[ReviewPassage],
    ) -> CallSize {
        let user = review_message(languages, terms, names, passages);
        let translations: usize = passages
            .iter()
            .map(|p| {
                estimate_tokens(&p.id) + estimate_tokens(&p.translation) + PASSAGE_OVERHEAD_TOKENS
            })
            .sum();
        CallSize {
            kind: CallKind::Review,
            prompt_tokens: estimate_tokens(REVIEW_SYSTEM_PROMPT) + estimate_tokens(&user),
            completion_tokens: scaled(translations, REVIEW_COMPLETION_SHARE),
            ceiling_tokens: translations.saturating_mul(REVIEW_ANSWER_FACTOR),
        }
    }

    /// What the call is expected to cost at the provider's prices by the
    /// estimate's figures; none when either price is unknown.
    pub fn cost(&self, provider: &provider::Model) -> Option<f64> {
        self.priced(self.completion_tokens, provider)
    }

    /// What the call may cost with its answer at its ceiling.
    pub fn ceiling(&self, provider: &provider::Model) -> Option<f64> {
        self.priced(self.ceiling_tokens, provider)
    }

    fn priced(&self, completion_tokens: usize, provider: &provider::Model) -> Option<f64> {
        crate::llm::cost(
            u64::try_from(self.prompt_tokens).unwrap_or(u64::MAX),
            u64::try_from(completion_tokens).unwrap_or(u64::MAX),
            provider.price_input,
            provider.price_output,
        )
    }
}

/// What the job's calls of one kind that came back cost, against what was
/// expected of them; calls that cost nothing (failed before any usage) are
/// left out, as they say nothing of the next answer.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct Tally {
    expected: f64,
    actual: f64,
}

impl Tally {
    /// What the calls so far cost per unit of their estimate; none before
    /// any came back.
    fn ratio(&self) -> Option<f64> {
        (self.expected > 0.0 && self.actual > 0.0).then(|| self.actual / self.expected)
    }
}

/// The measures and the calls in flight of one job, shared with its
/// admitted calls.
#[derive(Default)]
struct Calls {
    tallies: std::sync::Mutex<[Tally; CallKind::COUNT]>,
    in_flight: AtomicUsize,
    returned: Notify,
}

impl Calls {
    fn tally(&self, kind: CallKind) -> Tally {
        self.tallies.lock().unwrap_or_else(PoisonError::into_inner)[kind.index()]
    }

    fn measured(&self, kind: CallKind, expected: f64, actual: f64) {
        let mut tallies = self.tallies.lock().unwrap_or_else(PoisonError::into_inner);
        let tally = &mut tallies[kind.index()];
        tally.expected += expected;
        tally.actual += actual;
    }
}

/// One admitted call of the job, counted in flight until it is dropped
/// (closed, or cut short with its job).
struct InFlight {
    calls: Arc<Calls>,
    kind: CallKind,
    /// Its cost by the estimate's figures; none when unpriced.
    expected: Option<f64>,
}

impl InFlight {
    fn new(calls: &Arc<Calls>, kind: CallKind, expected: Option<f64>) -> InFlight {
        calls.in_flight.fetch_add(1, Ordering::SeqCst);
        InFlight {
            calls: calls.clone(),
            kind,
            expected,
        }
    }

    /// The call came back with `records`: what it cost teaches the next.
    fn came_back(&self, records: &[CallRecord]) {
        let actual: f64 = records.iter().filter_map(|r| r.cost).sum();
        if let Some(expected) = self.expected.filter(|e| *e > 0.0)
            && actual > 0.0
        {
            self.calls.measured(self.kind, expected, actual);
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.calls.in_flight.fetch_sub(1, Ordering::SeqCst);
        self.calls.returned.notify_waiters();
    }
}

/// Which part of each cap a call may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Limit {
    /// Below the switch threshold: the job is on its original provider and
    /// may still move to a cheaper one.
    Threshold,
    /// Up to the cap: the job moved, or has nowhere cheaper to go.
    Cap,
}

/// The budget side of one job: the provider its calls go to now, whether
/// it moved to a cheaper one or has none to move to, whether a budget
/// paused it, what its calls cost against their estimates, and whether its
/// process is draining (no call starts any more: see the worker's module
/// doc).
pub(super) struct Purse {
    job_id: String,
    worker_id: String,
    token_id: Option<String>,
    project_id: String,
    /// The job's provider when it was leased.
    provider_id: String,
    current: RwLock<Option<Arc<Engine>>>,
    switched: AtomicBool,
    /// True once a refusal found nothing cheaper to move to: the job's
    /// calls go on up to the cap.
    nowhere_cheaper: AtomicBool,
    paused: AtomicBool,
    /// Held while a refusal is dealt with, so one move (or one pause)
    /// serves every call refused at once.
    refusals: Mutex<()>,
    calls: Arc<Calls>,
    /// True once the process drains.
    draining: watch::Receiver<bool>,
    /// What the job holds of its provider's capacity.
    slots: JobSlots,
}

impl Purse {
    pub fn new(ticket: &JobTicket, worker_id: &str) -> Purse {
        Purse {
            job_id: ticket.job_id.clone(),
            worker_id: worker_id.to_owned(),
            token_id: ticket.token_id.clone(),
            project_id: ticket.project_id.clone(),
            provider_id: ticket.provider_id.clone(),
            current: RwLock::new(None),
            switched: AtomicBool::new(ticket.provider_switches > 0),
            nowhere_cheaper: AtomicBool::new(false),
            paused: AtomicBool::new(false),
            refusals: Mutex::new(()),
            calls: Arc::default(),
            draining: watch::channel(false).1,
            slots: JobSlots::new(ticket),
        }
    }

    /// The purse of a job whose process drains once `draining` turns true.
    pub fn drained_by(mut self, draining: watch::Receiver<bool>) -> Purse {
        self.draining = draining;
        self
    }

    /// What the job holds of its provider's capacity.
    pub(super) fn slots(&self) -> &JobSlots {
        &self.slots
    }

    /// Whether the process drains: no provider call starts any more.
    pub fn draining(&self) -> bool {
        *self.draining.borrow()
    }

    /// Whether the job moved to a cheaper provider.
    pub fn switched(&self) -> bool {
        self.switched.load(Ordering::SeqCst)
    }

    fn paused(&self) -> bool {
        self.paused.load(Ordering::SeqCst)
    }

    /// The part of each cap the job's next call may use.
    fn limit(&self) -> Limit {
        if self.switched() || self.nowhere_cheaper.load(Ordering::SeqCst) {
            Limit::Cap
        } else {
            Limit::Threshold
        }
    }

    /// What a call of `size` to `provider` reserves (its ceiling until a
    /// call of its kind came back, then its estimate corrected by what the
    /// job's calls of that kind cost), and its estimate. None when the
    /// provider has no prices.
    fn expected_cost(&self, size: &CallSize, provider: &provider::Model) -> Option<(f64, f64)> {
        let estimated = size.cost(provider)?;
        let reserve = match self.calls.tally(size.kind).ratio() {
            Some(ratio) => estimated * ratio,
            None => size.ceiling(provider)?,
        };
        Some((reserve, estimated))
    }

    /// Ready once one of the job's calls in flight came back; none when no
    /// call of the job is in flight.
    fn call_back(&self) -> Option<Notified<'_>> {
        // Registered before counting, so a call coming back in between
        // still wakes it.
        let returned = self.calls.returned.notified();
        (self.calls.in_flight.load(Ordering::SeqCst) > 0).then_some(returned)
    }

    /// Ends a stage whose calls run side by side, after one of them
    /// stopped the job with `stop`. When a budget paused it, the process
    /// drains or the database is away, the calls already in flight finish
    /// first (each records its usage and stores what it got, once the
    /// database is back: that work is paid for); the ones not started stop
    /// at once. Otherwise they are dropped as the job is let go.
    pub async fn wind_down<S>(&self, runs: &mut S, stop: Stop) -> Stop
    where
        S: Stream<Item = Result<(), Stop>> + Unpin,
    {
        if self.paused() || self.draining() || matches!(stop, Stop::Unavailable) {
            while runs.next().await.is_some() {}
        }
        stop
    }

    /// The job moved to `cheaper`: calls admitted from now on go there.
    async fn moved_to(&self, cheaper: Arc<Engine>) {
        *self.current.write().await = Some(cheaper);
        self.switched.store(true, Ordering::SeqCst);
    }
}

/// Reservations held for one call; give them back with
/// [`Worker::close_call`].
#[derive(Debug)]
pub(super) struct Hold {
    id: String,
    pools: Vec<String>,
}

/// Room under the caps for calls sent by batch, held until they are
/// written down.
pub(super) struct BatchRoom {
    hold: Hold,
    /// What each call is expected to cost at the batch discount, when
    /// priced, in the order asked.
    pub costs: Vec<Option<f64>>,
}

/// A call allowed to go: the provider it goes to, its capacity slot, its
/// reservations, and its place among the job's calls in flight.
pub(super) struct Admitted {
    pub engine: Arc<Engine>,
    slot: Slot,
    hold: Hold,
    flight: InFlight,
}

/// What the caps said of a call.
#[derive(Debug)]
enum Room {
    Reserved(Hold),
    Refused,
}

/// What follows a refusal.
#[derive(Debug)]
enum Next {
    /// The job's limit changed meanwhile (another call moved it): ask again.
    Retry,
    /// Move the job to this cheaper provider, then ask again.
    /// Boxed: a provider row is large beside the other variants.
    Move(Box<provider::Model>),
    /// Nothing cheaper to move to: ask again, up to the cap.
    UpToCap,
    /// Refused up to the cap: pause the job, once its calls in flight are
    /// back.
    Pause,
}

/// The budget checks of one worker process, apart from its services.
struct Guard<'a> {
    db: &'a DatabaseConnection,
    coordination: &'a dyn Coordination,
    switch_percent: u8,
    ttl: Duration,
}

impl Guard<'_> {
    /// Reserves `expected`, what a call is expected to cost, under every cap
    /// of the job, all or nothing, within `limit` (see the module doc).
    ///
    /// What was spent is read before reserving, and a call coming back
    /// records its cost before it frees its reservation: one that did both
    /// in between was counted in neither. So what was spent is read again
    /// after reserving, and the reservation asked again when it grew.
    async fn reserve(&self, purse: &Purse, expected: f64, limit: Limit) -> Result<Room, Stop> {
        if expected <= 0.0 {
            return Ok(Room::Reserved(Hold {
                id: ids::new_id(),
                pools: Vec::new(),
            }));
        }
        let mut caps = self.caps(purse).await?;
        let mut attempts = 1;
        loop {
            let room = self.reserve_within(purse, &caps, expected, limit).await?;
            let Room::Reserved(hold) = room else {
                return Ok(room);
            };
            if hold.pools.is_empty() || attempts == SETTLE_ATTEMPTS {
                return Ok(Room::Reserved(hold));
            }
            let again = match self.caps(purse).await {
                Ok(again) => again,
                Err(stop) => {
                    self.release(hold).await;
                    return Err(stop);
                }
            };
            let settled = again.len() == caps.len()
                && again
                    .iter()
                    .zip(&caps)
                    .all(|(now, then)| now.pool == then.pool && now.spent <= then.spent);
            if settled {
                return Ok(Room::Reserved(hold));
            }
            self.release(hold).await;
            caps = again;
            attempts += 1;
        }
    }

    /// Every cap covering the job, with what was spent under it.
    async fn caps(&self, purse: &Purse) -> Result<Vec<budget::Cap>, Stop> {
        budget::caps(
            self.db,
            purse.token_id.as_deref(),
            &purse.project_id,
            clock::now(),
        )
        .await
        .map_err(scoring::db_error)
    }

    /// Reserves `expected` under each of `caps` as they were read.
    async fn reserve_within(
        &self,
        purse: &Purse,
        caps: &[budget::Cap],
        expected: f64,
        limit: Limit,
    ) -> Result<Room, Stop> {
        let mut hold = Hold {
            id: ids::new_id(),
            pools: Vec::new(),
        };
        for cap in caps {
            // The reservations in flight and this one must stay within
            // `room`.
            let room = match limit {
                Limit::Threshold => Some(cap.left_before_switch(self.switch_percent)),
                // Some of the cap left: the calls in flight may use it all
                // and this one cross it (spec 8, rule 5: a single call can
                // cross the cap).
                Limit::Cap => Some(cap.left())
                    .filter(|left| *left > 0.0)
                    .map(|left| left + expected),
            };
            let reserved = match room {
                Some(room) => {
                    self.coordination
                        .reserve(&cap.pool, &hold.id, expected, room, self.ttl)
                        .await
                }
                None => Ok(false),
            };
            match reserved {
                Ok(true) => hold.pools.push(cap.pool.clone()),
                Ok(false) => {
                    tracing::info!(
                        job = %purse.job_id,
                        scope = ?cap.scope,
                        amount = cap.amount,
                        spent = cap.spent,
                        expected,
                        ?limit,
                        "a budget has no room for the next call"
                    );
                    self.release(hold).await;
                    return Ok(Room::Refused);
                }
                Err(e) => {
                    // Without coordination no call may count on room: the
                    // job is let go and leased again once its lease expires.
                    tracing::warn!(job = %purse.job_id, error = %e, "reserving budget room failed; the job is tried again");
                    self.release(hold).await;
                    return Err(Stop::Released);
                }
            }
        }
        Ok(Room::Reserved(hold))
    }

    async fn release(&self, hold: Hold) {
        for pool in &hold.pools {
            if let Err(e) = self.coordination.release(pool, &hold.id).await {
                // It expires on its own.
                tracing::warn!(pool = %pool, error = %e, "releasing a budget reservation failed");
            }
        }
    }

    /// What follows a refusal of a call asked within `limit`, the job being
    /// on `current` now. The caller holds the purse's refusal lock.
    async fn next(
        &self,
        purse: &Purse,
        current: &provider::Model,
        limit: Limit,
    ) -> Result<Next, Stop> {
        if purse.paused() {
            return Err(Stop::Released);
        }
        if purse.limit() == Limit::Cap {
            return Ok(if limit == Limit::Cap {
                Next::Pause
            } else {
                Next::Retry
            });
        }
        Ok(fallback::cheaper_fallback(self.db, current)
            .await
            .map_err(scoring::db_error)?
            .map_or(Next::UpToCap, |p| Next::Move(Box::new(p))))
    }
}

impl Worker {
    fn guard(&self) -> Guard<'_> {
        Guard {
            db: &self.db,
            coordination: self.coordination.as_ref(),
            switch_percent: self.config.budget_switch_percent,
            ttl: self.reservation_ttl(),
        }
    }

    /// The provider the job's calls go to now.
    /// How many calls of `ticket`'s job a stage runs side by side, on
    /// `own` (a provider the stage chose) or the job's current provider
    /// ([`slots::parallel_calls`]).
    pub(super) async fn calls_at_once(
        &self,
        ticket: &JobTicket,
        purse: &Purse,
        own: Option<&Arc<Engine>>,
    ) -> Result<usize, Stop> {
        let capacity = match own {
            Some(own) => own.capacity,
            None => self.current_engine(purse).await?.capacity,
        };
        Ok(slots::parallel_calls(ticket, capacity))
    }

    pub(super) async fn current_engine(&self, purse: &Purse) -> Result<Arc<Engine>, Stop> {
        if let Some(engine) = purse.current.read().await.as_ref() {
            return Ok(engine.clone());
        }
        let mut current = purse.current.write().await;
        if let Some(engine) = current.as_ref() {
            return Ok(engine.clone());
        }
        let engine = Arc::new(self.engine(&purse.provider_id).await?);
        *current = Some(engine.clone());
        Ok(engine)
    }

    /// How long a reservation lives: every attempt of its call timing out
    /// after the longest backoff, and a margin.
    pub(super) fn reservation_ttl(&self) -> Duration {
        reservation_ttl(
            self.config.call_timeout,
            self.config.retry.max_delay,
            self.config.retry.max_attempts,
        )
    }

    /// Lets a call of `size` go: a capacity slot of the job's provider (or
    /// of `own`, a provider a stage chose, while the job has not moved),
    /// then its reservations under every cap (see the module doc). Moves
    /// the job to a cheaper provider, or pauses it, when the caps refuse.
    /// Once the process drains no call goes ([`Stop::Drained`]), even one
    /// that was waiting for a slot; none goes while the database is away
    /// ([`Stop::Unavailable`]).
    pub(super) async fn admit(
        &self,
        purse: &Purse,
        own: Option<&Arc<Engine>>,
        size: &CallSize,
    ) -> Result<Admitted, Stop> {
        let guard = self.guard();
        // Whether the caps were asked again with none of the job's calls in
        // flight: a call that came back while this one was refused may
        // have left room its refusal did not see.
        let mut looked_idle = false;
        loop {
            if purse.paused() {
                return Err(Stop::Released);
            }
            if purse.draining() {
                return Err(Stop::Drained);
            }
            // Its answer could not be recorded.
            if !self.database.is_up() {
                return Err(Stop::Unavailable);
            }
            let limit = purse.limit();
            let engine = match own {
                Some(own) if !purse.switched() => own.clone(),
                _ => self.current_engine(purse).await?,
            };
            let Some(slot) = self
                .take_slot(&engine.provider, engine.capacity, purse)
                .await
            else {
                return Err(Stop::Drained);
            };
            let expected = purse.expected_cost(size, &engine.provider);
            let corrected = expected.map_or(0.0, |(corrected, _)| corrected);
            match guard.reserve(purse, corrected, limit).await {
                Ok(Room::Reserved(hold)) => {
                    let flight = InFlight::new(
                        &purse.calls,
                        size.kind,
                        expected.map(|(_, estimated)| estimated),
                    );
                    return Ok(Admitted {
                        engine,
                        slot,
                        hold,
                        flight,
                    });
                }
                Ok(Room::Refused) => {
                    self.release_slot(slot).await;
                    looked_idle = self
                        .budget_refused(&guard, purse, limit, looked_idle)
                        .await?;
                }
                Err(stop) => {
                    self.release_slot(slot).await;
                    return Err(stop);
                }
            }
        }
    }

    /// Lets calls sent by batch go: what they are expected to cost at the
    /// provider's batch discount must find room under every cap, as an
    /// ordinary call's does (a refusal moves the job to a cheaper provider
    /// or pauses it). The room is held until the calls are written down
    /// with their expected costs ([`BatchRoom::costs`]), which then hold it
    /// under the caps until their answers are recorded
    /// (`dragoman_model::budget`): the answers come within the provider's
    /// window, long after a reservation expires.
    pub(super) async fn admit_batch(
        &self,
        purse: &Purse,
        own: Option<&Arc<Engine>>,
        sizes: &[CallSize],
    ) -> Result<BatchRoom, Stop> {
        let guard = self.guard();
        let mut looked_idle = false;
        loop {
            if purse.paused() {
                return Err(Stop::Released);
            }
            if purse.draining() {
                return Err(Stop::Drained);
            }
            if !self.database.is_up() {
                return Err(Stop::Unavailable);
            }
            let limit = purse.limit();
            let engine = match own {
                Some(own) if !purse.switched() => own.clone(),
                _ => self.current_engine(purse).await?,
            };
            let share = 1.0 - engine.provider.batch_discount.clamp(0.0, 1.0);
            let costs: Vec<Option<f64>> = sizes
                .iter()
                .map(|size| {
                    purse
                        .expected_cost(size, &engine.provider)
                        .map(|(reserve, _)| reserve * share)
                })
                .collect();
            let expected: f64 = costs.iter().flatten().sum();
            match guard.reserve(purse, expected, limit).await? {
                Room::Reserved(hold) => return Ok(BatchRoom { hold, costs }),
                Room::Refused => {
                    looked_idle = self
                        .budget_refused(&guard, purse, limit, looked_idle)
                        .await?;
                }
            }
        }
    }

    /// Gives back the room of calls written down as batches (or that
    /// could not be).
    pub(super) async fn free_batch_room(&self, room: BatchRoom) {
        self.guard().release(room.hold).await;
    }

    /// After the call: gives its slot back, records its usage under
    /// `stage`, then frees its reservations — in that order, so its cost is always either
    /// reserved or recorded — and lets the calls waiting for it ask again.
    pub(super) async fn close_call(
        &self,
        ticket: &JobTicket,
        stage: UsageStage,
        admitted: Admitted,
        calls: Vec<CallRecord>,
    ) -> Result<(), Stop> {
        let Admitted {
            engine,
            slot,
            hold,
            flight,
        } = admitted;
        self.release_slot(slot).await;
        flight.came_back(&calls);
        let recorded = self
            .record_calls(ticket, &engine.provider, stage, calls)
            .await;
        self.guard().release(hold).await;
        drop(flight);
        recorded
    }

    /// A call was refused room within `limit` (`looked_idle`: on asking
    /// again once none of the job's calls was in flight). Ok when the call
    /// may ask again: on the cheaper provider, up to the cap, once a call
    /// of the job in flight came back, or once more with none in flight
    /// (then true); otherwise the job is paused and let go.
    async fn budget_refused(
        &self,
        guard: &Guard<'_>,
        purse: &Purse,
        limit: Limit,
        looked_idle: bool,
    ) -> Result<bool, Stop> {
        let one_at_a_time = purse.refusals.lock().await;
        let current = self.current_engine(purse).await?;
        match guard.next(purse, &current.provider, limit).await? {
            Next::Retry => return Ok(false),
            Next::Move(cheaper) => match self.engine_of(*cheaper) {
                Ok(engine) => {
                    self.switch_provider(purse, &current, Arc::new(engine))
                        .await?;
                    return Ok(false);
                }
                Err(_) => {
                    tracing::warn!(job = %purse.job_id, "the cheaper provider has no client; the job goes on up to the cap");
                    purse.nowhere_cheaper.store(true, Ordering::SeqCst);
                    return Ok(false);
                }
            },
            Next::UpToCap => {
                tracing::info!(job = %purse.job_id, "nothing cheaper near the budget; the job goes on up to the cap");
                purse.nowhere_cheaper.store(true, Ordering::SeqCst);
                return Ok(false);
            }
            Next::Pause => {}
        }
        if let Some(returned) = purse.call_back() {
            drop(one_at_a_time);
            returned.await;
            return Ok(false);
        }
        if !looked_idle {
            return Ok(true);
        }
        purse.paused.store(true, Ordering::SeqCst);
        let call = PauseForBudgetRequest {
            job_id: purse.job_id.clone(),
            worker_id: purse.worker_id.clone(),
        };
        match self
            .scheduler
            .pause_for_budget(self.credential.system_request(call))
            .await
        {
            Ok(_) => tracing::info!(job = %purse.job_id, "job paused: budget exceeded"),
            // Its lease expires and the next worker meets the same caps.
            Err(status) => {
                tracing::warn!(job = %purse.job_id, error = %status, "pausing the job for its budget failed")
            }
        }
        Err(Stop::Released)
    }

    /// Has the scheduler move the job to `cheaper`, then sends the job's
    /// next calls there.
    async fn switch_provider(
        &self,
        purse: &Purse,
        from: &Engine,
        cheaper: Arc<Engine>,
    ) -> Result<(), Stop> {
        let call = SwitchProviderRequest {
            job_id: purse.job_id.clone(),
            worker_id: purse.worker_id.clone(),
            provider_id: cheaper.provider.id.clone(),
        };
        match self
            .scheduler
            .switch_provider(self.credential.system_request(call))
            .await
        {
            Ok(answer) if answer.get_ref().keep_going => {}
            Ok(_) => return Err(Stop::Released),
            Err(status) => {
                tracing::warn!(job = %purse.job_id, error = %status, "moving the job to a cheaper provider failed; the job is tried again");
                return Err(Stop::Released);
            }
        }
        tracing::info!(
            job = %purse.job_id,
            from = %from.provider.name,
            to = %cheaper.provider.name,
            "job moved to a cheaper provider near its budget"
        );
        purse.moved_to(cheaper).await;
        Ok(())
    }
}

/// How long a reservation lives: `attempts` calls each timing out after
/// `call_timeout` and waiting the longest backoff `max_delay`, and
/// [`TTL_MARGIN`].
fn reservation_ttl(call_timeout: Duration, max_delay: Duration, attempts: u32) -> Duration {
    call_timeout
        .saturating_add(max_delay)
        .saturating_mul(attempts.max(1))
        .saturating_add(TTL_MARGIN)
}

#[cfg(test)]
mod tests;
