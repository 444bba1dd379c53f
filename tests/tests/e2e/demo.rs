//! `dragoman demo` beside an installation: run twice with the
//! installation's configuration in the environment (its data folder,
//! database, blob store, Redis), it translates its sample book both times
//! and leaves the installation as it found it: the password of the
//! installation's own `demo` account still signs in, no account, provider,
//! token or request is added or changed, no file of the data folder is
//! touched, and the demo's temporary data folder is gone once it stops.

use dragoman_e2e::server::collect_stderr;
use dragoman_e2e::{Backend, Installation, Server, Session, Simulator, on_both_backends};
use sea_orm::{ConnectionTrait, Statement};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};

on_both_backends!(the_demo_leaves_an_installation_as_it_found_it);

/// How long the demo may take to translate its book and say so.
const DEMO_TIMEOUT: Duration = Duration::from_secs(180);

/// How long it may take to stop after SIGTERM.
const STOP_TIMEOUT: Duration = Duration::from_secs(60);

/// The last line the demo prints before it only serves.
const SERVING: &str = "The service keeps running on ";

/// What the installation's database holds that the demo could change.
#[derive(Debug, PartialEq, Eq)]
struct Rows {
    /// `(username, password hash)` of every account.
    accounts: Vec<(String, String)>,
    /// `(name, base URL)` of every provider.
    providers: Vec<(String, String)>,
    tokens: i64,
    requests: i64,
}

async fn rows(installation: &Installation) -> Rows {
    let db = installation.sql().await;
    let pairs = |sql: &'static str| {
        let db = &db;
        async move {
            db.query_all_raw(Statement::from_string(db.get_database_backend(), sql))
                .await
                .unwrap_or_else(|e| panic!("{sql}: {e}"))
                .iter()
                .map(|row| {
                    let first: String = row.try_get_by_index(0).expect("first column");
                    let second: String = row.try_get_by_index(1).expect("second column");
                    (first, second)
                })
                .collect::<Vec<_>>()
        }
    };
    let count = |table: &'static str| {
        let db = &db;
        async move {
            let sql = format!("SELECT COUNT(*) FROM {table}");
            let row = db
                .query_one_raw(Statement::from_string(db.get_database_backend(), sql))
                .await
                .unwrap_or_else(|e| panic!("count {table}: {e}"))
                .expect("a count");
            row.try_get_by_index::<i64>(0).expect("the count")
        }
    };
    let rows = Rows {
        accounts: pairs("SELECT username, password_hash FROM accounts ORDER BY username").await,
        providers: pairs("SELECT name, base_url FROM providers ORDER BY name").await,
        tokens: count("api_tokens").await,
        requests: count("requests").await,
    };
    db.close().await.expect("close the database");
    rows
}

/// Every file under `folder`, by relative path, with the SHA-256 of its bytes.
fn files(folder: &Path) -> BTreeMap<PathBuf, String> {
    let mut found = BTreeMap::new();
    let mut pending = vec![folder.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("read the folder") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let bytes = std::fs::read(&path).expect("read a file");
                let relative = path.strip_prefix(folder).expect("inside").to_path_buf();
                found.insert(relative, hex::encode(Sha256::digest(&bytes)));
            }
        }
    }
    found
}

/// Runs `dragoman demo` with the installation's configuration (and its
/// blob store named explicitly), in a working folder of its own with a
/// temporary folder of its own; waits until the book is done, stops it
/// with SIGTERM, and checks what the demo promises.
async fn run_demo(installation: &Installation, round: u32) {
    let work = tempfile::tempdir().expect("a working folder");
    let temporary = work.path().join("tmp");
    std::fs::create_dir(&temporary).expect("a temporary folder");
    let mut child = installation
        .command()
        .arg("demo")
        .env("DRAGOMAN_LISTEN", "127.0.0.1:0")
        .env(
            "DRAGOMAN_BLOB_URL",
            installation.data_dir().join("blobs").display().to_string(),
        )
        .env("TMPDIR", &temporary)
        .current_dir(work.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start dragoman demo");
    let stderr = collect_stderr(&mut child);
    let last_words = |stdout: &str| {
        let text = stderr.lock().map(|t| t.clone()).unwrap_or_default();
        let tail = text.len().saturating_sub(6000);
        format!(
            "stdout:\n{stdout}\nstderr (end):\n{}",
            text.get(tail..).unwrap_or(&text)
        )
    };

    let mut lines = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
    let mut stdout = String::new();
    let deadline = tokio::time::Instant::now() + DEMO_TIMEOUT;
    loop {
        match tokio::time::timeout_at(deadline, lines.next_line()).await {
            Ok(Ok(Some(line))) => {
                stdout.push_str(&line);
                stdout.push('\n');
                if line.starts_with(SERVING) {
                    break;
                }
            }
            outcome => {
                let _ = tokio::time::timeout(Duration::from_secs(2), child.wait()).await;
                panic!(
                    "demo round {round} did not finish its book ({}):\n{}",
                    if outcome.is_err() {
                        "timed out"
                    } else {
                        "stopped"
                    },
                    last_words(&stdout)
                );
            }
        }
    }
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    assert!(
        stdout.contains("Done: completed"),
        "demo round {round}: {}",
        last_words(&stdout)
    );
    let result = work.path().join("demo-out/result.txt");
    assert!(
        std::fs::metadata(&result).is_ok_and(|m| m.len() > 0),
        "demo round {round} wrote no {}",
        result.display()
    );
    let in_use: Vec<_> = std::fs::read_dir(&temporary)
        .expect("read the temporary folder")
        .collect();
    assert_eq!(
        in_use.len(),
        1,
        "demo round {round}: its data folder is a fresh one under TMPDIR\n{}",
        last_words(&stdout)
    );

    let pid = child.id().expect("the demo's pid").to_string();
    let sent = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("run kill");
    assert!(sent.success(), "kill -TERM {pid} failed");
    let status = tokio::time::timeout(STOP_TIMEOUT, child.wait())
        .await
        .unwrap_or_else(|_| panic!("demo round {round} did not stop after SIGTERM"))
        .expect("wait for the demo");
    assert!(
        status.success(),
        "demo round {round} stopped with {status}\n{}",
        last_words(&stdout)
    );
    let left: Vec<_> = std::fs::read_dir(&temporary)
        .expect("read the temporary folder")
        .map(|entry| entry.expect("an entry").path())
        .collect();
    assert!(
        left.is_empty(),
        "demo round {round} left its data behind: {left:?}"
    );
}

async fn the_demo_leaves_an_installation_as_it_found_it(backend: Backend) {
    let installation = Installation::new(backend).await;
    let demo = installation.create_user("demo", false).await;
    let simulator = Simulator::start(&[]).await;
    installation
        .add_simulator_provider(&simulator.openai_base_url(), &[])
        .await;
    // The database first: closing it settles SQLite's files, and the
    // files are compared just around the demos.
    let before = rows(&installation).await;
    let files_before = files(installation.data_dir());
    assert_eq!(before.accounts.len(), 1, "{before:?}");
    assert_eq!(before.providers.len(), 1, "{before:?}");

    for round in 1..=2 {
        run_demo(&installation, round).await;
    }

    let files_after = files(installation.data_dir());
    assert_eq!(
        rows(&installation).await,
        before,
        "the demo changed the installation's database"
    );
    assert_eq!(
        files_after, files_before,
        "the demo changed the installation's data folder"
    );
    // The installation's own `demo` still signs in with its own password.
    let server = Server::builder(installation.clone()).start().await;
    Session::login(&server, &demo).await;
}
