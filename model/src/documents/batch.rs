//! The summary of a book's provider batch (session route
//! `GET /api/projects/{pid}/batch`, and the answer of a reconcile): where the
//! latest remote batch of the book's latest job stands, or null.

use crate::entities::provider_batch;
use crate::vocab::{BatchState, UsageStage};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// One provider batch as its book's owner sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct BatchSummary {
    /// Spec section 3: `collecting`, `uploading`, `submitting`,
    /// `submitted`, `canceling`, `ready`, `unknown` (its acceptance must be
    /// verified with a reconcile) or `unsupported` (the provider has no
    /// batch API: the calls run one by one at full price).
    pub state: BatchState,
    /// The provider's id of the batch, once it accepted it.
    #[schema(required = true)]
    pub remote_id: Option<String>,
    /// Sent with the batch (its metadata and each item's `custom_id`
    /// prefix): what a reconcile names.
    pub submission_key: String,
    pub job_id: String,
    /// The stage whose calls it carries.
    pub stage: UsageStage,
    /// When the provider accepted it, in Unix seconds.
    #[schema(required = true)]
    pub submitted_at: Option<i64>,
    /// When the provider promised its results at the latest, in Unix
    /// seconds.
    #[schema(required = true)]
    pub expected_by: Option<i64>,
    /// Calls it carries, those answered and those failed (these run again
    /// as ordinary calls).
    pub items: i64,
    pub done: i64,
    pub failed: i64,
    /// Why the last step with the provider failed; null when none did.
    #[schema(required = true)]
    pub last_error: Option<String>,
}

impl From<&provider_batch::Model> for BatchSummary {
    fn from(b: &provider_batch::Model) -> Self {
        BatchSummary {
            state: b.state,
            remote_id: b.remote_id.clone(),
            submission_key: b.submission_key.clone(),
            job_id: b.job_id.clone(),
            stage: b.stage,
            submitted_at: b.submitted_at,
            expected_by: b.expected_by,
            items: i64::from(b.items),
            done: i64::from(b.done),
            failed: i64::from(b.failed),
            last_error: (!b.last_error.is_empty()).then(|| b.last_error.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_summary_reads_as_the_owner_sees_it() {
        let row = provider_batch::Model {
            id: "b".into(),
            job_id: "j".into(),
            request_id: "r".into(),
            project_id: "p".into(),
            provider_id: "prov".into(),
            stage: UsageStage::Translation,
            submission_key: "dragoman-j-1".into(),
            state: BatchState::Submitted,
            remote_id: Some("batch_1".into()),
            input_file_id: Some("file-1".into()),
            items: 3,
            done: 1,
            failed: 0,
            submitted_at: Some(10),
            expected_by: Some(86_410),
            next_poll_at: Some(20_000),
            polls: 2,
            applied_at: None,
            expected_cost: Some(0.25),
            last_error: String::new(),
            created_at: 1,
            updated_at: 2,
        };
        assert_eq!(
            serde_json::to_value(BatchSummary::from(&row)).expect("json"),
            json!({
                "state": "submitted", "remote_id": "batch_1",
                "submission_key": "dragoman-j-1", "job_id": "j", "stage": "translation",
                "submitted_at": 10, "expected_by": 86_410, "items": 3, "done": 1,
                "failed": 0, "last_error": null,
            })
        );
    }
}
