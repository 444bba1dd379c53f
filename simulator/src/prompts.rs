//! The prompts the simulator was sent: the last ones in memory for
//! `GET /prompts`, and every one appended to a file as JSON lines when asked,
//! so that a person can read what the service really sends.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, Write};
use std::path::Path;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::state::lock;

/// Prompts kept in memory; older ones are dropped first.
pub const KEPT: usize = 20_000;

/// One well-formed request's prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Prompt {
    /// The request's number, counted from 1 over all requests.
    pub n: u64,
    /// `translation`, `analysis`, `review`, `notes` or `other`: the protocol of the
    /// user message.
    pub kind: String,
    pub system: String,
    pub user: String,
    /// The protocol it came in: `chat`, `messages`, `responses` or `codex`.
    #[serde(default)]
    pub wire: String,
    /// Its `prompt_cache_key`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_key: Option<String>,
    /// Its `OpenAI-Organization` header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub organization: Option<String>,
    /// Its `OpenAI-Project` header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// Its `chatgpt-account-id` header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account_id: Option<String>,
}

/// The prompt log.
pub(super) struct PromptLog {
    kept: usize,
    recent: Mutex<VecDeque<Prompt>>,
    file: Option<Mutex<File>>,
}

impl PromptLog {
    /// Keeps the last `kept` prompts, and appends every one to `path` when
    /// given (created if missing).
    pub fn open(kept: usize, path: Option<&Path>) -> io::Result<PromptLog> {
        let file = match path {
            Some(path) => Some(Mutex::new(
                File::options().create(true).append(true).open(path)?,
            )),
            None => None,
        };
        Ok(PromptLog {
            kept,
            recent: Mutex::new(VecDeque::new()),
            file,
        })
    }

    pub fn record(&self, prompt: Prompt) {
        if let Some(file) = &self.file {
            // One write per line, so that lines of concurrent requests never
            // interleave; a full disk must not stop the simulator serving.
            let mut line = serde_json::to_string(&prompt).unwrap_or_default();
            line.push('\n');
            if let Err(e) = lock(file).write_all(line.as_bytes()) {
                tracing::warn!("simulator: cannot append to the prompt log: {e}");
            }
        }
        let mut recent = lock(&self.recent);
        while recent.len() >= self.kept.max(1) {
            recent.pop_front();
        }
        // Requests are numbered on arrival but may reach here out of turn;
        // the log stays in arrival order.
        let at = recent.partition_point(|p| p.n < prompt.n);
        recent.insert(at, prompt);
    }

    /// The kept prompts, oldest first.
    pub fn recent(&self) -> Vec<Prompt> {
        lock(&self.recent).iter().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prompt(n: u64) -> Prompt {
        Prompt {
            n,
            kind: "other".into(),
            system: String::new(),
            user: format!("u{n}"),
            wire: "chat".into(),
            cache_key: None,
            organization: None,
            project: None,
            account_id: None,
        }
    }

    #[test]
    fn the_log_keeps_the_last_prompts_in_arrival_order() {
        let log = PromptLog::open(KEPT, None).expect("log");
        for n in 1..=KEPT as u64 + 5 {
            log.record(prompt(n));
        }
        let recent = log.recent();
        assert_eq!(recent.len(), KEPT);
        assert_eq!(recent[0].n, 6);
        assert_eq!(recent[KEPT - 1].n, KEPT as u64 + 5);
        let log = PromptLog::open(3, None).expect("log");
        for n in [1, 3, 2] {
            log.record(prompt(n));
        }
        let ns: Vec<u64> = log.recent().iter().map(|p| p.n).collect();
        assert_eq!(ns, [1, 2, 3]);
    }
}
