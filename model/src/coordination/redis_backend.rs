//! Redis coordination backend for cluster mode.
//!
//! Commands go over one `ConnectionManager` (multiplexed, reconnects by itself).
//! Multi-step operations that must be atomic (queue push/pop/remove, lease
//! compare-and-renew / compare-and-delete) are Lua scripts, which Redis runs without
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
//! | `queue-order:<queue>` | ZSET, every score 0 | members `<priority:16 hex><seq:16 hex><item>` |
//! | `queue-items:<queue>` | HASH | item → its member in `queue-order` |
//! | `queue-seq:<queue>` | STRING | arrival sequence, only ever incremented |
//! | `counter:<key>` | STRING | the counter |
//! | `lease:<key>` | STRING with expiry | the holder |
//! | channel `notify:<channel>` | pub/sub | empty payload |
//!
//! The queue orders by member rather than by score: with equal scores a ZSET sorts
//! members bytewise, and fixed-width hex of (inverted priority, sequence) sorts
//! exactly like (priority descending, arrival ascending) for the full `i64` priority
//! and `u64` sequence ranges. A score encoding would have to squeeze both into the
//! 53 exact bits of an `f64`.
//!
//! Redis Cluster (sharded) is not supported: the queue scripts touch three keys that
//! would need to share a hash slot.

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

/// Width of the `<priority><seq>` prefix of a queue member.
const QUEUE_PREFIX_LEN: usize = 32;

/// KEYS: order, items, seq. ARGV: item, priority prefix.
/// An item already queued keeps its sequence (its place among equals).
const QUEUE_PUSH: &str = r"
local old = redis.call('HGET', KEYS[2], ARGV[1])
local seq
if old then
  seq = string.sub(old, 17, 32)
  redis.call('ZREM', KEYS[1], old)
else
  seq = string.format('%016x', redis.call('INCR', KEYS[3]))
end
local member = ARGV[2] .. seq .. ARGV[1]
redis.call('ZADD', KEYS[1], 0, member)
redis.call('HSET', KEYS[2], ARGV[1], member)
return 1
";

/// KEYS: order, items. Returns the item or nil.
const QUEUE_POP: &str = r"
local first = redis.call('ZRANGE', KEYS[1], 0, 0)
if #first == 0 then return false end
redis.call('ZREM', KEYS[1], first[1])
local item = string.sub(first[1], 33)
redis.call('HDEL', KEYS[2], item)
return item
";

/// KEYS: order, items. ARGV: item. Returns 1 if removed.
const QUEUE_REMOVE: &str = r"
local old = redis.call('HGET', KEYS[2], ARGV[1])
if not old then return 0 end
redis.call('ZREM', KEYS[1], old)
redis.call('HDEL', KEYS[2], ARGV[1])
return 1
";

/// KEYS: lease. ARGV: holder, ttl ms. Free, expired (Redis already deleted it) or
/// ours: take or renew it.
const LEASE_ACQUIRE: &str = r"
local current = redis.call('GET', KEYS[1])
if current and current ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
";

/// KEYS: lease. ARGV: holder, ttl ms.
const LEASE_RENEW: &str = r"
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
";

/// KEYS: lease. ARGV: holder.
const LEASE_RELEASE: &str = r"
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
return 1
";

struct Scripts {
    queue_push: Script,
    queue_pop: Script,
    queue_remove: Script,
    lease_acquire: Script,
    lease_renew: Script,
    lease_release: Script,
}

impl Scripts {
    fn new() -> Self {
        Self {
            queue_push: Script::new(QUEUE_PUSH),
            queue_pop: Script::new(QUEUE_POP),
            queue_remove: Script::new(QUEUE_REMOVE),
            lease_acquire: Script::new(LEASE_ACQUIRE),
            lease_renew: Script::new(LEASE_RENEW),
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

/// Fixed-width hex whose bytewise order is the reverse of `priority`'s order:
/// flipping the sign bit maps `i64` order onto `u64` order, inverting all bits
/// reverses it.
fn priority_prefix(priority: i64) -> String {
    format!("{:016x}", !(priority.cast_unsigned() ^ (1 << 63)))
}

fn item_of_member(member: &str) -> CoordResult<String> {
    member
        .get(QUEUE_PREFIX_LEN..)
        .map(str::to_owned)
        .ok_or_else(|| ModelError::Coordination(format!("malformed queue member {member:?}")))
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

    /// The (order, items, seq) keys of a queue.
    fn queue_keys(&self, queue: &str) -> [String; 3] {
        [
            self.key("queue-order", queue),
            self.key("queue-items", queue),
            self.key("queue-seq", queue),
        ]
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

    async fn queue_push(&self, queue: &str, item: &str, priority: i64) -> CoordResult<()> {
        let mut conn = self.conn.clone();
        let [order, items, seq] = self.queue_keys(queue);
        let _: i64 = self
            .scripts
            .queue_push
            .key(order)
            .key(items)
            .key(seq)
            .arg(item)
            .arg(priority_prefix(priority))
            .invoke_async(&mut conn)
            .await
            .map_err(|e| redis_err("queue push", e))?;
        Ok(())
    }

    async fn queue_pop(&self, queue: &str) -> CoordResult<Option<String>> {
        let mut conn = self.conn.clone();
        let [order, items, _] = self.queue_keys(queue);
        self.scripts
            .queue_pop
            .key(order)
            .key(items)
            .invoke_async(&mut conn)
            .await
            .map_err(|e| redis_err("queue pop", e))
    }

    async fn queue_remove(&self, queue: &str, item: &str) -> CoordResult<bool> {
        let mut conn = self.conn.clone();
        let [order, items, _] = self.queue_keys(queue);
        let removed: i64 = self
            .scripts
            .queue_remove
            .key(order)
            .key(items)
            .arg(item)
            .invoke_async(&mut conn)
            .await
            .map_err(|e| redis_err("queue remove", e))?;
        Ok(removed == 1)
    }

    async fn queue_len(&self, queue: &str) -> CoordResult<u64> {
        let mut conn = self.conn.clone();
        redis::cmd("HLEN")
            .arg(self.key("queue-items", queue))
            .query_async(&mut conn)
            .await
            .map_err(|e| redis_err("queue len", e))
    }

    async fn queue_peek(&self, queue: &str, n: usize) -> CoordResult<Vec<String>> {
        // ZRANGE 0 -1 would mean "everything".
        if n == 0 {
            return Ok(Vec::new());
        }
        let stop = i64::try_from(n - 1).unwrap_or(i64::MAX);
        let mut conn = self.conn.clone();
        let members: Vec<String> = redis::cmd("ZRANGE")
            .arg(self.key("queue-order", queue))
            .arg(0)
            .arg(stop)
            .query_async(&mut conn)
            .await
            .map_err(|e| redis_err("queue peek", e))?;
        members.iter().map(|m| item_of_member(m)).collect()
    }

    async fn counter_add(&self, key: &str, delta: i64) -> CoordResult<i64> {
        let mut conn = self.conn.clone();
        redis::cmd("INCRBY")
            .arg(self.key("counter", key))
            .arg(delta)
            .query_async(&mut conn)
            .await
            .map_err(|e| redis_err("counter add", e))
    }

    async fn counter_get(&self, key: &str) -> CoordResult<i64> {
        let mut conn = self.conn.clone();
        let value: Option<i64> = redis::cmd("GET")
            .arg(self.key("counter", key))
            .query_async(&mut conn)
            .await
            .map_err(|e| redis_err("counter get", e))?;
        Ok(value.unwrap_or(0))
    }

    async fn counter_set(&self, key: &str, value: i64) -> CoordResult<()> {
        let mut conn = self.conn.clone();
        let () = redis::cmd("SET")
            .arg(self.key("counter", key))
            .arg(value)
            .query_async(&mut conn)
            .await
            .map_err(|e| redis_err("counter set", e))?;
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

    async fn lease_renew(&self, key: &str, holder: &str, ttl: Duration) -> CoordResult<bool> {
        let ttl_ms = lease_ttl_ms(ttl)?;
        let mut conn = self.conn.clone();
        let renewed: i64 = self
            .scripts
            .lease_renew
            .key(self.key("lease", key))
            .arg(holder)
            .arg(ttl_ms)
            .invoke_async(&mut conn)
            .await
            .map_err(|e| redis_err("lease renew", e))?;
        Ok(renewed == 1)
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

    async fn lease_holder(&self, key: &str) -> CoordResult<Option<String>> {
        let mut conn = self.conn.clone();
        redis::cmd("GET")
            .arg(self.key("lease", key))
            .query_async(&mut conn)
            .await
            .map_err(|e| redis_err("lease holder", e))
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
    fn priority_prefix_sorts_descending() {
        let ps = [i64::MAX, 1 << 40, 2, 1, 0, -1, -2, -(1 << 40), i64::MIN];
        let prefixes: Vec<String> = ps.iter().map(|&p| priority_prefix(p)).collect();
        assert!(prefixes.iter().all(|p| p.len() == 16));
        let mut sorted = prefixes.clone();
        sorted.sort();
        assert_eq!(prefixes, sorted);
    }

    #[test]
    fn glob_escape_escapes_metacharacters() {
        assert_eq!(glob_escape("dragoman:"), "dragoman:");
        assert_eq!(glob_escape("a*b?[c]\\"), "a\\*b\\?\\[c\\]\\\\");
    }

    #[test]
    fn malformed_member_is_an_error() {
        assert!(item_of_member("short").is_err());
        assert_eq!(
            item_of_member(&format!("{}{:016x}job-1", priority_prefix(3), 7)).ok(),
            Some("job-1".to_owned())
        );
    }
}
