//! Session rules (spec 4.9 and 5): sign-in failures, the cookie's
//! attributes on plain http and behind https, same-origin protection of
//! session writes, and sign-out making the cookie useless.

use dragoman_e2e::client::cookie_attributes;
use dragoman_e2e::{Answer, Backend, Server, Session, on_both_backends, send};
use reqwest::header::{COOKIE, ORIGIN, REFERER};
use serde_json::{Value, json};

on_both_backends!(
    sign_in_and_cookie,
    cross_site_writes,
    sign_out,
    demo_mode_is_read_only
);

async fn login(server: &Server, body: &Value, extra: &[(&str, &str)]) -> Answer {
    let mut request = server
        .client()
        .post(server.url("/api/auth/login"))
        .json(body);
    for (name, value) in extra {
        request = request.header(*name, *value);
    }
    send(request).await
}

fn credentials(username: &str, password: &str) -> Value {
    json!({"username": username, "password": password})
}

async fn sign_in_and_cookie(backend: Backend) {
    let server = Server::start(backend).await;
    let account = server.create_user("cookie-user", false).await;

    // Wrong password, unknown account: the same 401, no cookie.
    for (body, what) in [
        (
            credentials(&account.username, "not the right password"),
            "wrong password",
        ),
        (
            credentials("nobody-here", &account.password),
            "unknown account",
        ),
    ] {
        let answer = login(&server, &body, &[]).await;
        answer.expect_error(401, "unauthorized", what);
        assert!(answer.session_set_cookie().is_none(), "{what} set a cookie");
        assert!(
            !answer.text.contains("not the right password"),
            "the password is echoed: {}",
            answer.text
        );
    }

    // Plain http: HttpOnly, SameSite=Lax, never Secure.
    let answer = login(
        &server,
        &credentials(&account.username, &account.password),
        &[],
    )
    .await;
    let body = answer.expect(200);
    assert_eq!(
        body["account"]["username"],
        account.username.as_str(),
        "{body}"
    );
    let cookie = answer.session_set_cookie().expect("session cookie");
    let attributes = cookie_attributes(&cookie);
    assert!(attributes.contains(&"httponly".into()), "{cookie}");
    assert!(attributes.contains(&"samesite=lax".into()), "{cookie}");
    assert!(
        !attributes.contains(&"secure".into()),
        "Secure on plain http: {cookie}"
    );
    assert!(attributes.contains(&"path=/".into()), "{cookie}");

    // Behind a TLS-terminating proxy.
    let answer = login(
        &server,
        &credentials(&account.username, &account.password),
        &[("x-forwarded-proto", "https")],
    )
    .await;
    answer.expect(200);
    let cookie = answer.session_set_cookie().expect("session cookie");
    let attributes = cookie_attributes(&cookie);
    assert!(
        attributes.contains(&"secure".into()),
        "X-Forwarded-Proto: https: {cookie}"
    );
    assert!(attributes.contains(&"httponly".into()), "{cookie}");
    assert!(attributes.contains(&"samesite=lax".into()), "{cookie}");

    // The session answers who is signed in.
    let session = Session::login(&server, &account).await;
    let current = session.get("/api/auth/session").await.expect(200);
    assert_eq!(current["account"]["username"], account.username.as_str());
    assert_eq!(current["account"]["is_admin"], false);

    // A forged cookie is no session.
    send(
        server
            .client()
            .get(server.url("/api/auth/session"))
            .header(COOKIE, "dragoman_session=forged-value"),
    )
    .await
    .expect_error(401, "unauthorized", "forged cookie");

    // An installation published on https marks the cookie Secure even
    // when the request reaches it over plain http.
    let published = Server::builder(server.installation.clone())
        .env("DRAGOMAN_PUBLIC_URL", "https://dragoman.example")
        .start()
        .await;
    let answer = login(
        &published,
        &credentials(&account.username, &account.password),
        &[],
    )
    .await;
    answer.expect(200);
    let cookie = answer.session_set_cookie().expect("session cookie");
    assert!(
        cookie_attributes(&cookie).contains(&"secure".into()),
        "DRAGOMAN_PUBLIC_URL=https://…: {cookie}"
    );
}

async fn cross_site_writes(backend: Backend) {
    let server = Server::start(backend).await;
    let account = server.create_user("origin-user", false).await;
    let session = Session::login(&server, &account).await;
    let body = json!({"name": "from a page", "scopes": ["series:read"]});
    let post = |headers: Vec<(reqwest::header::HeaderName, String)>| {
        let mut request = session
            .request(reqwest::Method::POST, "/api/tokens")
            .json(&body);
        for (name, value) in headers {
            request = request.header(name, value);
        }
        send(request)
    };

    let same_origin = format!("http://{}", server.host());
    let refused = [
        (ORIGIN, "https://evil.example".to_owned()),
        (ORIGIN, "null".to_owned()),
        (ORIGIN, format!("https://{}", server.host())),
        (REFERER, "https://evil.example/page.html".to_owned()),
        (
            "sec-fetch-site".parse().expect("header name"),
            "cross-site".to_owned(),
        ),
    ];
    for (name, value) in refused {
        let answer = post(vec![(name.clone(), value.clone())]).await;
        answer.expect_error(
            403,
            "forbidden",
            &format!("POST /api/tokens with {name}: {value}"),
        );
        assert!(!answer.text.contains("dragoman_"), "{}", answer.text);
    }
    // A foreign origin cannot revoke either.
    let kept = session.token("kept", &["series:read"]).await;
    send(
        session
            .request(reqwest::Method::DELETE, &format!("/api/tokens/{}", kept.id))
            .header(ORIGIN, "https://evil.example"),
    )
    .await
    .expect_error(403, "forbidden", "DELETE from another site");
    let (_, tokens) = session.list_tokens().await;
    assert_eq!(
        tokens.len(),
        1,
        "a cross-site write changed something: {tokens:?}"
    );
    assert_eq!(tokens[0]["state"], "active");

    // The service's own pages pass.
    post(vec![(ORIGIN, same_origin.clone())]).await.expect(201);
    post(vec![(REFERER, format!("{same_origin}/settings/tokens"))])
        .await
        .expect(201);
    // Scripts send neither header.
    post(vec![]).await.expect(201);
    assert_eq!(session.list_tokens().await.1.len(), 4);

    // With a public URL, that origin is the only one accepted.
    let published = Server::builder(server.installation.clone())
        .env("DRAGOMAN_PUBLIC_URL", "https://dragoman.example")
        .start()
        .await;
    let session = Session::login(&published, &account).await;
    let answer = send(
        session
            .request(reqwest::Method::POST, "/api/tokens")
            .header(ORIGIN, format!("http://{}", published.host()))
            .json(&body),
    )
    .await;
    answer.expect_error(
        403,
        "forbidden",
        "local origin when the public URL is https",
    );
    send(
        session
            .request(reqwest::Method::POST, "/api/tokens")
            .header(ORIGIN, "https://dragoman.example")
            .json(&body),
    )
    .await
    .expect(201);
}

async fn sign_out(backend: Backend) {
    let server = Server::start(backend).await;
    let account = server.create_user("leaving-user", false).await;
    let session = Session::login(&server, &account).await;
    let other = Session::login(&server, &account).await;
    session.get("/api/tokens").await.expect(200);

    let answer = send(session.request(reqwest::Method::POST, "/api/auth/logout")).await;
    assert!(
        answer.status.is_success(),
        "logout: {} {}",
        answer.status,
        answer.text
    );
    let cleared = answer
        .session_set_cookie()
        .expect("logout clears the cookie");
    let attributes = cookie_attributes(&cleared);
    assert!(
        attributes.contains(&"max-age=0".into())
            || attributes.iter().any(|a| a.starts_with("expires=")),
        "the cookie is not cleared: {cleared}"
    );

    // The old cookie, sent again on purpose, opens nothing.
    session
        .get("/api/tokens")
        .await
        .expect_error(401, "unauthorized", "cookie after logout");
    session
        .get("/api/auth/session")
        .await
        .expect_error(401, "unauthorized", "cookie after logout");
    send(session.request(reqwest::Method::POST, "/api/auth/logout"))
        .await
        .expect_error(401, "unauthorized", "second logout");
    // Another session of the same account is untouched.
    other.get("/api/tokens").await.expect(200);
}

async fn demo_mode_is_read_only(backend: Backend) {
    let installation = dragoman_e2e::Installation::new(backend).await;
    let account = installation.create_user("demo-visitor", false).await;
    let server = Server::builder(installation)
        .env("DEMO_MODE", "true")
        .start()
        .await;

    let health = send(server.client().get(server.url("/health")))
        .await
        .expect(200);
    assert_eq!(health["demo"], true, "{health}");
    // Signing in and out stays possible; reading too.
    let session = Session::login(&server, &account).await;
    session.get("/api/tokens").await.expect(200);
    // Writes are refused, in the envelope.
    session
        .post(
            "/api/tokens",
            &json!({"name": "demo", "scopes": ["series:read"]}),
        )
        .await
        .expect_error(403, "demo_read_only", "POST /api/tokens in demo mode");
    let answer = send(
        session
            .request(reqwest::Method::DELETE, "/api/tokens/anything")
            .header("accept-language", "en"),
    )
    .await;
    answer.expect_error(403, "demo_read_only", "DELETE in demo mode");
    assert_eq!(answer.header("content-language"), Some("en"));
    assert!(session.list_tokens().await.1.is_empty());
    let answer = send(session.request(reqwest::Method::POST, "/api/auth/logout")).await;
    assert!(
        answer.status.is_success(),
        "logout in demo mode: {}",
        answer.text
    );
}
