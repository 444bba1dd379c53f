//! The provider simulator as a separate process:
//! `dragoman simulate-provider --listen 127.0.0.1:0 …`, started from the same
//! binary as the service, read for its address, asked for its `/stats`,
//! `/prompts`, `/faults` and `/batch-items`, and killed on drop (or stopped and started
//! again on the same address, as a provider that goes away and comes back). With `--translator
//! apertium` ([`Simulator::start_apertium`]) it translates with Apertium,
//! which the machine must have with the `eng-spa` pair
//! ([`apertium_installed`]).

use crate::binary;
use crate::server::START_TIMEOUT;
use dragoman_testing::env as test_env;
use serde_json::Value;
use std::process::Stdio;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// One running `dragoman simulate-provider` process.
pub struct Simulator {
    // Kept so the process lives (and is killed on drop) with the handle;
    // `None` while stopped (see [`Simulator::stop`]).
    child: Option<Child>,
    flags: Vec<String>,
    base: String,
    client: reqwest::Client,
}

impl Simulator {
    /// Starts the simulator with extra flags (`--latency-ms 400`,
    /// `--rate-500 0.2`, …) and waits until it says where it listens.
    ///
    /// # Panics
    ///
    /// When it exits or stays silent for [`START_TIMEOUT`].
    pub async fn start(flags: &[&str]) -> Simulator {
        let flags: Vec<String> = flags.iter().map(|f| (*f).to_owned()).collect();
        let (child, base) = spawn("127.0.0.1:0", &flags).await;
        Simulator {
            child: Some(child),
            flags,
            base,
            client: reqwest::Client::new(),
        }
    }

    /// Kills the process (SIGKILL): calls in flight are cut, new ones
    /// refused, as when a provider goes away.
    pub async fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().await.expect("SIGKILL the simulator");
        }
    }

    /// Starts a new process with the same flags on the same address (after
    /// [`Simulator::stop`]); its counts and logs start from zero.
    ///
    /// # Panics
    ///
    /// As [`Simulator::start`], and when the address cannot be taken again.
    pub async fn start_again(&mut self) {
        self.stop().await;
        let address = self.base.trim_start_matches("http://").to_owned();
        let (child, base) = spawn(&address, &self.flags).await;
        assert_eq!(base, self.base, "the simulator came back elsewhere");
        self.child = Some(child);
    }

    /// Starts the simulator with `--translator apertium` and `flags`;
    /// `None` when Apertium or its `eng-spa` pair is missing (see
    /// [`apertium_installed`]: a failure under CI, a skip elsewhere).
    ///
    /// # Panics
    ///
    /// As [`Simulator::start`].
    pub async fn start_apertium(flags: &[&str]) -> Option<Simulator> {
        if !apertium_installed() {
            return None;
        }
        let mut all = vec!["--translator", "apertium"];
        all.extend_from_slice(flags);
        Some(Simulator::start(&all).await)
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// Base URL for an `openai` provider (and `openai_direct`,
    /// `openai_responses`).
    pub fn openai_base_url(&self) -> String {
        format!("{}/v1", self.base)
    }

    /// Base URL for a `codex_chatgpt` provider, shaped like
    /// `https://chatgpt.com/backend-api`.
    pub fn codex_base_url(&self) -> String {
        format!("{}/backend-api", self.base)
    }

    /// `GET /stats`: the counts of what it served.
    pub async fn stats(&self) -> Value {
        self.client
            .get(format!("{}/stats", self.base))
            .send()
            .await
            .expect("simulator /stats")
            .json()
            .await
            .expect("simulator /stats is JSON")
    }

    /// `GET /prompts`: the prompts it served, in arrival order, each
    /// `{n, kind, system, user}`.
    pub async fn prompts(&self) -> Vec<Value> {
        let answer: Value = self
            .client
            .get(format!("{}/prompts", self.base))
            .send()
            .await
            .expect("simulator /prompts")
            .json()
            .await
            .expect("simulator /prompts is JSON");
        answer.as_array().cloned().unwrap_or_default()
    }

    /// The user messages of the translation prompts it served, parsed.
    pub async fn translation_messages(&self) -> Vec<Value> {
        self.messages("translation").await
    }

    /// The user messages of the analysis prompts it served, parsed.
    pub async fn analysis_messages(&self) -> Vec<Value> {
        self.messages("analysis").await
    }

    /// The user messages of the review prompts it served, parsed.
    pub async fn review_messages(&self) -> Vec<Value> {
        self.messages("review").await
    }

    /// `GET /faults`: the content faults and dropped placeholders it put in
    /// translation answers that went out whole, in the order applied, as
    /// (passage id, kind) with kind `name_drift`, `glossary_violation`,
    /// `untranslated`, `wrong_language` or `dropped_placeholder`.
    pub async fn faults(&self) -> Vec<(String, String)> {
        let answer: Value = self
            .client
            .get(format!("{}/faults", self.base))
            .send()
            .await
            .expect("simulator /faults")
            .json()
            .await
            .expect("simulator /faults is JSON");
        answer
            .as_array()
            .map(|faults| {
                faults
                    .iter()
                    .map(|f| {
                        let field = |name: &str| f[name].as_str().unwrap_or_default().to_owned();
                        (field("passage_id"), field("kind"))
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// `GET /batch-items`: every call received in a provider batch, oldest
    /// first, each `{batch_id, custom_id, wire, kind, user, received_at}`
    /// (`user` the call's user message, `kind` as in [`Simulator::prompts`]).
    pub async fn batch_items(&self) -> Vec<Value> {
        let answer: Value = self
            .client
            .get(format!("{}/batch-items", self.base))
            .send()
            .await
            .expect("simulator /batch-items")
            .json()
            .await
            .expect("simulator /batch-items is JSON");
        answer.as_array().cloned().unwrap_or_default()
    }

    async fn messages(&self, kind: &str) -> Vec<Value> {
        self.prompts()
            .await
            .iter()
            .filter(|p| p["kind"] == kind)
            .filter_map(|p| p["user"].as_str())
            .map(|user| serde_json::from_str(user).expect("a protocol message is JSON"))
            .collect()
    }

    /// `requests` of [`Simulator::stats`].
    pub async fn requests(&self) -> u64 {
        self.stats().await["requests"]
            .as_u64()
            .expect("stats.requests")
    }
}

/// Starts `dragoman simulate-provider --listen <listen> <flags>` and reads
/// its base URL.
async fn spawn(listen: &str, flags: &[String]) -> (Child, String) {
    let mut command = Command::new(binary::dragoman());
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        if name.starts_with("DRAGOMAN_") || name.starts_with("API_") {
            command.env_remove(name.as_ref());
        }
    }
    command
        .args(["simulate-provider", "--listen", listen])
        .args(flags)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    let mut child = command
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start the simulator: {e}"));
    let mut lines = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
    let base = tokio::time::timeout(START_TIMEOUT, async {
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(url) = line.strip_prefix("dragoman: simulator listening on ") {
                return Some(url.trim().trim_end_matches('/').to_owned());
            }
        }
        None
    })
    .await
    .ok()
    .flatten()
    .unwrap_or_else(|| panic!("the simulator ({flags:?}) never said where it listens on {listen}"));
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, base)
}

/// Whether `apertium` is on `PATH` with the `eng-spa` pair (what
/// `--translator apertium` needs for English to Spanish); when not,
/// [`test_env::missing`] decides: a failure under CI, else a skip.
pub fn apertium_installed() -> bool {
    match std::process::Command::new("apertium").arg("-l").output() {
        Ok(listed) => {
            let modes = String::from_utf8_lossy(&listed.stdout);
            if modes.lines().any(|m| m.trim() == "eng-spa") {
                return true;
            }
            test_env::missing(
                "the Apertium pair eng-spa",
                &format!("apertium -l lists: {}", modes.trim()),
            );
            false
        }
        Err(e) => {
            test_env::missing("apertium", &format!("not on PATH: {e}"));
            false
        }
    }
}
