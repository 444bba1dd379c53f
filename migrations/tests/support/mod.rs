//! A scratch PostgreSQL database for the migration tests: created fresh
//! (`dragoman_test_<random>`) on the server `TEST_DATABASE_URL` names,
//! handed to the test, and dropped afterwards even when the test fails.
//! Without the variable a CI run fails, naming it, and elsewhere the test is
//! skipped with a note ([`dragoman_model::test_env`]).

use dragoman_model::db;
use sea_orm::{ConnectionTrait, DatabaseConnection};
use std::future::Future;

/// Runs `exercise` on a fresh PostgreSQL database, then drops it; `what`
/// names the test in the skip note.
pub async fn on_scratch_postgres<F, Fut>(what: &str, exercise: F)
where
    F: FnOnce(DatabaseConnection) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send,
{
    let Some(admin_url) = dragoman_model::test_env::server_url("TEST_DATABASE_URL", what) else {
        return;
    };
    let admin = db::connect(&admin_url).await.expect("postgres");
    let name = format!("dragoman_test_{}", uuid::Uuid::new_v4().simple());
    admin
        .execute_unprepared(&format!("CREATE DATABASE \"{name}\""))
        .await
        .expect("create database");
    let mut url = url::Url::parse(&admin_url).expect("url");
    url.set_path(&format!("/{name}"));
    let url = url.to_string();

    // In a task, so that a failed assertion still lets us drop the database.
    let outcome = tokio::spawn(async move {
        let db = db::connect(&url).await.expect("test database");
        exercise(db).await;
    })
    .await;

    admin
        .execute_unprepared(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"))
        .await
        .expect("drop database");
    admin.close().await.expect("close");
    if let Err(err) = outcome {
        std::panic::resume_unwind(err.into_panic());
    }
}
