//! Scope × tool matrix of the tool protocol (spec 4.10 and 5): every one of
//! the 28 tools is called by a token holding each scope alone, by a token
//! holding every scope but one, and by a token holding every scope. A tool
//! gets through exactly when the token holds every scope the tool needs;
//! otherwise it refuses with `insufficient_scope` naming a missing one. The
//! objects named are absent, so an allowed call is refused for that reason
//! instead, after its scope was granted, and nothing changes.

use dragoman_e2e::mcp::{ToolAnswer, call};
use dragoman_e2e::{Backend, Installation, SCOPES, Server, Session, on_both_backends};
use serde_json::{Value, json};

on_both_backends!(tool_matrix);

/// A tool, arguments naming absent objects, and the scopes it needs.
struct Tool {
    name: &'static str,
    arguments: Value,
    needs: &'static [&'static str],
}

fn tools() -> Vec<Tool> {
    let absent = || uuid::Uuid::new_v4().to_string();
    let read = &["library:read"][..];
    let write = &["library:write"][..];
    let delete = &["library:delete"][..];
    let tool = |name, arguments, needs| Tool {
        name,
        arguments,
        needs,
    };
    vec![
        tool("list_books", json!({}), read),
        tool("get_book", json!({"book_id": absent()}), read),
        tool("list_chapters", json!({"book_id": absent()}), read),
        tool("book_quality", json!({"book_id": absent()}), read),
        tool("list_terms", json!({"book_id": absent()}), read),
        tool("read_bible", json!({"book_id": absent()}), read),
        tool("list_series", json!({}), read),
        tool("get_series", json!({"series_id": absent()}), read),
        tool("series_consistency", json!({"series_id": absent()}), read),
        tool("list_providers", json!({}), read),
        tool("licence_status", json!({}), read),
        tool("estimate_job", json!({"book_id": absent()}), read),
        tool("list_jobs", json!({}), read),
        tool("export_book", json!({"book_id": absent()}), read),
        tool(
            "configure_book",
            json!({"book_id": absent(), "title": "Matrix"}),
            write,
        ),
        tool("shelve_book", json!({"book_id": absent()}), write),
        tool(
            "update_series",
            json!({"series_id": absent(), "name": "Matrix"}),
            write,
        ),
        tool(
            "attach_volume",
            json!({"book_id": absent(), "series_id": absent(), "volume_number": 1}),
            write,
        ),
        tool(
            "add_term",
            json!({"book_id": absent(), "source": "Sun", "translation": "Soleil"}),
            write,
        ),
        tool(
            "edit_term",
            json!({"term_id": absent(), "translation": "Soleil"}),
            write,
        ),
        tool(
            "propagate_term",
            json!({"book_id": absent(), "previous": "Sun", "replacement": "Soleil"}),
            write,
        ),
        tool(
            "delete_book",
            json!({"book_id": absent(), "confirm": true}),
            delete,
        ),
        tool(
            "delete_series",
            json!({"series_id": absent(), "confirm": true}),
            delete,
        ),
        tool(
            "delete_term",
            json!({"term_id": absent(), "confirm": true}),
            delete,
        ),
        tool(
            "start_job",
            json!({"book_id": absent()}),
            &["library:write", "pipeline:start"],
        ),
        tool(
            "control_job",
            json!({"request_id": absent(), "action": "cancel"}),
            &["jobs:control"],
        ),
        tool(
            "control_series",
            json!({"series_id": absent(), "action": "pause"}),
            &["jobs:control"],
        ),
        tool(
            "control_series",
            json!({"series_id": absent(), "action": "start"}),
            &["jobs:control", "pipeline:start"],
        ),
    ]
}

/// `create_series` creates when allowed, so it is checked apart: with an
/// invalid name an allowed call is refused for the name, and nothing is
/// created.
fn create_series() -> Tool {
    Tool {
        name: "create_series",
        arguments: json!({"name": ""}),
        needs: &["library:write"],
    }
}

async fn tool_matrix(backend: Backend) {
    let installation = Installation::new(backend).await;
    let server = Server::builder(installation)
        .env("API_RATE_LIMIT_PER_MINUTE", "100000")
        .start()
        .await;
    let account = server.create_user("tool-matrix", false).await;
    let session = Session::login(&server, &account).await;

    // Each scope alone, every scope but one, every scope.
    let mut tokens: Vec<(Vec<&str>, String)> = Vec::new();
    for (i, scope) in SCOPES.iter().enumerate() {
        let alone = session.token(&format!("only-{i}"), &[scope]).await;
        tokens.push((vec![*scope], alone.token));
        let others: Vec<&str> = SCOPES.iter().copied().filter(|s| s != scope).collect();
        let but_one = session.token(&format!("but-{i}"), &others).await;
        tokens.push((others, but_one.token));
    }
    let all = session.token("all", &SCOPES).await;
    tokens.push((SCOPES.to_vec(), all.token));

    let mut table = tools();
    table.push(create_series());
    let names: std::collections::BTreeSet<&str> = table.iter().map(|t| t.name).collect();
    assert_eq!(names.len(), 28, "every tool of spec 4.10 is in the table");

    let mut over_grants = Vec::new();
    for tool in &table {
        for (held, token) in &tokens {
            let missing: Vec<&str> = tool
                .needs
                .iter()
                .copied()
                .filter(|need| !held.contains(need))
                .collect();
            let context = format!("{} with {held:?}", tool.name);
            match call(&server, token, tool.name, tool.arguments.clone()).await {
                ToolAnswer::Refused(detail) if detail["code"] == "insufficient_scope" => {
                    let named = detail["scope"].as_str().unwrap_or_default();
                    assert!(
                        missing.contains(&named),
                        "{context}: refused for {named}, which it holds or does not need"
                    );
                }
                answer if missing.is_empty() => {
                    // Granted: refused only for the absent object or the
                    // invalid name, never a value of someone else's.
                    if let ToolAnswer::Value(value) = &answer {
                        assert!(
                            tool.name.starts_with("list_") || tool.name == "licence_status",
                            "{context}: an absent object answered {value}"
                        );
                    }
                }
                answer => over_grants.push(format!("{context}: {answer:?}")),
            }
        }
    }
    assert!(over_grants.is_empty(), "over-grants: {over_grants:#?}");

    // Nothing was created or changed by the granted calls.
    let all_token = &tokens.last().map(|(_, t)| t.clone()).unwrap_or_default();
    let series = call(&server, all_token, "list_series", json!({}))
        .await
        .value("series after the matrix");
    assert_eq!(series["total"], 0, "{series}");
}
