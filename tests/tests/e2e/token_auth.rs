//! Bearer authentication as a client sees it (spec 5 and 7): each way a
//! token can fail has its own 401 code and the `WWW-Authenticate` header;
//! a session cookie never opens a token route and a token never opens a
//! session route; a revocation reaches every process of an installation.

use dragoman_e2e::{
    Answer, Backend, Installation, Server, Session, bearer_get, eventually, on_both_backends, send,
};
use dragoman_testing::env::cluster_urls;
use reqwest::header::{AUTHORIZATION, COOKIE};
use sea_orm::ConnectionTrait;
use serde_json::json;
use std::time::{Duration, Instant};

on_both_backends!(failures_have_their_codes, cookie_and_token_never_cross);

const SERIES: &str = "/api/v1/series";

async fn with_authorization(server: &Server, value: &str) -> Answer {
    send(
        server
            .client()
            .get(server.url(SERIES))
            .header(AUTHORIZATION, value),
    )
    .await
}

async fn failures_have_their_codes(backend: Backend) {
    let server = Server::start(backend).await;
    let account = server.create_user("token-failures", false).await;
    let session = Session::login(&server, &account).await;
    let good = session.token("good", &["series:read"]).await;

    // The token works to begin with, and its use is recorded.
    assert!(good.view["last_used_at"].is_null(), "{}", good.view);
    bearer_get(&server, SERIES, &good.token).await.expect(200);
    let (_, tokens) = session.list_tokens().await;
    let used = tokens[0]["last_used_at"].as_i64();
    let created = good.view["created_at"].as_i64().expect("created_at");
    assert!(
        used.is_some_and(|at| at >= created),
        "last_used_at after a call: {}",
        tokens[0]
    );

    // No header at all.
    send(server.client().get(server.url(SERIES)))
        .await
        .expect_error(401, "missing_token", "no Authorization header");

    // Not a token.
    with_authorization(&server, "Bearer garbage")
        .await
        .expect_error(401, "invalid_token", "Bearer garbage");
    // The right identifying prefix with another secret of the right form.
    let prefix_len = "dragoman_".len() + 9;
    let forged_secret: String = good
        .secret_part()
        .chars()
        .map(|c| if c == 'A' { 'B' } else { 'A' })
        .collect();
    let forged = format!("{}{forged_secret}", &good.token[..prefix_len]);
    assert_ne!(forged, good.token);
    with_authorization(&server, &format!("Bearer {forged}"))
        .await
        .expect_error(401, "invalid_token", "valid prefix, wrong secret");
    // A well-formed token that was never issued.
    let unknown = format!("dragoman_zzzz9999_{}", "x".repeat(43));
    with_authorization(&server, &format!("Bearer {unknown}"))
        .await
        .expect_error(401, "invalid_token", "well-formed unknown token");
    // The right token under another scheme.
    with_authorization(&server, &format!("Basic {}", good.token))
        .await
        .expect_error(401, "invalid_token", "Basic with the token");
    with_authorization(&server, "Basic dXNlcjpwYXNzd29yZA==")
        .await
        .expect_error(401, "invalid_token", "Basic user:password");

    // Revoked: DELETE answers the view, then the token is refused for good.
    let revoked = session.token("to revoke", &["series:read"]).await;
    bearer_get(&server, SERIES, &revoked.token)
        .await
        .expect(200);
    let view = session
        .delete(&format!("/api/tokens/{}", revoked.id))
        .await
        .expect(200);
    assert_eq!(view["state"], "revoked", "{view}");
    assert!(view["revoked_at"].is_i64(), "{view}");
    assert!(
        view.get("token").is_none(),
        "revocation shows the secret: {view}"
    );
    bearer_get(&server, SERIES, &revoked.token)
        .await
        .expect_error(401, "revoked_token", "revoked token");

    // Expired: created for one day, then its expiry moved into the past.
    let expiring = session
        .create_token(&json!({"name": "expiring", "scopes": ["series:read"], "expires_in_days": 1}))
        .await;
    let created_at = expiring.view["created_at"].as_i64().expect("created_at");
    let expires_at = expiring.view["expires_at"].as_i64().expect("expires_at");
    assert_eq!(expires_at - created_at, 86_400, "{}", expiring.view);
    bearer_get(&server, SERIES, &expiring.token)
        .await
        .expect(200);
    assert!(
        expiring
            .id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-'),
        "unexpected id form {}",
        expiring.id
    );
    let db = server.installation.sql().await;
    let changed = db
        .execute_unprepared(&format!(
            "UPDATE api_tokens SET expires_at = {} WHERE id = '{}'",
            created_at - 60,
            expiring.id
        ))
        .await
        .expect("move the expiry into the past");
    assert_eq!(changed.rows_affected(), 1);
    let _ = db.close().await;
    // An edit behind the service's back announces nothing: it applies once
    // what the service kept of the token has lived its two seconds. Until
    // then the token still opens the route, and nothing else may answer.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        let answer = bearer_get(&server, SERIES, &expiring.token).await;
        if answer.check_error(401, "expired_token").is_ok() {
            break;
        }
        answer.expect(200);
        assert!(
            tokio::time::Instant::now() < deadline,
            "the expired token still opens the route"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (_, tokens) = session.list_tokens().await;
    let listed = tokens
        .iter()
        .find(|t| t["id"] == expiring.id.as_str())
        .expect("expired token listed");
    assert_eq!(listed["state"], "expired", "{listed}");

    // The owner disabled, then enabled again.
    server
        .cli_ok(&["admin", "disable-user", "--username", &account.username])
        .await;
    bearer_get(&server, SERIES, &good.token).await.expect_error(
        401,
        "inactive_account",
        "owner disabled",
    );
    // The owner's session stops too, and signing in again is refused.
    session.get("/api/tokens").await.expect_error(
        401,
        "inactive_account",
        "disabled account's session",
    );
    send(
        server
            .client()
            .post(server.url("/api/auth/login"))
            .json(&json!({"username": account.username, "password": account.password})),
    )
    .await
    .expect_error(401, "inactive_account", "sign-in of a disabled account");
    server
        .cli_ok(&["admin", "enable-user", "--username", &account.username])
        .await;
    bearer_get(&server, SERIES, &good.token).await.expect(200);
}

async fn cookie_and_token_never_cross(backend: Backend) {
    let server = Server::start(backend).await;
    let account = server.create_user("crossing", true).await;
    let session = Session::login(&server, &account).await;
    let token = session.token("everything", &dragoman_e2e::SCOPES).await;

    // A signed-in (administrator) cookie alone on token routes.
    for path in [SERIES, "/api/v1/providers"] {
        send(
            server
                .client()
                .get(server.url(path))
                .header(COOKIE, format!("dragoman_session={}", session.cookie)),
        )
        .await
        .expect_error(401, "missing_token", &format!("cookie alone on {path}"));
    }

    // A bearer token with every scope alone on session routes.
    for path in ["/api/tokens", "/api/auth/session", "/api/providers"] {
        send(
            server
                .client()
                .get(server.url(path))
                .bearer_auth(&token.token),
        )
        .await
        .expect_error(401, "unauthorized", &format!("token alone on GET {path}"));
    }
    let before = session.list_tokens().await.1.len();
    send(
        server
            .client()
            .post(server.url("/api/tokens"))
            .bearer_auth(&token.token)
            .json(&json!({"name": "via token", "scopes": ["series:read"]})),
    )
    .await
    .expect_error(401, "unauthorized", "token alone on POST /api/tokens");
    assert_eq!(
        session.list_tokens().await.1.len(),
        before,
        "a token created a token"
    );

    // The session cookie as a bearer token is not a token either.
    with_authorization(&server, &format!("Bearer {}", session.cookie))
        .await
        .expect_error(401, "invalid_token", "session cookie value as bearer");
}

/// Two processes of one installation (Postgres and Redis), both having
/// authenticated a token: once it is revoked through one, that one refuses
/// it at the next call, and the other as soon as the announcement reaches
/// it, well before what it kept of the token would have expired.
#[tokio::test]
async fn a_revocation_reaches_every_process_at_once() {
    let Some((database, redis)) =
        cluster_urls("token_auth::a_revocation_reaches_every_process_at_once")
    else {
        return;
    };
    let installation = Installation::cluster(&database, &redis).await;
    let one = Server::builder(installation.clone()).start().await;
    let two = Server::builder(installation.clone()).start().await;
    let account = one.create_user("two-processes", false).await;
    let session = Session::login(&one, &account).await;
    let token = session.token("shared", &["series:read"]).await;
    bearer_get(&one, SERIES, &token.token).await.expect(200);
    bearer_get(&two, SERIES, &token.token).await.expect(200);
    let kept_since = Instant::now();

    session
        .delete(&format!("/api/tokens/{}", token.id))
        .await
        .expect(200);
    bearer_get(&one, SERIES, &token.token).await.expect_error(
        401,
        "revoked_token",
        "the revoking process, next call",
    );
    let refused = eventually(
        Duration::from_secs(5),
        "the other process refuses the revoked token",
        || async {
            let answer = bearer_get(&two, SERIES, &token.token).await;
            (answer.status.as_u16() == 401).then_some(answer)
        },
    )
    .await;
    // Two seconds is how long a process keeps an authenticated token when
    // nothing announces a change; refused before that, it was told.
    let took = kept_since.elapsed();
    assert!(
        took < Duration::from_millis(1500),
        "refused only after {took:?}: the announcement did not reach it"
    );
    refused.expect_error(401, "revoked_token", "the other process");
}
