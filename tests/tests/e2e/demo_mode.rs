//! Demo mode (`DEMO_MODE`, spec 4.9) as a visitor meets it: the demo
//! sign-in opens the read-only demo account without a password, every
//! write answers 403 `demo_read_only` (session routes, the automation API,
//! the tool protocol whatever the method), `/health` says so; without demo
//! mode the demo sign-in does not exist.

use dragoman_e2e::client::SESSION_COOKIE;
use dragoman_e2e::{Answer, Backend, Installation, Server, on_both_backends, send};
use reqwest::Method;
use reqwest::header::COOKIE;
use serde_json::json;

on_both_backends!(a_visitor_reads_the_demo_and_writes_nothing);

/// `POST /api/auth/demo` with no body.
async fn demo_sign_in(server: &Server) -> Answer {
    send(server.client().post(server.url("/api/auth/demo"))).await
}

/// The session cookie's value a sign-in answer sets.
fn cookie_of(answer: &Answer) -> String {
    let set_cookie = answer
        .session_set_cookie()
        .unwrap_or_else(|| panic!("demo sign-in set no cookie: {:?}", answer.headers));
    set_cookie
        .split(';')
        .next()
        .and_then(|pair| pair.split_once('='))
        .map(|(_, value)| value.to_owned())
        .expect("cookie value")
}

async fn a_visitor_reads_the_demo_and_writes_nothing(backend: Backend) {
    let installation = Installation::new(backend).await;
    let admin = installation.create_user("owner", true).await;
    let server = Server::builder(installation.clone())
        .env("DEMO_MODE", "true")
        .start()
        .await;

    let health = send(server.client().get(server.url("/health")))
        .await
        .expect(200);
    assert_eq!(health["demo"], true, "{health}");

    // The demo sign-in: the answer of a sign-in, and a session cookie.
    let answer = demo_sign_in(&server).await;
    let signed_in = answer.expect(200);
    assert_eq!(signed_in["account"]["username"], "demo", "{signed_in}");
    assert_eq!(signed_in["account"]["is_admin"], false, "{signed_in}");
    let cookie = cookie_of(&answer);
    let as_visitor = |method: Method, path: &str| {
        server
            .client()
            .request(method, server.url(path))
            .header(COOKIE, format!("{SESSION_COOKIE}={cookie}"))
    };
    let current = send(as_visitor(Method::GET, "/api/auth/session"))
        .await
        .expect(200);
    assert_eq!(current["account"], signed_in["account"]);
    // Reads work; an administrator's page stays an administrator's.
    send(as_visitor(Method::GET, "/api/tokens"))
        .await
        .expect(200);
    send(as_visitor(Method::GET, "/api/account"))
        .await
        .expect(200);
    send(as_visitor(Method::GET, "/api/onboarding"))
        .await
        .expect_error(
            403,
            "admin_required",
            "the demo account is no administrator",
        );

    // Writes are refused, whoever asks.
    let token = json!({"name": "visitor", "scopes": ["series:read"]});
    send(as_visitor(Method::POST, "/api/tokens").json(&token))
        .await
        .expect_error(403, "demo_read_only", "POST /api/tokens");
    send(as_visitor(Method::PUT, "/api/account").json(&json!({"notify_on_finish": true})))
        .await
        .expect_error(403, "demo_read_only", "PUT /api/account");
    send(
        server
            .client()
            .post(server.url("/api/v1/translation-requests"))
            .bearer_auth("dragoman_anything")
            .json(&json!({})),
    )
    .await
    .expect_error(403, "demo_read_only", "an automation API write");
    // The tool protocol is closed, whatever the method.
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}});
    let answer = send(
        server
            .client()
            .post(server.url("/mcp"))
            .bearer_auth("dragoman_anything")
            .header("accept", "application/json, text/event-stream")
            .json(&initialize),
    )
    .await;
    answer.expect_error(403, "demo_read_only", "POST /mcp");
    send(server.client().get(server.url("/mcp")))
        .await
        .expect_error(403, "demo_read_only", "GET /mcp");

    // Signing in with a password stays possible, and signing out.
    let session = dragoman_e2e::Session::login(&server, &admin).await;
    session.post("/api/tokens", &token).await.expect_error(
        403,
        "demo_read_only",
        "an administrator's write",
    );
    let answer = send(as_visitor(Method::POST, "/api/auth/logout")).await;
    assert!(answer.status.is_success(), "sign-out: {}", answer.text);

    // Each visitor gets the same account, also after a restart.
    let again = demo_sign_in(&server).await.expect(200);
    assert_eq!(again["account"]["id"], signed_in["account"]["id"]);
    drop(server);
    let restarted = Server::builder(installation.clone())
        .env("DEMO_MODE", "true")
        .start()
        .await;
    let again = demo_sign_in(&restarted).await.expect(200);
    assert_eq!(again["account"]["id"], signed_in["account"]["id"]);
    drop(restarted);

    // Without demo mode the demo sign-in does not exist.
    let normal = Server::builder(installation).start().await;
    let health = send(normal.client().get(normal.url("/health")))
        .await
        .expect(200);
    assert_eq!(health["demo"], false, "{health}");
    let answer = demo_sign_in(&normal).await;
    answer.expect_error(404, "not_found", "demo sign-in without demo mode");
    assert!(answer.session_set_cookie().is_none());
}
