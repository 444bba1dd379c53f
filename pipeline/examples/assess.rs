//! Runs the per-passage quality checks on passages given as JSON lines, for
//! the fidelity benchmark (`bench/fidelity_run.py`), which measures them on
//! faults they did not define.
//!
//! Each line of standard input is one passage:
//! `{"source", "translation" (string or null), "source_language",
//! "target_language", "terms": [{"source", "translation", "locked"}],
//! "names": [{"names": [..], "rendering"}]}`; `terms` and `names` may be
//! left out. Each line of standard output is its assessment, in the same
//! order: `{"score", "status", "signals": [{"code", "count", "penalty",
//! "message", "severity"}]}`, or `{"error": ..}` for a line that is not such
//! a passage. The threshold under which a passage is to check is the
//! service's default, or the first argument.
//!
//! `cargo run -p dragoman-pipeline --example assess < passages.jsonl`

use std::io::{BufRead, BufWriter, Write};

use dragoman_pipeline::quality::{Check, Sheet, assess};
use serde::{Deserialize, Serialize};

/// The service's default `review_below`.
const REVIEW_BELOW: i32 = 70;

#[derive(Deserialize)]
struct Passage {
    source: String,
    translation: Option<String>,
    source_language: String,
    target_language: String,
    #[serde(flatten)]
    sheet: Sheet,
}

/// One passage's assessment, as a line of standard output.
#[derive(Serialize)]
#[serde(untagged)]
enum Line<'a> {
    Assessed {
        score: i32,
        signals: Vec<SignalLine<'a>>,
        status: &'static str,
    },
    /// A line that is not a passage, and why.
    Unread { error: String },
}

/// One signal of an assessment.
#[derive(Serialize)]
struct SignalLine<'a> {
    code: &'static str,
    count: u32,
    message: &'a str,
    penalty: u32,
    severity: &'static str,
}

fn assessment(line: &str, review_below: i32) -> String {
    let passage: Passage = match serde_json::from_str(line) {
        Ok(p) => p,
        Err(e) => {
            return written(&Line::Unread {
                error: e.to_string(),
            });
        }
    };
    let check = Check {
        source: &passage.source,
        translation: passage.translation.as_deref(),
        source_language: &passage.source_language,
        target_language: &passage.target_language,
        flags: &[],
    };
    let found = assess(&check, &passage.sheet, review_below);
    let signals = found
        .signals
        .iter()
        .map(|s| SignalLine {
            code: s.code.as_str(),
            count: s.count,
            message: &s.message,
            penalty: s.penalty,
            severity: s.severity().as_str(),
        })
        .collect();
    written(&Line::Assessed {
        score: found.score,
        signals,
        status: found.status.as_str(),
    })
}

/// `line` as one line of JSON (numbers and strings, which always write).
fn written(line: &Line<'_>) -> String {
    serde_json::to_string(line).unwrap_or_default()
}

fn main() -> std::io::Result<()> {
    let review_below = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(REVIEW_BELOW);
    let stdin = std::io::stdin();
    let mut out = BufWriter::new(std::io::stdout().lock());
    for line in stdin.lock().lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        writeln!(out, "{}", assessment(&line, review_below))?;
    }
    out.flush()
}
