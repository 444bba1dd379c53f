//! The error envelope in both languages (spec 2.12 and 7): errors the
//! framework produces (unknown route, wrong method, body too large, wrong
//! media type, malformed JSON) carry the same `{"detail": {code, message}}`
//! body as the handlers' own, French by default and English with
//! `Accept-Language: en`: same code, different message.

use dragoman_e2e::client::raw_request;
use dragoman_e2e::{Answer, Backend, Installation, Server, Session, on_both_backends, send};
use futures::future::BoxFuture;
use reqwest::header::{ACCEPT_LANGUAGE, CONTENT_TYPE};
use reqwest::{Method, RequestBuilder};
use serde_json::json;

on_both_backends!(both_languages);

/// Sends the case's request, in English when asked.
type Sender = Box<dyn Fn(bool) -> BoxFuture<'static, Answer>>;

struct Case {
    what: &'static str,
    status: u16,
    code: &'static str,
    send: Sender,
}

/// A case sent with reqwest.
fn http(make: impl Fn() -> RequestBuilder + 'static) -> Sender {
    Box::new(move |english| {
        let request = make();
        let request = if english {
            request.header(ACCEPT_LANGUAGE, "en")
        } else {
            request
        };
        Box::pin(send(request))
    })
}

/// A body announced as 2 MiB of which just over the 1 MiB limit is written
/// (see `raw_request` for why not all of it).
fn oversized(host: String, path: &'static str, cookie: Option<String>) -> Sender {
    Box::new(move |english| {
        let (host, cookie) = (host.clone(), cookie.clone());
        Box::pin(async move {
            let mut headers = vec![("Content-Type", "application/json".to_owned())];
            if let Some(cookie) = cookie {
                headers.push(("Cookie", format!("dragoman_session={cookie}")));
            }
            if english {
                headers.push(("Accept-Language", "en".to_owned()));
            }
            let headers: Vec<(&str, &str)> =
                headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
            let mut body = br#"{"name": ""#.to_vec();
            body.resize(LIMIT + 1024, b'x');
            raw_request(&host, "POST", path, &headers, 2 * LIMIT, &body).await
        })
    })
}

const LIMIT: usize = 1024 * 1024;

async fn both_languages(backend: Backend) {
    let server = Server::builder(Installation::new(backend).await)
        .env("API_MAX_PAYLOAD_MB", "1")
        .start()
        .await;
    let account = server.create_user("polyglot", false).await;
    let session = Session::login(&server, &account).await;

    let client = server.client().clone();
    let get = |path: &str| {
        let (client, url) = (client.clone(), server.url(path));
        http(move || client.get(&url))
    };
    let on_session = |method: Method,
                      path: &'static str,
                      content_type: Option<&'static str>,
                      body: &'static str| {
        let session = session.clone();
        http(move || {
            let request = session.request(method.clone(), path);
            let request = match content_type {
                Some(kind) => request.header(CONTENT_TYPE, kind),
                None => request,
            };
            if body.is_empty() {
                request
            } else {
                request.body(body)
            }
        })
    };
    let token_body = r#"{"name":"a","scopes":["series:read"]}"#;
    let cases: Vec<Case> = vec![
        Case {
            what: "unknown route",
            status: 404,
            code: "not_found",
            send: get("/no/such/page"),
        },
        Case {
            what: "unknown session route",
            status: 404,
            code: "not_found",
            send: on_session(Method::GET, "/api/no-such-thing", None, ""),
        },
        Case {
            what: "wrong method on /health",
            status: 405,
            code: "method_not_allowed",
            send: {
                let (client, url) = (client.clone(), server.url("/health"));
                http(move || client.delete(&url))
            },
        },
        Case {
            what: "wrong method on /api/tokens",
            status: 405,
            code: "method_not_allowed",
            send: on_session(Method::PATCH, "/api/tokens", None, ""),
        },
        Case {
            what: "2 MiB body to /api/tokens over a 1 MiB limit",
            status: 413,
            code: "payload_too_large",
            send: oversized(
                server.host().to_owned(),
                "/api/tokens",
                Some(session.cookie.clone()),
            ),
        },
        Case {
            what: "2 MiB sign-in body",
            status: 413,
            code: "payload_too_large",
            send: oversized(server.host().to_owned(), "/api/auth/login", None),
        },
        Case {
            what: "text/plain body",
            status: 415,
            code: "unsupported_media_type",
            send: on_session(Method::POST, "/api/tokens", Some("text/plain"), token_body),
        },
        Case {
            what: "body without a content type",
            status: 415,
            code: "unsupported_media_type",
            send: on_session(Method::POST, "/api/tokens", None, token_body),
        },
        Case {
            what: "malformed JSON",
            status: 422,
            code: "invalid_payload",
            send: on_session(
                Method::POST,
                "/api/tokens",
                Some("application/json"),
                r#"{"name": "a", "scopes": [#oops"#,
            ),
        },
        Case {
            what: "missing token",
            status: 401,
            code: "missing_token",
            send: get("/api/v1/series"),
        },
    ];

    let mut failures = Vec::new();
    for case in &cases {
        let french = (case.send)(false).await;
        let english = (case.send)(true).await;
        if let Err(why) = compare(&french, &english, case) {
            failures.push(format!("{}: {why}", case.what));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));

    // Under the limit, the body is read and judged on its content.
    let almost = json!({"name": "y".repeat(900 * 1024), "scopes": ["series:read"]});
    session.post("/api/tokens", &almost).await.expect_error(
        422,
        "invalid_payload",
        "900 KB name under a 1 MB limit",
    );
    // And the server still works after refusing large bodies.
    session.get("/api/tokens").await.expect(200);
}

fn compare(french: &Answer, english: &Answer, case: &Case) -> Result<(), String> {
    let fr = french
        .check_error(case.status, case.code)
        .map_err(|e| format!("default language: {e}"))?;
    let en = english
        .check_error(case.status, case.code)
        .map_err(|e| format!("Accept-Language: en: {e}"))?;
    if fr["message"] == en["message"] {
        return Err(format!("same message in both languages: {}", fr["message"]));
    }
    if french.header("content-language") != Some("fr")
        || english.header("content-language") != Some("en")
    {
        return Err(format!(
            "Content-Language {:?} / {:?}",
            french.header("content-language"),
            english.header("content-language")
        ));
    }
    if case.code == "invalid_payload" {
        let issue_fr = &fr["issues"][0];
        let issue_en = &en["issues"][0];
        if issue_fr["loc"] != json!(["body"]) || issue_fr["type"] != "json_invalid" {
            return Err(format!("malformed JSON issue: {issue_fr}"));
        }
        if issue_fr["msg"] == issue_en["msg"] || issue_fr["type"] != issue_en["type"] {
            return Err(format!("issue not translated: {issue_fr} / {issue_en}"));
        }
    }
    Ok(())
}
