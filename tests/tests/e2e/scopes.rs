//! Scope × endpoint matrix (spec 4.1 and 5): for every token route and each
//! of the ten scopes alone, exactly the required scope gets through; every
//! other answers 403 `insufficient_scope` naming the required scope. A token
//! holding every scope but the required one is refused as well.

use dragoman_e2e::client::{Answer, send};
use dragoman_e2e::{Backend, SCOPES, Server, Session, on_both_backends};
use reqwest::Method;
use reqwest::multipart::{Form, Part};
use serde_json::{Value, json};

on_both_backends!(matrix);

struct Route {
    method: Method,
    path: String,
    body: Body,
    scope: &'static str,
    /// Status (and code) the route answers when the scope is there.
    allowed: (u16, Option<&'static str>),
}

enum Body {
    None,
    Json(Value),
    /// A multipart form with one file.
    File(&'static str),
}

impl Route {
    fn get(path: String, scope: &'static str, allowed: (u16, Option<&'static str>)) -> Route {
        Route {
            method: Method::GET,
            path,
            body: Body::None,
            scope,
            allowed,
        }
    }

    fn with(
        method: Method,
        path: String,
        body: Body,
        scope: &'static str,
        allowed: (u16, Option<&'static str>),
    ) -> Route {
        Route {
            method,
            path,
            body,
            scope,
            allowed,
        }
    }

    async fn send(&self, server: &Server, token: &str) -> Answer {
        let request = server
            .client()
            .request(self.method.clone(), server.url(&self.path))
            .bearer_auth(token);
        let request = match &self.body {
            Body::None => request,
            Body::Json(value) => request.json(value),
            Body::File(text) => request.multipart(
                Form::new().part("file", Part::bytes(text.as_bytes()).file_name("terms.csv")),
            ),
        };
        send(request).await
    }

    fn name(&self) -> String {
        format!("{} {}", self.method, self.path)
    }
}

async fn matrix(backend: Backend) {
    let server = Server::start(backend).await;
    let account = server.create_user("matrix-owner", false).await;
    let session = Session::login(&server, &account).await;

    let unknown = || uuid::Uuid::new_v4().to_string();
    let routes = [
        Route::get("/api/v1/providers".into(), "content:write", (200, None)),
        Route::get("/api/v1/series".into(), "series:read", (200, None)),
        Route::get(
            format!("/api/v1/series/{}", unknown()),
            "series:read",
            (404, Some("series_not_found")),
        ),
        Route::with(
            Method::POST,
            format!("/api/v1/series/{}/jobs/pause", unknown()),
            Body::None,
            "jobs:control",
            (404, Some("series_not_found")),
        ),
        Route::get("/api/v1/glossaries".into(), "series:read", (200, None)),
        Route::with(
            Method::POST,
            "/api/v1/glossaries".into(),
            Body::Json(json!({"name": "Matrix"})),
            "content:write",
            (201, None),
        ),
        Route::get(
            format!("/api/v1/glossaries/{}", unknown()),
            "series:read",
            (404, Some("glossary_not_found")),
        ),
        Route::get(
            format!("/api/v1/glossaries/{}/export/csv", unknown()),
            "series:read",
            (404, Some("glossary_not_found")),
        ),
        Route::with(
            Method::POST,
            format!("/api/v1/glossaries/{}/import", unknown()),
            Body::File("source,translation\nsun,soleil\n"),
            "content:write",
            (404, Some("glossary_not_found")),
        ),
        Route::get(
            format!("/api/v1/series/{}/shared-glossary", unknown()),
            "series:read",
            (404, Some("series_not_found")),
        ),
        Route::with(
            Method::PUT,
            format!("/api/v1/series/{}/shared-glossary", unknown()),
            Body::Json(json!({"glossary_id": null})),
            "content:write",
            (404, Some("series_not_found")),
        ),
        Route::get("/api/v1/books".into(), "narrative:read", (200, None)),
        Route::get(
            format!("/api/v1/books/{}/narrative-context", unknown()),
            "narrative:read",
            (404, Some("volume_not_found")),
        ),
        Route::get(
            format!("/api/v1/books/{}/narrative-context/revision", unknown()),
            "narrative:read",
            (404, Some("volume_not_found")),
        ),
        Route::get(
            format!("/api/v1/series/{}/narrative-context", unknown()),
            "narrative:read",
            (404, Some("series_not_found")),
        ),
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
            let answer = route.send(&server, &token.token).await;
            let context = format!("{} with only {scope}", route.name());
            if *scope == route.scope {
                let outcome = match route.allowed {
                    (status, Some(code)) => answer.check_error(status, code).map(|_| ()),
                    (status, None) if answer.status.as_u16() == status => {
                        // A listing answers an array; a creation the created object.
                        let json = answer.json();
                        let listing = route.method == Method::GET;
                        if (listing && json.is_array()) || (!listing && json["id"].is_string()) {
                            Ok(())
                        } else {
                            Err(format!("unexpected answer: {}", answer.text))
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
        let answer = route.send(&server, &token.token).await;
        match answer.check_error(403, "insufficient_scope") {
            Ok(detail) if detail["scope"] == route.scope => {}
            Ok(detail) => failures.push(format!(
                "{} with every other scope: detail.scope is {}",
                route.name(),
                detail["scope"]
            )),
            Err(why) => {
                if !matches!(answer.status.as_u16(), 401 | 403) {
                    over_grants.push(format!(
                        "{} with every other scope: {}",
                        route.name(),
                        answer.status
                    ));
                }
                failures.push(format!("{} with every other scope: {why}", route.name()));
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
