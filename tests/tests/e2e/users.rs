//! Administrator account management over HTTP (spec 4.9): an account's
//! life from creation to deletion with what it owns moved to another, the
//! rules that keep an installation administrable (the last administrator,
//! seats, administrators only, same-origin writes), and the audit log that
//! records every change without a password in it.

use dragoman_e2e::translation::chapter;
use dragoman_e2e::{Account, Api, Backend, SCOPES, Server, Session, bearer_get, on_both_backends};
use reqwest::Method;
use reqwest::header::ORIGIN;
use sea_orm::ConnectionTrait;
use serde_json::{Value, json};

on_both_backends!(
    an_accounts_life,
    rules_that_keep_the_installation_administrable
);

const FIRST_PASSWORD: &str = "first password of ada";
const NEW_PASSWORD: &str = "second password of ada";

/// The account's id in a user view.
fn id_of(view: &Value) -> String {
    view["id"].as_str().expect("id").to_owned()
}

/// Series names a token sees.
async fn series_names(server: &Server, token: &str) -> Vec<String> {
    let list = bearer_get(server, "/api/v1/series", token)
        .await
        .expect(200);
    list.as_array()
        .expect("series list")
        .iter()
        .map(|s| s["name"].as_str().expect("name").to_owned())
        .collect()
}

/// An import-only request creating `series` with the token.
async fn import(api: &Api, token: &str, series: &str) {
    let mut body = api.payload(series, vec![chapter(series, 1, 1)]);
    body["pipeline"] = json!({"start": false});
    api.submit_with(token, &body).await.expect(202);
}

/// The user's session and a token with every scope.
async fn sign_in_with_token(server: &Server, username: &str, password: &str) -> (Session, String) {
    let account = Account {
        username: username.to_owned(),
        password: password.to_owned(),
    };
    let session = Session::login(server, &account).await;
    let token = session.token("work", &SCOPES).await.token;
    (session, token)
}

/// The audit lines of a query, checked to hold no password.
async fn audit(admin: &Session, query: &str) -> (Vec<Value>, u64) {
    let answer = admin.get(&format!("/api/audit?{query}")).await;
    let page = answer.expect(200);
    for secret in [FIRST_PASSWORD, NEW_PASSWORD, "hash"] {
        assert!(!answer.text.contains(secret), "audit log: {}", answer.text);
    }
    let total = page["total"].as_u64().expect("total");
    (page["items"].as_array().expect("items").clone(), total)
}

async fn an_accounts_life(backend: Backend) {
    let api = Api::start(backend).await;
    let server = &api.server;
    let admin = api.session().await;
    let admin_id = admin.account["id"].as_str().expect("admin id").to_owned();

    // Created with a view that holds no secret.
    let answer = admin
        .post(
            "/api/users",
            &json!({"username": "Ada", "password": FIRST_PASSWORD, "email": "ada@example.org"}),
        )
        .await;
    let view = answer.expect(201);
    assert!(!answer.text.contains(FIRST_PASSWORD), "{}", answer.text);
    assert!(!answer.text.contains("password"), "{}", answer.text);
    assert_eq!(view["username"], "Ada");
    assert_eq!(view["email"], "ada@example.org");
    assert_eq!(view["is_admin"], false);
    assert_eq!(view["active"], true);
    assert_eq!(view["priority_ceiling"], "normal");
    assert_eq!(view["word_allowance"], Value::Null);
    assert_eq!(view["second_factor"], false);
    assert!(
        view["created_at"]
            .as_i64()
            .is_some_and(|t| t > 1_700_000_000)
    );
    let ada = id_of(&view);

    // The same name in another case is taken; bad fields are located, not
    // echoed.
    admin
        .post(
            "/api/users",
            &json!({"username": "ada", "password": FIRST_PASSWORD}),
        )
        .await
        .expect_error(409, "username_taken", "the name in another case");
    let answer = admin
        .post(
            "/api/users",
            &json!({"username": "x", "password": "tiny-secret", "email": "no address here"}),
        )
        .await;
    let detail = answer.expect_error(422, "invalid_payload", "bad fields");
    let locs: Vec<Value> = detail["issues"]
        .as_array()
        .expect("issues")
        .iter()
        .map(|i| i["loc"].clone())
        .collect();
    assert_eq!(
        locs,
        vec![
            json!(["body", "username"]),
            json!(["body", "password"]),
            json!(["body", "email"])
        ]
    );
    for value in ["tiny-secret", "no address here"] {
        assert!(!answer.text.contains(value), "{}", answer.text);
    }

    // Listed; edited field by field.
    let list = admin.get("/api/users?limit=200").await.expect(200);
    assert_eq!(list["total"], 2, "{list}");
    assert!(
        list["items"]
            .as_array()
            .expect("items")
            .iter()
            .any(|u| u["id"] == ada.as_str())
    );
    let page = admin.get("/api/users?limit=1&offset=1").await.expect(200);
    assert_eq!(page["items"].as_array().expect("items").len(), 1);
    admin
        .get("/api/users?limit=0")
        .await
        .expect_error(422, "invalid_request", "a limit of 0");
    let path = format!("/api/users/{ada}");
    let edited = admin
        .put(
            &path,
            &json!({"email": null, "priority_ceiling": "low", "word_allowance": 1000}),
        )
        .await
        .expect(200);
    assert_eq!(edited["email"], Value::Null);
    assert_eq!(edited["priority_ceiling"], "low");
    assert_eq!(edited["word_allowance"], 1000);
    assert_eq!(edited["username"], "Ada", "left out, kept");
    let edited = admin
        .put(&path, &json!({"word_allowance": null}))
        .await
        .expect(200);
    assert_eq!(edited["word_allowance"], Value::Null);
    assert_eq!(edited["priority_ceiling"], "low");

    // A new password: the old one no longer signs in, the new one does,
    // and a token of the user opens the automation API.
    admin
        .put(
            &format!("{path}/password"),
            &json!({"password": NEW_PASSWORD}),
        )
        .await
        .expect_no_content();
    let old = dragoman_e2e::send(
        server
            .client()
            .post(server.url("/api/auth/login"))
            .json(&json!({"username": "Ada", "password": FIRST_PASSWORD})),
    )
    .await;
    old.expect_error(401, "unauthorized", "the old password");
    let (ada_session, ada_token) = sign_in_with_token(server, "Ada", NEW_PASSWORD).await;
    import(&api, &ada_token, "Ada's shelf").await;
    assert_eq!(series_names(server, &ada_token).await, ["Ada's shelf"]);

    // Owning something, the account is not deleted without a recipient.
    admin
        .delete(&path)
        .await
        .expect_error(409, "account_not_empty", "a series owned");

    // Disabled: the token and the session stop at once.
    let disabled = admin
        .put(&path, &json!({"active": false}))
        .await
        .expect(200);
    assert_eq!(disabled["active"], false);
    bearer_get(server, "/api/v1/series", &ada_token)
        .await
        .expect_error(401, "inactive_account", "the disabled user's token");
    ada_session.get("/api/auth/session").await.expect_error(
        401,
        "inactive_account",
        "the disabled user's session",
    );

    // The recipient must be another account, and exist.
    for (query, what) in [
        ("transfer_to=no-such-account", "an unknown recipient"),
        (&format!("transfer_to={ada}") as &str, "the account itself"),
    ] {
        let detail = admin.delete(&format!("{path}?{query}")).await.expect_error(
            422,
            "invalid_request",
            what,
        );
        assert_eq!(detail["issues"][0]["loc"], json!(["query", "transfer_to"]));
    }

    // A second user whose series has the name of one of the recipient's:
    // the deletion is refused whole, nothing moves.
    let bo = admin
        .post(
            "/api/users",
            &json!({"username": "bo", "password": FIRST_PASSWORD}),
        )
        .await
        .expect(201);
    let bo = id_of(&bo);
    let (_, bo_token) = sign_in_with_token(server, "bo", FIRST_PASSWORD).await;
    import(&api, &api.token, "Common").await;
    import(&api, &bo_token, "Common").await;
    let detail = admin
        .delete(&format!("/api/users/{bo}?transfer_to={admin_id}"))
        .await
        .expect_error(409, "conflict", "a series name the recipient uses");
    assert_eq!(detail["clash"], "series_name", "{detail}");
    assert_eq!(series_names(server, &bo_token).await, ["Common"]);

    // Deleted with a recipient: the series is the recipient's, the token
    // is gone.
    admin
        .delete(&format!("{path}?transfer_to={admin_id}"))
        .await
        .expect_no_content();
    let mut mine = series_names(server, &api.token).await;
    mine.sort();
    assert_eq!(mine, ["Ada's shelf", "Common"]);
    let answer = bearer_get(server, "/api/v1/series", &ada_token).await;
    assert_eq!(answer.status.as_u16(), 401, "{}", answer.text);
    admin
        .put(&path, &json!({"active": true}))
        .await
        .expect_error(404, "user_not_found", "a deleted account");

    // The audit log: every change to Ada, by the administrator.
    let (lines, total) = audit(&admin, &format!("account_id={ada}&limit=200")).await;
    let actions: Vec<&str> = lines
        .iter()
        .map(|l| l["action"].as_str().expect("action"))
        .collect();
    assert_eq!(total as usize, lines.len());
    for action in [
        "account.create",
        "account.update",
        "account.allowance",
        "account.password",
        "account.disable",
        "account.delete",
    ] {
        assert!(actions.contains(&action), "{action} missing: {actions:?}");
    }
    assert_eq!(actions[0], "account.delete", "newest first: {actions:?}");
    for line in &lines {
        if line["target_type"] == "account" {
            assert_eq!(line["target_id"], ada.as_str(), "{line}");
            assert_eq!(line["actor_account_id"], admin_id.as_str(), "{line}");
        } else {
            // What Ada did herself is hers too.
            assert_eq!(line["action"], "token.create", "{line}");
            assert_eq!(line["actor_account_id"], ada.as_str(), "{line}");
        }
    }
    assert!(actions.contains(&"token.create"), "{actions:?}");
    let (lines, total) = audit(&admin, "action=account.password").await;
    assert_eq!(total, 1);
    assert_eq!(lines[0]["target_id"], ada.as_str());
    let detail = admin
        .get("/api/audit?action=account.nothing")
        .await
        .expect_error(422, "invalid_request", "an unknown action");
    assert_eq!(detail["issues"][0]["loc"], json!(["query", "action"]));
}

async fn rules_that_keep_the_installation_administrable(backend: Backend) {
    let server = Server::start(backend).await;
    let chief = server.create_user("chief", true).await;
    let admin = Session::login(&server, &chief).await;
    let chief_id = admin.account["id"].as_str().expect("id").to_owned();
    let own = format!("/api/users/{chief_id}");

    // The last active administrator stays one, and stays.
    for body in [json!({"is_admin": false}), json!({"active": false})] {
        admin
            .put(&own, &body)
            .await
            .expect_error(409, "last_administrator", &body.to_string());
    }
    admin
        .delete(&own)
        .await
        .expect_error(409, "last_administrator", "deleting the last one");

    // A second administrator, demoted by the first: now a user who may not
    // manage accounts.
    let deputy = admin
        .post(
            "/api/users",
            &json!({"username": "deputy", "password": FIRST_PASSWORD, "is_admin": true}),
        )
        .await
        .expect(201);
    assert_eq!(deputy["priority_ceiling"], "high");
    let deputy_path = format!("/api/users/{}", id_of(&deputy));
    admin
        .put(&deputy_path, &json!({"is_admin": false}))
        .await
        .expect(200);
    let user = Session::login(
        &server,
        &Account {
            username: "deputy".into(),
            password: FIRST_PASSWORD.into(),
        },
    )
    .await;
    for (method, path) in [
        (Method::GET, "/api/users"),
        (Method::GET, "/api/users/seats"),
        (Method::GET, "/api/audit"),
        (Method::PUT, own.as_str()),
        (Method::DELETE, own.as_str()),
    ] {
        let answer = dragoman_e2e::send(user.request(method.clone(), path).json(&json!({}))).await;
        answer.expect_error(403, "admin_required", &format!("{method} {path}"));
    }
    user.post(
        "/api/users",
        &json!({"username": "sneaky", "password": FIRST_PASSWORD}),
    )
    .await
    .expect_error(403, "admin_required", "a user creating an account");

    // Another site's page cannot create an account with the cookie.
    let answer = dragoman_e2e::send(
        admin
            .request(Method::POST, "/api/users")
            .header(ORIGIN, "https://elsewhere.example")
            .json(&json!({"username": "forged", "password": FIRST_PASSWORD})),
    )
    .await;
    answer.expect_error(403, "forbidden", "a cross-site creation");
    let list = admin.get("/api/users").await.expect(200);
    assert_eq!(list["total"], 2, "{list}");

    // Seats: none by default; a licence with two allows two active
    // accounts, counting creations and accounts enabled again.
    let seats = admin.get("/api/users/seats").await.expect(200);
    assert_eq!(seats, json!({"allowed": null, "used": 2}));
    let licence = json!({"plan": "enterprise", "subscribed_at": "2026-01-01", "seats": 0});
    let detail = admin
        .put("/api/settings/licence", &licence)
        .await
        .expect_error(422, "invalid_payload", "no seat");
    assert_eq!(detail["issues"][0]["loc"], json!(["body", "seats"]));
    let licence = json!({"plan": "enterprise", "subscribed_at": "2026-01-01", "seats": 2});
    admin
        .put("/api/settings/licence", &licence)
        .await
        .expect(200);
    let seats = admin.get("/api/users/seats").await.expect(200);
    assert_eq!(seats, json!({"allowed": 2, "used": 2}));
    admin
        .post(
            "/api/users",
            &json!({"username": "third", "password": FIRST_PASSWORD}),
        )
        .await
        .expect_error(409, "seat_limit", "a third active account");
    admin
        .put(&deputy_path, &json!({"active": false}))
        .await
        .expect(200);
    let third = admin
        .post(
            "/api/users",
            &json!({"username": "third", "password": FIRST_PASSWORD}),
        )
        .await
        .expect(201);
    admin
        .put(&deputy_path, &json!({"active": true}))
        .await
        .expect_error(409, "seat_limit", "enabling past the seats");
    let seats = admin.get("/api/users/seats").await.expect(200);
    assert_eq!(seats, json!({"allowed": 2, "used": 2}));
    // An account that owns nothing goes without a recipient.
    admin
        .delete(&format!("/api/users/{}", id_of(&third)))
        .await
        .expect_no_content();
    admin
        .put(&deputy_path, &json!({"active": true}))
        .await
        .expect(200);

    // The second factor reset by an administrator.
    let db = server.installation.sql().await;
    db.execute_unprepared(
        "UPDATE accounts SET second_factor_secret = 'sealed', \
         second_factor_enabled_at = 1, recovery_codes = '[\"h\"]' \
         WHERE username = 'deputy'",
    )
    .await
    .expect("enrol the second factor");
    let deputy_of = |list: &Value| {
        list["items"]
            .as_array()
            .expect("items")
            .iter()
            .find(|u| u["username"] == "deputy")
            .cloned()
            .expect("deputy listed")
    };
    let list = admin.get("/api/users").await.expect(200);
    assert_eq!(deputy_of(&list)["second_factor"], true);
    admin
        .delete(&format!("{deputy_path}/second-factor"))
        .await
        .expect_no_content();
    let list = admin.get("/api/users").await.expect(200);
    assert_eq!(deputy_of(&list)["second_factor"], false);
    admin
        .delete("/api/users/no-such-account/second-factor")
        .await
        .expect_error(404, "user_not_found", "an unknown account");
    let (lines, total) = audit(&admin, "action=account.second_factor.reset").await;
    assert_eq!(total, 1, "{lines:?}");
}
