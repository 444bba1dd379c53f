//! A client of the gateway for tests that stop and restart processes under
//! load (rolling restarts, SIGKILL drills): each call is tried again, on
//! the next gateway in turn, until one answers, as a client that survives
//! a deployment would. A submission is retried with the same
//! `Idempotency-Key`, so retrying never makes a second request; that is
//! what these tests check.

use crate::translation::FINAL_STATUSES;
use serde_json::Value;
use std::time::Duration;

/// Retries every call through restarts: a refused connection, an answer
/// cut off (not JSON) or a 5xx is sent again after 200 ms to the next of
/// `bases` (round-robin; with one base, to the same gateway), for at most
/// `retry_for` per call.
#[derive(Clone)]
pub struct RetryingClient {
    http: reqwest::Client,
    bases: Vec<String>,
    token: String,
    retry_for: Duration,
}

impl RetryingClient {
    /// A client of the gateways at `bases` (`http://host:port`, at least
    /// one) with a bearer `token`. Each attempt times out after 30 s, so
    /// that a gateway stopped mid-answer costs one attempt, not the call.
    pub fn new(bases: Vec<String>, token: String, retry_for: Duration) -> RetryingClient {
        assert!(!bases.is_empty(), "a retrying client needs a gateway");
        RetryingClient {
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(30))
                .build()
                .expect("HTTP client"),
            bases,
            token,
            retry_for,
        }
    }

    /// Sends what `build` makes of the HTTP client and a base URL until a
    /// gateway answers something other than a 5xx with a JSON body;
    /// returns its status and body. Panics with `what` after `retry_for`.
    pub async fn call(
        &self,
        what: &str,
        build: impl Fn(&reqwest::Client, &str) -> reqwest::RequestBuilder,
    ) -> (u16, Value) {
        let deadline = tokio::time::Instant::now() + self.retry_for;
        let mut turn = 0usize;
        loop {
            let base = &self.bases[turn % self.bases.len()];
            turn += 1;
            let why = match build(&self.http, base)
                .bearer_auth(&self.token)
                .send()
                .await
            {
                Ok(response) if !response.status().is_server_error() => {
                    let status = response.status().as_u16();
                    let text = response.text().await.unwrap_or_default();
                    match serde_json::from_str(&text) {
                        Ok(body) => return (status, body),
                        // Cut off while the gateway stopped.
                        Err(e) => format!("{status}, body not JSON ({e}): {text}"),
                    }
                }
                Ok(response) => format!("{}", response.status()),
                Err(e) => e.to_string(),
            };
            assert!(
                tokio::time::Instant::now() < deadline,
                "{what}: no answer through the restarts within {:?}: {why}",
                self.retry_for
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Submits `body` under `key` until accepted; returns the request id.
    pub async fn submit(&self, body: &Value, key: &str) -> String {
        let (status, answer) = self
            .call(&format!("submit {key}"), |http, base| {
                http.post(format!("{base}/api/v1/translation-requests"))
                    .header("Idempotency-Key", key)
                    .json(body)
            })
            .await;
        assert!(
            status == 202 || status == 200,
            "submit {key}: {status} {answer}"
        );
        answer["request_id"]
            .as_str()
            .expect("request_id")
            .to_owned()
    }

    /// Long-polls request `id` until it is final; panics if it is not by
    /// `deadline` (one deadline can then bound a whole batch of requests).
    pub async fn wait_final(&self, id: &str, deadline: tokio::time::Instant) -> Value {
        loop {
            let (status, doc) = self
                .call(&format!("status of {id}"), |http, base| {
                    http.get(format!("{base}/api/v1/translation-requests/{id}?wait=10"))
                })
                .await;
            assert_eq!(status, 200, "status of {id}: {doc}");
            if doc["status"]
                .as_str()
                .is_some_and(|s| FINAL_STATUSES.contains(&s))
            {
                return doc;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "request {id} not final in time: {doc}"
            );
        }
    }
}
