//! Token management rules (spec 4.9, 5 and 8): what creation shows once and
//! what the list never shows, validation without echo, the priority
//! ceiling, queue and budget updates, and the 50-token limit under
//! concurrency.

use dragoman_e2e::client::token_form_problem;
use dragoman_e2e::{Backend, CreatedToken, Server, Session, on_both_backends};
use futures::future::join_all;
use serde_json::{Value, json};

on_both_backends!(
    creation_shows_secrets_once,
    validation_names_fields_without_echo,
    priority_queue_and_budget,
    fifty_token_limit,
    concurrent_creations_stop_at_fifty,
);

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs() as i64
}

async fn creation_shows_secrets_once(backend: Backend) {
    let server = Server::start(backend).await;
    let account = server.create_user("token-maker", false).await;
    let session = Session::login(&server, &account).await;

    let with_secret = session
        .create_token(&json!({
            "name": "CI pipeline",
            "scopes": ["series:read", "content:write", "series:read"],
            "expires_in_days": 30,
            "webhook_secret": true
        }))
        .await;
    let view = &with_secret.view;
    if let Some(problem) = token_form_problem(&with_secret.token) {
        panic!("token `{}`: {problem}", with_secret.token);
    }
    let prefix = view["prefix"].as_str().expect("prefix");
    assert!(
        prefix.starts_with("dragoman_") && prefix.len() == "dragoman_".len() + 8,
        "prefix {prefix}"
    );
    assert!(
        with_secret.token.starts_with(&format!("{prefix}_")),
        "{view}"
    );
    let webhook_secret = view["webhook_secret"]
        .as_str()
        .unwrap_or_else(|| panic!("webhook secret asked but not shown: {view}"))
        .to_owned();
    assert!(webhook_secret.len() >= 32, "short webhook secret");
    assert_eq!(view["name"], "CI pipeline");
    let mut scopes: Vec<&str> = view["scopes"]
        .as_array()
        .expect("scopes")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    scopes.sort_unstable();
    assert_eq!(scopes, ["content:write", "series:read"], "{view}");
    assert_eq!(view["state"], "active");
    assert_eq!(view["max_priority"], "normal");
    assert!(view["budget"].is_null());
    assert!(view["revoked_at"].is_null() && view["last_used_at"].is_null());
    let created = view["created_at"].as_i64().expect("created_at");
    assert!((created - now()).abs() < 300, "created_at {created}");
    assert_eq!(view["expires_at"].as_i64(), Some(created + 30 * 86_400));

    let plain = session
        .create_token(
            &json!({"name": "no secret", "scopes": ["jobs:read"], "expires_in_days": null}),
        )
        .await;
    assert!(
        token_form_problem(&plain.token).is_none(),
        "{}",
        plain.token
    );
    assert!(
        plain.view.get("webhook_secret").is_none_or(|v| v == false),
        "{}",
        plain.view
    );
    assert!(
        plain.view["expires_at"].is_null(),
        "no expiry asked: {}",
        plain.view
    );
    assert_ne!(plain.token, with_secret.token);

    // The list never shows a secret, whatever the field.
    let (text, tokens) = session.list_tokens().await;
    assert_eq!(tokens.len(), 2, "{text}");
    for secret in [
        with_secret.token.as_str(),
        with_secret.secret_part(),
        plain.token.as_str(),
        plain.secret_part(),
        webhook_secret.as_str(),
    ] {
        assert!(
            !text.contains(secret),
            "GET /api/tokens shows a secret: {text}"
        );
    }
    let listed = tokens
        .iter()
        .find(|t| t["id"] == with_secret.id.as_str())
        .expect("listed");
    assert_eq!(listed["webhook_secret"], true, "{listed}");
    assert!(listed.get("token").is_none(), "{listed}");
    for field in [
        "id",
        "name",
        "prefix",
        "scopes",
        "created_at",
        "expires_at",
        "revoked_at",
        "last_used_at",
        "state",
        "webhook_secret",
        "max_priority",
        "max_running",
        "max_queued",
        "budget",
    ] {
        assert!(
            listed.get(field).is_some(),
            "token view lacks {field}: {listed}"
        );
    }
    let listed_plain = tokens
        .iter()
        .find(|t| t["id"] == plain.id.as_str())
        .expect("listed");
    assert_eq!(listed_plain["webhook_secret"], false, "{listed_plain}");

    // Nor do queue, budget and revoke answers.
    for answer in [
        session
            .put(
                &format!("/api/tokens/{}/queue", with_secret.id),
                &json!({"max_running": 3}),
            )
            .await,
        session
            .put(
                &format!("/api/tokens/{}/budget", with_secret.id),
                &json!({"amount": 5, "period": "total"}),
            )
            .await,
        session
            .delete(&format!("/api/tokens/{}", with_secret.id))
            .await,
    ] {
        answer.expect(200);
        assert!(
            !answer.text.contains(with_secret.secret_part())
                && !answer.text.contains(&webhook_secret),
            "a management answer shows a secret: {}",
            answer.text
        );
    }
}

/// One invalid body: the field its issue must name and a value that must
/// not come back in the answer.
struct Invalid {
    body: Value,
    field: &'static str,
    echo: Option<String>,
}

fn invalid(body: Value, field: &'static str, echo: Option<&str>) -> Invalid {
    Invalid {
        body,
        field,
        echo: echo.map(str::to_owned),
    }
}

async fn validation_names_fields_without_echo(backend: Backend) {
    let server = Server::start(backend).await;
    let account = server.create_user("validator", false).await;
    let session = Session::login(&server, &account).await;
    let stem = "Zebulon-name-".repeat(7);
    let long_name = format!("{stem}{}", "q".repeat(101 - stem.len()));
    assert_eq!(long_name.chars().count(), 101);
    let ok = |extra: Value| {
        let mut body = json!({"name": "valid name", "scopes": ["series:read"]});
        if let (Value::Object(map), Value::Object(more)) = (&mut body, extra) {
            map.extend(more);
        }
        body
    };
    let cases = [
        invalid(ok(json!({"name": ""})), "name", None),
        invalid(ok(json!({"name": long_name})), "name", Some(&long_name)),
        invalid(ok(json!({"name": "   "})), "name", None),
        invalid(ok(json!({"scopes": []})), "scopes", None),
        invalid(
            ok(json!({"scopes": ["nope-scope-4711"]})),
            "scopes",
            Some("nope-scope-4711"),
        ),
        invalid(ok(json!({"expires_in_days": 0})), "expires_in_days", None),
        invalid(
            ok(json!({"expires_in_days": 3651})),
            "expires_in_days",
            Some("3651"),
        ),
        invalid(ok(json!({"max_running": 0})), "max_running", None),
        invalid(
            ok(json!({"max_running": 1001})),
            "max_running",
            Some("1001"),
        ),
        invalid(ok(json!({"max_queued": 0})), "max_queued", None),
        invalid(
            ok(json!({"max_queued": 100001})),
            "max_queued",
            Some("100001"),
        ),
        invalid(
            ok(json!({"budget_amount": -1})),
            "budget_amount",
            Some("-1"),
        ),
        invalid(ok(json!({"budget_amount": 0})), "budget_amount", None),
        invalid(
            ok(json!({"budget_amount": 10, "budget_period": "week"})),
            "budget_period",
            Some("week"),
        ),
        invalid(
            ok(json!({"max_priority": "urgent-4711"})),
            "max_priority",
            Some("urgent-4711"),
        ),
        invalid(
            ok(json!({"sneaky_field": "hunter2-4711"})),
            "sneaky_field",
            Some("hunter2-4711"),
        ),
        invalid(ok(json!({"name": 424_242})), "name", Some("424242")),
        invalid(json!({"scopes": ["series:read"]}), "name", None),
        invalid(json!({"name": "no scopes"}), "scopes", None),
    ];
    let mut failures = Vec::new();
    for case in &cases {
        let answer = session.post("/api/tokens", &case.body).await;
        let context = format!("POST /api/tokens {}", case.body);
        let detail = match answer.check_error(422, "invalid_payload") {
            Ok(detail) => detail,
            Err(why) => {
                failures.push(format!("{context}: {why}"));
                continue;
            }
        };
        let issues = detail["issues"].as_array().cloned().unwrap_or_default();
        let named = issues.iter().any(|issue| {
            let loc = issue["loc"].as_array().cloned().unwrap_or_default();
            loc.first() == Some(&json!("body"))
                && loc.get(1) == Some(&json!(case.field))
                && issue["msg"].as_str().is_some_and(|m| !m.is_empty())
                && issue["type"].as_str().is_some_and(|t| !t.is_empty())
        });
        if !named {
            failures.push(format!(
                "{context}: no issue at [body, {}]: {}",
                case.field, answer.text
            ));
        }
        for issue in &issues {
            let keys: Vec<&String> = issue
                .as_object()
                .map(|o| o.keys().collect())
                .unwrap_or_default();
            if keys
                .iter()
                .any(|k| !["loc", "msg", "type"].contains(&k.as_str()))
            {
                failures.push(format!(
                    "{context}: issue with other keys than loc, msg, type: {issue}"
                ));
            }
        }
        if let Some(echo) = &case.echo
            && answer.text.contains(echo.as_str())
        {
            failures.push(format!(
                "{context}: the answer echoes `{echo}`: {}",
                answer.text
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} failure(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
    let (text, tokens) = session.list_tokens().await;
    assert!(tokens.is_empty(), "refused bodies created tokens: {text}");

    // Several problems at once are all listed.
    let answer = session
        .post(
            "/api/tokens",
            &json!({"name": "", "scopes": [], "max_running": 0}),
        )
        .await;
    let detail = answer.expect_error(422, "invalid_payload", "three problems");
    let fields: Vec<Value> = detail["issues"]
        .as_array()
        .expect("issues")
        .iter()
        .map(|i| i["loc"][1].clone())
        .collect();
    for field in ["name", "scopes", "max_running"] {
        assert!(
            fields.contains(&json!(field)),
            "{field} missing in {}",
            answer.text
        );
    }

    // The limits themselves are accepted.
    session
        .create_token(&ok(json!({
            "name": "x".repeat(100), "expires_in_days": 3650, "max_running": 1000,
            "max_queued": 100000, "budget_amount": 0.01, "budget_period": "total"
        })))
        .await;
    session
        .create_token(&ok(
            json!({"name": "y", "expires_in_days": 1, "max_running": 1, "max_queued": 1}),
        ))
        .await;
}

async fn priority_queue_and_budget(backend: Backend) {
    let server = Server::start(backend).await;
    let user = server.create_user("plain-user", false).await;
    let admin = server.create_user("admin-user", true).await;
    let session = Session::login(&server, &user).await;
    let admin_session = Session::login(&server, &admin).await;

    // The ceiling of an ordinary account is normal.
    let answer = session
        .post(
            "/api/tokens",
            &json!({"name": "urgent", "scopes": ["series:read"], "max_priority": "high"}),
        )
        .await;
    let detail = answer.expect_error(403, "priority_not_allowed", "high for a non-admin");
    assert_eq!(detail["max_priority"], "normal", "{}", answer.text);
    assert!(
        session.list_tokens().await.1.is_empty(),
        "refused token created"
    );
    let low = session
        .create_token(&json!({"name": "low", "scopes": ["series:read"], "max_priority": "low"}))
        .await;
    assert_eq!(low.view["max_priority"], "low");
    let high = admin_session
        .create_token(&json!({"name": "urgent", "scopes": ["series:read"], "max_priority": "high"}))
        .await;
    assert_eq!(high.view["max_priority"], "high", "{}", high.view);

    // Queue limits.
    let queue = format!("/api/tokens/{}/queue", low.id);
    let view = session
        .put(
            &queue,
            &json!({"max_priority": "normal", "max_running": 7, "max_queued": 70}),
        )
        .await
        .expect(200);
    assert_eq!(
        (
            &view["id"],
            &view["max_priority"],
            &view["max_running"],
            &view["max_queued"]
        ),
        (&json!(low.id), &json!("normal"), &json!(7), &json!(70)),
        "{view}"
    );
    let detail = session
        .put(&queue, &json!({"max_priority": "high"}))
        .await
        .expect_error(403, "priority_not_allowed", "queue high for a non-admin");
    assert_eq!(detail["max_priority"], "normal");
    let answer = session.put(&queue, &json!({"max_running": 1001})).await;
    let detail = answer.expect_error(422, "invalid_payload", "queue max_running 1001");
    assert_eq!(detail["issues"][0]["loc"], json!(["body", "max_running"]));
    let (_, tokens) = session.list_tokens().await;
    let listed = tokens
        .iter()
        .find(|t| t["id"] == low.id.as_str())
        .expect("listed");
    assert_eq!(
        (&listed["max_running"], &listed["max_queued"]),
        (&json!(7), &json!(70))
    );
    admin_session
        .put(
            &format!("/api/tokens/{}/queue", high.id),
            &json!({"max_priority": "low"}),
        )
        .await
        .expect(200);

    // Budget.
    let budget = format!("/api/tokens/{}/budget", low.id);
    let view = session
        .put(&budget, &json!({"amount": 25.5, "period": "month"}))
        .await
        .expect(200);
    let b = &view["budget"];
    assert_eq!(
        (&b["amount"], &b["period"]),
        (&json!(25.5), &json!("month")),
        "{view}"
    );
    assert_eq!(b["spent"].as_f64(), Some(0.0), "{view}");
    let resets_at = b["resets_at"]
        .as_i64()
        .unwrap_or_else(|| panic!("monthly resets_at: {view}"));
    assert!(
        resets_at > now() && resets_at <= now() + 32 * 86_400,
        "{view}"
    );
    let view = session
        .put(&budget, &json!({"amount": 3, "period": "total"}))
        .await
        .expect(200);
    assert_eq!(view["budget"]["period"], "total", "{view}");
    assert!(
        view["budget"]["resets_at"].is_null(),
        "a total budget never resets: {view}"
    );
    let answer = session.put(&budget, &json!({"amount": -2})).await;
    answer.expect_error(422, "invalid_payload", "negative budget");
    session
        .put(&budget, &json!({"amount": 1, "period": "week"}))
        .await
        .expect_error(422, "invalid_payload", "budget period week");
    let view = session
        .put(&budget, &json!({"amount": null}))
        .await
        .expect(200);
    assert!(view["budget"].is_null(), "null removes the cap: {view}");
    let created = session
        .create_token(&json!({"name": "capped", "scopes": ["series:read"], "budget_amount": 12}))
        .await;
    assert_eq!(
        created.view["budget"]["amount"],
        json!(12.0),
        "{}",
        created.view
    );
    assert_eq!(
        created.view["budget"]["period"], "month",
        "default period: {}",
        created.view
    );

    // Unknown ids, and another account's token, are not found.
    let stranger = format!("/api/tokens/{}", uuid::Uuid::new_v4());
    let theirs = format!("/api/tokens/{}", high.id);
    for base in [&stranger, &theirs] {
        session
            .put(&format!("{base}/queue"), &json!({"max_running": 2}))
            .await
            .expect_error(404, "token_not_found", &format!("PUT {base}/queue"));
        session
            .put(&format!("{base}/budget"), &json!({"amount": 2}))
            .await
            .expect_error(404, "token_not_found", &format!("PUT {base}/budget"));
        session
            .delete(base)
            .await
            .expect_error(404, "token_not_found", &format!("DELETE {base}"));
    }
    let (_, admin_tokens) = admin_session.list_tokens().await;
    assert_eq!(
        admin_tokens[0]["state"], "active",
        "another account revoked it"
    );
}

async fn create_many(session: &Session, count: usize, label: &str) -> Vec<dragoman_e2e::Answer> {
    let mut answers = Vec::new();
    let names: Vec<String> = (0..count).map(|i| format!("{label} {i}")).collect();
    for chunk in names.chunks(10) {
        let batch = chunk.iter().map(|name| async move {
            session
                .post(
                    "/api/tokens",
                    &json!({"name": name, "scopes": ["series:read"]}),
                )
                .await
        });
        answers.extend(join_all(batch).await);
    }
    answers
}

async fn fifty_token_limit(backend: Backend) {
    let server = Server::start(backend).await;
    let account = server.create_user("collector", false).await;
    let session = Session::login(&server, &account).await;

    let answers = create_many(&session, 50, "batch").await;
    let created: Vec<CreatedToken> = answers
        .iter()
        .map(|a| CreatedToken::from_view(a.expect(201)))
        .collect();
    let answer = session
        .post(
            "/api/tokens",
            &json!({"name": "fifty-first", "scopes": ["series:read"]}),
        )
        .await;
    answer.expect_error(409, "token_limit", "51st token");
    assert_eq!(session.list_tokens().await.1.len(), 50);

    // A revoked token no longer counts.
    session
        .delete(&format!("/api/tokens/{}", created[7].id))
        .await
        .expect(200);
    session
        .create_token(&json!({"name": "replacement", "scopes": ["series:read"]}))
        .await;
    session
        .post(
            "/api/tokens",
            &json!({"name": "one too many", "scopes": ["series:read"]}),
        )
        .await
        .expect_error(409, "token_limit", "51 non-revoked tokens again");
    let (_, tokens) = session.list_tokens().await;
    assert_eq!(tokens.len(), 51, "50 active and one revoked are listed");
    assert_eq!(tokens.iter().filter(|t| t["state"] == "active").count(), 50);

    // The limit is per account.
    let other = server.create_user("other-collector", false).await;
    Session::login(&server, &other)
        .await
        .token("mine", &["series:read"])
        .await;
}

async fn concurrent_creations_stop_at_fifty(backend: Backend) {
    let server = Server::start(backend).await;
    let account = server.create_user("racer", false).await;
    let session = Session::login(&server, &account).await;

    let answers = join_all((0..60).map(|i| {
        let session = session.clone();
        async move {
            session
                .post(
                    "/api/tokens",
                    &json!({"name": format!("race {i}"), "scopes": ["series:read"]}),
                )
                .await
        }
    }))
    .await;
    let created = answers.iter().filter(|a| a.status == 201).count();
    let refused: Vec<_> = answers.iter().filter(|a| a.status != 201).collect();
    for answer in &refused {
        answer.expect_error(409, "token_limit", "a concurrent creation over the limit");
    }
    assert_eq!(
        created, 50,
        "{created} of 60 concurrent creations succeeded"
    );
    let (_, tokens) = session.list_tokens().await;
    assert_eq!(tokens.len(), 50);
}
