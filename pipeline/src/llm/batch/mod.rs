//! The providers' batch APIs: many calls sent at once, answered within the
//! provider's completion window (24 hours) at a discount.
//!
//! - `openai`, `openai_direct`: the Files API (`POST /files`, purpose
//!   `batch`, one JSON line per call) and `POST /batches` over
//!   `/v1/chat/completions`;
//! - `openai_responses`: the same over `/v1/responses`;
//! - `anthropic`: `POST /messages/batches`, the calls inline, results as
//!   JSON lines at the batch's `results_url`;
//! - `codex_chatgpt` has none ([`LlmClient::batch_supported`] is false).
//!
//! Each call carries a `custom_id` (the batch's `submission_key`, a dash
//! and the call's number); OpenAI batches also carry the key in their
//! `metadata`, so a batch can be found by it after a crash. An answer comes
//! back with its `custom_id` and is read with the same parser as the
//! kind's ordinary answer ([`ItemAnswer`]); a line that cannot be read or
//! names no `custom_id` is skipped with a logged reason. A call its batch
//! did not run is an [`LlmError::Failed`] coded `batch_expired` or
//! `batch_cancelled`, whatever the protocol calls them.

mod anthropic;
mod openai;

use super::{Completion, LlmClient, LlmError, ProviderKind};
use serde_json::Value;

/// What one remote batch may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchLimits {
    /// Calls in one batch at most.
    pub max_requests: usize,
    /// Bytes of its input (the JSON lines, or the request body) at most.
    pub max_bytes: usize,
}

/// Where a remote batch stands, as the provider says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RemoteStatus {
    /// Accepted and being validated or worked on (OpenAI's `validating`,
    /// `in_progress`, `finalizing`; Anthropic's `in_progress`).
    InProgress,
    /// Its cancellation was asked and is under way.
    Cancelling,
    /// Finished: every call has its answer or its error, readable with
    /// [`LlmClient::batch_results`]. Expired and cancelled batches end
    /// here too; their unanswered calls read as errors.
    Ended,
    /// The provider refused the batch as a whole (OpenAI's `failed`: a
    /// bad input file); none of its calls ran.
    Failed(String),
}

/// A remote batch as the provider describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct RemoteBatch {
    pub id: String,
    pub status: RemoteStatus,
    /// Calls it holds, those answered and those failed (expired and
    /// cancelled ones included) so far.
    pub total: u32,
    pub done: u32,
    pub failed: u32,
    /// The `submission_key` in its metadata (OpenAI); `None` where the
    /// protocol has no metadata (Anthropic).
    pub key: Option<String>,
    /// When it was created and when its completion window ends, in Unix
    /// seconds.
    pub created_at: Option<i64>,
    pub expires_at: Option<i64>,
    /// Where its results are read: OpenAI's output and error file ids,
    /// Anthropic's `results_url`.
    pub results: Vec<String>,
}

/// What a search by `submission_key` found.
#[derive(Debug, Clone, PartialEq)]
pub enum Found {
    /// The batch carrying the key.
    Batch(RemoteBatch),
    /// No batch created since then carries it: the creation never reached
    /// the provider, and submitting is safe.
    Nothing,
    /// Batches were created since then that cannot be told apart by key
    /// (Anthropic keeps no metadata): acceptance must be verified.
    Uncertain(Vec<RemoteBatch>),
}

/// The answer to one call of a batch.
#[derive(Debug, Clone, PartialEq)]
pub struct ItemAnswer {
    pub custom_id: String,
    /// The completion, read as the kind's ordinary answer is; or why the
    /// call has none (an error the provider reported for it, or its
    /// expiry or cancellation).
    pub answer: Result<Completion, LlmError>,
}

impl LlmClient {
    /// Whether the provider's kind has a batch API.
    pub fn batch_supported(&self) -> bool {
        matches!(
            self.config.kind,
            ProviderKind::OpenAi
                | ProviderKind::OpenAiDirect
                | ProviderKind::OpenAiResponses
                | ProviderKind::Anthropic
        )
    }

    /// The limits of one remote batch of the provider's kind.
    pub fn batch_limits(&self) -> BatchLimits {
        match self.config.kind {
            ProviderKind::Anthropic => anthropic::LIMITS,
            _ => openai::LIMITS,
        }
    }

    /// The batch line of one call: the same request the ordinary call
    /// sends, wrapped as the batch API takes it, under `custom_id`.
    pub fn batch_line(
        &self,
        custom_id: &str,
        system: &str,
        user: &str,
        max_tokens: u32,
    ) -> Result<Value, LlmError> {
        let prompt = super::Prompt {
            system,
            user,
            max_tokens,
        };
        match self.config.kind {
            ProviderKind::Anthropic => anthropic::line(&self.config, custom_id, &prompt),
            ProviderKind::OpenAi | ProviderKind::OpenAiDirect | ProviderKind::OpenAiResponses => {
                openai::line(&self.config, custom_id, &prompt)
            }
            ProviderKind::CodexChatgpt => Err(unsupported()),
        }
    }

    /// Sends what must be uploaded before the batch is created: OpenAI's
    /// input file (its id is given back), nothing for Anthropic.
    pub async fn batch_upload(
        &self,
        key: &str,
        lines: &[Value],
    ) -> Result<Option<String>, LlmError> {
        match self.config.kind {
            ProviderKind::Anthropic => Ok(None),
            ProviderKind::CodexChatgpt => Err(unsupported()),
            _ => openai::upload(&self.http, &self.config, key, lines)
                .await
                .map(Some),
        }
    }

    /// Creates the batch under `key` from the uploaded `input_file`
    /// (OpenAI) or from `lines` themselves (Anthropic).
    pub async fn batch_create(
        &self,
        key: &str,
        input_file: Option<&str>,
        lines: &[Value],
    ) -> Result<RemoteBatch, LlmError> {
        match self.config.kind {
            ProviderKind::Anthropic => anthropic::create(&self.http, &self.config, lines).await,
            ProviderKind::CodexChatgpt => Err(unsupported()),
            _ => {
                let file = input_file.ok_or_else(|| {
                    LlmError::Config("an OpenAI batch needs its uploaded input file".into())
                })?;
                openai::create(&self.http, &self.config, key, file).await
            }
        }
    }

    /// Looks for the batch created under `key` among those created since
    /// `since` (Unix seconds).
    pub async fn batch_find(&self, key: &str, since: i64) -> Result<Found, LlmError> {
        match self.config.kind {
            ProviderKind::Anthropic => anthropic::find(&self.http, &self.config, since).await,
            ProviderKind::CodexChatgpt => Err(unsupported()),
            _ => openai::find(&self.http, &self.config, key, since).await,
        }
    }

    /// The batch `remote_id` as the provider describes it now.
    pub async fn batch_get(&self, remote_id: &str) -> Result<RemoteBatch, LlmError> {
        match self.config.kind {
            ProviderKind::Anthropic => anthropic::get(&self.http, &self.config, remote_id).await,
            ProviderKind::CodexChatgpt => Err(unsupported()),
            _ => openai::get(&self.http, &self.config, remote_id).await,
        }
    }

    /// The answers of an ended batch, one per call it could read.
    pub async fn batch_results(&self, remote: &RemoteBatch) -> Result<Vec<ItemAnswer>, LlmError> {
        match self.config.kind {
            ProviderKind::Anthropic => anthropic::results(&self.http, &self.config, remote).await,
            ProviderKind::CodexChatgpt => Err(unsupported()),
            _ => openai::results(&self.http, &self.config, remote).await,
        }
    }

    /// Asks the provider to cancel the batch; calls it already answered
    /// stay readable.
    pub async fn batch_cancel(&self, remote_id: &str) -> Result<RemoteBatch, LlmError> {
        match self.config.kind {
            ProviderKind::Anthropic => anthropic::cancel(&self.http, &self.config, remote_id).await,
            ProviderKind::CodexChatgpt => Err(unsupported()),
            _ => openai::cancel(&self.http, &self.config, remote_id).await,
        }
    }
}

fn unsupported() -> LlmError {
    LlmError::Config("the provider's kind has no batch API".into())
}

/// The error of a call its batch did not run before the completion window
/// ended.
fn expired() -> LlmError {
    LlmError::Failed {
        code: "batch_expired".into(),
        message: "the batch's completion window ended before this call ran".into(),
    }
}

/// The error of a call its batch's cancellation kept from running.
fn cancelled() -> LlmError {
    LlmError::Failed {
        code: "batch_cancelled".into(),
        message: "the batch was cancelled before this call ran".into(),
    }
}

/// `id` when it can name a remote batch or file in a URL path (letters,
/// digits, `_` and `-`, as the providers' ids are): an id given by hand
/// cannot reach another route of the provider.
fn checked_id(id: &str) -> Result<&str, LlmError> {
    let valid = !id.is_empty()
        && id.len() <= 128
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if valid {
        Ok(id)
    } else {
        Err(LlmError::Client(
            404,
            format!("not a batch or file id: {}", super::clip(id, 40)),
        ))
    }
}

/// A result line that cannot be read is left out, said in the log.
fn skipped(reason: &str, line: &str) {
    tracing::warn!(
        reason,
        line = %super::clip(line, 200),
        "a batch result line was skipped"
    );
}

/// A JSON number as a count.
fn count(value: Option<&Value>) -> u32 {
    value
        .and_then(Value::as_u64)
        .map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX))
}
