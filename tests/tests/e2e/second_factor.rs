//! The second factor over HTTP: enrolment, sign-in with a code or a
//! recovery code, replays and too many wrong codes refused, recovery codes
//! renewed, the user turning it off and an administrator's reset; secrets
//! and codes never reach the audit log or the server's log.

use dragoman_e2e::{Account, Answer, Backend, Server, Session, on_both_backends, send};
use serde_json::{Value, json};
use totp_rs::{Algorithm, Secret, TOTP};

on_both_backends!(
    enrol_sign_in_and_turn_off,
    too_many_wrong_codes,
    administrator_reset
);

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs()
}

/// The code of `secret` (base32) at Unix second `at`, as an authenticator
/// app computes it.
fn code_at(secret: &str, at: u64) -> String {
    let bytes = Secret::Encoded(secret.to_owned())
        .to_bytes()
        .expect("the secret is base32");
    TOTP::new(Algorithm::SHA1, 6, 1, 30, bytes)
        .expect("a valid TOTP secret")
        .generate(at)
}

async fn sign_in(server: &Server, account: &Account, code: Option<&str>) -> Answer {
    let mut body = json!({"username": account.username, "password": account.password});
    if let Some(code) = code {
        body["code"] = json!(code);
    }
    send(
        server
            .client()
            .post(server.url("/api/auth/login"))
            .json(&body),
    )
    .await
}

/// Enrols and confirms the second factor of the session's account: the
/// secret and the recovery codes. The confirming code is the current one.
async fn enrol(session: &Session) -> (String, Vec<String>) {
    let begun = session
        .post("/api/auth/second-factor", &json!({}))
        .await
        .expect(200);
    let secret = begun["secret"].as_str().expect("secret").to_owned();
    let confirmed = session
        .post(
            "/api/auth/second-factor/confirm",
            &json!({"code": code_at(&secret, now())}),
        )
        .await
        .expect(200);
    (secret, recovery_codes(&confirmed))
}

fn recovery_codes(answer: &Value) -> Vec<String> {
    answer["recovery_codes"]
        .as_array()
        .unwrap_or_else(|| panic!("no recovery codes: {answer}"))
        .iter()
        .map(|c| c.as_str().expect("a code").to_owned())
        .collect()
}

fn expect_refused(answer: &Answer, status: u16, code: &str, what: &str) {
    answer.expect_error(status, code, what);
    assert!(
        answer.session_set_cookie().is_none(),
        "{what}: a cookie was set"
    );
}

async fn enrol_sign_in_and_turn_off(backend: Backend) {
    let server = Server::start(backend).await;
    let admin = server.create_user("audit-reader", true).await;
    let account = server.create_user("two-steps", false).await;
    let session = Session::login(&server, &account).await;
    let signed_out = Session::login(&server, &account).await;

    let state = session.get("/api/auth/second-factor").await.expect(200);
    assert_eq!(
        state,
        json!({"enabled": false, "pending": false, "recovery_codes_left": 0})
    );

    // Enrolment: a secret and its otpauth URL; asking again replaces it.
    let first = session
        .post("/api/auth/second-factor", &json!({}))
        .await
        .expect(200);
    let first_secret = first["secret"].as_str().expect("secret").to_owned();
    let begun = session
        .post("/api/auth/second-factor", &json!({}))
        .await
        .expect(200);
    let secret = begun["secret"].as_str().expect("secret").to_owned();
    assert_ne!(secret, first_secret, "a new enrolment has a new secret");
    let url = begun["otpauth_url"].as_str().expect("otpauth_url");
    assert!(
        url.starts_with("otpauth://totp/Dragoman:two-steps?")
            && url.contains(&format!("secret={secret}"))
            && url.contains("issuer=Dragoman"),
        "{url}"
    );
    let state = session.get("/api/auth/second-factor").await.expect(200);
    assert_eq!(
        (state["enabled"].clone(), state["pending"].clone()),
        (json!(false), json!(true))
    );

    // Pending, sign-in still takes the password alone.
    sign_in(&server, &account, None).await.expect(200);

    // A wrong code does not confirm. (Each wrong code below counts toward
    // the account's five per five minutes: this scenario stays under.)
    session
        .post(
            "/api/auth/second-factor/confirm",
            &json!({"code": "000000"}),
        )
        .await
        .expect_error(422, "invalid_code", "wrong confirming code");
    let confirmed_at = now();
    let confirmed = session
        .post(
            "/api/auth/second-factor/confirm",
            &json!({"code": code_at(&secret, confirmed_at)}),
        )
        .await
        .expect(200);
    let codes = recovery_codes(&confirmed);
    assert_eq!(codes.len(), 10, "{confirmed}");
    session
        .post("/api/auth/second-factor", &json!({}))
        .await
        .expect_error(409, "second_factor_enabled", "enrolling twice");
    session
        .post(
            "/api/auth/second-factor/confirm",
            &json!({"code": code_at(&secret, now())}),
        )
        .await
        .expect_error(409, "second_factor_enabled", "confirming twice");
    let state = session.get("/api/auth/second-factor").await.expect(200);
    assert_eq!(
        state,
        json!({"enabled": true, "pending": false, "recovery_codes_left": 10})
    );

    // Signed out, the password alone no longer signs in.
    send(
        signed_out
            .request(reqwest::Method::POST, "/api/auth/logout")
            .json(&json!({})),
    )
    .await
    .expect_no_content();
    let answer = sign_in(&server, &account, None).await;
    expect_refused(&answer, 401, "second_factor_required", "no code");
    let wrong_password = Account {
        username: account.username.clone(),
        password: "not the right password".into(),
    };
    let answer = sign_in(&server, &wrong_password, Some(&code_at(&secret, now()))).await;
    expect_refused(&answer, 401, "unauthorized", "wrong password with a code");
    let answer = sign_in(&server, &account, Some("123456")).await;
    expect_refused(&answer, 401, "unauthorized", "wrong code");

    // The next step's code (the confirming one is used up) signs in once.
    let next = code_at(&secret, confirmed_at + 30);
    let answer = sign_in(&server, &account, Some(&next)).await;
    answer.expect(200);
    assert!(answer.session_set_cookie().is_some(), "no cookie");
    let answer = sign_in(&server, &account, Some(&next)).await;
    expect_refused(&answer, 401, "unauthorized", "replayed code");

    // A recovery code signs in once.
    let answer = sign_in(&server, &account, Some(&codes[0])).await;
    answer.expect(200);
    let answer = sign_in(&server, &account, Some(&codes[0])).await;
    expect_refused(&answer, 401, "unauthorized", "reused recovery code");
    let state = session.get("/api/auth/second-factor").await.expect(200);
    assert_eq!(state["recovery_codes_left"], 9, "{state}");

    // A fresh set replaces the old one, given a code.
    let renewed = session
        .post(
            "/api/auth/second-factor/recovery-codes",
            &json!({"code": codes[1]}),
        )
        .await
        .expect(200);
    let fresh = recovery_codes(&renewed);
    assert_eq!(fresh.len(), 10);
    assert!(fresh.iter().all(|code| !codes.contains(code)), "{renewed}");
    // Typed in capitals without dashes, a fresh code works; an old one not
    // (the fifth wrong code of this scenario: the last code it sends).
    let typed = fresh[0].replace('-', "").to_uppercase();
    sign_in(&server, &account, Some(&typed)).await.expect(200);
    let answer = sign_in(&server, &account, Some(&codes[2])).await;
    expect_refused(&answer, 401, "unauthorized", "a code of the old set");
    let state = session.get("/api/auth/second-factor").await.expect(200);
    assert_eq!(state["recovery_codes_left"], 9, "{state}");

    // Turning it off takes the password again.
    let answer = send(
        session
            .request(reqwest::Method::DELETE, "/api/auth/second-factor")
            .json(&json!({"password": "not the right password"})),
    )
    .await;
    let detail = answer.expect_error(422, "invalid_payload", "wrong password");
    assert_eq!(detail["issues"][0]["loc"], json!(["body", "password"]));
    assert!(!answer.text.contains("not the right password"), "echoed");
    send(
        session
            .request(reqwest::Method::DELETE, "/api/auth/second-factor")
            .json(&json!({"password": account.password})),
    )
    .await
    .expect_no_content();
    sign_in(&server, &account, None).await.expect(200);
    let state = session.get("/api/auth/second-factor").await.expect(200);
    assert_eq!(
        state,
        json!({"enabled": false, "pending": false, "recovery_codes_left": 0})
    );

    // The audit log tells what happened, never a secret or a code.
    let reader = Session::login(&server, &admin).await;
    let audit = reader.get("/api/audit?limit=200").await;
    let lines = audit.expect(200);
    let actions: Vec<&str> = lines["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter(|line| line["target_id"] == session.account["id"])
        .filter_map(|line| line["action"].as_str())
        .collect();
    for action in [
        "account.second_factor.enable",
        "account.second_factor.recovery_used",
        "account.second_factor.recovery_renew",
        "account.second_factor.disable",
    ] {
        assert!(actions.contains(&action), "{action} missing: {actions:?}");
    }
    let log = server.stderr();
    for secret_text in [&secret, &first_secret]
        .into_iter()
        .chain(codes.iter())
        .chain(fresh.iter())
    {
        assert!(
            !audit.text.contains(secret_text.as_str()),
            "the audit log holds {secret_text}"
        );
        assert!(
            !log.contains(secret_text.as_str()),
            "the server's log holds {secret_text}"
        );
    }
}

async fn too_many_wrong_codes(backend: Backend) {
    let server = Server::start(backend).await;
    let account = server.create_user("guesser-target", false).await;
    let other = server.create_user("bystander", false).await;
    let session = Session::login(&server, &account).await;
    let (secret, codes) = enrol(&session).await;
    let (other_secret, _) = enrol(&Session::login(&server, &other).await).await;

    // Wrong codes count alike wherever they are sent: one here, four at
    // sign-in.
    session
        .post(
            "/api/auth/second-factor/recovery-codes",
            &json!({"code": "zzzz-zzzz-zzzz-zzzz"}),
        )
        .await
        .expect_error(422, "invalid_code", "renewing with a wrong code");
    for attempt in 1..5 {
        let answer = sign_in(&server, &account, Some("000000")).await;
        expect_refused(
            &answer,
            401,
            "unauthorized",
            &format!("wrong code {attempt}"),
        );
    }
    // Past five wrong codes, even a right one is refused for a while.
    let answer = sign_in(&server, &account, Some(&code_at(&secret, now() + 30))).await;
    expect_refused(
        &answer,
        429,
        "rate_limited",
        "a right code after five wrong",
    );
    let seconds: u64 = answer
        .header("retry-after")
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no Retry-After: {:?}", answer.headers));
    assert!((1..=300).contains(&seconds), "Retry-After {seconds}");
    let answer = sign_in(&server, &account, Some(&codes[0])).await;
    expect_refused(
        &answer,
        429,
        "rate_limited",
        "a recovery code after five wrong",
    );
    session
        .post(
            "/api/auth/second-factor/recovery-codes",
            &json!({"code": codes[0]}),
        )
        .await
        .expect_error(429, "rate_limited", "renewing after five wrong");
    // The password alone still answers as before: no code was checked.
    let answer = sign_in(&server, &account, None).await;
    expect_refused(&answer, 401, "second_factor_required", "no code");

    // Another account is not held back.
    sign_in(&server, &other, Some(&code_at(&other_secret, now() + 30)))
        .await
        .expect(200);
}

async fn administrator_reset(backend: Backend) {
    let server = Server::start(backend).await;
    let admin = server.create_user("second-admin", true).await;
    let account = server.create_user("lost-phone", false).await;
    let session = Session::login(&server, &account).await;
    enrol(&session).await;
    let answer = sign_in(&server, &account, None).await;
    expect_refused(&answer, 401, "second_factor_required", "enrolled");

    let admin_session = Session::login(&server, &admin).await;
    let id = session.account["id"].as_str().expect("id");
    admin_session
        .delete(&format!("/api/users/{id}/second-factor"))
        .await
        .expect_no_content();
    sign_in(&server, &account, None).await.expect(200);
    let state = session.get("/api/auth/second-factor").await.expect(200);
    assert_eq!(
        state,
        json!({"enabled": false, "pending": false, "recovery_codes_left": 0})
    );
}
