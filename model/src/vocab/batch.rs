//! The provider's batch mode: where a job's remote batch stands.

use sea_orm::sea_query::StringLen;

vocabulary! {
    /// `state` of a provider batch (spec section 3). A batch is
    /// `collecting` while its calls are written down under their
    /// `submission_key`, `uploading` while its input file is sent (OpenAI's
    /// Files API), `submitting` while the batch is created, `submitted`
    /// while the provider works on it, `canceling` once its job was
    /// cancelled, `ready` once its results are in (and applied, with
    /// `applied_at`). `unknown`: a creation that may have reached the
    /// provider and cannot be found by its key; it waits for the owner's
    /// reconcile and is never submitted again. `unsupported`: the
    /// provider's kind has no batch API; the job runs its calls one by one
    /// at full price.
    BatchState {
        Collecting = "collecting",
        Uploading = "uploading",
        Submitting = "submitting",
        Submitted = "submitted",
        Canceling = "canceling",
        Ready = "ready",
        Unknown = "unknown",
        Unsupported = "unsupported",
    }
}
