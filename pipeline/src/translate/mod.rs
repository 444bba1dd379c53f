//! Translating a batch of passages: the prompt protocol and the fallback ladder.
//!
//! Protocol ([`SYSTEM_PROMPT`], [`user_message`], [`parse_answer`]). The
//! system prompt is constant (so providers can cache it); the user message is
//! JSON
//! `{"source_language", "target_language", "context", "passages": [{"id", "text"}]}`
//! and the expected answer is `{"translations": [{"id", "text"}]}`, tolerated
//! inside a code fence.
//!
//! Ladder ([`translate`]), for one [`TranslateJob`] (one batch, planned with
//! [`plan_batches`]):
//! 1. the whole batch, retried with backoff on retryable failures (429, 5xx,
//!    timeouts, network errors, malformed or cut answers);
//! 2. each passage the batch did not deliver (the batch kept failing or was
//!    refused, or the passage was missing from the answer, or its
//!    placeholders did not match the source's) alone, retried the same way —
//!    a missing or mismatched passage is retried too, since models answer
//!    differently from one call to the next;
//! 3. what still fails becomes a [`Residual`] with its reason.
//!
//! Every HTTP attempt is reported through `on_call` as a [`CallRecord`],
//! failed ones included.
//!
//! Cancellation: [`translate`] keeps all its state in locals and writes
//! nothing anywhere except through `on_call`, which is called synchronously
//! after each finished attempt; dropping the future at any await point loses
//! only the attempt in flight (unrecorded, its usage unknown) and leaves no
//! partial state behind.

mod answer;
mod batches;
mod call;
mod job;
mod ladder;
mod outcome;
mod placeholders;
mod prompt;
mod retry;

pub(crate) use answer::json_body;
pub use answer::parse_answer;
pub use batches::{
    PASSAGE_OVERHEAD_TOKENS, estimate_tokens, passage_tokens, plan_batches, plan_translation,
    prompt_overhead_tokens,
};
pub use call::CallRecord;
pub use job::{PassageIn, TranslateJob};
pub use ladder::translate;
pub use outcome::{PassageOutcome, Residual, reason};
pub use placeholders::check_placeholders;
pub use prompt::{MAX_COMPLETION_TOKENS, SYSTEM_PROMPT, user_message};
pub use retry::RetryPolicy;
