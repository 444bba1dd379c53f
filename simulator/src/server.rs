//! Serving the simulator: on a listener until a shutdown signal (the
//! `simulate-provider` command, the demo), or in the background on a free
//! port of `127.0.0.1` for tests ([`RunningSimulator`]).

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use dragoman_model::vocab::ProviderKind;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

use crate::apertium::Apertium;
use crate::batches::BatchItem;
use crate::config::{SimulatorConfig, Translator};
use crate::faults::FaultRecord;
use crate::prompts::{KEPT as PROMPTS_KEPT, Prompt};
use crate::routes::router;
use crate::state::{Shared, lock, shared};
use crate::stats::SimulatorStats;

/// Apertium in `--translator apertium` mode, else `None`; fails when it
/// cannot be run or has no mode installed.
async fn translator(config: &SimulatorConfig) -> io::Result<Option<Apertium>> {
    match config.translator {
        Translator::Pseudo => Ok(None),
        Translator::Apertium => Ok(Some(Apertium::open(config.apertium_bin.as_deref()).await?)),
    }
}

async fn run(
    listener: tokio::net::TcpListener,
    shared: Arc<Shared>,
    stop: watch::Sender<bool>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    let signal = async move {
        shutdown.await;
        // Hanging requests end too, or the graceful shutdown would wait on
        // them forever.
        let _ = stop.send(true);
    };
    axum::serve(listener, router(shared))
        .with_graceful_shutdown(signal)
        .await
}

/// Serves the simulator on `listener` until `shutdown` completes, then ends
/// hanging requests and waits for the others. Prints nothing. Fails at once
/// when the prompt log file cannot be opened, or in `--translator apertium`
/// mode when Apertium cannot be run or has no mode installed.
pub async fn serve(
    listener: tokio::net::TcpListener,
    config: SimulatorConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    let apertium = translator(&config).await?;
    let (shared, stop) = shared(config, PROMPTS_KEPT, apertium)?;
    run(listener, shared, stop, shutdown).await
}

/// A simulator running in the background on `127.0.0.1`, for tests. Stopped
/// by [`RunningSimulator::stop`] or when dropped.
pub struct RunningSimulator {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<io::Result<()>>>,
}

impl RunningSimulator {
    /// Binds `127.0.0.1:0` and serves there.
    pub async fn start(config: SimulatorConfig) -> io::Result<RunningSimulator> {
        Self::start_keeping(config, PROMPTS_KEPT).await
    }

    /// [`RunningSimulator::start`] keeping the last `prompts_kept` prompts.
    pub(crate) async fn start_keeping(
        config: SimulatorConfig,
        prompts_kept: usize,
    ) -> io::Result<RunningSimulator> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let apertium = translator(&config).await?;
        let (shared, stop_hangs) = shared(config, prompts_kept, apertium)?;
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(run(listener, shared.clone(), stop_hangs, async move {
            let _ = stopped.await;
        }));
        Ok(RunningSimulator {
            addr,
            shared,
            stop: Some(stop),
            task: Some(task),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Base URL for an `openai` provider (`http://127.0.0.1:PORT/v1`).
    pub fn openai_base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Base URL for an `anthropic` provider (`http://127.0.0.1:PORT`).
    pub fn anthropic_base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Base URL for a `codex_chatgpt` provider
    /// (`http://127.0.0.1:PORT/backend-api`, as `https://chatgpt.com/backend-api`).
    pub fn codex_base_url(&self) -> String {
        format!("http://{}/backend-api", self.addr)
    }

    /// Base URL of a provider of `kind` on this simulator.
    pub fn base_url(&self, kind: ProviderKind) -> String {
        use ProviderKind as Kind;
        match kind {
            Kind::OpenAi | Kind::OpenAiDirect | Kind::OpenAiResponses => self.openai_base_url(),
            Kind::Anthropic => self.anthropic_base_url(),
            Kind::CodexChatgpt => self.codex_base_url(),
        }
    }

    /// What has been served so far.
    pub fn stats(&self) -> SimulatorStats {
        lock(&self.shared.stats).clone()
    }

    /// The last prompts served, oldest first (what `GET /prompts` answers).
    pub fn prompts(&self) -> Vec<Prompt> {
        self.shared.prompts.recent()
    }

    /// Every call received in a batch, oldest first (what
    /// `GET /batch-items` answers).
    pub fn batch_items(&self) -> Vec<BatchItem> {
        self.shared.batches.received()
    }

    /// The fault ledger, oldest first (what `GET /faults` answers).
    pub fn faults(&self) -> Vec<FaultRecord> {
        self.shared.faults.recent()
    }

    /// Stops serving and waits for the server to end.
    pub async fn stop(mut self) -> io::Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.task.take() {
            Some(task) => task.await.map_err(io::Error::other)?,
            None => Ok(()),
        }
    }
}

impl Drop for RunningSimulator {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}
