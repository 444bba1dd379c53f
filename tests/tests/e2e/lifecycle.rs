//! Process life: SIGTERM stops the service gracefully (exit code 0 within a
//! few seconds, the port closed), and a restart on the same installation
//! finds its accounts and tokens again.

use dragoman_e2e::{Backend, Server, Session, bearer_get, on_both_backends};
use std::time::Duration;

on_both_backends!(sigterm_stops_gracefully);

async fn sigterm_stops_gracefully(backend: Backend) {
    let mut server = Server::start(backend).await;
    let account = server.create_user("short-lived", false).await;
    let session = Session::login(&server, &account).await;
    let token = session.token("survivor", &["series:read"]).await;
    let health = server
        .client()
        .get(server.url("/health"))
        .send()
        .await
        .expect("health");
    assert_eq!(health.status(), 200);
    let url = server.url("/health");

    let (status, took) = server.terminate(Duration::from_secs(10)).await;
    assert!(
        status.success(),
        "exit status after SIGTERM: {status}\nstderr:\n{}",
        server.stderr()
    );
    assert_eq!(status.code(), Some(0));
    assert!(took < Duration::from_secs(5), "took {took:?} to stop");
    let after = reqwest::Client::new()
        .get(&url)
        .timeout(Duration::from_secs(5))
        .send()
        .await;
    assert!(after.is_err(), "still answering after exit: {after:?}");

    // A new process on the same installation keeps what was stored.
    let again = Server::builder(server.installation.clone()).start().await;
    bearer_get(&again, "/api/v1/series", &token.token)
        .await
        .expect(200);
    let session = Session::login(&again, &account).await;
    let (_, tokens) = session.list_tokens().await;
    assert_eq!(tokens.len(), 1);
}
