//! Scope × endpoint matrix (spec 4.1 and 5): for every token route and each
//! of the ten scopes alone, exactly the required scope gets through; every
//! other answers 403 `insufficient_scope` naming the required scope. A token
//! holding every scope but the required one is refused as well.

use dragoman_e2e::{Backend, SCOPES, Server, Session, bearer_get, on_both_backends};

on_both_backends!(matrix);

struct Route {
    path: String,
    scope: &'static str,
    /// Status (and code) the route answers when the scope is there.
    allowed: (u16, Option<&'static str>),
}

async fn matrix(backend: Backend) {
    let server = Server::start(backend).await;
    let account = server.create_user("matrix-owner", false).await;
    let session = Session::login(&server, &account).await;

    let routes = [
        Route {
            path: "/api/v1/providers".into(),
            scope: "content:write",
            allowed: (200, None),
        },
        Route {
            path: "/api/v1/series".into(),
            scope: "series:read",
            allowed: (200, None),
        },
        Route {
            path: format!("/api/v1/series/{}", uuid::Uuid::new_v4()),
            scope: "series:read",
            allowed: (404, Some("series_not_found")),
        },
    ];

    let mut single = Vec::new();
    for scope in SCOPES {
        single.push((
            scope,
            session.token(&format!("only {scope}"), &[scope]).await,
        ));
    }

    let mut over_grants = Vec::new();
    let mut failures = Vec::new();
    let mut checked = 0;
    for route in &routes {
        for (scope, token) in &single {
            checked += 1;
            let answer = bearer_get(&server, &route.path, &token.token).await;
            let context = format!("GET {} with only {scope}", route.path);
            if *scope == route.scope {
                let outcome = match route.allowed {
                    (status, Some(code)) => answer.check_error(status, code).map(|_| ()),
                    (status, None) if answer.status.as_u16() == status => {
                        if answer.json().is_array() {
                            Ok(())
                        } else {
                            Err(format!("expected a JSON array: {}", answer.text))
                        }
                    }
                    (status, None) => Err(format!(
                        "expected {status}, got {}: {}",
                        answer.status, answer.text
                    )),
                };
                if let Err(why) = outcome {
                    failures.push(format!("{context}: refused with the required scope: {why}"));
                }
            } else {
                match answer.check_error(403, "insufficient_scope") {
                    Ok(detail) if detail["scope"] == route.scope => {}
                    Ok(detail) => failures.push(format!(
                        "{context}: detail.scope is {} instead of {}",
                        detail["scope"], route.scope
                    )),
                    Err(why) => {
                        if !matches!(answer.status.as_u16(), 401 | 403) {
                            over_grants.push(format!("{context}: {}", answer.status));
                        }
                        failures.push(format!("{context}: {why}"));
                    }
                }
            }
        }

        // Every scope but the required one: still refused.
        let others: Vec<&str> = SCOPES
            .iter()
            .copied()
            .filter(|s| *s != route.scope)
            .collect();
        let token = session
            .token(&format!("all but {}", route.scope), &others)
            .await;
        checked += 1;
        let answer = bearer_get(&server, &route.path, &token.token).await;
        match answer.check_error(403, "insufficient_scope") {
            Ok(detail) if detail["scope"] == route.scope => {}
            Ok(detail) => failures.push(format!(
                "GET {} with every other scope: detail.scope is {}",
                route.path, detail["scope"]
            )),
            Err(why) => {
                if !matches!(answer.status.as_u16(), 401 | 403) {
                    over_grants.push(format!(
                        "GET {} with every other scope: {}",
                        route.path, answer.status
                    ));
                }
                failures.push(format!("GET {} with every other scope: {why}", route.path));
            }
        }
    }

    assert_eq!(checked, routes.len() * (SCOPES.len() + 1));
    assert!(
        over_grants.is_empty(),
        "{} over-grant(s) out of {checked} checks:\n{}",
        over_grants.len(),
        over_grants.join("\n")
    );
    assert!(
        failures.is_empty(),
        "{} wrong answer(s) out of {checked} checks:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
