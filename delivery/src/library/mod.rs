//! Publication to the library folder (spec 4.9): the administrator's
//! folder (`settings`), a book's publication asked for and read
//! (`publish`), the `publications` rows as an outbox with retries
//! (`outbox`), what is published (`source`: the delivered EPUB and its
//! sidecar), where it goes (`layout`), how it is written (`files`: a
//! temporary file, then a rename), and the loop that does it
//! (`dispatcher`).
//!
//! The folder is the delivery process's: in a deployment of several
//! processes it must be mounted where the delivery role runs.

pub mod dispatcher;
pub mod files;
pub mod layout;
pub mod outbox;
pub mod publish;
pub mod settings;
pub mod source;

pub use dispatcher::LibraryDispatcher;

use crate::webhooks::RetrySchedule;
use std::time::Duration;

/// Attempts a publication gets before it is `failed` (spec 4.9: eight).
pub const MAX_ATTEMPTS: u32 = 8;
/// Wait after a publication's first failed attempt, unless configured;
/// later waits double.
pub const DEFAULT_RETRY_FIRST: Duration = Duration::from_secs(30);
/// Longest wait between two attempts, unless configured.
pub const DEFAULT_RETRY_LONGEST: Duration = Duration::from_secs(3600);

/// How publications are retried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LibraryPolicy {
    pub max_attempts: u32,
    pub schedule: RetrySchedule,
}

impl Default for LibraryPolicy {
    fn default() -> Self {
        LibraryPolicy {
            max_attempts: MAX_ATTEMPTS,
            schedule: RetrySchedule {
                first: DEFAULT_RETRY_FIRST,
                longest: DEFAULT_RETRY_LONGEST,
            },
        }
    }
}

#[cfg(test)]
mod tests;
