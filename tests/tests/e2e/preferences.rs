//! The signed-in user's own preferences over HTTP (`/api/account`): read,
//! changed field by field, read back; bad values refused at their paths
//! without being echoed; another account untouched; writes from another
//! site refused; the change audit-logged by field names only.

use dragoman_e2e::{Backend, Server, Session, on_both_backends, send};
use dragoman_model::entities::audit_log;
use dragoman_model::vocab::AuditAction;
use reqwest::Method;
use reqwest::header::ORIGIN;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
use serde_json::{Value, json};

on_both_backends!(
    own_preferences_are_read_and_changed,
    bad_preferences_are_refused
);

const ADDRESS: &str = "ada.lovelace@example.org";

/// What a fresh account's owner reads.
fn fresh(session: &Session, username: &str) -> Value {
    json!({
        "id": session.account["id"],
        "username": username,
        "email": null,
        "is_admin": false,
        "priority_ceiling": "normal",
        "notify_on_finish": false,
        "mail_language": "en",
        "second_factor": false,
    })
}

async fn own_preferences_are_read_and_changed(backend: Backend) {
    let server = Server::start(backend).await;
    let ada = Session::login(&server, &server.create_user("ada", false).await).await;
    let bob = Session::login(&server, &server.create_user("bob", false).await).await;

    assert_eq!(
        ada.get("/api/account").await.expect(200),
        fresh(&ada, "ada")
    );

    // Every field at once, then read back.
    let mut expected = fresh(&ada, "ada");
    expected["email"] = json!(ADDRESS);
    expected["notify_on_finish"] = json!(true);
    expected["mail_language"] = json!("fr");
    let body = json!({"email": ADDRESS, "notify_on_finish": true, "mail_language": "fr"});
    assert_eq!(ada.put("/api/account", &body).await.expect(200), expected);
    assert_eq!(ada.get("/api/account").await.expect(200), expected);

    // One field changes, the others stay; null clears the address.
    expected["mail_language"] = json!("en");
    let answer = ada
        .put("/api/account", &json!({"mail_language": "en"}))
        .await;
    assert_eq!(answer.expect(200), expected);
    expected["email"] = Value::Null;
    let answer = ada.put("/api/account", &json!({"email": null})).await;
    assert_eq!(answer.expect(200), expected);
    assert_eq!(ada.get("/api/account").await.expect(200), expected);

    // Another account is untouched.
    assert_eq!(
        bob.get("/api/account").await.expect(200),
        fresh(&bob, "bob")
    );

    // Another site's page cannot change it; the service's own pages can.
    let from = |origin: String| {
        send(
            ada.request(Method::PUT, "/api/account")
                .header(ORIGIN, origin)
                .json(&json!({"notify_on_finish": false})),
        )
    };
    from("https://evil.example".into()).await.expect_error(
        403,
        "forbidden",
        "PUT /api/account from another site",
    );
    assert_eq!(ada.get("/api/account").await.expect(200), expected);
    expected["notify_on_finish"] = json!(false);
    let answer = from(format!("http://{}", server.host())).await;
    assert_eq!(answer.expect(200), expected);

    // Without a session, nothing.
    send(server.client().get(server.url("/api/account")))
        .await
        .expect_error(401, "unauthorized", "GET /api/account without a session");

    // The audit log names the fields changed, never the address.
    let db = server.installation.sql().await;
    let lines = audit_log::Entity::find()
        .filter(audit_log::Column::Action.eq(AuditAction::AccountPreferences))
        .all(&db)
        .await
        .expect("audit lines");
    assert_eq!(lines.len(), 4, "{lines:?}");
    for line in &lines {
        assert_eq!(line.target_id.as_deref(), ada.account["id"].as_str());
        assert!(
            !line.details.to_string().contains("example.org"),
            "{line:?}"
        );
    }
    let everything = json!({"fields": ["email", "notify_on_finish", "mail_language"]});
    assert!(
        lines.iter().any(|line| line.details == everything),
        "{lines:?}"
    );
}

async fn bad_preferences_are_refused(backend: Backend) {
    let server = Server::start(backend).await;
    let ada = Session::login(&server, &server.create_user("ada", false).await).await;
    let before = ada.get("/api/account").await.expect(200);

    let too_long = format!("{}@example.org", "a".repeat(320));
    let cases = [
        (json!({"email": "no-at-sign-4711"}), "email", "pattern"),
        (json!({"email": "two@at@signs-4711"}), "email", "pattern"),
        (
            json!({"email": "with space-4711@example.org"}),
            "email",
            "pattern",
        ),
        (json!({"email": ""}), "email", "pattern"),
        (json!({"email": too_long}), "email", "string_too_long"),
        (json!({"email": 4711}), "email", "type_error"),
        (
            json!({"notify_on_finish": "yes-4711"}),
            "notify_on_finish",
            "type_error",
        ),
        (
            json!({"notify_on_finish": null}),
            "notify_on_finish",
            "type_error",
        ),
        (json!({"mail_language": "de-4711"}), "mail_language", "enum"),
        (
            json!({"mail_language": null}),
            "mail_language",
            "type_error",
        ),
        (
            json!({"username": "someone-else-4711"}),
            "username",
            "extra_forbidden",
        ),
        (json!({"is_admin": true}), "is_admin", "extra_forbidden"),
    ];
    for (body, field, kind) in cases {
        let answer = ada.put("/api/account", &body).await;
        let detail = answer.expect_error(422, "invalid_payload", &body.to_string());
        assert_eq!(detail["issues"][0]["loc"], json!(["body", field]), "{body}");
        assert_eq!(detail["issues"][0]["type"], kind, "{body}");
        assert!(
            !answer.text.contains("4711"),
            "the value is echoed: {}",
            answer.text
        );
    }
    let answer = ada
        .put("/api/account", &json!({"mail_language": "de"}))
        .await;
    let detail = answer.expect_error(422, "invalid_payload", "unknown language");
    let message = detail["issues"][0]["msg"].as_str().unwrap_or_default();
    assert!(message.contains("en, fr"), "{detail}");

    assert_eq!(ada.get("/api/account").await.expect(200), before);
}
