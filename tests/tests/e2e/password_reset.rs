//! Password reset by mail over HTTP: refused while no mail server is set;
//! once one is, the same 202 whether the account exists or not, a link
//! mailed to the account's address that sets a new password once, within
//! its hour, closes the account's other links and ends its sessions; at
//! most three links an hour per account; the link's secret never in the
//! audit log or the server's log. Mail goes through the delivery role to a
//! real SMTP server (aiosmtpd).

use dragoman_e2e::{
    Account, Answer, Backend, Installation, Server, Session, on_both_backends, send,
};
use dragoman_model::entities::{mail_outbox, password_reset};
use dragoman_model::vocab::MailKind;
use dragoman_testing::SmtpServer;
use dragoman_testing::smtp::ReceivedMail;
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, DatabaseConnection, EntityTrait, QueryFilter, QueryOrder};
use serde_json::{Value, json};
use std::time::Duration;

on_both_backends!(reset_by_mail);

const NEW_PASSWORD: &str = "a brand new passphrase";

async fn ask(server: &Server, name: &str) -> Answer {
    send(
        server
            .client()
            .post(server.url("/api/auth/password-reset"))
            .json(&json!({"username": name})),
    )
    .await
}

async fn confirm(server: &Server, body: &Value) -> Answer {
    send(
        server
            .client()
            .post(server.url("/api/auth/password-reset/confirm"))
            .json(body),
    )
    .await
}

async fn sign_in(server: &Server, username: &str, password: &str) -> Answer {
    send(
        server
            .client()
            .post(server.url("/api/auth/login"))
            .json(&json!({"username": username, "password": password})),
    )
    .await
}

/// The reset mails written so far, oldest first: (address, body).
async fn reset_mails(db: &DatabaseConnection) -> Vec<(String, String)> {
    mail_outbox::Entity::find()
        .filter(mail_outbox::Column::Kind.eq(MailKind::PasswordReset))
        .order_by_asc(mail_outbox::Column::CreatedAt)
        .order_by_asc(mail_outbox::Column::Id)
        .all(db)
        .await
        .expect("read the outbox")
        .into_iter()
        .map(|mail| (mail.to_address, mail.body))
        .collect()
}

/// How long a mail may take from the request to the SMTP server.
const MAIL_WITHIN: Duration = Duration::from_secs(30);

/// The mails the SMTP server received once there are `count`, checked to
/// be reset mails to the account's address.
async fn wait_for_mails(smtp: &SmtpServer, count: usize) -> Vec<ReceivedMail> {
    let mails = smtp.wait_for(count, MAIL_WITHIN).await;
    for mail in &mails {
        assert_eq!(mail.rcpt_to, ["forgetful@example.test"], "{mail:?}");
        assert!(
            mail.body.contains("forgetful") && mail.body.contains("60"),
            "{}",
            mail.body
        );
    }
    mails
}

/// The link's secret in a mail body: what follows `#token=`.
fn token_in(body: &str, base: &str) -> String {
    let link = body
        .split_whitespace()
        .find(|word| word.contains("#token="))
        .unwrap_or_else(|| panic!("no link in the mail: {body}"));
    assert!(
        link.starts_with(&format!("{base}/reset-password#token=")),
        "link {link} is not on {base}"
    );
    link.split_once("#token=")
        .map(|(_, token)| token.to_owned())
        .expect("a token")
}

/// Where the service says it is reached: the links lead there, never to
/// the `Host` a request names.
const PUBLIC_URL: &str = "http://dragoman.example";

async fn reset_by_mail(backend: Backend) {
    let Some(smtp) = SmtpServer::start().await else {
        return;
    };
    let server = Server::builder(Installation::new(backend).await)
        .env("DRAGOMAN_PUBLIC_URL", PUBLIC_URL)
        .start()
        .await;
    let admin = server.create_user("reset-admin", true).await;
    let account = server.create_user("forgetful", false).await;
    let admin_session = Session::login(&server, &admin).await;
    let session = Session::login(&server, &account).await;
    let id = session.account["id"].as_str().expect("id").to_owned();
    admin_session
        .put(
            &format!("/api/users/{id}"),
            &json!({"email": "forgetful@example.test"}),
        )
        .await
        .expect(200);

    // No mail server: nothing can be sent, and the answer says so.
    ask(&server, "forgetful")
        .await
        .expect_error(409, "mail_not_configured", "mail not configured");

    admin_session
        .put(
            "/api/settings/mail",
            &json!({
                "host": smtp.host(),
                "port": smtp.port(),
                "security": "none",
                "from": "Dragoman <robot@example.test>"
            }),
        )
        .await
        .expect(200);
    let db = server.installation.sql().await;

    // By username, by address (in another case), and for nobody: the same
    // answer each time.
    for name in [
        "forgetful",
        "Forgetful@Example.TEST",
        "nobody-at-all",
        "ghost@example.test",
    ] {
        let answer = ask(&server, name).await;
        assert_eq!(answer.expect(202), json!({}), "{name}");
    }
    let mails = wait_for_mails(&smtp, 2).await;
    // Nothing more comes: neither other name designated an account.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        reset_mails(&db).await.len(),
        2,
        "a mail for nobody was written"
    );
    assert_eq!(smtp.received().len(), 2, "a mail for nobody was sent");
    let first = token_in(&mails[0].body, PUBLIC_URL);
    let second = token_in(&mails[1].body, PUBLIC_URL);
    assert_ne!(first, second);

    // A new password keeps the length rules, without echo.
    let answer = confirm(&server, &json!({"token": first, "password": "tiny-secret"})).await;
    let detail = answer.expect_error(422, "invalid_payload", "short password");
    assert_eq!(detail["issues"][0]["loc"], json!(["body", "password"]));
    assert!(
        !answer.text.contains("tiny-secret"),
        "echoed: {}",
        answer.text
    );
    confirm(
        &server,
        &json!({"token": "not-a-link", "password": NEW_PASSWORD}),
    )
    .await
    .expect_error(422, "invalid_reset_link", "unknown link");

    // The link sets the password and ends the account's sessions.
    confirm(&server, &json!({"token": first, "password": NEW_PASSWORD}))
        .await
        .expect_no_content();
    session.get("/api/auth/session").await.expect_error(
        401,
        "unauthorized",
        "a session from before the reset",
    );
    sign_in(&server, "forgetful", &account.password)
        .await
        .expect_error(401, "unauthorized", "the old password");
    let renewed = Account {
        username: account.username.clone(),
        password: NEW_PASSWORD.to_owned(),
    };
    Session::login(&server, &renewed).await;

    // Used once, and the account's other link closed with it.
    for (token, what) in [(&first, "the same link again"), (&second, "the other link")] {
        confirm(
            &server,
            &json!({"token": token, "password": "yet another passphrase"}),
        )
        .await
        .expect_error(422, "invalid_reset_link", what);
    }

    // A link past its hour does not work.
    ask(&server, "forgetful").await.expect(202);
    let mails = wait_for_mails(&smtp, 3).await;
    let third = token_in(&mails[2].body, PUBLIC_URL);
    password_reset::Entity::update_many()
        .col_expr(password_reset::Column::ExpiresAt, Expr::value(1_i64))
        .filter(password_reset::Column::UsedAt.is_null())
        .exec(&db)
        .await
        .expect("expire the link");
    confirm(
        &server,
        &json!({"token": third, "password": "yet another passphrase"}),
    )
    .await
    .expect_error(422, "invalid_reset_link", "an expired link");

    // Three links an hour: a fourth request answers the same and sends nothing.
    ask(&server, "forgetful").await.expect(202);
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        reset_mails(&db).await.len(),
        3,
        "a fourth link within the hour"
    );
    assert_eq!(smtp.received().len(), 3, "a fourth mail within the hour");

    // The audit log names requests and the reset, never a link's secret.
    let audit = admin_session.get("/api/audit?limit=200").await;
    let lines = audit.expect(200);
    let actions: Vec<&str> = lines["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter(|line| line["target_id"] == id.as_str())
        .filter_map(|line| line["action"].as_str())
        .collect();
    assert_eq!(
        actions
            .iter()
            .filter(|a| **a == "account.password_reset.request")
            .count(),
        3,
        "{actions:?}"
    );
    assert!(
        actions.contains(&"account.password_reset.complete"),
        "{actions:?}"
    );
    let log = server.stderr();
    for token in [&first, &second, &third] {
        assert!(!audit.text.contains(token.as_str()), "audit holds a link");
        assert!(!log.contains(token.as_str()), "the log holds a link");
    }
}

/// Without `DRAGOMAN_PUBLIC_URL` no link is written: a link built from the
/// asker's `Host` header would lead wherever the asker wants.
#[tokio::test]
async fn no_link_without_a_public_address() {
    let Some(smtp) = SmtpServer::start().await else {
        return;
    };
    let server = Server::start(Backend::Sqlite).await;
    let admin = server.create_user("reset-admin", true).await;
    let account = server.create_user("forgetful", false).await;
    let admin_session = Session::login(&server, &admin).await;
    admin_session
        .put(
            "/api/settings/mail",
            &json!({
                "host": smtp.host(),
                "port": smtp.port(),
                "security": "none",
                "from": "robot@example.test"
            }),
        )
        .await
        .expect(200);
    ask(&server, &account.username).await.expect_error(
        409,
        "public_url_required",
        "no public address",
    );
    let db = server.installation.sql().await;
    assert!(reset_mails(&db).await.is_empty(), "a mail was written");
}
