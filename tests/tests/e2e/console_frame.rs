//! The web console's frame, as a browser meets it: pages behind the
//! sign-in page and back after it, the sign-in form's own CSRF token, the
//! security headers (a Content-Security-Policy without inline scripts),
//! the language by `Accept-Language` and by the switch, the password
//! change, other sites' forms refused, signing out, the assets served
//! with long cache lifetimes, and the second factor's code asked for.

use dragoman_e2e::console::Console;
use dragoman_e2e::{Backend, Server, Session};
use reqwest::StatusCode;
use serde_json::json;
use totp_rs::{Algorithm, Secret, TOTP};

#[tokio::test]
async fn the_console_signs_people_in_and_out_safely() {
    let server = Server::start(Backend::Sqlite).await;
    let account = server.create_user("reader", false).await;
    let console = Console::new(&server);

    // A page asked for without a session: the sign-in page, which comes
    // back to it afterwards.
    let page = console.get("/account").await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.url.contains("/login?next=%2Faccount"), "{}", page.url);
    let policy = page
        .headers
        .get("content-security-policy")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    assert!(policy.contains("script-src 'self'"), "{policy}");
    assert!(!policy.contains("unsafe-inline"), "{policy}");
    assert!(policy.contains("frame-ancestors 'none'"), "{policy}");
    assert_eq!(
        page.headers
            .get("x-content-type-options")
            .map(|v| v.as_bytes()),
        Some(&b"nosniff"[..])
    );
    assert!(!page.html.contains("<script>"), "no inline script");
    assert!(!page.html.contains("style=\""), "no inline style");
    // French without `Accept-Language`, as the API's messages.
    assert!(page.contains("<html lang=\"fr\">"), "{}", page.html);

    // A form without its token (another site cannot read it) is refused.
    let forged = console
        .post(
            "/login",
            &[
                ("csrf", "guessed"),
                ("username", account.username.as_str()),
                ("password", account.password.as_str()),
            ],
        )
        .await;
    assert_eq!(forged.status, StatusCode::FORBIDDEN, "{}", forged.html);
    assert!(console.get("/account").await.url.contains("/login"));

    // A wrong password: the page again, saying why.
    let wrong = console
        .sign_in(&account.username, "not the password", None)
        .await;
    assert_eq!(wrong.status, StatusCode::UNAUTHORIZED);
    assert!(wrong.contains("id=\"username\""), "{}", wrong.html);

    // Signed in: back to the page asked for.
    let form = console.get("/login?next=/account").await;
    let csrf = form.csrf().expect("token");
    let signed = console
        .post(
            "/login",
            &[
                ("csrf", csrf.as_str()),
                ("next", "/account"),
                ("username", account.username.as_str()),
                ("password", account.password.as_str()),
            ],
        )
        .await;
    assert_eq!(signed.status, StatusCode::OK, "{}", signed.html);
    assert!(signed.url.ends_with("/account"), "{}", signed.url);
    assert!(signed.contains("reader"), "{}", signed.html);

    // The switch wins over the browser's language.
    let english = console.get("/language/en?next=/account").await;
    assert!(english.url.ends_with("/account"), "{}", english.url);
    assert!(english.contains("<html lang=\"en\">"), "{}", english.html);
    assert!(english.contains("Your account"), "{}", english.html);
    // A link never leads to another site.
    let elsewhere = console.get("/language/en?next=https://evil.example/").await;
    assert!(
        elsewhere.url.starts_with(&console.url("/")),
        "{}",
        elsewhere.url
    );

    // Another site's form is refused even with the cookie.
    let crossed = console
        .client
        .post(console.url("/logout"))
        .header("origin", "http://evil.example")
        .form(&[("csrf", english.csrf().expect("token").as_str())])
        .send()
        .await
        .expect("cross-site post");
    assert_eq!(crossed.status(), StatusCode::FORBIDDEN);

    // The password change: the current one first, the new one twice.
    let new_password = "a much longer new password";
    let refused = console
        .post_from(
            "/account",
            "/account/password",
            &[
                ("current", "not the password"),
                ("new", new_password),
                ("again", new_password),
            ],
        )
        .await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(refused.contains("current password"), "{}", refused.html);
    let short = console
        .post_from(
            "/account",
            "/account/password",
            &[
                ("current", account.password.as_str()),
                ("new", "short"),
                ("again", "short"),
            ],
        )
        .await;
    assert_eq!(
        short.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        short.html
    );
    let changed = console
        .post_from(
            "/account",
            "/account/password",
            &[
                ("current", account.password.as_str()),
                ("new", new_password),
                ("again", new_password),
            ],
        )
        .await;
    assert_eq!(changed.status, StatusCode::OK, "{}", changed.html);
    assert!(
        changed.contains("Your password was changed."),
        "{}",
        changed.html
    );

    // Signing out ends the session.
    let out = console.post_from("/account", "/logout", &[]).await;
    assert!(out.url.contains("/login"), "{}", out.url);
    assert!(console.get("/account").await.url.contains("/login"));
    // The old password no longer opens it; the new one does.
    let old = console
        .sign_in(&account.username, &account.password, None)
        .await;
    assert_eq!(old.status, StatusCode::UNAUTHORIZED);
    let new = console.sign_in(&account.username, new_password, None).await;
    assert_eq!(new.status, StatusCode::OK, "{}", new.html);

    // The assets: embedded, typed, cached for a year.
    let css = console
        .client
        .get(console.url("/assets/console.css"))
        .send()
        .await
        .expect("stylesheet");
    assert_eq!(css.status(), StatusCode::OK);
    let cache = css
        .headers()
        .get("cache-control")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    assert!(cache.contains("immutable"), "{cache}");
    assert!(
        css.headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/css")),
    );
}

#[tokio::test]
async fn an_account_with_a_second_factor_signs_in_with_its_code() {
    let server = Server::start(Backend::Sqlite).await;
    let account = server.create_user("guarded", false).await;
    let session = Session::login(&server, &account).await;
    let begun = session
        .post("/api/auth/second-factor", &json!({}))
        .await
        .expect(200);
    let secret = begun["secret"].as_str().expect("secret").to_owned();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs();
    let code = TOTP::new(
        Algorithm::SHA1,
        6,
        1,
        30,
        Secret::Encoded(secret).to_bytes().expect("base32"),
    )
    .expect("secret")
    .generate(now);
    let confirmed = session
        .post("/api/auth/second-factor/confirm", &json!({"code": code}))
        .await
        .expect(200);
    let recovery = confirmed["recovery_codes"][0]
        .as_str()
        .expect("a recovery code")
        .to_owned();

    let console = Console::new(&server);
    console.get("/language/en").await;
    // The password alone: the page asks for the code, nothing more.
    let asked = console
        .sign_in(&account.username, &account.password, None)
        .await;
    assert_eq!(asked.status, StatusCode::UNAUTHORIZED, "{}", asked.html);
    assert!(
        asked.contains("two-factor authentication"),
        "{}",
        asked.html
    );
    assert!(console.get("/account").await.url.contains("/login"));
    // A wrong code reads as a wrong password.
    let wrong = console
        .sign_in(&account.username, &account.password, Some("000000"))
        .await;
    assert_eq!(wrong.status, StatusCode::UNAUTHORIZED);
    // A recovery code opens it.
    let signed = console
        .sign_in(&account.username, &account.password, Some(&recovery))
        .await;
    assert_eq!(signed.status, StatusCode::OK, "{}", signed.html);
    let page = console.get("/account").await;
    assert!(page.url.ends_with("/account"), "{}", page.url);
    assert!(page.contains("Two-factor authentication"), "{}", page.html);
}
