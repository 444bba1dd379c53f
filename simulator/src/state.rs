//! The state every request of a running simulator shares: its
//! configuration, the seeded fault draws, the counters, the prompt cache,
//! the prompt log, the fault ledger and the batches.

use std::collections::HashMap;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::io;
use std::sync::{Arc, Mutex, MutexGuard};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio::sync::watch;

use crate::apertium::Apertium;
use crate::batches::Batches;
use crate::cache::PromptCache;
use crate::config::SimulatorConfig;
use crate::faults::{FaultLedger, KEPT as FAULTS_KEPT};
use crate::prompts::PromptLog;
use crate::stats::SimulatorStats;
use crate::translation::ContentFaults;

/// Mixed into the seed of the content faults' draws, so that they are
/// unrelated to the transport faults' ones.
const CONTENT_SEED: u64 = 0x9E37_79B9_7F4A_7C15;

pub(crate) struct Shared {
    pub(crate) config: SimulatorConfig,
    rng: Mutex<StdRng>,
    /// How many times each translation content (its passages) was asked.
    content_asked: Mutex<HashMap<u64, u64>>,
    pub(crate) stats: Mutex<SimulatorStats>,
    pub(crate) cache: PromptCache,
    pub(crate) prompts: PromptLog,
    pub(crate) faults: FaultLedger,
    pub(crate) stopping: watch::Receiver<bool>,
    /// Apertium, in `--translator apertium` mode.
    pub(crate) apertium: Option<Apertium>,
    /// The files and batches of the batch APIs.
    pub(crate) batches: Batches,
}

/// A mutex guard even after a panic elsewhere: the data are counters and
/// caches that stay meaningful.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Fault {
    None,
    RateLimited,
    Server,
    Hang,
    Malformed,
    Truncated,
    Refusal,
    DropPlaceholder(u64),
}

impl Shared {
    pub(crate) fn count(&self, f: impl FnOnce(&mut SimulatorStats)) {
        f(&mut lock(&self.stats));
    }

    /// Draws this request's fault. Always the same number of draws, so one
    /// request's outcome never shifts the next one's.
    pub(crate) fn draw(&self) -> Fault {
        let c = &self.config;
        let mut rng = lock(&self.rng);
        let rolls: [f64; 7] = std::array::from_fn(|_| rng.r#gen::<f64>());
        let pick: u64 = rng.r#gen();
        let rates = [
            (c.rate_429, Fault::RateLimited),
            (c.rate_500, Fault::Server),
            (c.rate_hang, Fault::Hang),
            (c.rate_malformed, Fault::Malformed),
            (c.rate_truncated, Fault::Truncated),
            (c.rate_refusal, Fault::Refusal),
            (c.rate_drop_placeholder, Fault::DropPlaceholder(pick)),
        ];
        rates
            .iter()
            .zip(rolls)
            .find(|((rate, _), roll)| *roll < *rate)
            .map_or(Fault::None, |((_, fault), _)| *fault)
    }

    /// Draws the content faults of a translation request for the passages
    /// whose texts are `passages`, from an RNG of their own seeded by the
    /// seed, those texts and how many times they were asked before. A
    /// book's faults then depend neither on the order in which its parallel
    /// answers are asked for nor on the ids the service gave its passages,
    /// while asking the same passages again draws anew. The draws of
    /// [`Shared::draw`] are the same whatever the content rates.
    pub(crate) fn draw_content<'a>(
        &self,
        passages: impl IntoIterator<Item = &'a str>,
    ) -> ContentFaults {
        let c = &self.config;
        let mut hasher = DefaultHasher::new();
        for text in passages {
            text.hash(&mut hasher);
        }
        let content = hasher.finish();
        let asked = {
            let mut counts = lock(&self.content_asked);
            let count = counts.entry(content).or_insert(0);
            *count += 1;
            *count
        };
        let mut rng = StdRng::seed_from_u64(
            self.config.seed ^ CONTENT_SEED ^ content ^ asked.wrapping_mul(CONTENT_SEED),
        );
        let rolls: [f64; 4] = std::array::from_fn(|_| rng.r#gen::<f64>());
        let picks: [u64; 4] = std::array::from_fn(|_| rng.r#gen::<u64>());
        let on = |i: usize, rate: f64| (rolls[i] < rate).then_some(picks[i]);
        ContentFaults {
            name_drift: on(0, c.rate_name_drift),
            glossary_violation: on(1, c.rate_glossary_violation),
            untranslated: on(2, c.rate_untranslated),
            wrong_language: on(3, c.rate_wrong_language),
        }
    }
}

/// The state of a simulator keeping the last `prompts_kept` prompts, with
/// Apertium in `--translator apertium` mode; fails when the prompt log file
/// cannot be opened.
pub(crate) fn shared(
    config: SimulatorConfig,
    prompts_kept: usize,
    apertium: Option<Apertium>,
) -> io::Result<(Arc<Shared>, watch::Sender<bool>)> {
    let (stop, stopping) = watch::channel(false);
    let prompts = PromptLog::open(prompts_kept, config.prompt_log.as_deref())?;
    let shared = Arc::new(Shared {
        rng: Mutex::new(StdRng::seed_from_u64(config.seed)),
        content_asked: Mutex::new(HashMap::new()),
        config,
        stats: Mutex::new(SimulatorStats::default()),
        cache: PromptCache::new(),
        prompts,
        faults: FaultLedger::new(FAULTS_KEPT),
        stopping,
        apertium,
        batches: Batches::default(),
    });
    Ok((shared, stop))
}
