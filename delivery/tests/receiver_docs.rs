//! The receivers' documentation (`docs/webhooks.md`) stays true: the headers
//! its table lists are those the sender sends (spec 6.3), the Rust
//! verification function it shows is the one tested here, and its Python
//! receiver, run as written, accepts what the service sends and refuses
//! tampered, stale and unsigned calls.

use dragoman_delivery::webhooks::sign::{self, signature};
use dragoman_delivery::webhooks::{Outgoing, Sender};
use dragoman_model::vocab::CallbackEvent;
use dragoman_model::webhook::{Resolver, WebhookSettings};
use dragoman_testing::env as test_env;
use std::net::IpAddr;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{ChildStdout, Command};

const DOCS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/webhooks.md");
const SECRET: &str = "whsec_5mQm1k0o3c3CqvYl3l8sO1gTn2bq8hPz4pQXW0m4h5E";
const BODY: &[u8] = br#"{"event":"translation_request.finished","request_id":"r"}"#;
/// What the forged calls carry: were one processed, the receiver would say
/// it received request `forged`.
const FORGED: &[u8] = br#"{"event":"translation_request.finished","request_id":"forged"}"#;
/// A second genuine call (the receiver processes a request's event once).
const LATER: &[u8] = br#"{"event":"translation_request.finished","request_id":"later"}"#;

/// Defines the items given and keeps their source, to compare with the docs.
macro_rules! documented {
    ($($code:tt)*) => {
        $($code)*
        const DOCUMENTED_RUST: &str = stringify!($($code)*);
    };
}

// The Rust example of `docs/webhooks.md`, section 8, as it is there
// (`the_rust_example_is_the_one_tested` compares them).
documented! {
    use hmac::{Hmac, Mac};
    use sha2::Sha256;

    pub fn verify(secret: &[u8], timestamp: &str, signature: &str, body: &[u8], now: i64) -> bool {
        let Ok(ts) = timestamp.parse::<i64>() else { return false };
        if now.abs_diff(ts) > 300 {
            return false;
        }
        let Some(Ok(expected)) = signature.strip_prefix("sha256=").map(hex::decode) else {
            return false;
        };
        let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes keys of any length");
        mac.update(timestamp.as_bytes());
        mac.update(b".");
        mac.update(body);
        mac.verify_slice(&expected).is_ok()
    }
}

fn docs() -> String {
    std::fs::read_to_string(DOCS).unwrap_or_else(|e| panic!("{DOCS}: {e}"))
}

/// The text of the section whose heading starts with `heading`, up to the
/// next section of the same level.
fn section<'a>(docs: &'a str, heading: &str) -> &'a str {
    let start = docs
        .find(&format!("\n{heading}"))
        .unwrap_or_else(|| panic!("no section {heading:?} in {DOCS}"));
    let rest = &docs[start + 1..];
    let level = heading.split(' ').next().unwrap_or("##");
    let end = rest[1..]
        .find(&format!("\n{level} "))
        .map_or(rest.len(), |i| i + 1);
    &rest[..end]
}

/// The one fenced block of `language` in `text`.
fn code_block<'a>(text: &'a str, language: &str) -> &'a str {
    let fence = format!("```{language}\n");
    let mut blocks = text.match_indices(&fence).map(|(i, _)| {
        let body = &text[i + fence.len()..];
        &body[..body.find("```").expect("a closed code block")]
    });
    let block = blocks
        .next()
        .unwrap_or_else(|| panic!("no {language} example"));
    assert!(blocks.next().is_none(), "one {language} example");
    block
}

fn without_whitespace(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

#[test]
fn the_rust_example_is_the_one_tested() {
    let docs = docs();
    let example = code_block(section(&docs, "## 8. Verifying a delivery"), "rust");
    assert_eq!(
        without_whitespace(example),
        without_whitespace(DOCUMENTED_RUST),
        "docs/webhooks.md section 8 changed its Rust example: copy it into this test"
    );
}

#[test]
fn the_documented_check_accepts_signed_calls_and_refuses_the_rest() {
    let now = 1_763_860_000;
    let signed = signature(SECRET, now, BODY);
    let ts = now.to_string();
    let secret = SECRET.as_bytes();
    assert!(verify(secret, &ts, &signed, BODY, now));
    assert!(verify(secret, &ts, &signed, BODY, now + 300));
    assert!(!verify(secret, &ts, &signed, BODY, now + 301), "stale");
    assert!(!verify(secret, &ts, &signed, b"{}", now), "other body");
    assert!(
        !verify(b"another secret", &ts, &signed, BODY, now),
        "other secret"
    );
    let later = (now + 1).to_string();
    assert!(!verify(secret, &later, &signed, BODY, now), "other time");
    assert!(!verify(secret, &ts, &signed[7..], BODY, now), "no prefix");
}

/// Literal addresses only: the tests call 127.0.0.1.
struct NoNames;

#[async_trait::async_trait]
impl Resolver for NoNames {
    async fn resolve(&self, host: &str, _port: u16) -> std::io::Result<Vec<IpAddr>> {
        Err(std::io::Error::other(format!("{host}: no names here")))
    }
}

/// Sends `BODY` signed with `SECRET` to `url` as the service does.
async fn send_as_the_service(url: &str) -> Result<u16, String> {
    let settings =
        WebhookSettings::from_environment("127.0.0.1", "127.0.0.0/8", 1, 5, "").expect("settings");
    Sender::new(Arc::new(NoNames))
        .send(
            &settings,
            &Outgoing {
                url,
                event: CallbackEvent::Finished,
                delivery_id: "r:1",
                body: BODY,
                secret: SECRET,
            },
        )
        .await
}

/// The rows of the headers table of section 6: (lowercase name, value
/// without its code quotes).
fn documented_headers(docs: &str) -> Vec<(String, String)> {
    section(docs, "## 6. Headers")
        .lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.trim().strip_prefix('|')?.split('|').collect();
            let name = cells.first()?.trim().strip_prefix('`')?.strip_suffix('`')?;
            let value = cells.get(1)?.trim().replace('`', "");
            Some((name.to_ascii_lowercase(), value))
        })
        .collect()
}

#[tokio::test]
async fn the_headers_table_lists_what_the_sender_sends() {
    let docs = docs();
    let documented = documented_headers(&docs);
    let names: Vec<&str> = documented.iter().map(|(n, _)| n.as_str()).collect();
    // The headers of spec 6.3, and the body's type.
    assert_eq!(
        names,
        [
            "x-service-event",
            "x-service-delivery",
            "x-service-timestamp",
            "x-service-signature",
            "user-agent",
            "content-type"
        ]
    );

    let (tx, rx) = tokio::sync::oneshot::channel();
    let tx = Arc::new(std::sync::Mutex::new(Some(tx)));
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(
            move |headers: axum::http::HeaderMap, body: axum::body::Bytes| async move {
                if let Some(tx) = tx.lock().ok().and_then(|mut tx| tx.take()) {
                    let _ = tx.send((headers, body));
                }
                axum::http::StatusCode::NO_CONTENT
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("address").port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let url = format!("http://127.0.0.1:{port}/hook");
    assert_eq!(send_as_the_service(&url).await, Ok(204));
    let (headers, body) = rx.await.expect("the call arrived");
    assert_eq!(&body[..], BODY);
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_else(|| panic!("no {name} header"))
            .to_owned()
    };
    let sent = |name: &str| {
        documented
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .unwrap_or_default()
    };
    let timestamp = header("x-service-timestamp");
    let ts: i64 = timestamp.parse().expect("Unix seconds");
    assert_eq!(header("x-service-signature"), signature(SECRET, ts, BODY));
    assert!(
        sent("x-service-signature")
            .starts_with("sha256=<hex>: HMAC-SHA256 of <timestamp>.<raw body>"),
        "{}",
        sent("x-service-signature")
    );
    assert_eq!(header("x-service-event"), CallbackEvent::Finished.as_str());
    assert!(sent("x-service-event").contains(CallbackEvent::Finished.as_str()));
    assert_eq!(header("x-service-delivery"), "r:1");
    assert_eq!(header("user-agent"), sign::USER_AGENT);
    assert_eq!(sent("user-agent"), sign::USER_AGENT);
    assert_eq!(header("content-type"), sent("content-type"));
}

/// The interpreter the documented Python receiver runs on (standard library
/// only): `DRAGOMAN_TEST_PYTHON`, else `python3`.
fn python() -> PathBuf {
    std::env::var_os("DRAGOMAN_TEST_PYTHON")
        .filter(|p| !p.is_empty())
        .map_or_else(|| PathBuf::from("python3"), PathBuf::from)
}

/// The Python example with the test's secret, listening on a free port of
/// 127.0.0.1 that it prints first.
fn python_receiver(docs: &str) -> String {
    let example = code_block(section(docs, "## 8. Verifying a delivery"), "python");
    let secret_line = example
        .lines()
        .find(|l| l.starts_with("SECRET = "))
        .expect("the example's SECRET line");
    let serve = r#"ThreadingHTTPServer(("0.0.0.0", 8000), Hook).serve_forever()"#;
    assert!(
        example.contains(serve),
        "the example no longer ends with {serve}: update this test"
    );
    example
        .replace(secret_line, &format!("SECRET = b\"{SECRET}\""))
        .replace(
            serve,
            "server = ThreadingHTTPServer((\"127.0.0.1\", 0), Hook)\n\
             print(server.server_address[1], flush=True)\n\
             server.serve_forever()",
        )
}

/// The receiver's next line on stdout.
async fn next_line(lines: &mut Lines<BufReader<ChildStdout>>) -> String {
    tokio::time::timeout(Duration::from_secs(10), lines.next_line())
        .await
        .expect("the receiver prints in time")
        .expect("stdout")
        .expect("the receiver is running")
}

#[tokio::test]
async fn the_python_receiver_accepts_the_services_calls_and_refuses_forged_ones() {
    let script = python_receiver(&docs());
    let spawned = Command::new(python())
        .arg("-u")
        .arg("-c")
        .arg(&script)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn();
    let mut receiver = match spawned {
        Ok(child) => child,
        Err(e) => {
            test_env::missing(&format!("{}", python().display()), &e.to_string());
            return;
        }
    };
    let mut lines = BufReader::new(receiver.stdout.take().expect("stdout")).lines();
    let port: u16 = next_line(&mut lines).await.parse().expect("the port");
    let url = format!("http://127.0.0.1:{port}/");

    // What the service sends is accepted and processed once.
    assert_eq!(send_as_the_service(&url).await, Ok(204));
    assert_eq!(
        next_line(&mut lines).await,
        "received ('r', 'translation_request.finished', None)"
    );

    // Anything else is refused before processing.
    let now = dragoman_model::clock::now();
    let forged = |timestamp: i64, signed: String, body: &'static [u8]| {
        let url = url.clone();
        async move {
            reqwest::Client::new()
                .post(url)
                .header("X-Service-Timestamp", timestamp.to_string())
                .header("X-Service-Signature", signed)
                .body(body)
                .send()
                .await
                .expect("the receiver answers")
                .status()
                .as_u16()
        }
    };
    let cases = [
        ("tampered body", now, signature(SECRET, now, LATER)),
        (
            "other secret",
            now,
            signature("another secret", now, FORGED),
        ),
        // Past the 300 seconds by more than the test takes: the receiver
        // reads its own clock, a second or more after `now`.
        ("stale", now - 310, signature(SECRET, now - 310, FORGED)),
        (
            "from the future",
            now + 310,
            signature(SECRET, now + 310, FORGED),
        ),
        ("unsigned", now, String::new()),
        (
            "no prefix",
            now,
            signature(SECRET, now, FORGED)[7..].to_owned(),
        ),
        ("other time", now + 1, signature(SECRET, now, FORGED)),
    ];
    for (case, timestamp, signed) in cases {
        assert_eq!(forged(timestamp, signed, FORGED).await, 401, "{case}");
    }
    // A fresh call signed as the service signs is accepted; it is the next
    // one processed, so none of the refused ones was.
    assert_eq!(forged(now, signature(SECRET, now, LATER), LATER).await, 204);
    assert_eq!(
        next_line(&mut lines).await,
        "received ('later', 'translation_request.finished', None)",
        "nothing refused was processed"
    );
    receiver.kill().await.expect("stop the receiver");
}
