//! A webhook receiver for black-box tests, written from the spec (6.3)
//! alone: it records every call (arrival time, headers, raw body), answers
//! with the statuses a test queues (200 otherwise), and verifies signatures
//! with its own HMAC-SHA256 (RFC 2104 over SHA-256), independent of the
//! product's `hmac` crate.

use axum::Router;
use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::TcpListener;

/// One call the receiver got.
#[derive(Debug, Clone)]
pub struct Call {
    pub at: Instant,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Call {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("webhook body is not JSON ({e})"))
    }

    /// Checks the signature and timestamp as a receiver should (spec 6.3):
    /// HMAC-SHA256 over `<timestamp>.<raw body>`, 300 s tolerance of the
    /// time the call arrived (a test may check it long after).
    pub fn verify(&self, secret: &str) -> Result<(), String> {
        let timestamp = self
            .header("x-service-timestamp")
            .ok_or("no X-Service-Timestamp")?;
        let when: i64 = timestamp.parse().map_err(|_| "timestamp is not a number")?;
        let arrived = std::time::SystemTime::now()
            .checked_sub(self.at.elapsed())
            .unwrap_or(std::time::UNIX_EPOCH);
        let now = arrived
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0);
        if (now - when).abs() > 300 {
            return Err(format!("timestamp {when} is {}s away", now - when));
        }
        let mut message = timestamp.as_bytes().to_vec();
        message.push(b'.');
        message.extend_from_slice(&self.body);
        let expected = format!(
            "sha256={}",
            hex::encode(hmac_sha256(secret.as_bytes(), &message))
        );
        let given = self
            .header("x-service-signature")
            .ok_or("no X-Service-Signature")?;
        if constant_time_eq(given.as_bytes(), expected.as_bytes()) {
            Ok(())
        } else {
            Err("signature does not match".into())
        }
    }
}

/// HMAC (RFC 2104) with SHA-256, block size 64.
pub fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    let mut block = [0u8; 64];
    if key.len() > 64 {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let inner_pad: Vec<u8> = block.iter().map(|b| b ^ 0x36).collect();
    let outer_pad: Vec<u8> = block.iter().map(|b| b ^ 0x5c).collect();
    let inner = Sha256::new()
        .chain_update(&inner_pad)
        .chain_update(message)
        .finalize();
    Sha256::new()
        .chain_update(&outer_pad)
        .chain_update(inner)
        .finalize()
        .into()
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[derive(Default)]
struct State {
    calls: Mutex<Vec<Call>>,
    answers: Mutex<VecDeque<u16>>,
    default: Mutex<u16>,
}

/// A running receiver on `127.0.0.1:0` (stopped on drop).
pub struct Receiver {
    address: SocketAddr,
    state: Arc<State>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Receiver {
    pub async fn start() -> Receiver {
        Self::start_on("127.0.0.1:0").await
    }

    /// A receiver on a given address (to bring one back where it was).
    pub async fn start_on(address: &str) -> Receiver {
        let state = Arc::new(State::default());
        if let Ok(mut d) = state.default.lock() {
            *d = 200;
        }
        let listener = TcpListener::bind(address).await.expect("bind the receiver");
        let address = listener.local_addr().expect("receiver address");
        let shared = state.clone();
        let handler = move |uri: axum::http::Uri, headers: HeaderMap, body: Bytes| {
            let state = shared.clone();
            async move {
                let call = Call {
                    at: Instant::now(),
                    path: uri.path().to_owned(),
                    headers: headers
                        .iter()
                        .map(|(n, v)| (n.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
                        .collect(),
                    body: body.to_vec(),
                };
                let status = {
                    let queued = state.answers.lock().ok().and_then(|mut q| q.pop_front());
                    queued.unwrap_or_else(|| state.default.lock().map(|d| *d).unwrap_or(200))
                };
                if let Ok(mut calls) = state.calls.lock() {
                    calls.push(call);
                }
                StatusCode::from_u16(status).unwrap_or(StatusCode::OK)
            }
        };
        let app = Router::new().fallback(post(handler));
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Receiver {
            address,
            state,
            task,
        }
    }

    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// `http://127.0.0.1:<port><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.address)
    }

    /// The statuses of the next calls, in order; then the default.
    pub fn answer_next(&self, statuses: &[u16]) {
        if let Ok(mut q) = self.state.answers.lock() {
            q.extend(statuses);
        }
    }

    /// The status of every call without a queued one.
    pub fn answer_always(&self, status: u16) {
        if let Ok(mut d) = self.state.default.lock() {
            *d = status;
        }
    }

    pub fn calls(&self) -> Vec<Call> {
        self.state
            .calls
            .lock()
            .map(|c| c.clone())
            .unwrap_or_default()
    }

    /// Waits until `ready` holds for the calls so far; panics after `within`.
    pub async fn wait_until(
        &self,
        within: Duration,
        what: &str,
        ready: impl Fn(&[Call]) -> bool,
    ) -> Vec<Call> {
        let deadline = Instant::now() + within;
        loop {
            let calls = self.calls();
            if ready(&calls) {
                return calls;
            }
            assert!(
                Instant::now() < deadline,
                "{what}: not reached within {within:?}; calls so far: {:?}",
                calls
                    .iter()
                    .map(|c| c.header("x-service-delivery").unwrap_or("?").to_owned())
                    .collect::<Vec<_>>()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn hmac_matches_rfc_4231_test_cases() {
        let mac = super::hmac_sha256(b"Jefe", b"what do ya want for nothing?");
        assert_eq!(
            hex::encode(mac),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        // Test case 6: a key longer than the block.
        let mac = super::hmac_sha256(
            &[0xaa; 131],
            b"Test Using Larger Than Block-Size Key - Hash Key First",
        );
        assert_eq!(
            hex::encode(mac),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
    }
}
