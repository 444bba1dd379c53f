//! A copy of the database holds no secret (spec 5: only the SHA-256 of a
//! token is stored; the webhook secret is kept sealed; the audit log never
//! carries a secret). On SQLite every byte of the file, its WAL and shared
//! memory is searched; on Postgres a `pg_dump` of the test database (or,
//! without `pg_dump`, every row of every table as text).

use dragoman_e2e::{Backend, CreatedToken, Installation, Server, Session, on_both_backends};
use sea_orm::{ConnectionTrait, DbBackend, Statement};
use serde_json::json;

on_both_backends!(database_dump_holds_no_secret);

async fn database_dump_holds_no_secret(backend: Backend) {
    let server = Server::start(backend).await;
    let account = server.create_user("secret-keeper", false).await;
    let session = Session::login(&server, &account).await;

    let mut tokens: Vec<CreatedToken> = Vec::new();
    for i in 0..4 {
        tokens.push(
            session
                .create_token(&json!({
                    "name": format!("hook {i}"), "scopes": ["series:read", "content:write"],
                    "webhook_secret": true, "budget_amount": 10
                }))
                .await,
        );
    }
    tokens.push(session.token("plain", &["jobs:read"]).await);
    // Use, limit, budget and revoke them so every write path has run.
    for token in &tokens {
        dragoman_e2e::bearer_get(&server, "/api/v1/series", &token.token).await;
    }
    session
        .put(
            &format!("/api/tokens/{}/queue", tokens[0].id),
            &json!({"max_running": 2}),
        )
        .await
        .expect(200);
    session
        .put(
            &format!("/api/tokens/{}/budget", tokens[1].id),
            &json!({"amount": 3, "period": "total"}),
        )
        .await
        .expect(200);
    session
        .delete(&format!("/api/tokens/{}", tokens[2].id))
        .await
        .expect(200);

    let mut secrets: Vec<(String, String)> = Vec::new();
    for token in &tokens {
        secrets.push((format!("token {}", token.id), token.token.clone()));
        secrets.push((
            format!("secret part of {}", token.id),
            token.secret_part().to_owned(),
        ));
        if let Some(hook) = token.view["webhook_secret"].as_str() {
            secrets.push((format!("webhook secret of {}", token.id), hook.to_owned()));
            // Without a recognisable prefix, the random part alone.
            if let Some((_, random)) = hook.split_once('_') {
                secrets.push((
                    format!("webhook random part of {}", token.id),
                    random.to_owned(),
                ));
            }
        }
    }
    secrets.push(("the account password".into(), account.password.clone()));
    assert_eq!(
        tokens
            .iter()
            .filter(|t| t.view["webhook_secret"].is_string())
            .count(),
        4
    );

    let (what, dump) = match backend {
        Backend::Sqlite => ("the SQLite files", sqlite_bytes(&server.installation)),
        Backend::Postgres => postgres_dump(&server.installation).await,
    };
    let dump = String::from_utf8_lossy(&dump);
    // The dump must hold what we created, or the search proves nothing.
    for token in &tokens {
        assert!(
            contains(&dump, token.id.as_bytes()),
            "{what} do not even hold token id {}: wrong file?",
            token.id
        );
    }
    let found: Vec<&str> = secrets
        .iter()
        .filter(|(_, secret)| contains(&dump, secret.as_bytes()))
        .map(|(label, _)| label.as_str())
        .collect();
    assert!(found.is_empty(), "{what} hold: {}", found.join(", "));
}

/// Byte search; the needles are ASCII, which a lossy UTF-8 view keeps
/// intact, so std's fast substring search can do it.
fn contains(haystack: &str, needle: &[u8]) -> bool {
    let needle = std::str::from_utf8(needle).expect("ASCII needle");
    !needle.is_empty() && haystack.contains(needle)
}

/// Every byte of the SQLite database, its WAL and its shared memory.
fn sqlite_bytes(installation: &Installation) -> Vec<u8> {
    let main = installation.sqlite_file();
    let mut bytes = std::fs::read(&main).unwrap_or_else(|e| panic!("read {}: {e}", main.display()));
    for suffix in ["-wal", "-shm", "-journal"] {
        let path = main.with_file_name(format!("dragoman.db{suffix}"));
        if let Ok(more) = std::fs::read(&path) {
            bytes.extend(more);
        }
    }
    // Everything else the data folder holds (blobs, keys) is part of a copy too.
    let mut stack = vec![installation.data_dir().to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir)
            .expect("read the data folder")
            .flatten()
        {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if !path.to_string_lossy().contains("dragoman.db")
                && !path.to_string_lossy().contains("password-")
            {
                bytes.extend(std::fs::read(&path).unwrap_or_default());
            }
        }
    }
    bytes
}

/// `pg_dump` of the test database, or every row of every table as text.
async fn postgres_dump(installation: &Installation) -> (&'static str, Vec<u8>) {
    let url = installation.database_url();
    if let Ok(output) = tokio::process::Command::new("pg_dump")
        .args(["--data-only", "--no-owner", "--dbname", &url])
        .output()
        .await
    {
        if output.status.success() {
            return ("pg_dump of the database", output.stdout);
        }
        eprintln!(
            "pg_dump failed ({}), reading the tables instead: {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let db = installation.sql().await;
    let tables = db
        .query_all_raw(Statement::from_string(
            DbBackend::Postgres,
            "SELECT table_name::text AS name FROM information_schema.tables \
             WHERE table_schema = 'public' AND table_type = 'BASE TABLE'",
        ))
        .await
        .expect("list tables");
    let mut bytes = Vec::new();
    let mut names = Vec::new();
    for row in tables {
        let name: String = row.try_get("", "name").expect("table name");
        names.push(name.clone());
        let rows = db
            .query_all_raw(Statement::from_string(
                DbBackend::Postgres,
                format!("SELECT row_to_json(t)::text AS j FROM \"{name}\" t"),
            ))
            .await
            .unwrap_or_else(|e| panic!("read table {name}: {e}"));
        for row in rows {
            let text: String = row.try_get("", "j").expect("row as text");
            bytes.extend(text.into_bytes());
        }
    }
    assert!(
        names.iter().any(|n| n == "api_tokens") && names.iter().any(|n| n == "audit_log"),
        "tables api_tokens and audit_log not found: {names:?}"
    );
    let _ = db.close().await;
    ("every row of every table", bytes)
}
