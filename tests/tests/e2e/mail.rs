//! Mail against a real SMTP server (aiosmtpd, see
//! `dragoman_testing::smtp`): the administrator's settings with their
//! write-only password, the test mail as it arrives, the outbox through an
//! outage (retries, then `failed`, then a retry that sends), the mail at a
//! request's end, and who may do what.

use dragoman_e2e::translation::chapter;
use dragoman_e2e::{Api, Backend, Session, eventually, on_both_backends};
use dragoman_testing::SmtpServer;
use sea_orm::{ConnectionTrait, Statement};
use serde_json::{Value, json};
use std::time::Duration;

on_both_backends!(mail_settings_outbox_and_request_end);

const SECRET: &str = "smtp-Passw0rd-never-shown";
const FROM: &str = "Dragoman <robot@example.org>";
const ADMIN_ADDRESS: &str = "admin@example.org";

fn settings(smtp: &SmtpServer, password: Option<&str>) -> Value {
    let mut body = json!({
        "host": smtp.host(),
        "port": smtp.port(),
        "security": "none",
        "username": "robot",
        "from": FROM,
    });
    if let Some(password) = password {
        body["password"] = json!(password);
    }
    body
}

/// The outbox entry `id` once `check` accepts it.
async fn entry_when(
    admin: &Session,
    id: &str,
    what: &str,
    check: impl Fn(&Value) -> bool,
) -> Value {
    eventually(Duration::from_secs(30), what, || async {
        let page = admin.get("/api/settings/mail/outbox").await.expect(200);
        let items = page["items"].as_array().cloned().unwrap_or_default();
        items.into_iter().find(|e| e["id"] == id && check(e))
    })
    .await
}

async fn execute(db: &impl ConnectionTrait, sql: &str) {
    db.execute_raw(Statement::from_string(db.get_database_backend(), sql))
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
}

async fn mail_settings_outbox_and_request_end(backend: Backend) {
    let Some(mut smtp) = SmtpServer::start().await else {
        return;
    };
    let api = Api::builder(backend)
        .env("DRAGOMAN_MAIL_MAX_ATTEMPTS", "3")
        .env("DRAGOMAN_MAIL_RETRY_FIRST_MS", "200")
        .env("DRAGOMAN_MAIL_RETRY_LONGEST_MS", "400")
        .env("DRAGOMAN_MAIL_TIMEOUT_SECONDS", "5")
        .start()
        .await;
    let db = api.server.installation.sql().await;
    // The administrator reads French and wants to know when a request ends.
    execute(
        &db,
        &format!(
            "UPDATE accounts SET email = '{ADMIN_ADDRESS}', mail_language = 'fr', \
             notify_on_finish = true WHERE username = 'translator'"
        ),
    )
    .await;
    let admin = api.session().await;

    // Not configured: the view says so, and a test mail is refused.
    let view = admin.get("/api/settings/mail").await.expect(200);
    assert_eq!(view["configured"], false, "{view}");
    admin
        .post("/api/settings/mail/test", &json!({}))
        .await
        .expect_error(409, "mail_not_configured", "test before settings");

    // Anyone else is refused, whatever the route.
    let reader = api.server.create_user("reader", false).await;
    let reader = Session::login(&api.server, &reader).await;
    reader
        .get("/api/settings/mail")
        .await
        .expect_error(403, "admin_required", "reader GET");
    reader
        .put("/api/settings/mail", &settings(&smtp, Some(SECRET)))
        .await
        .expect_error(403, "admin_required", "reader PUT");
    reader
        .post("/api/settings/mail/test", &json!({}))
        .await
        .expect_error(403, "admin_required", "reader test");
    reader.get("/api/settings/mail/outbox").await.expect_error(
        403,
        "admin_required",
        "reader outbox",
    );

    // Wrong values are refused field by field, never echoed.
    let wrong = admin
        .put(
            "/api/settings/mail",
            &json!({"host": "smtp.example.org", "port": 70000, "security": "none",
                    "from": "not-an-address-at-all"}),
        )
        .await;
    let detail = wrong.expect_error(422, "invalid_payload", "wrong mail settings");
    let fields: Vec<String> = detail["issues"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|i| i["loc"].to_string())
        .collect();
    assert!(
        fields.contains(&r#"["body","port"]"#.to_owned())
            && fields.contains(&r#"["body","from"]"#.to_owned()),
        "{detail}"
    );
    assert!(
        !wrong.text.contains("not-an-address-at-all"),
        "{}",
        wrong.text
    );

    // Saved: the password is write-only, and kept when left out.
    let saved = admin
        .put("/api/settings/mail", &settings(&smtp, Some(SECRET)))
        .await;
    let view = saved.expect(200);
    assert_eq!(view["configured"], true, "{view}");
    assert_eq!(view["password_set"], true, "{view}");
    assert_eq!(view["port"], smtp.port(), "{view}");
    assert!(!saved.text.contains(SECRET), "{}", saved.text);
    let kept = admin
        .put("/api/settings/mail", &settings(&smtp, None))
        .await;
    assert_eq!(kept.expect(200)["password_set"], true, "{}", kept.text);
    let read = admin.get("/api/settings/mail").await;
    assert_eq!(read.expect(200)["username"], "robot", "{}", read.text);
    assert!(!read.text.contains(SECRET), "{}", read.text);

    // The test mail arrives, in French, authenticated with the settings.
    let queued = admin.post("/api/settings/mail/test", &json!({})).await;
    let entry = queued.expect(202);
    assert_eq!(entry["kind"], "test", "{entry}");
    assert_eq!(entry["to"], ADMIN_ADDRESS, "{entry}");
    let id = entry["id"].as_str().expect("id").to_owned();
    let mails = smtp.wait_for(1, Duration::from_secs(30)).await;
    let mail = &mails[0];
    assert_eq!(mail.mail_from, "robot@example.org");
    assert_eq!(mail.rcpt_to, [ADMIN_ADDRESS]);
    assert_eq!(mail.auth_login.as_deref(), Some("robot"));
    assert_eq!(mail.header("From"), Some(FROM), "{:?}", mail.headers);
    assert_eq!(mail.header("To"), Some(ADMIN_ADDRESS), "{:?}", mail.headers);
    assert_eq!(mail.subject, "Dragoman : courriel d'essai");
    assert!(mail.header("Date").is_some(), "{:?}", mail.headers);
    assert_eq!(
        mail.header("Message-ID"),
        Some(format!("<{id}@example.org>").as_str()),
        "{:?}",
        mail.headers
    );
    assert!(mail.body.contains("courriel d'essai"), "{}", mail.body);
    let sent = entry_when(&admin, &id, "the test mail listed as sent", |e| {
        e["state"] == "sent"
    })
    .await;
    assert!(sent["sent_at"].is_number(), "{sent}");
    assert!(sent.get("body").is_none(), "{sent}");

    // An outage: the mail waits with its error, then fails after 3 attempts.
    smtp.stop().await;
    let queued = admin
        .post(
            "/api/settings/mail/test",
            &json!({"to": "other@example.org"}),
        )
        .await;
    let outage_id = queued.expect(202)["id"].as_str().expect("id").to_owned();
    let waiting = entry_when(&admin, &outage_id, "a failed attempt recorded", |e| {
        e["state"] == "pending" && e["attempts"].as_u64() >= Some(1) && e["last_error"] != ""
    })
    .await;
    assert!(waiting["next_attempt_at"].is_number(), "{waiting}");
    let failed = entry_when(&admin, &outage_id, "the mail failed", |e| {
        e["state"] == "failed"
    })
    .await;
    assert_eq!(failed["attempts"], 3, "{failed}");
    assert!(!failed["last_error"].as_str().unwrap_or("").is_empty());
    let listed = admin.get("/api/settings/mail/outbox?state=failed").await;
    let page = listed.expect(200);
    assert_eq!(page["total"], 1, "{page}");
    assert!(!listed.text.contains(SECRET), "{}", listed.text);

    // Back up, a retry sends it; only a failed mail can be retried.
    smtp.restart().await;
    let retried = admin
        .post(
            &format!("/api/settings/mail/outbox/{outage_id}/retry"),
            &json!({}),
        )
        .await;
    assert_eq!(retried.expect(200)["state"], "pending", "{}", retried.text);
    entry_when(&admin, &outage_id, "the retried mail sent", |e| {
        e["state"] == "sent"
    })
    .await;
    let mails = smtp.wait_for(2, Duration::from_secs(30)).await;
    assert_eq!(mails[1].rcpt_to, ["other@example.org"]);
    admin
        .post(&format!("/api/settings/mail/outbox/{id}/retry"), &json!({}))
        .await
        .expect_error(409, "conflict", "retry of a sent mail");
    admin
        .post("/api/settings/mail/outbox/no-such-mail/retry", &json!({}))
        .await
        .expect_error(404, "mail_not_found", "retry of no mail");

    // A request's end is mailed to its owner, in their language.
    let body = api.payload("Avis de fin", vec![chapter("Fin", 1, 2)]);
    let summary = api.submit_ok(&body).await;
    let request_id = summary["request_id"]
        .as_str()
        .expect("request id")
        .to_owned();
    let doc = api.wait_final(&request_id, Duration::from_secs(120)).await;
    let mails = smtp.wait_for(3, Duration::from_secs(30)).await;
    let finished = &mails[2];
    assert_eq!(finished.rcpt_to, [ADMIN_ADDRESS]);
    assert!(
        finished.subject.starts_with("Dragoman : « ") && finished.body.contains(&request_id),
        "{} / {}: {}",
        finished.subject,
        finished.body,
        doc["status"]
    );

    // Nothing the server stored or logged holds the password in clear.
    let audit = db
        .query_all_raw(Statement::from_string(
            db.get_database_backend(),
            "SELECT action, details FROM audit_log WHERE action LIKE 'mail.%'",
        ))
        .await
        .expect("audit log");
    assert!(audit.len() >= 4, "settings, tests and retry audited");
    for row in &audit {
        let details: Value = row.try_get("", "details").expect("details");
        assert!(!details.to_string().contains(SECRET), "{details}");
    }
    assert!(
        !api.server.stderr().contains(SECRET),
        "the log holds the password"
    );

    // Cleared: not configured any more, and the test mail is refused.
    let cleared = admin.delete("/api/settings/mail").await;
    assert_eq!(cleared.expect(200)["configured"], false, "{}", cleared.text);
    admin
        .post("/api/settings/mail/test", &json!({}))
        .await
        .expect_error(409, "mail_not_configured", "test after clearing");
}
