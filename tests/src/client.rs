//! Talking to the gateway as a client would: signed-in sessions, tokens,
//! and checks of the error envelope (spec 2.12 and 7).

use crate::server::{Account, Server};
use reqwest::header::{CONTENT_TYPE, COOKIE, HeaderMap, SET_COOKIE, WWW_AUTHENTICATE};
use reqwest::{Method, RequestBuilder, Response, StatusCode};
use serde_json::{Value, json};

/// Name of the session cookie.
pub const SESSION_COOKIE: &str = "dragoman_session";

/// Every scope of spec 5, in the spec's order.
pub const SCOPES: [&str; 10] = [
    "series:read",
    "content:write",
    "pipeline:start",
    "jobs:read",
    "jobs:control",
    "results:read",
    "narrative:read",
    "library:read",
    "library:write",
    "library:delete",
];

/// A response read whole: status, headers and body text.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub text: String,
}

impl Answer {
    pub async fn read(response: Response) -> Answer {
        let status = response.status();
        let headers = response.headers().clone();
        let text = response.text().await.expect("read the response body");
        Answer {
            status,
            headers,
            text,
        }
    }

    /// The body as JSON; panics with the text when it is not JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.text)
            .unwrap_or_else(|e| panic!("body is not JSON ({e}): {}", self.text))
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Asserts the status and returns the JSON body.
    pub fn expect(&self, status: u16) -> Value {
        assert_eq!(
            self.status.as_u16(),
            status,
            "expected {status}, got {}: {}",
            self.status,
            self.text
        );
        self.json()
    }

    /// Asserts an empty 204 answer.
    pub fn expect_no_content(&self) {
        assert_eq!(self.status.as_u16(), 204, "expected 204: {}", self.text);
        assert!(self.text.is_empty(), "204 with a body: {}", self.text);
    }

    /// Checks that this is the error envelope with `status` and `code`:
    /// JSON, one key `detail` holding a `code` and a non-empty `message`,
    /// and on 401 the `WWW-Authenticate: Bearer realm="service"` header.
    /// Returns `detail` or what is wrong.
    pub fn check_error(&self, status: u16, code: &str) -> Result<Value, String> {
        if self.status.as_u16() != status {
            return Err(format!(
                "expected {status} {code}, got {}: {}",
                self.status, self.text
            ));
        }
        let content_type = self.header(CONTENT_TYPE.as_str()).unwrap_or("");
        if !content_type.starts_with("application/json") {
            return Err(format!("error is not JSON ({content_type}): {}", self.text));
        }
        let body: Value = serde_json::from_str(&self.text)
            .map_err(|e| format!("error body is not JSON ({e}): {}", self.text))?;
        let object = body
            .as_object()
            .ok_or_else(|| format!("error body is not an object: {}", self.text))?;
        if object.len() != 1 || !object.contains_key("detail") {
            return Err(format!("envelope must hold only `detail`: {}", self.text));
        }
        let detail = &body["detail"];
        if detail["code"] != code {
            return Err(format!("expected code {code}: {}", self.text));
        }
        if detail["message"]
            .as_str()
            .is_none_or(|m| m.trim().is_empty())
        {
            return Err(format!("error without a message: {}", self.text));
        }
        if status == 401 {
            let challenge = self.header(WWW_AUTHENTICATE.as_str());
            if challenge != Some("Bearer realm=\"service\"") {
                return Err(format!(
                    "401 {code} without `WWW-Authenticate: Bearer realm=\"service\"` (got {challenge:?})"
                ));
            }
        }
        Ok(detail.clone())
    }

    /// [`Answer::check_error`], panicking with `context` on failure.
    pub fn expect_error(&self, status: u16, code: &str, context: &str) -> Value {
        self.check_error(status, code)
            .unwrap_or_else(|why| panic!("{context}: {why}"))
    }

    /// Every `Set-Cookie` header.
    pub fn set_cookies(&self) -> Vec<String> {
        self.headers
            .get_all(SET_COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok().map(str::to_owned))
            .collect()
    }

    /// The `Set-Cookie` header of the session cookie.
    pub fn session_set_cookie(&self) -> Option<String> {
        self.set_cookies()
            .into_iter()
            .find(|c| c.starts_with(&format!("{SESSION_COOKIE}=")))
    }
}

/// Sends `request` and reads the whole answer.
pub async fn send(request: RequestBuilder) -> Answer {
    Answer::read(request.send().await.expect("send the request")).await
}

/// The attributes of a `Set-Cookie` header, lower-cased, without the value.
pub fn cookie_attributes(set_cookie: &str) -> Vec<String> {
    set_cookie
        .split(';')
        .skip(1)
        .map(|a| a.trim().to_ascii_lowercase())
        .collect()
}

/// A signed-in browser session: the cookie is sent explicitly on each call,
/// so a test can keep it after sign-out or send it where it does not belong.
#[derive(Clone)]
pub struct Session {
    client: reqwest::Client,
    base: String,
    /// The cookie value as the server set it.
    pub cookie: String,
    /// The `account` object of the sign-in answer.
    pub account: Value,
}

impl Session {
    /// `POST /api/auth/login`; panics unless it answers 200 with a cookie.
    pub async fn login(server: &Server, account: &Account) -> Session {
        let answer = send(
            server
                .client()
                .post(server.url("/api/auth/login"))
                .json(&json!({"username": account.username, "password": account.password})),
        )
        .await;
        let body = answer.expect(200);
        let set_cookie = answer
            .session_set_cookie()
            .unwrap_or_else(|| panic!("sign-in set no session cookie: {:?}", answer.headers));
        let cookie = set_cookie
            .split(';')
            .next()
            .and_then(|pair| pair.split_once('='))
            .map(|(_, value)| value.to_owned())
            .expect("cookie value");
        Session {
            client: server.client().clone(),
            base: server.base().to_owned(),
            cookie,
            account: body["account"].clone(),
        }
    }

    /// A request carrying only the session cookie.
    pub fn request(&self, method: Method, path: &str) -> RequestBuilder {
        self.client
            .request(method, format!("{}{path}", self.base))
            .header(COOKIE, format!("{SESSION_COOKIE}={}", self.cookie))
    }

    pub async fn get(&self, path: &str) -> Answer {
        send(self.request(Method::GET, path)).await
    }

    pub async fn post(&self, path: &str, body: &Value) -> Answer {
        send(self.request(Method::POST, path).json(body)).await
    }

    pub async fn put(&self, path: &str, body: &Value) -> Answer {
        send(self.request(Method::PUT, path).json(body)).await
    }

    pub async fn delete(&self, path: &str) -> Answer {
        send(self.request(Method::DELETE, path)).await
    }

    /// `POST /api/tokens` expecting 201.
    pub async fn create_token(&self, body: &Value) -> CreatedToken {
        let answer = self.post("/api/tokens", body).await;
        let view = answer.expect(201);
        CreatedToken::from_view(view)
    }

    /// A token with just `scopes`.
    pub async fn token(&self, name: &str, scopes: &[&str]) -> CreatedToken {
        self.create_token(&json!({"name": name, "scopes": scopes}))
            .await
    }

    /// `GET /api/tokens` expecting 200: the text and the parsed list.
    pub async fn list_tokens(&self) -> (String, Vec<Value>) {
        let answer = self.get("/api/tokens").await;
        let list = answer.expect(200);
        let items = list
            .as_array()
            .unwrap_or_else(|| panic!("token list is not an array: {}", answer.text))
            .clone();
        (answer.text, items)
    }
}

/// The 201 answer of a token creation.
#[derive(Debug, Clone)]
pub struct CreatedToken {
    pub id: String,
    /// The whole secret token, shown once.
    pub token: String,
    pub view: Value,
}

impl CreatedToken {
    pub fn from_view(view: Value) -> CreatedToken {
        CreatedToken {
            id: view["id"]
                .as_str()
                .unwrap_or_else(|| panic!("token view without id: {view}"))
                .to_owned(),
            token: view["token"]
                .as_str()
                .unwrap_or_else(|| panic!("creation answer without token: {view}"))
                .to_owned(),
            view,
        }
    }

    /// The random part after the identifying prefix.
    pub fn secret_part(&self) -> &str {
        secret_part(&self.token)
    }
}

/// `dragoman_` + 8 identifying characters + `_` + 43 URL-safe characters:
/// returns what is wrong with `token`, if anything.
pub fn token_form_problem(token: &str) -> Option<String> {
    let Some(rest) = token.strip_prefix("dragoman_") else {
        return Some("does not start with dragoman_".into());
    };
    if rest.len() != 8 + 1 + 43 {
        return Some(format!("wrong length {}", token.len()));
    }
    let (id, secret) = rest.split_at(8);
    if !id.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return Some("identifying part is not alphanumeric".into());
    }
    let Some(secret) = secret.strip_prefix('_') else {
        return Some("no `_` after the identifying part".into());
    };
    if !secret
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return Some("secret is not URL-safe".into());
    }
    None
}

/// The secret part of a well-formed token.
pub fn secret_part(token: &str) -> &str {
    &token["dragoman_".len() + 9..]
}

/// `GET path` with `Authorization: Bearer token` only.
pub async fn bearer_get(server: &Server, path: &str, token: &str) -> Answer {
    send(server.client().get(server.url(path)).bearer_auth(token)).await
}

/// Sends `method path` over a raw HTTP/1.1 connection whose headers announce
/// `declared` body bytes, writes only `body` (which may be shorter), then
/// reads the answer.
///
/// This is how a test observes a refusal of an oversized body: a client
/// that keeps writing after the server has answered and closed gets a TCP
/// reset that can destroy the answer before it is read. Writing just past
/// the limit leaves nothing unread on the server side, so the answer always
/// arrives.
pub async fn raw_request(
    host: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    declared: usize,
    body: &[u8],
) -> Answer {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(host)
        .await
        .expect("connect to the gateway");
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nContent-Length: {declared}\r\nConnection: close\r\n"
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream
        .write_all(head.as_bytes())
        .await
        .expect("write the head");
    // The server may answer and close before everything is written.
    let _ = stream.write_all(body).await;
    let mut received = Vec::new();
    let read = tokio::time::timeout(std::time::Duration::from_secs(20), async {
        let mut buffer = [0u8; 8192];
        loop {
            match stream.read(&mut buffer).await {
                Ok(0) => break,
                Ok(n) => received.extend_from_slice(&buffer[..n]),
                Err(e) if received.is_empty() => panic!("no answer to {method} {path}: {e}"),
                Err(_) => break,
            }
            if answer_is_complete(&received) {
                break;
            }
        }
    })
    .await;
    assert!(
        read.is_ok(),
        "no complete answer to {method} {path} in time"
    );
    parse_answer(&received)
}

fn split_head(raw: &[u8]) -> Option<(&[u8], &[u8])> {
    let at = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    Some((&raw[..at], &raw[at + 4..]))
}

fn content_length(head: &str) -> Option<usize> {
    head.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.trim()
            .eq_ignore_ascii_case("content-length")
            .then(|| value.trim().parse().ok())?
    })
}

fn answer_is_complete(raw: &[u8]) -> bool {
    split_head(raw).is_some_and(|(head, body)| {
        content_length(&String::from_utf8_lossy(head)).is_some_and(|len| body.len() >= len)
    })
}

fn parse_answer(raw: &[u8]) -> Answer {
    let (head, body) = split_head(raw)
        .unwrap_or_else(|| panic!("incomplete answer: {}", String::from_utf8_lossy(raw)));
    let head = String::from_utf8_lossy(head);
    let mut lines = head.lines();
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse::<u16>().ok())
        .and_then(|code| StatusCode::from_u16(code).ok())
        .unwrap_or_else(|| panic!("bad status line `{status_line}`"));
    let mut headers = HeaderMap::new();
    for line in lines {
        if let Some((name, value)) = line.split_once(':')
            && let (Ok(name), Ok(value)) = (
                reqwest::header::HeaderName::from_bytes(name.trim().as_bytes()),
                reqwest::header::HeaderValue::from_str(value.trim()),
            )
        {
            headers.append(name, value);
        }
    }
    let length = content_length(&head).unwrap_or(body.len()).min(body.len());
    Answer {
        status,
        headers,
        text: String::from_utf8_lossy(&body[..length]).into_owned(),
    }
}
