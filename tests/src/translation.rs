//! A client of the translation-request API (spec 4.2 to 4.5): one
//! installation with a running server, a provider simulator registered as
//! provider through `dragoman provider add`, and a bearer token with every
//! scope; plus builders of JSON payloads (spec 2.4).

use crate::client::{Answer, SCOPES, Session, send};
use crate::server::{Backend, Installation, Server};
use crate::simulator::Simulator;
use reqwest::{Method, RequestBuilder};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

/// Final request statuses (spec 2.3, 3).
pub const FINAL_STATUSES: [&str; 5] = [
    "completed",
    "completed_with_residuals",
    "failed",
    "cancelled",
    "imported",
];

/// How to start an [`Api`].
pub struct ApiBuilder {
    backend: Backend,
    env: Vec<(String, String)>,
    simulator: Vec<String>,
    provider: bool,
    installation: Option<Arc<Installation>>,
}

impl ApiBuilder {
    /// A server environment variable (`DRAGOMAN_LEASE_SECONDS`, …).
    pub fn env(mut self, name: &str, value: &str) -> Self {
        self.env.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Flags of the simulator (`--latency-ms`, `--rate-500`, …).
    pub fn simulator(mut self, flags: &[&str]) -> Self {
        self.simulator = flags.iter().map(|f| (*f).to_owned()).collect();
        self
    }

    /// This installation instead of a fresh one of the backend (a database
    /// the test owns, see [`Installation::on_postgres_url`]).
    pub fn installation(mut self, installation: Arc<Installation>) -> Self {
        self.installation = Some(installation);
        self
    }

    /// No provider registered at all.
    pub fn without_provider(mut self) -> Self {
        self.provider = false;
        self
    }

    pub async fn start(self) -> Api {
        let flags: Vec<&str> = self.simulator.iter().map(String::as_str).collect();
        let installation = match self.installation {
            Some(installation) => installation,
            None => Installation::new(self.backend).await,
        };
        let (simulator, server) = tokio::join!(
            Simulator::start(&flags),
            start_server(installation, &self.env)
        );
        let account = server.create_user("translator", true).await;
        let session = Session::login(&server, &account).await;
        let token = session.token("automation", &SCOPES).await.token;
        let mut api = Api {
            server,
            simulator,
            token,
            provider_id: String::new(),
            env: self.env,
        };
        if self.provider {
            api.add_provider().await;
        }
        api
    }
}

async fn start_server(installation: Arc<Installation>, env: &[(String, String)]) -> Server {
    let mut builder = Server::builder(installation);
    for (name, value) in env {
        builder = builder.env(name, value);
    }
    builder.start().await
}

/// A server, its simulated provider and a token with every scope.
pub struct Api {
    pub server: Server,
    pub simulator: Simulator,
    /// Bearer token with every scope of an administrator.
    pub token: String,
    /// The simulator's provider id (empty without provider).
    pub provider_id: String,
    env: Vec<(String, String)>,
}

impl Api {
    pub fn builder(backend: Backend) -> ApiBuilder {
        ApiBuilder {
            backend,
            env: Vec::new(),
            simulator: Vec::new(),
            provider: true,
            installation: None,
        }
    }

    /// Defaults: a simulator without latency or faults.
    pub async fn start(backend: Backend) -> Api {
        Api::builder(backend).start().await
    }

    /// Registers the simulator as provider `sim` (prices 1 and 2 per million
    /// tokens, capacity 8) with `dragoman provider add`.
    pub async fn add_provider(&mut self) {
        self.provider_id = self
            .server
            .installation
            .add_simulator_provider(
                &self.simulator.openai_base_url(),
                &[
                    "--price-input",
                    "1",
                    "--price-output",
                    "2",
                    "--capacity",
                    "8",
                ],
            )
            .await;
    }

    /// Kills the server with SIGKILL and starts a new process on the same
    /// installation with the same environment.
    pub async fn kill_and_restart(&mut self) {
        self.server.kill().await;
        self.restart().await;
    }

    /// Starts a new server on the installation (the old one must be gone).
    pub async fn restart(&mut self) {
        let installation = self.server.installation.clone();
        self.server = start_server(installation, &self.env).await;
    }

    /// A new signed-in session of the administrator who owns [`Api::token`].
    pub async fn session(&self) -> Session {
        let account = crate::server::Account {
            username: "translator".into(),
            password: crate::server::PASSWORD.into(),
        };
        Session::login(&self.server, &account).await
    }

    /// `POST /api/v1/translation-requests` with another bearer token.
    pub async fn submit_with(&self, token: &str, body: &Value) -> Answer {
        send(
            self.server
                .client()
                .post(self.server.url("/api/v1/translation-requests"))
                .bearer_auth(token)
                .json(body),
        )
        .await
    }

    /// `method path` with the bearer token.
    pub fn request(&self, method: Method, path: &str) -> RequestBuilder {
        self.server
            .client()
            .request(method, self.server.url(path))
            .bearer_auth(&self.token)
    }

    /// `GET path`; when the server cannot be reached, panics with what it
    /// wrote on stderr.
    pub async fn get(&self, path: &str) -> Answer {
        match self.request(Method::GET, path).send().await {
            Ok(response) => Answer::read(response).await,
            Err(e) => panic!(
                "GET {path}: {e}\nserver stderr (end):\n{}",
                tail(&self.server.stderr(), 6000)
            ),
        }
    }

    /// `POST /api/v1/translation-requests` with a JSON body.
    pub async fn submit(&self, body: &Value, key: Option<&str>) -> Answer {
        let mut request = self
            .request(Method::POST, "/api/v1/translation-requests")
            .json(body);
        if let Some(key) = key {
            request = request.header("Idempotency-Key", key);
        }
        send(request).await
    }

    /// Submits and expects 202; returns the summary.
    pub async fn submit_ok(&self, body: &Value) -> Value {
        let answer = self.submit(body, None).await;
        answer.expect(202)
    }

    /// The status document (200 expected).
    pub async fn status(&self, request_id: &str) -> Value {
        self.get(&format!("/api/v1/translation-requests/{request_id}"))
            .await
            .expect(200)
    }

    /// `POST …/{id}/{action}`.
    pub async fn act(&self, request_id: &str, action: &str) -> Answer {
        send(self.request(
            Method::POST,
            &format!("/api/v1/translation-requests/{request_id}/{action}"),
        ))
        .await
    }

    /// `GET …/{id}/result?{query}`.
    pub async fn result(&self, request_id: &str, query: &str) -> Answer {
        self.get(&format!(
            "/api/v1/translation-requests/{request_id}/result?{query}"
        ))
        .await
    }

    /// Long-polls the status until the request is in a final status.
    pub async fn wait_final(&self, request_id: &str, within: Duration) -> Value {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let wait = left.as_secs().clamp(1, 20);
            let answer = self
                .get(&format!(
                    "/api/v1/translation-requests/{request_id}?wait={wait}"
                ))
                .await;
            let doc = answer.expect(200);
            if doc["status"]
                .as_str()
                .is_some_and(|s| FINAL_STATUSES.contains(&s))
            {
                return doc;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "request {request_id} not final within {within:?}: {doc}\nserver stderr (end):\n{}",
                tail(&self.server.stderr(), 4000)
            );
        }
    }

    /// Polls the status (every 100 ms) until `ready` holds for it.
    pub async fn wait_until(
        &self,
        request_id: &str,
        within: Duration,
        what: &str,
        ready: impl Fn(&Value) -> bool,
    ) -> Value {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let doc = self.status(request_id).await;
            if ready(&doc) {
                return doc;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{what}: not reached within {within:?}: {doc}\nserver stderr (end):\n{}",
                tail(&self.server.stderr(), 4000)
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// A payload (spec 2.4) for volume 1 of `series` (created when missing)
    /// with the simulator as provider, from English to French.
    pub fn payload(&self, series: &str, chapters: Vec<Value>) -> Value {
        let mut body = json!({
            "series": {"name": series, "create_if_missing": true},
            "volume": {"number": 1},
            "source_language": "en",
            "target_language": "fr",
            "chapters": chapters,
        });
        if !self.provider_id.is_empty() {
            body["provider_id"] = json!(self.provider_id);
        }
        body
    }
}

/// The last `max` bytes of `text` (on a character boundary).
pub fn tail(text: &str, max: usize) -> &str {
    let mut start = text.len().saturating_sub(max);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

/// The paragraphs of a generated chapter: distinct texts, about 100
/// characters each.
pub fn paragraphs(tag: &str, number: u32, count: usize) -> Vec<String> {
    (1..=count)
        .map(|i| {
            format!(
                "{tag} chapter {number}, paragraph {i}: the old lighthouse keeper \
                 counted the ships that passed in the night."
            )
        })
        .collect()
}

/// A numbered chapter item (spec 2.4) with `count` generated paragraphs.
pub fn chapter(tag: &str, number: u32, count: usize) -> Value {
    chapter_from(number, &paragraphs(tag, number, count))
}

/// A numbered chapter item with the given paragraphs, separated by blank
/// lines; external id `ch-<number>`, title `Chapter <number>`.
pub fn chapter_from(number: u32, paragraphs: &[String]) -> Value {
    json!({
        "external_id": format!("ch-{number}"),
        "number": number,
        "title": format!("Chapter {number}"),
        "content": paragraphs.join("\n\n"),
    })
}
