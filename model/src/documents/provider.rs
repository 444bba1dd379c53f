//! A language-model provider of the installation (spec 2.10, 4.6): the
//! view tokens list, and the administrator's, which adds what only an
//! administrator sets. Neither ever carries the provider's address or key.
//! The pipeline owns providers and answers them as protobuf messages; the
//! gateway builds these views from them.
//!
//! Fields are declared in key order, the order of the JSON a client reads.

use crate::vocab::ProviderKind;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// A language-model provider of the installation (spec 2.10). Never
/// carries its address or key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(as = Provider)]
pub struct ProviderView {
    pub created_at: i64,
    /// The series that use it by default.
    pub default_for_series: Vec<String>,
    pub id: String,
    pub kind: ProviderKind,
    pub model: String,
    pub name: String,
}

/// The administrator's view of a provider: the provider plus the name of
/// the variable holding its key, its prices, capacity, whether it is the
/// installation's default and the name of its cheaper fallback.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(as = ProviderAdmin)]
pub struct ProviderAdminView {
    /// The name of the environment variable holding the key, never the key.
    pub api_key_env: String,
    /// Share of the price taken off the calls sent by the provider's batch
    /// mode (0.5: half price).
    pub batch_discount: f64,
    /// Jobs it runs at once.
    pub capacity: i32,
    pub created_at: i64,
    /// The installation's default, used when a request, its volume and its
    /// series name no provider.
    pub default: bool,
    /// The series that use it by default.
    pub default_for_series: Vec<String>,
    /// The cheaper provider a job moves to near its budget, by name.
    #[schema(required = true)]
    pub fallback: Option<String>,
    pub id: String,
    pub kind: ProviderKind,
    pub model: String,
    pub name: String,
    /// Price per million prompt tokens read from the prompt cache; null:
    /// the kind's default share of `price_input`.
    #[schema(required = true)]
    pub price_cached_input: Option<f64>,
    /// Price per million prompt tokens.
    #[schema(required = true)]
    pub price_input: Option<f64>,
    /// Price per million completion tokens.
    #[schema(required = true)]
    pub price_output: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn provider() -> ProviderView {
        ProviderView {
            created_at: 1,
            default_for_series: vec!["s1".into()],
            id: "p".into(),
            kind: ProviderKind::OpenAiResponses,
            model: "m".into(),
            name: "Local".into(),
        }
    }

    #[test]
    fn a_provider_reads_as_sorted_json() {
        let written = serde_json::to_string(&provider()).expect("serializes");
        let wanted = json!({
            "id": "p",
            "name": "Local",
            "kind": "openai_responses",
            "model": "m",
            "created_at": 1,
            "default_for_series": ["s1"],
        });
        assert_eq!(written, wanted.to_string());
    }

    #[test]
    fn the_admin_view_adds_its_fields_in_key_order_with_nulls() {
        let admin = ProviderAdminView {
            api_key_env: "LOCAL_KEY".into(),
            batch_discount: 0.5,
            capacity: 2,
            created_at: 1,
            default: true,
            default_for_series: vec!["s1".into()],
            fallback: None,
            id: "p".into(),
            kind: ProviderKind::OpenAiResponses,
            model: "m".into(),
            name: "Local".into(),
            price_cached_input: Some(0.25),
            price_input: Some(1.0),
            price_output: None,
        };
        let written = serde_json::to_string(&admin).expect("serializes");
        let wanted = json!({
            "id": "p",
            "name": "Local",
            "kind": "openai_responses",
            "model": "m",
            "created_at": 1,
            "default_for_series": ["s1"],
            "api_key_env": "LOCAL_KEY",
            "batch_discount": 0.5,
            "price_input": 1.0,
            "price_output": null,
            "price_cached_input": 0.25,
            "capacity": 2,
            "default": true,
            "fallback": null,
        });
        assert_eq!(written, wanted.to_string());
        let back: ProviderAdminView = serde_json::from_str(&written).expect("parses");
        assert_eq!(back, admin);
    }
}
