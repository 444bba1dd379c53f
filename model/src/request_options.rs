//! The options a request was stored with (the `requests.options` JSON
//! column), settled at intake and read by the scheduler, the pipeline's
//! ticket and the delivery role.
//!
//! Every field may be missing from a row (rows written by older builds,
//! rows made by tests) and a value of the wrong type reads as missing, so
//! any stored object reads; the methods give each option with its default,
//! which is stated here only.

use crate::vocab::{AnalysisMode, ContextBackend, JobOperation, Quality, ResultFormat};
use sea_orm::FromJsonQueryResult;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};

/// A stored value, or none when it is missing or not of its type.
fn lenient<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned,
{
    let value = serde_json::Value::deserialize(deserializer)?;
    Ok(serde_json::from_value(value).ok())
}

/// The `requests.options` column.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, FromJsonQueryResult)]
pub struct StoredOptions {
    /// False: import only.
    #[serde(default, deserialize_with = "lenient")]
    pub start: Option<bool>,
    /// Already false when the installation disables the final review.
    #[serde(default, deserialize_with = "lenient")]
    pub final_review: Option<bool>,
    /// The score below which passages are checked, settled at intake.
    #[serde(default, deserialize_with = "lenient")]
    pub review_below: Option<i32>,
    #[serde(default, deserialize_with = "lenient")]
    pub output_format: Option<ResultFormat>,
    /// The mode the request asked for, if any.
    #[serde(default, deserialize_with = "lenient")]
    pub analysis_mode: Option<AnalysisMode>,
    /// The mode the analysis runs in: the request's, else the volume's,
    /// else the installation's.
    #[serde(default, deserialize_with = "lenient")]
    pub analysis_mode_in_force: Option<AnalysisMode>,
    /// The threads the request asked for, if any.
    #[serde(default, deserialize_with = "lenient")]
    pub threads: Option<i64>,
    #[serde(default, deserialize_with = "lenient")]
    pub quality: Option<Quality>,
    #[serde(default, deserialize_with = "lenient")]
    pub context_backend: Option<ContextBackend>,
    /// The provider the request named, if any.
    #[serde(default, deserialize_with = "lenient")]
    pub provider_id: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub target_language: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub source_language: Option<String>,
    /// What the request's job does; missing: a translation (every request
    /// stored before there was another operation).
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub operation: Option<JobOperation>,
    /// Whether the request asked for the provider's batch mode, if it said.
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub batch: Option<bool>,
    /// Whether its calls go by the provider's batch mode: the request's
    /// choice, else the volume's, else the installation's.
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub batch_in_force: Option<bool>,
}

impl StoredOptions {
    /// Whether the request starts work (else it only imports).
    pub fn start(&self) -> bool {
        self.start.unwrap_or(true)
    }

    pub fn final_review(&self) -> bool {
        self.final_review.unwrap_or(true)
    }

    /// The request's own output format, JSON when it named none.
    pub fn output_format(&self) -> ResultFormat {
        self.output_format.unwrap_or(ResultFormat::Json)
    }

    pub fn analysis_mode_in_force(&self) -> AnalysisMode {
        self.analysis_mode_in_force
            .unwrap_or(AnalysisMode::Parallel)
    }

    /// The quality the request runs at (`normal` when it named none).
    pub fn quality(&self) -> Quality {
        self.quality.unwrap_or_default()
    }

    pub fn context_backend(&self) -> ContextBackend {
        self.context_backend.unwrap_or_default()
    }

    /// What the request's job does (a translation unless it says otherwise).
    pub fn operation(&self) -> JobOperation {
        self.operation.unwrap_or(JobOperation::Translate)
    }

    /// Whether the job's calls go by the provider's batch mode (never for a
    /// request stored before there was one).
    pub fn batch(&self) -> bool {
        self.batch_in_force.unwrap_or(false)
    }

    /// The language translated into; `en` when none was stored.
    pub fn target_language(&self) -> &str {
        self.target_language.as_deref().unwrap_or("en")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn any_stored_object_reads_with_defaults() {
        let old: StoredOptions = serde_json::from_value(json!({
            "quality": "turbo",
            "threads": "four",
            "final_review": false,
            "temperature": 0.2,
        }))
        .expect("reads");
        assert_eq!(old.quality(), Quality::Normal);
        assert_eq!(old.threads, None);
        assert!(!old.final_review());
        assert!(old.start());
        assert_eq!(old.output_format(), ResultFormat::Json);
        assert_eq!(old.analysis_mode_in_force(), AnalysisMode::Parallel);
        assert_eq!(old.target_language(), "en");
        let empty: StoredOptions = serde_json::from_value(json!({})).expect("reads");
        assert_eq!(empty, StoredOptions::default());
    }

    #[test]
    fn the_operation_reads_as_a_translation_unless_it_says_otherwise() {
        let notes = StoredOptions {
            operation: Some(JobOperation::TranslatorNotes),
            ..StoredOptions::default()
        };
        let stored = serde_json::to_value(&notes).expect("json");
        assert_eq!(stored["operation"], "translator_notes");
        let back: StoredOptions = serde_json::from_value(stored).expect("reads");
        assert_eq!(back.operation(), JobOperation::TranslatorNotes);
        assert_eq!(
            StoredOptions::default().operation(),
            JobOperation::Translate
        );
        let odd: StoredOptions =
            serde_json::from_value(json!({"operation": "summarise"})).expect("reads");
        assert_eq!(odd.operation(), JobOperation::Translate);
    }

    #[test]
    fn stored_options_keep_their_keys() {
        let options = StoredOptions {
            start: Some(true),
            final_review: Some(true),
            review_below: Some(70),
            output_format: Some(ResultFormat::Epub),
            analysis_mode: None,
            analysis_mode_in_force: Some(AnalysisMode::Strict),
            threads: Some(3),
            quality: Some(Quality::High),
            context_backend: Some(ContextBackend::Hybrid),
            provider_id: Some("p".into()),
            target_language: Some("fr".into()),
            source_language: Some("en".into()),
            operation: None,
            batch: None,
            batch_in_force: None,
        };
        let stored = serde_json::to_value(&options).expect("json");
        assert_eq!(
            stored,
            json!({
                "start": true, "final_review": true, "review_below": 70,
                "output_format": "epub", "analysis_mode": null,
                "analysis_mode_in_force": "strict", "threads": 3, "quality": "high",
                "context_backend": "hybrid", "provider_id": "p",
                "target_language": "fr", "source_language": "en",
            })
        );
        assert_eq!(
            serde_json::from_value::<StoredOptions>(stored).expect("reads"),
            options
        );
    }
}
