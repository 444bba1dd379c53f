//! The webhook sender against real local receivers: only checked addresses
//! are dialled, the original name travels in `Host`, a redirect is a
//! failure whose target is never visited, and a timeout is a failure.

use axum::Router;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::IntoResponse;
use axum::routing::post;
use dragoman_delivery::webhooks::{Outgoing, Sender};
use dragoman_model::vocab::CallbackEvent;
use dragoman_model::webhook::{Resolver, WebhookSettings};
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};

/// Answers from a fixed table, counting lookups.
struct Table(HashMap<String, Vec<IpAddr>>, AtomicUsize);

#[async_trait::async_trait]
impl Resolver for Table {
    async fn resolve(&self, host: &str, _port: u16) -> std::io::Result<Vec<IpAddr>> {
        self.1.fetch_add(1, Ordering::SeqCst);
        self.0
            .get(host)
            .cloned()
            .ok_or_else(|| std::io::Error::other("no such name"))
    }
}

fn table(entries: &[(&str, &[&str])]) -> Arc<Table> {
    Arc::new(Table(
        entries
            .iter()
            .map(|(name, ips)| {
                let ips = ips.iter().map(|ip| ip.parse().expect("ip")).collect();
                ((*name).to_owned(), ips)
            })
            .collect(),
        AtomicUsize::new(0),
    ))
}

/// What a receiver saw: the path and `Host` of every request, and the
/// number of TCP connections it accepted.
#[derive(Default)]
struct Seen {
    requests: Mutex<Vec<(String, String)>>,
    connections: Arc<AtomicUsize>,
}

/// A listener that counts the connections it accepts.
struct Counting(TcpListener, Arc<AtomicUsize>);

impl axum::serve::Listener for Counting {
    type Io = TcpStream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (TcpStream, SocketAddr) {
        loop {
            if let Ok(accepted) = self.0.accept().await {
                self.1.fetch_add(1, Ordering::SeqCst);
                return accepted;
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.0.local_addr()
    }
}

/// A receiver on 127.0.0.1 that answers `/hook` with `status` (with a
/// `Location: /target` header), after `delay`, and `/target` with 200.
async fn receiver(status: u16, delay: Duration) -> (SocketAddr, Arc<Seen>) {
    let seen = Arc::new(Seen::default());
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address");
    let record = seen.clone();
    let hook = move |uri: Uri, headers: HeaderMap| {
        let record = record.clone();
        async move {
            let host = headers
                .get("host")
                .and_then(|h| h.to_str().ok())
                .unwrap_or("")
                .to_owned();
            if let Ok(mut r) = record.requests.lock() {
                r.push((uri.path().to_owned(), host));
            }
            tokio::time::sleep(delay).await;
            let code = if uri.path() == "/hook" {
                StatusCode::from_u16(status).unwrap_or(StatusCode::OK)
            } else {
                StatusCode::OK
            };
            (code, [("location", "/target")]).into_response()
        }
    };
    let app = Router::new()
        .route("/hook", post(hook.clone()))
        .route("/target", post(hook.clone()).get(hook));
    let counting = Counting(listener, seen.connections.clone());
    tokio::spawn(async move { axum::serve(counting, app).await });
    (address, seen)
}

fn settings(hosts: &str, networks: &str, timeout: u64) -> WebhookSettings {
    WebhookSettings::from_environment(hosts, networks, 6, timeout, "").expect("settings")
}

async fn send(resolver: Arc<Table>, settings: &WebhookSettings, url: &str) -> Result<u16, String> {
    Sender::new(resolver)
        .send(
            settings,
            &Outgoing {
                url,
                event: CallbackEvent::Finished,
                delivery_id: "r:1",
                body: b"{}",
                secret: "a-secret-of-at-least-thirty-two-chars",
            },
        )
        .await
}

#[tokio::test]
async fn a_name_with_one_private_address_is_never_dialled() {
    let (address, seen) = receiver(200, Duration::ZERO).await;
    let names = table(&[("hooks.test", &["93.184.216.34", "127.0.0.1"])]);
    // 127.0.0.1 is where the receiver listens; it is not an allowed network.
    let s = settings("hooks.test", "", 5);
    let url = format!("http://hooks.test:{}/hook", address.port());
    let err = send(names.clone(), &s, &url).await.unwrap_err();
    assert!(err.contains("non-public address (loopback)"), "{err}");
    assert_eq!(names.1.load(Ordering::SeqCst), 1, "the name was resolved");
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(seen.connections.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn the_call_goes_to_the_checked_address_with_the_original_host() {
    let (address, seen) = receiver(204, Duration::ZERO).await;
    let names = table(&[("hooks.test", &["127.0.0.1"])]);
    let s = settings("hooks.test", "127.0.0.0/8", 5);
    let url = format!("http://hooks.test:{}/hook", address.port());
    assert_eq!(send(names.clone(), &s, &url).await, Ok(204));
    assert_eq!(send(names.clone(), &s, &url).await, Ok(204));
    // Resolved again before each call.
    assert_eq!(names.1.load(Ordering::SeqCst), 2);
    let requests = seen.requests.lock().expect("seen").clone();
    let host = format!("hooks.test:{}", address.port());
    assert_eq!(
        requests,
        vec![
            ("/hook".to_owned(), host.clone()),
            ("/hook".to_owned(), host)
        ]
    );
}

#[tokio::test]
async fn a_name_that_moves_to_an_internal_address_is_refused_at_the_call() {
    let (address, seen) = receiver(200, Duration::ZERO).await;
    let s = settings("hooks.test", "", 5);
    let url = format!("http://hooks.test:{}/hook", address.port());
    // At intake the name was public; now it points at the loopback.
    let at_intake = table(&[("hooks.test", &["93.184.216.34"])]);
    let checked =
        dragoman_model::webhook::callback::check_callback(&url, &s, true, at_intake.as_ref()).await;
    assert!(checked.is_ok());
    let err = send(table(&[("hooks.test", &["127.0.0.1"])]), &s, &url)
        .await
        .unwrap_err();
    assert!(err.starts_with("refused"), "{err}");
    assert_eq!(seen.connections.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_redirect_is_a_failure_and_its_target_is_never_visited() {
    for status in [301, 302, 307, 308] {
        let (address, seen) = receiver(status, Duration::ZERO).await;
        let s = settings("127.0.0.1", "127.0.0.0/8", 5);
        let url = format!("http://127.0.0.1:{}/hook", address.port());
        let err = send(table(&[]), &s, &url).await.unwrap_err();
        assert_eq!(err, format!("HTTP {status}: redirects are not followed"));
        tokio::time::sleep(Duration::from_millis(100)).await;
        let paths: Vec<String> = seen
            .requests
            .lock()
            .expect("seen")
            .iter()
            .map(|(p, _)| p.clone())
            .collect();
        assert_eq!(paths, vec!["/hook".to_owned()], "after {status}");
    }
}

#[tokio::test]
async fn timeouts_statuses_and_refusals_are_failures_that_say_why() {
    let (address, _) = receiver(200, Duration::from_secs(5)).await;
    let s = settings("127.0.0.1", "127.0.0.0/8", 1);
    let url = format!("http://127.0.0.1:{}/hook", address.port());
    let started = std::time::Instant::now();
    let err = send(table(&[]), &s, &url).await.unwrap_err();
    assert_eq!(err, "timeout after 1 s");
    assert!(started.elapsed() < Duration::from_secs(4));
    let (address, _) = receiver(500, Duration::ZERO).await;
    let url = format!("http://127.0.0.1:{}/hook", address.port());
    assert_eq!(send(table(&[]), &s, &url).await.unwrap_err(), "HTTP 500");
    // Nothing listens on port 9 of the loopback.
    let err = send(table(&[]), &s, "http://127.0.0.1:9/hook")
        .await
        .unwrap_err();
    assert!(err.starts_with("connection failed"), "{err}");
    // A host the settings no longer allow is refused before any network use.
    let s = settings("other.test", "127.0.0.0/8", 1);
    let err = send(table(&[]), &s, &url).await.unwrap_err();
    assert!(err.contains("not in the allowed hosts"), "{err}");
}
