//! Redis coordination backend for cluster mode.
//!
//! Commands go over one `ConnectionManager` (multiplexed, reconnects by itself).
//! The lease operations compare the holder before they write (take-unless-held-by-
//! another, delete-only-if-mine), so they are Lua scripts, which Redis runs without
//! interleaving other commands.
//!
//! Notifications use one pub/sub connection per process: a background task holds a
//! pattern subscription on `<namespace>notify:*` and fans messages out to local
//! waiters through the shared [`NotifyHub`], so waiters cost no Redis connection.
//!
//! Key layout (all under the namespace, `dragoman:` by default):
//!
//! | key | type | holds |
//! |---|---|---|
//! | `lease:<key>` | STRING with expiry | the holder |
//! | channel `notify:<channel>` | pub/sub | empty payload |
//!
//! Redis Cluster (sharded) is not supported: commands go to the one server named in
//! the URL, with no routing by hash slot.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use redis::aio::{ConnectionManager, ConnectionManagerConfig, PubSub};
use redis::{Client, RedisError, Script};
use tokio::task::JoinHandle;

use super::fanout::{NotifyHub, Subscription};
use super::{CoordResult, Coordination, lease_ttl_ms};
use crate::error::ModelError;
use crate::vocab::Channel;

/// Namespace used when the configuration does not name one.
pub const DEFAULT_NAMESPACE: &str = "dragoman:";

/// Above the crate's 500 ms default: a busy Redis or a loaded host must slow
/// coordination down, not fail it.
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(5);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// A pub/sub connection is silent while nobody publishes, so a half-open TCP
/// connection would go unnoticed; a periodic PING detects it.
const PUBSUB_PING_EVERY: Duration = Duration::from_secs(15);
const RECONNECT_DELAY_MIN: Duration = Duration::from_millis(100);
const RECONNECT_DELAY_MAX: Duration = Duration::from_secs(5);

/// KEYS: lease. ARGV: holder, ttl ms. Free, expired (Redis already deleted it) or
/// ours: take or renew it.
const LEASE_ACQUIRE: &str = r"
local current = redis.call('GET', KEYS[1])
if current and current ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
";

/// KEYS: lease. ARGV: holder.
const LEASE_RELEASE: &str = r"
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
return 1
";

struct Scripts {
    lease_acquire: Script,
    lease_release: Script,
}

impl Scripts {
    fn new() -> Self {
        Self {
            lease_acquire: Script::new(LEASE_ACQUIRE),
            lease_release: Script::new(LEASE_RELEASE),
        }
    }
}

/// Coordination through a Redis server shared by every Dragoman process.
pub struct RedisCoordination {
    conn: ConnectionManager,
    namespace: String,
    scripts: Scripts,
    hub: Arc<NotifyHub>,
    listener: JoinHandle<()>,
}

fn redis_err(op: &str, e: RedisError) -> ModelError {
    ModelError::Coordination(format!("redis {op}: {e}"))
}

/// Escapes the glob metacharacters of a PSUBSCRIBE/SCAN pattern, so a namespace is
/// matched literally whatever it contains.
fn glob_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Opens a pub/sub connection and waits for the server to confirm the pattern
/// subscription, so every publish after this returns reaches us.
async fn open_pubsub(client: &Client, pattern: &str) -> CoordResult<PubSub> {
    let timed_out = || ModelError::Coordination("redis pub/sub: connection timed out".to_owned());
    let mut pubsub = tokio::time::timeout(CONNECT_TIMEOUT, client.get_async_pubsub())
        .await
        .map_err(|_| timed_out())?
        .map_err(|e| redis_err("pub/sub connect", e))?;
    tokio::time::timeout(RESPONSE_TIMEOUT, pubsub.psubscribe(pattern))
        .await
        .map_err(|_| timed_out())?
        .map_err(|e| redis_err("psubscribe", e))?;
    Ok(pubsub)
}

/// The one pub/sub listener of a `RedisCoordination`. Runs until aborted on drop.
async fn listen(
    client: Client,
    pattern: String,
    channel_prefix: String,
    hub: Arc<NotifyHub>,
    mut pubsub: PubSub,
) {
    loop {
        let (mut sink, mut stream) = pubsub.split();
        let mut ping = tokio::time::interval(PUBSUB_PING_EVERY);
        ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // The first tick is immediate; the connection was just confirmed.
        ping.tick().await;
        loop {
            tokio::select! {
                msg = stream.next() => match msg {
                    Some(msg) => {
                        if let Some(channel) = msg.get_channel_name().strip_prefix(&channel_prefix) {
                            hub.notify(channel);
                        }
                    }
                    None => {
                        tracing::warn!("redis pub/sub connection closed; reconnecting");
                        break;
                    }
                },
                _ = ping.tick() => {
                    match tokio::time::timeout(RESPONSE_TIMEOUT, sink.ping::<redis::Value>()).await {
                        Ok(Ok(_)) => {}
                        Ok(Err(e)) => {
                            tracing::warn!(error = %e, "redis pub/sub ping failed; reconnecting");
                            break;
                        }
                        Err(_) => {
                            tracing::warn!("redis pub/sub ping timed out; reconnecting");
                            break;
                        }
                    }
                }
            }
        }
        drop((sink, stream));

        let mut delay = RECONNECT_DELAY_MIN;
        pubsub = loop {
            tokio::time::sleep(delay).await;
            match open_pubsub(&client, &pattern).await {
                Ok(p) => break p,
                Err(e) => {
                    tracing::warn!(error = %e, "redis pub/sub reconnect failed");
                    delay = (delay * 2).min(RECONNECT_DELAY_MAX);
                }
            }
        };
        tracing::info!("redis pub/sub reconnected");
        // Anything published while we were away is lost; wake every waiter so it
        // re-reads the database instead of sleeping until its timeout.
        hub.notify_all();
    }
}

impl RedisCoordination {
    /// Connects to `url` (`redis://…` or `rediss://…`) and keeps every key under
    /// `namespace` (e.g. [`DEFAULT_NAMESPACE`]). Returns once commands work and the
    /// notification subscription is confirmed.
    pub async fn connect(url: &str, namespace: &str) -> Result<Self, ModelError> {
        let client = Client::open(url).map_err(|e| redis_err("url", e))?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(CONNECT_TIMEOUT))
            .set_response_timeout(Some(RESPONSE_TIMEOUT));
        let conn = client
            .get_connection_manager_with_config(config)
            .await
            .map_err(|e| redis_err("connect", e))?;

        let hub = NotifyHub::new();
        let pattern = format!("{}notify:*", glob_escape(namespace));
        let pubsub = open_pubsub(&client, &pattern).await?;
        let listener = tokio::spawn(listen(
            client,
            pattern,
            format!("{namespace}notify:"),
            Arc::clone(&hub),
            pubsub,
        ));

        Ok(Self {
            conn,
            namespace: namespace.to_owned(),
            scripts: Scripts::new(),
            hub,
            listener,
        })
    }

    /// The key prefix this instance uses.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    fn key(&self, kind: &str, name: &str) -> String {
        format!("{}{kind}:{name}", self.namespace)
    }

    /// Deletes every key of this namespace; tests use it to clean up.
    #[cfg(test)]
    pub(super) async fn purge_namespace(&self) -> CoordResult<u64> {
        let mut conn = self.conn.clone();
        let pattern = format!("{}*", glob_escape(&self.namespace));
        let mut cursor: u64 = 0;
        let mut deleted = 0;
        loop {
            let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(&pattern)
                .arg("COUNT")
                .arg(500)
                .query_async(&mut conn)
                .await
                .map_err(|e| redis_err("scan", e))?;
            if !keys.is_empty() {
                let n: u64 = redis::cmd("DEL")
                    .arg(&keys)
                    .query_async(&mut conn)
                    .await
                    .map_err(|e| redis_err("del", e))?;
                deleted += n;
            }
            if next == 0 {
                return Ok(deleted);
            }
            cursor = next;
        }
    }
}

impl Drop for RedisCoordination {
    fn drop(&mut self) {
        // The listener holds its own connection; stop it with its owner.
        self.listener.abort();
    }
}

#[async_trait]
impl Coordination for RedisCoordination {
    fn backend_name(&self) -> &'static str {
        "redis"
    }

    async fn ping(&self) -> CoordResult<()> {
        let mut conn = self.conn.clone();
        let _: String = redis::cmd("PING")
            .query_async(&mut conn)
            .await
            .map_err(|e| redis_err("ping", e))?;
        Ok(())
    }

    async fn lease_acquire(&self, key: &str, holder: &str, ttl: Duration) -> CoordResult<bool> {
        let ttl_ms = lease_ttl_ms(ttl)?;
        let mut conn = self.conn.clone();
        let taken: i64 = self
            .scripts
            .lease_acquire
            .key(self.key("lease", key))
            .arg(holder)
            .arg(ttl_ms)
            .invoke_async(&mut conn)
            .await
            .map_err(|e| redis_err("lease acquire", e))?;
        Ok(taken == 1)
    }

    async fn lease_release(&self, key: &str, holder: &str) -> CoordResult<bool> {
        let mut conn = self.conn.clone();
        let released: i64 = self
            .scripts
            .lease_release
            .key(self.key("lease", key))
            .arg(holder)
            .invoke_async(&mut conn)
            .await
            .map_err(|e| redis_err("lease release", e))?;
        Ok(released == 1)
    }

    async fn notify(&self, channel: &Channel) -> CoordResult<()> {
        let channel = channel.name();
        let channel = channel.as_str();
        let mut conn = self.conn.clone();
        let _receivers: i64 = redis::cmd("PUBLISH")
            .arg(self.key("notify", channel))
            .arg("")
            .query_async(&mut conn)
            .await
            .map_err(|e| redis_err("notify", e))?;
        Ok(())
    }

    fn subscribe(&self, channel: &Channel) -> Subscription {
        let channel = channel.name();
        let channel = channel.as_str();
        self.hub.subscribe(channel)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_escape_escapes_metacharacters() {
        assert_eq!(glob_escape("dragoman:"), "dragoman:");
        assert_eq!(glob_escape("a*b?[c]\\"), "a\\*b\\?\\[c\\]\\\\");
    }
}
