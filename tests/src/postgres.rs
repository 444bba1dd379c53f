//! The real Postgres and Redis of the test machine.
//!
//! `TEST_DATABASE_URL` and `TEST_REDIS_URL` select them. When a variable is
//! set, the tests that need it run and fail loudly if the service is not
//! there; they are never skipped. When it is not set, a CI run
//! fails those tests, naming the variable, and elsewhere they are skipped
//! with a note on stderr (see [`skip_unless_ci`]). Every test that uses
//! Postgres gets its own fresh database `dragoman_e2e_<uuid>`, created
//! through the `TEST_DATABASE_URL` connection and dropped (even after a
//! panic) when the last process using it is gone.

use sea_orm::{ConnectionTrait, Database, DatabaseConnection};

/// `TEST_DATABASE_URL`, when set and not empty.
pub fn test_database_url() -> Option<String> {
    std::env::var("TEST_DATABASE_URL")
        .ok()
        .filter(|v| !v.trim().is_empty())
}

/// `TEST_REDIS_URL`, when set and not empty.
pub fn test_redis_url() -> Option<String> {
    std::env::var("TEST_REDIS_URL")
        .ok()
        .filter(|v| !v.trim().is_empty())
}

/// What `test` does when `missing` (variables it needs) are not set: under
/// CI ([`dragoman_model::test_env::ci`]) it fails, so a CI run never passes
/// on tests that did not run; elsewhere it says on stderr that it is skipped
/// and the caller skips.
///
/// # Panics
///
/// Under CI.
pub fn skip_unless_ci(test: &str, missing: &[&str]) {
    let names = missing.join(" and ");
    let is = if missing.len() == 1 { "is" } else { "are" };
    if dragoman_model::test_env::ci() {
        panic!("{test}: {names} {is} required under CI");
    }
    eprintln!("{test}: skipped, {names} {is} not set");
}

/// `TEST_DATABASE_URL` for `test`; `None` when it is not set and
/// [`skip_unless_ci`] lets `test` be skipped.
pub fn database_url_or_skip(test: &str) -> Option<String> {
    let url = test_database_url();
    if url.is_none() {
        skip_unless_ci(test, &["TEST_DATABASE_URL"]);
    }
    url
}

/// Both URLs, for the tests that need a real cluster; `None` when neither is
/// set and [`skip_unless_ci`] lets `test` be skipped.
///
/// # Panics
///
/// When only one of the two is set: the test cannot run, and silently
/// skipping it would hide that.
pub fn cluster_urls(test: &str) -> Option<(String, String)> {
    match (test_database_url(), test_redis_url()) {
        (Some(db), Some(redis)) => Some((db, redis)),
        (None, None) => {
            skip_unless_ci(test, &["TEST_DATABASE_URL", "TEST_REDIS_URL"]);
            None
        }
        (Some(_), None) => panic!("{test} needs TEST_REDIS_URL as well as TEST_DATABASE_URL"),
        (None, Some(_)) => panic!("{test} needs TEST_DATABASE_URL as well as TEST_REDIS_URL"),
    }
}

/// A fresh Postgres database, dropped on drop.
#[derive(Debug)]
pub struct TestDatabase {
    admin_url: String,
    name: String,
    url: String,
}

impl TestDatabase {
    /// Creates `dragoman_e2e_<uuid>` on the server of `admin_url`.
    ///
    /// # Panics
    ///
    /// When the server cannot be reached or refuses: a test that was asked
    /// to use Postgres must not quietly pass without it.
    pub async fn create(admin_url: &str) -> TestDatabase {
        let name = format!("dragoman_e2e_{}", uuid::Uuid::new_v4().simple());
        let admin = connect(admin_url).await;
        admin
            .execute_unprepared(&format!("CREATE DATABASE \"{name}\""))
            .await
            .unwrap_or_else(|e| panic!("CREATE DATABASE {name} on TEST_DATABASE_URL: {e}"));
        let _ = admin.close().await;
        let mut url = url::Url::parse(admin_url)
            .unwrap_or_else(|e| panic!("TEST_DATABASE_URL is not a URL: {e}"));
        url.set_path(&format!("/{name}"));
        TestDatabase {
            admin_url: admin_url.to_owned(),
            name,
            url: url.to_string(),
        }
    }

    /// URL of the fresh database.
    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn name(&self) -> &str {
        &self.name
    }
}

async fn connect(url: &str) -> DatabaseConnection {
    let mut options = sea_orm::ConnectOptions::new(url);
    options
        .sqlx_logging(false)
        .max_connections(1)
        .connect_timeout(std::time::Duration::from_secs(10));
    Database::connect(options)
        .await
        .unwrap_or_else(|e| panic!("cannot connect to TEST_DATABASE_URL: {e}"))
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        // Drop runs inside the test's runtime, which cannot be blocked on; a
        // short-lived thread with its own runtime does the work.
        let admin_url = self.admin_url.clone();
        let name = self.name.clone();
        let outcome = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            runtime.block_on(async move {
                let mut options = sea_orm::ConnectOptions::new(admin_url);
                options.sqlx_logging(false).max_connections(1);
                let admin = Database::connect(options)
                    .await
                    .map_err(|e| e.to_string())?;
                // FORCE ends the sessions of a server that was killed.
                admin
                    .execute_unprepared(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"))
                    .await
                    .map_err(|e| e.to_string())?;
                let _ = admin.close().await;
                Ok::<(), String>(())
            })
        })
        .join();
        match outcome {
            Ok(Ok(())) => {}
            Ok(Err(e)) => eprintln!("warning: could not drop database {}: {e}", self.name),
            Err(_) => eprintln!("warning: dropping database {} panicked", self.name),
        }
    }
}
