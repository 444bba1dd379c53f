//! A scratch PostgreSQL database for the migration tests: a fresh
//! `dragoman_test_<uuid>` on the server `TEST_DATABASE_URL` names
//! ([`dragoman_testing::TestDatabase`]), handed to the test and dropped
//! afterwards even when the test fails. Without the variable a CI run fails,
//! naming it, and elsewhere the test is skipped with a note
//! ([`dragoman_testing::env`]).

use dragoman_model::db;
use dragoman_testing::TestDatabase;
use sea_orm::DatabaseConnection;
use std::future::Future;

/// Runs `exercise` on a fresh PostgreSQL database, then drops it; `what`
/// names the test in the skip note.
pub async fn on_scratch_postgres<F, Fut>(what: &str, exercise: F)
where
    F: FnOnce(DatabaseConnection) -> Fut,
    Fut: Future<Output = ()>,
{
    let Some(database) = TestDatabase::fresh(what, "dragoman_test").await else {
        return;
    };
    let db = db::connect(database.url()).await.expect("test database");
    exercise(db).await;
}
