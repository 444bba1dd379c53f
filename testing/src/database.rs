//! Throwaway PostgreSQL databases: each test that runs on PostgreSQL gets a
//! fresh database `<prefix>_<uuid>` on the server `TEST_DATABASE_URL`
//! names, created through that connection and dropped (even after a panic,
//! and with the sessions still open on it) when the handle is dropped.

use crate::env;
use sea_orm::{ConnectionTrait, Database, DatabaseConnection};
use std::time::Duration;

/// A fresh PostgreSQL database, dropped on drop.
#[derive(Debug)]
pub struct TestDatabase {
    admin_url: String,
    name: String,
    url: String,
}

impl TestDatabase {
    /// A fresh database on `TEST_DATABASE_URL`'s server for `what`; `None`
    /// when the variable is not set and `what` may be skipped (see
    /// [`env::database_url`]).
    ///
    /// # Panics
    ///
    /// Under CI without the variable, and as [`TestDatabase::create`] does.
    pub async fn fresh(what: &str, prefix: &str) -> Option<TestDatabase> {
        let admin_url = env::database_url(what)?;
        Some(TestDatabase::create(&admin_url, prefix).await)
    }

    /// Creates `<prefix>_<uuid>` on the server of `admin_url`; the URL of
    /// the new database keeps `admin_url`'s credentials and query.
    ///
    /// # Panics
    ///
    /// When the server cannot be reached or refuses: a test that was asked
    /// to use PostgreSQL must not quietly pass without it.
    pub async fn create(admin_url: &str, prefix: &str) -> TestDatabase {
        let name = format!("{prefix}_{}", uuid::Uuid::new_v4().simple());
        let mut url = url::Url::parse(admin_url)
            .unwrap_or_else(|e| panic!("{} is not a URL: {e}", env::DATABASE_VAR));
        url.set_path(&format!("/{name}"));
        let admin = connect(admin_url).await;
        admin
            .execute_unprepared(&format!("CREATE DATABASE \"{name}\""))
            .await
            .unwrap_or_else(|e| panic!("CREATE DATABASE {name} on {}: {e}", env::DATABASE_VAR));
        let _ = admin.close().await;
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
        .connect_timeout(Duration::from_secs(10));
    Database::connect(options)
        .await
        .unwrap_or_else(|e| panic!("cannot connect to {}: {e}", env::DATABASE_VAR))
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
                // FORCE ends the sessions the test left open (a pool not yet
                // closed, a killed server's).
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

#[cfg(test)]
mod tests {
    use super::TestDatabase;
    use sea_orm::{ConnectionTrait, Database};

    #[tokio::test]
    async fn a_fresh_database_is_usable_and_gone_after_drop() {
        let Some(database) = TestDatabase::fresh("testing::database", "dragoman_testing").await
        else {
            return;
        };
        let name = database.name().to_owned();
        let db = Database::connect(database.url()).await.expect("connect");
        db.execute_unprepared("CREATE TABLE t (x INT)")
            .await
            .expect("create table");
        drop(database);
        let admin_url = crate::env::test_database_url().expect("set above");
        let admin = Database::connect(admin_url).await.expect("admin");
        let left = admin
            .query_one_raw(sea_orm::Statement::from_string(
                sea_orm::DbBackend::Postgres,
                format!("SELECT 1 FROM pg_database WHERE datname = '{name}'"),
            ))
            .await
            .expect("query");
        assert!(left.is_none(), "{name} is left behind");
    }
}
