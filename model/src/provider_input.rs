//! A provider as an administrator describes it (spec 2.10): the body of the
//! registration route and of `dragoman provider add`. The gateway reads it
//! (shape: types, required and unknown fields, a known kind); the pipeline,
//! which owns providers, checks its rules.

use crate::vocab::ProviderKind;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewProvider {
    pub name: String,
    pub kind: ProviderKind,
    pub model: String,
    /// Empty for the kind's default (every kind but `openai` has one).
    #[serde(default)]
    pub base_url: String,
    /// Name of the environment variable holding the key (never the key).
    #[serde(default)]
    pub api_key_env: String,
    /// Price per million prompt tokens.
    #[serde(default)]
    pub price_input: Option<f64>,
    /// Price per million completion tokens.
    #[serde(default)]
    pub price_output: Option<f64>,
    /// Price per million prompt tokens the provider reads from its prompt
    /// cache; without it, the kind's default share of `price_input`.
    #[serde(default)]
    pub price_cached_input: Option<f64>,
    /// Concurrent calls the provider accepts from the whole installation.
    #[serde(default)]
    pub capacity: Option<i64>,
    /// Share of the price taken off the calls sent by the provider's batch
    /// mode, 0 to below 1; default `provider::DEFAULT_BATCH_DISCOUNT`.
    #[serde(default)]
    pub batch_discount: Option<f64>,
    /// Name of an existing, cheaper provider a job on this one moves to
    /// near its budget (see `crate::fallback`).
    #[serde(default)]
    pub fallback: Option<String>,
}

/// An administrator's changes to an existing provider (the body of the
/// edit route): only the fields given change; its name, kind and fallback
/// stay. The pipeline checks the provider they make by the rules of a new
/// one.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderChanges {
    #[serde(default)]
    pub model: Option<String>,
    /// Empty for the kind's default (every kind but `openai` has one).
    #[serde(default)]
    pub base_url: Option<String>,
    #[serde(default)]
    pub api_key_env: Option<String>,
    #[serde(default)]
    pub price_input: Option<f64>,
    #[serde(default)]
    pub price_output: Option<f64>,
    #[serde(default)]
    pub price_cached_input: Option<f64>,
    #[serde(default)]
    pub capacity: Option<i64>,
    #[serde(default)]
    pub batch_discount: Option<f64>,
}
