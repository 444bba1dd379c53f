//! Providers (spec 2.10, 4.6): a provider added with `dragoman provider
//! add` is listed to tokens with exactly the public fields, never its
//! address, the name of its key variable or the key; the administrator
//! routes refuse other accounts and refuse a second provider of one name; the
//! installation's default provider is the lone one, else the one an
//! administrator chose; an administrator edits a provider's fields by the
//! rules of a new one.

use dragoman_e2e::{
    Answer, Backend, Installation, Server, Session, bearer_get, on_both_backends, send,
};
use reqwest::Method;
use serde_json::{Value, json};

on_both_backends!(
    listing_hides_addresses_and_keys,
    administrator_routes,
    an_administrator_edits_a_provider
);

const KEY_VARIABLE: &str = "E2E_PROVIDER_KEY_VARIABLE";
const KEY_VALUE: &str = "sk-e2e-0123456789abcdefSECRET";
const BASE_URL: &str = "http://llm-backend.internal.example:9911/v1";

async fn listing_hides_addresses_and_keys(backend: Backend) {
    let installation = Installation::new(backend).await;
    // The key is in the server's environment, where the provider reads it.
    let server = Server::builder(installation)
        .env(KEY_VARIABLE, KEY_VALUE)
        .start()
        .await;
    for (name, model) in [("Zeta upstream", "model-z"), ("Alpha upstream", "model-a")] {
        let mut args = vec![
            "provider",
            "add",
            "--name",
            name,
            "--kind",
            "openai",
            "--model",
            model,
            "--base-url",
            BASE_URL,
            "--api-key-env",
            KEY_VARIABLE,
            "--price-input",
            "0.5",
            "--price-output",
            "1.5",
            "--capacity",
            "4",
        ];
        if name.starts_with("Zeta") {
            args.push("--default");
        }
        let output = server.cli_ok(&args).await;
        assert!(!output.contains(KEY_VALUE), "{output}");
    }
    let listed = server.cli_ok(&["provider", "list"]).await;
    let defaults: Vec<&str> = listed
        .lines()
        .filter(|line| line.ends_with("\tdefault"))
        .collect();
    assert_eq!(defaults.len(), 1, "{listed}");
    assert!(defaults[0].contains("Zeta upstream"), "{listed}");
    let account = server.create_user("provider-reader", false).await;
    let session = Session::login(&server, &account).await;
    let token = session.token("providers", &["content:write"]).await;

    let answer = bearer_get(&server, "/api/v1/providers", &token.token).await;
    let list = answer.expect(200);
    let items = list
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {}", answer.text));
    assert_eq!(items.len(), 2, "{}", answer.text);
    let names: Vec<&str> = items.iter().filter_map(|p| p["name"].as_str()).collect();
    assert_eq!(names, ["Alpha upstream", "Zeta upstream"], "sorted by name");
    for item in items {
        let mut keys: Vec<&str> = item
            .as_object()
            .expect("object")
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            [
                "created_at",
                "default_for_series",
                "id",
                "kind",
                "model",
                "name"
            ],
            "{item}"
        );
        assert_eq!(item["kind"], "openai");
        assert!(item["id"].as_str().is_some_and(|id| !id.is_empty()));
        assert!(item["created_at"].is_i64(), "{item}");
        assert_eq!(item["default_for_series"], json!([]));
    }
    assert_eq!(items[0]["model"], "model-a");
    for hidden in [
        BASE_URL,
        "llm-backend",
        KEY_VARIABLE,
        KEY_VALUE,
        "api_key",
        "base_url",
        "sk-",
    ] {
        assert!(
            !answer.text.contains(hidden),
            "GET /api/v1/providers shows `{hidden}`: {}",
            answer.text
        );
    }
}

async fn administrator_routes(backend: Backend) {
    let server = Server::builder(Installation::new(backend).await)
        .env(KEY_VARIABLE, KEY_VALUE)
        .start()
        .await;
    let admin = server.create_user("provider-admin", true).await;
    let user = server.create_user("provider-user", false).await;
    let admin_session = Session::login(&server, &admin).await;
    let user_session = Session::login(&server, &user).await;
    let body = json!({
        "name": "Local simulator", "kind": "openai", "model": "sim-1",
        "base_url": BASE_URL, "api_key_env": KEY_VARIABLE, "capacity": 2
    });

    // Not an administrator.
    user_session.get("/api/providers").await.expect_error(
        403,
        "admin_required",
        "GET /api/providers as a user",
    );
    user_session
        .post("/api/providers", &body)
        .await
        .expect_error(403, "admin_required", "POST /api/providers as a user");

    // The administrator creates one.
    let answer = admin_session.post("/api/providers", &body).await;
    let created = answer.expect(201);
    assert_eq!(created["name"], "Local simulator", "{created}");
    assert_eq!(created["model"], "sim-1");
    assert!(
        created["id"].as_str().is_some_and(|id| !id.is_empty()),
        "{created}"
    );
    for hidden in [BASE_URL, KEY_VALUE] {
        assert!(
            !answer.text.contains(hidden),
            "creation shows `{hidden}`: {}",
            answer.text
        );
    }
    // The same name again.
    admin_session
        .post("/api/providers", &body)
        .await
        .expect_error(409, "provider_exists", "duplicate provider name");
    // A kind outside the spec's list.
    let mut bad = body.clone();
    bad["name"] = json!("Other");
    bad["kind"] = json!("carrier-pigeon");
    let answer = admin_session.post("/api/providers", &bad).await;
    let detail = answer.expect_error(422, "invalid_payload", "unknown provider kind");
    assert!(
        detail["issues"]
            .as_array()
            .is_some_and(|issues| issues.iter().any(|i| i["loc"] == json!(["body", "kind"]))),
        "{}",
        answer.text
    );

    let answer = admin_session.get("/api/providers").await;
    let list = answer.expect(200);
    let items: &Vec<Value> = list.as_array().expect("array");
    assert_eq!(items.len(), 1, "{}", answer.text);
    for hidden in [BASE_URL, KEY_VALUE] {
        assert!(
            !answer.text.contains(hidden),
            "admin list shows `{hidden}`: {}",
            answer.text
        );
    }
    // The lone provider is the installation's default.
    assert_eq!(items[0]["default"], true, "{}", answer.text);
    // Every kind of the spec registers; only `openai` (any compatible
    // server) must name its address, the others default to their own.
    let mut no_address = body.clone();
    no_address["name"] = json!("No address");
    no_address
        .as_object_mut()
        .expect("object")
        .remove("base_url");
    let answer = admin_session.post("/api/providers", &no_address).await;
    let detail = answer.expect_error(422, "invalid_payload", "openai without a base URL");
    assert!(
        detail["issues"].as_array().is_some_and(|issues| issues
            .iter()
            .any(|i| i["loc"] == json!(["body", "base_url"]))),
        "{}",
        answer.text
    );
    for kind in [
        "openai_direct",
        "openai_responses",
        "anthropic",
        "codex_chatgpt",
    ] {
        let mut other = no_address.clone();
        // Named to sort after the others.
        other["name"] = json!(format!("Upstream {kind}"));
        other["kind"] = json!(kind);
        other["price_cached_input"] = json!(0.125);
        let answer = admin_session.post("/api/providers", &other).await;
        let added = answer.expect(201);
        assert_eq!(added["kind"], kind, "{added}");
        assert_eq!(added["price_cached_input"], 0.125, "{added}");
        for hidden in ["base_url", "https://", KEY_VALUE] {
            assert!(
                !answer.text.contains(hidden),
                "shows `{hidden}`: {}",
                answer.text
            );
        }
    }
    let mut second = body.clone();
    second["name"] = json!("Second simulator");
    let second = admin_session
        .post("/api/providers", &second)
        .await
        .expect(201);
    assert_eq!(second["default"], false, "{second}");
    let list = admin_session.get("/api/providers").await.expect(200);
    assert!(
        list.as_array()
            .expect("array")
            .iter()
            .all(|p| p["default"] == false),
        "several providers and no choice: no default {list}"
    );
    let choice = json!({ "provider_id": second["id"] });
    user_session
        .put("/api/providers/default", &choice)
        .await
        .expect_error(403, "admin_required", "default provider as a user");
    admin_session
        .put(
            "/api/providers/default",
            &json!({ "provider_id": "no-such-provider" }),
        )
        .await
        .expect_error(422, "unknown_provider", "an unknown default");
    let list = admin_session
        .put("/api/providers/default", &choice)
        .await
        .expect(200);
    let defaults: Vec<&Value> = list
        .as_array()
        .expect("array")
        .iter()
        .filter(|p| p["default"] == true)
        .map(|p| &p["id"])
        .collect();
    assert_eq!(defaults, [&second["id"]], "{list}");
    let token = user_session
        .token("default", &["content:write", "pipeline:start"])
        .await;
    let request = json!({
        "series": {"name": "No provider named", "create_if_missing": true},
        "volume": {"number": 1},
        "source_language": "en",
        "target_language": "fr",
        "chapters": [{"number": 1, "content": "One."}],
    });
    let answer = server
        .client()
        .post(server.url("/api/v1/translation-requests"))
        .bearer_auth(&token.token)
        .json(&request)
        .send()
        .await
        .expect("send");
    assert_eq!(
        answer.status().as_u16(),
        202,
        "the default provider resolves"
    );
    let list = admin_session
        .put("/api/providers/default", &json!({ "provider_id": null }))
        .await
        .expect(200);
    assert!(
        list.as_array()
            .expect("array")
            .iter()
            .all(|p| p["default"] == false),
        "{list}"
    );

    // Users see it through a token.
    let token = user_session.token("providers", &["content:write"]).await;
    let listed = bearer_get(&server, "/api/v1/providers", &token.token)
        .await
        .expect(200);
    assert_eq!(listed[0]["id"], created["id"], "{listed}");
}

/// `PATCH /api/providers/{id}` with `body`.
async fn patch(session: &Session, id: &str, body: &Value) -> Answer {
    send(
        session
            .request(Method::PATCH, &format!("/api/providers/{id}"))
            .json(body),
    )
    .await
}

async fn an_administrator_edits_a_provider(backend: Backend) {
    let server = Server::builder(Installation::new(backend).await)
        .start()
        .await;
    let admin = server.create_user("provider-editor", true).await;
    let user = server.create_user("provider-member", false).await;
    let admin_session = Session::login(&server, &admin).await;
    let user_session = Session::login(&server, &user).await;
    let added = admin_session
        .post(
            "/api/providers",
            &json!({
                "name": "Editable", "kind": "openai", "model": "sim-1",
                "base_url": BASE_URL, "api_key_env": KEY_VARIABLE, "capacity": 2,
                "price_input": 1.0, "price_output": 2.0
            }),
        )
        .await
        .expect(201);
    let id = added["id"].as_str().expect("an id").to_owned();

    let answer = patch(
        &admin_session,
        &id,
        &json!({"price_input": 0.5, "batch_discount": 0.2, "model": "sim-2"}),
    )
    .await;
    let changed = answer.expect(200);
    assert_eq!(changed["id"], id.as_str(), "{changed}");
    assert_eq!(changed["price_input"], 0.5, "{changed}");
    assert_eq!(changed["batch_discount"], 0.2, "{changed}");
    assert_eq!(changed["model"], "sim-2", "{changed}");
    // What was not given stays.
    assert_eq!(changed["price_output"], 2.0, "{changed}");
    assert_eq!(changed["capacity"], 2, "{changed}");
    assert_eq!(changed["api_key_env"], KEY_VARIABLE, "{changed}");
    assert!(!answer.text.contains(BASE_URL), "{}", answer.text);
    let list = admin_session.get("/api/providers").await.expect(200);
    assert_eq!(list[0], changed, "the list shows the change");

    let answer = patch(&admin_session, &id, &json!({"batch_discount": 1.5})).await;
    let detail = answer.expect_error(422, "invalid_payload", "a discount out of range");
    assert!(
        detail["issues"].as_array().is_some_and(|issues| issues
            .iter()
            .any(|i| i["loc"] == json!(["body", "batch_discount"]))),
        "{}",
        answer.text
    );
    let answer = patch(&admin_session, &id, &json!({"name": "Renamed"})).await;
    answer.expect_error(422, "invalid_payload", "a name is not editable");
    patch(&admin_session, "no-such-provider", &json!({"capacity": 3}))
        .await
        .expect_error(404, "not_found", "an unknown provider");
    patch(&user_session, &id, &json!({"capacity": 3}))
        .await
        .expect_error(403, "admin_required", "an edit by a member");
    let list = admin_session.get("/api/providers").await.expect(200);
    assert_eq!(list[0], changed, "refused edits change nothing");
}
