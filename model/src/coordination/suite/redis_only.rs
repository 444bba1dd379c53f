//! Cases only the Redis backend has: namespaces kept apart, an
//! unreachable server, and a connection lost and found again.

use super::*;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::broadcast;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespaces_do_not_see_each_other() {
    let Some(url) = redis_url() else {
        return;
    };
    let (ns1, ns2) = (random_namespace(&url), random_namespace(&url));
    let one = connect_redis(&url, ns1.prefix()).await;
    let two = connect_redis(&url, ns2.prefix()).await;
    assert!(one.lease_acquire("l", "w1", SOON).await.expect("acquire"));
    let mut sub = two.subscribe(&Channel::request("ch"));
    one.notify(&Channel::request("ch")).await.expect("notify");
    let one_dyn: Coord = one.clone();
    settle(&one_dyn).await;

    assert!(two.lease_acquire("l", "w2", SOON).await.expect("acquire"));
    assert!(!sub.wait(Duration::from_millis(100)).await);

    assert_eq!(one.purge_namespace().await.expect("purge"), 1);
    two.purge_namespace().await.expect("purge");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_server_is_an_error() {
    // Port 1 on localhost: connection refused at once.
    let result = RedisCoordination::connect("redis://127.0.0.1:1", "x:").await;
    assert!(result.is_err());
    assert!(RedisCoordination::connect("not a url", "x:").await.is_err());
}

/// A TCP proxy in front of Redis whose open connections can be cut, to
/// simulate a network failure without touching the shared server.
struct CuttableProxy {
    addr: std::net::SocketAddr,
    cut: broadcast::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

impl CuttableProxy {
    async fn start(target: String) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (cut, _) = broadcast::channel::<()>(4);
        let cut_tx = cut.clone();
        let task = tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                let mut cut_rx = cut_tx.subscribe();
                let target = target.clone();
                tokio::spawn(async move {
                    let Ok(mut outbound) = TcpStream::connect(&target).await else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                        _ = cut_rx.recv() => {
                            let _ = inbound.shutdown().await;
                        }
                    }
                });
            }
        });
        Self { addr, cut, task }
    }

    fn cut_all(&self) {
        let _ = self.cut.send(());
    }
}

impl Drop for CuttableProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Splits `redis://[auth@]host[:port][/db]` into (before, host:port, after).
fn split_authority(url: &str) -> Option<(String, String, String)> {
    let rest = url.strip_prefix("redis://")?;
    let end = rest.find('/').unwrap_or(rest.len());
    let authority = &rest[..end];
    let host_start = authority.rfind('@').map_or(0, |i| i + 1);
    let host = &authority[host_start..];
    let host = if host.contains(':') {
        host.to_owned()
    } else {
        format!("{host}:6379")
    };
    Some((
        format!("redis://{}", &authority[..host_start]),
        host,
        rest[end..].to_owned(),
    ))
}

async fn retry<T, F, Fut>(what: &str, mut op: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, crate::error::ModelError>>,
{
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match op().await {
            Ok(v) => return v,
            Err(e) if Instant::now() < deadline => {
                eprintln!("{what} failed, retrying: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("{what} kept failing: {e}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listener_survives_a_lost_connection_and_wakes_waiters() {
    let Some(url) = redis_url() else {
        return;
    };
    let Some((before, target, after)) = split_authority(&url) else {
        eprintln!("TEST_REDIS_URL is not redis://…: connection-loss test not run");
        return;
    };
    let proxy = CuttableProxy::start(target).await;
    let proxied = format!("{before}{}{after}", proxy.addr);
    let namespace = random_namespace(&url);
    let c = connect_redis(&proxied, namespace.prefix()).await;

    let mut sub = c.subscribe(&Channel::request("ch"));
    proxy.cut_all();
    // Notifies may have been lost while the listener was away, so on
    // reconnecting it wakes every waiter.
    assert!(
        sub.wait(Duration::from_secs(10)).await,
        "not woken after reconnect"
    );

    // Commands recover (the first one after the cut may fail) and
    // notifications flow again.
    let channel = Channel::request("ch");
    let mut after_cut = c.subscribe(&channel);
    retry("notify", || c.notify(&channel)).await;
    assert!(
        after_cut.wait(SOON).await,
        "notify after reconnect not delivered"
    );
    assert!(retry("lease acquire", || c.lease_acquire("l", "w1", SOON)).await);
    assert!(c.lease_release("l", "w1").await.expect("release"));
    retry("purge", || c.purge_namespace()).await;
}

#[test]
fn split_authority_handles_auth_and_db() {
    assert_eq!(
        split_authority("redis://127.0.0.1:6379"),
        Some(("redis://".into(), "127.0.0.1:6379".into(), String::new()))
    );
    assert_eq!(
        split_authority("redis://:pw@host/2"),
        Some(("redis://:pw@".into(), "host:6379".into(), "/2".into()))
    );
    assert_eq!(split_authority("rediss://host"), None);
}
