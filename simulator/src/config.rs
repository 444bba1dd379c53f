//! The simulator's command-line configuration: which translator writes the
//! answers, the latency, the seed and the rate of every fault.

use std::path::PathBuf;
use std::time::Duration;

/// What writes the simulator's translations.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Translator {
    /// Deterministic pseudo-translation (`pseudo.rs`).
    #[default]
    Pseudo,
    /// Apertium, the rule-based machine translator, for the pairs it has
    /// installed (`apertium.rs`, `machine.rs`).
    Apertium,
}

/// Latency and faults of a simulated provider.
#[derive(Debug, Clone, PartialEq, clap::Args)]
pub struct SimulatorConfig {
    /// What writes the translations: `pseudo` (pseudo-translation) or
    /// `apertium` (real text from Apertium for the pairs it has installed).
    #[arg(long, value_enum, default_value_t = Translator::Pseudo)]
    pub translator: Translator,
    /// The Apertium binary of `--translator apertium` (`apertium` on
    /// `PATH` by default).
    #[arg(long = "apertium-bin", value_name = "PATH")]
    pub apertium_bin: Option<PathBuf>,
    /// Delay before every answer, in milliseconds.
    #[arg(long = "latency-ms", value_name = "MS", default_value = "0", value_parser = parse_millis)]
    pub latency: Duration,
    /// Seed of the fault draws.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Share of requests answered 429 with `Retry-After`.
    #[arg(long = "rate-429", value_name = "RATE", default_value_t = 0.0, value_parser = parse_rate)]
    pub rate_429: f64,
    /// `Retry-After` of a 429, in seconds.
    #[arg(long = "retry-after-secs", value_name = "SECS", default_value_t = 1)]
    pub retry_after_secs: u64,
    /// Share of requests answered 500.
    #[arg(long = "rate-500", value_name = "RATE", default_value_t = 0.0, value_parser = parse_rate)]
    pub rate_500: f64,
    /// Share of requests never answered.
    #[arg(long = "rate-hang", value_name = "RATE", default_value_t = 0.0, value_parser = parse_rate)]
    pub rate_hang: f64,
    /// Share of requests answered with a body that is not JSON.
    #[arg(long = "rate-malformed", value_name = "RATE", default_value_t = 0.0, value_parser = parse_rate)]
    pub rate_malformed: f64,
    /// Share of answers whose content is cut in the middle.
    #[arg(long = "rate-truncated", value_name = "RATE", default_value_t = 0.0, value_parser = parse_rate)]
    pub rate_truncated: f64,
    /// Share of answers where one passage loses a placeholder.
    #[arg(long = "rate-drop-placeholder", value_name = "RATE", default_value_t = 0.0, value_parser = parse_rate)]
    pub rate_drop_placeholder: f64,
    /// Share of requests refused by the model.
    #[arg(long = "rate-refusal", value_name = "RATE", default_value_t = 0.0, value_parser = parse_rate)]
    pub rate_refusal: f64,
    /// Share of translation answers where one passage renders a character's
    /// name another way than the context says.
    #[arg(long = "rate-name-drift", value_name = "RATE", default_value_t = 0.0, value_parser = parse_rate)]
    pub rate_name_drift: f64,
    /// Share of translation answers where one passage ignores a glossary
    /// entry of the context.
    #[arg(long = "rate-glossary-violation", value_name = "RATE", default_value_t = 0.0, value_parser = parse_rate)]
    pub rate_glossary_violation: f64,
    /// Share of translation answers where one passage comes back untranslated.
    #[arg(long = "rate-untranslated", value_name = "RATE", default_value_t = 0.0, value_parser = parse_rate)]
    pub rate_untranslated: f64,
    /// Share of translation answers where one passage comes back in another
    /// language (`xx`).
    #[arg(long = "rate-wrong-language", value_name = "RATE", default_value_t = 0.0, value_parser = parse_rate)]
    pub rate_wrong_language: f64,
    /// Appends the prompt of every well-formed request to this file, one JSON
    /// object a line.
    #[arg(long = "prompt-log", value_name = "FILE")]
    pub prompt_log: Option<PathBuf>,
    /// Time from a batch's creation until it ends (its calls answered),
    /// in milliseconds.
    #[arg(long = "batch-delay-ms", value_name = "MS", default_value = "2000", value_parser = parse_millis)]
    pub batch_delay: Duration,
    /// Every Nth call of a batch fails with a server error (0: none).
    #[arg(long = "batch-fail-every", value_name = "N", default_value_t = 0)]
    pub batch_fail_every: u64,
    /// Batches end expired at their deadline (the batch delay): the first
    /// half of their calls answered, the others expired.
    #[arg(long = "batch-expire")]
    pub batch_expire: bool,
}

impl Default for SimulatorConfig {
    /// Pseudo-translation, no latency, no faults, seed 0, `Retry-After: 1`,
    /// no prompt log file; batches end after two seconds, whole.
    fn default() -> Self {
        SimulatorConfig {
            translator: Translator::Pseudo,
            apertium_bin: None,
            latency: Duration::ZERO,
            seed: 0,
            rate_429: 0.0,
            retry_after_secs: 1,
            rate_500: 0.0,
            rate_hang: 0.0,
            rate_malformed: 0.0,
            rate_truncated: 0.0,
            rate_drop_placeholder: 0.0,
            rate_refusal: 0.0,
            rate_name_drift: 0.0,
            rate_glossary_violation: 0.0,
            rate_untranslated: 0.0,
            rate_wrong_language: 0.0,
            prompt_log: None,
            batch_delay: Duration::from_millis(2000),
            batch_fail_every: 0,
            batch_expire: false,
        }
    }
}

fn parse_millis(s: &str) -> Result<Duration, String> {
    s.parse::<u64>()
        .map(Duration::from_millis)
        .map_err(|e| format!("milliseconds expected: {e}"))
}

fn parse_rate(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(r) if (0.0..=1.0).contains(&r) => Ok(r),
        _ => Err("a rate between 0 and 1 expected".into()),
    }
}
