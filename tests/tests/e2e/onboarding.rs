//! The administrator's first-run checklist over HTTP (`/api/onboarding`):
//! each item turns done as the installation gets what it names (however
//! it got it: the CLI, the session routes, the environment) and undone
//! when it loses it; the administrator hides items or the whole list,
//! unknown items are refused at their index, changes are audit-logged,
//! and only administrators see any of it.

use dragoman_e2e::translation::chapter;
use dragoman_e2e::{
    Backend, Installation, SCOPES, Server, Session, Simulator, on_both_backends, send,
};
use dragoman_model::entities::{audit_log, setting};
use dragoman_model::vocab::AuditAction;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
use serde_json::{Value, json};

on_both_backends!(
    the_checklist_follows_the_installation,
    the_administrator_hides_items
);

/// Every item key, in the checklist's order.
const KEYS: [&str; 6] = [
    "provider",
    "default_provider",
    "mail",
    "webhooks",
    "first_token",
    "first_book",
];

const SECRET: &str = "a global webhook signing secret of 40 chars";

/// `GET /api/onboarding`, checked for its shape.
async fn checklist(admin: &Session) -> Value {
    let list = admin.get("/api/onboarding").await.expect(200);
    let keys: Vec<&str> = list["items"]
        .as_array()
        .unwrap_or_else(|| panic!("no items: {list}"))
        .iter()
        .filter_map(|item| item["key"].as_str())
        .collect();
    assert_eq!(keys, KEYS, "{list}");
    list
}

/// The keys of the items done.
async fn done(admin: &Session) -> Vec<String> {
    let list = checklist(admin).await;
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|item| item["done"] == true)
        .filter_map(|item| item["key"].as_str().map(str::to_owned))
        .collect()
}

async fn the_checklist_follows_the_installation(backend: Backend) {
    let installation = Installation::new(backend).await;
    let admin_account = installation.create_user("first-admin", true).await;
    let reader = installation.create_user("reader", false).await;
    let server = Server::builder(installation.clone()).start().await;
    let admin = Session::login(&server, &admin_account).await;
    let reader = Session::login(&server, &reader).await;

    // Administrators only.
    reader.get("/api/onboarding").await.expect_error(
        403,
        "admin_required",
        "GET by a non-administrator",
    );
    reader
        .put("/api/onboarding", &json!({"dismissed": true}))
        .await
        .expect_error(403, "admin_required", "PUT by a non-administrator");

    // A fresh installation: nothing done, nothing hidden.
    let list = checklist(&admin).await;
    assert_eq!(list["complete"], false, "{list}");
    assert_eq!(list["dismissed"], false, "{list}");
    for item in list["items"].as_array().into_iter().flatten() {
        assert_eq!(
            (&item["done"], &item["dismissed"]),
            (&json!(false), &json!(false))
        );
    }

    // A lone provider (added with the CLI) is also the default in force.
    let simulator = Simulator::start(&[]).await;
    let provider_id = installation
        .add_simulator_provider(&simulator.openai_base_url(), &[])
        .await;
    assert_eq!(done(&admin).await, ["provider", "default_provider"]);
    // A second one: no default until one is chosen.
    installation
        .cli_ok(&[
            "provider",
            "add",
            "--name",
            "second",
            "--kind",
            "openai",
            "--model",
            "other-model",
            "--base-url",
            &simulator.openai_base_url(),
        ])
        .await;
    assert_eq!(done(&admin).await, ["provider"]);
    admin
        .put(
            "/api/providers/default",
            &json!({"provider_id": provider_id}),
        )
        .await
        .expect(200);
    assert_eq!(done(&admin).await, ["provider", "default_provider"]);

    // A token, then none once it is revoked.
    let first = admin.token("first", &["series:read"]).await;
    assert!(done(&admin).await.contains(&"first_token".to_owned()));
    admin
        .delete(&format!("/api/tokens/{}", first.id))
        .await
        .expect(200);
    assert!(!done(&admin).await.contains(&"first_token".to_owned()));
    let token = admin.token("automation", &SCOPES).await;

    // Webhooks need both a signing secret and allowed hosts.
    admin
        .put("/api/settings/webhooks", &json!({"secret": SECRET}))
        .await
        .expect(200);
    assert!(!done(&admin).await.contains(&"webhooks".to_owned()));
    admin
        .put(
            "/api/settings/webhooks",
            &json!({"hosts": ["hooks.example.org"]}),
        )
        .await
        .expect(200);
    assert!(done(&admin).await.contains(&"webhooks".to_owned()));
    // Back to the environment, which sets none here but does for a
    // process started with them.
    admin.delete("/api/settings/webhooks").await.expect(200);
    assert!(!done(&admin).await.contains(&"webhooks".to_owned()));
    let configured = Server::builder(installation.clone())
        .env("API_WEBHOOK_SECRET", SECRET)
        .env("API_WEBHOOK_HOSTS", "hooks.example.org")
        .start()
        .await;
    let configured_admin = Session::login(&configured, &admin_account).await;
    assert!(
        done(&configured_admin)
            .await
            .contains(&"webhooks".to_owned())
    );
    drop(configured);
    let both = json!({"secret": SECRET, "hosts": ["hooks.example.org"]});
    admin.put("/api/settings/webhooks", &both).await.expect(200);

    // Mail: configured exactly when its settings row exists.
    let db = installation.sql().await;
    setting::save(
        &db,
        dragoman_model::mail::SETTINGS_KEY,
        json!({"host": "mail.example.org"}),
    )
    .await
    .expect("mail settings row");
    assert!(done(&admin).await.contains(&"mail".to_owned()));

    // A first book: a request that only imports.
    let body = json!({
        "series": {"name": "Onboarding", "create_if_missing": true},
        "volume": {"number": 1},
        "source_language": "en",
        "target_language": "fr",
        "provider_id": provider_id,
        "chapters": [chapter("Onboarding", 1, 2)],
        "pipeline": {"start": false},
    });
    send(
        server
            .client()
            .post(server.url("/api/v1/translation-requests"))
            .bearer_auth(&token.token)
            .json(&body),
    )
    .await
    .expect(202);
    let list = checklist(&admin).await;
    assert_eq!(
        done(&admin).await,
        KEYS.iter().map(|k| k.to_string()).collect::<Vec<_>>()
    );
    assert_eq!(list["complete"], true, "{list}");
    assert_eq!(list["dismissed"], false, "{list}");
}

async fn the_administrator_hides_items(backend: Backend) {
    let server = Server::start(backend).await;
    let admin = Session::login(&server, &server.create_user("admin", true).await).await;

    // Hiding every item but one leaves the checklist incomplete.
    let answer = admin
        .put(
            "/api/onboarding",
            &json!({"dismissed_items": ["mail", "webhooks", "first_book", "provider", "mail"]}),
        )
        .await;
    let list = answer.expect(200);
    let hidden: Vec<&str> = list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|item| item["dismissed"] == true)
        .filter_map(|item| item["key"].as_str())
        .collect();
    assert_eq!(hidden, ["provider", "mail", "webhooks", "first_book"]);
    assert_eq!(list["complete"], false, "{list}");
    assert_eq!(checklist(&admin).await, list, "the choice is kept");

    // The rest: complete, yet still shown until the whole list is hidden.
    let list = admin
        .put("/api/onboarding", &json!({"dismissed_items": KEYS}))
        .await
        .expect(200);
    assert_eq!(
        (&list["complete"], &list["dismissed"]),
        (&json!(true), &json!(false))
    );
    let list = admin
        .put("/api/onboarding", &json!({"dismissed": true}))
        .await
        .expect(200);
    assert_eq!(
        (&list["complete"], &list["dismissed"]),
        (&json!(true), &json!(true))
    );
    // A field left out keeps its value.
    let list = admin
        .put("/api/onboarding", &json!({"dismissed_items": []}))
        .await
        .expect(200);
    assert_eq!(
        (&list["complete"], &list["dismissed"]),
        (&json!(false), &json!(true))
    );

    // Refusals: an unknown item at its index, unknown fields, nulls.
    let cases = [
        (
            json!({"dismissed_items": ["mail", "coffee-4711"]}),
            json!(["body", "dismissed_items", 1]),
            "enum",
        ),
        (
            json!({"dismissed_items": "mail-4711"}),
            json!(["body", "dismissed_items"]),
            "type_error",
        ),
        (
            json!({"dismissed": "yes-4711"}),
            json!(["body", "dismissed"]),
            "type_error",
        ),
        (
            json!({"dismissed": null}),
            json!(["body", "dismissed"]),
            "type_error",
        ),
        (
            json!({"hidden": true}),
            json!(["body", "hidden"]),
            "extra_forbidden",
        ),
    ];
    for (body, loc, kind) in cases {
        let answer = admin.put("/api/onboarding", &body).await;
        let detail = answer.expect_error(422, "invalid_payload", &body.to_string());
        assert_eq!(detail["issues"][0]["loc"], loc, "{body}");
        assert_eq!(detail["issues"][0]["type"], kind, "{body}");
        assert!(!answer.text.contains("4711"), "echoed: {}", answer.text);
    }
    assert_eq!(checklist(&admin).await, list, "nothing changed");

    // Each change is in the audit log, by the administrator.
    let db = server.installation.sql().await;
    let lines = audit_log::Entity::find()
        .filter(audit_log::Column::Action.eq(AuditAction::OnboardingUpdate))
        .all(&db)
        .await
        .expect("audit lines");
    assert_eq!(lines.len(), 4, "{lines:?}");
    for line in &lines {
        assert_eq!(
            line.actor_account_id.as_deref(),
            admin.account["id"].as_str()
        );
    }
    let hidden_all = json!({"dismissed": true, "dismissed_items": []});
    assert!(
        lines.iter().any(|line| line.details == hidden_all),
        "{lines:?}"
    );
}
