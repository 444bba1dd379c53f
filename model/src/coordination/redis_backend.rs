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
//! | `rate:<per minute>:<key>` | STRING with expiry | the bucket's theoretical arrival time (GCRA), µs since the epoch |
//! | `reservations:<pool>` | HASH with expiry | id → amount |
//! | `reservation-expiries:<pool>` | ZSET with expiry | id → expiry, ms since the epoch |
//!
//! The rate limit and the reservations read the clock with Redis' `TIME` inside
//! their scripts, so every process agrees on it whatever its own clock says. Each
//! key expires when nothing in it matters any more (a refilled bucket, the last
//! reservation's end), so abandoned keys do not pile up.
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
use super::{
    CoordResult, Coordination, OVERSIZED_RETRY_AFTER, RateDecision, check_rate, check_reservation,
    lease_ttl_ms, room_slack,
};
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

/// KEYS: tat. ARGV: per minute, cost (at most per minute, checked before).
/// Returns 0 when admitted, else the microseconds to wait.
///
/// GCRA with emission interval t = 60 s / per minute and burst = per minute, so
/// tolerance tau = t × (burst − 1); `cost` cells weigh t × (cost − 1) on top of
/// the first. Same arithmetic as `governor`'s `check_key_n`, in microseconds.
const RATE_ADMIT: &str = r"
local per_minute = tonumber(ARGV[1])
local cost = tonumber(ARGV[2])
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
local t = 60000000 / per_minute
local tau = t * (per_minute - 1)
local extra = t * (cost - 1)
local tat = now
local stored = redis.call('GET', KEYS[1])
if stored then tat = math.max(tonumber(stored), now) end
local earliest = tat + extra - tau
if now < earliest then return math.max(1, math.ceil(earliest - now)) end
local next_tat = tat + t + extra
redis.call('SET', KEYS[1], string.format('%.17g', next_tat),
  'PX', string.format('%.0f', math.max(1, math.ceil((next_tat - now) / 1000))))
return 0
";

/// Drops the expired reservations of KEYS (amounts hash, expiries zset); sets
/// `now` (ms). Shared head of the reservation scripts.
const RESERVATIONS_PURGE: &str = r"
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local expired = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now)
for _, gone in ipairs(expired) do redis.call('HDEL', KEYS[1], gone) end
if #expired > 0 then redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now) end
";

/// KEYS: amounts, expiries. ARGV: id, amount, room, ttl ms, slack. 1 if reserved.
const RESERVE: &str = r"
local others = 0
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  if all[i] ~= ARGV[1] then others = others + tonumber(all[i + 1]) end
end
if others + tonumber(ARGV[2]) > tonumber(ARGV[3]) + tonumber(ARGV[5]) then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[2], string.format('%.0f', now + tonumber(ARGV[4])), ARGV[1])
local last = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
local keep = string.format('%.0f', math.max(1, tonumber(last[2]) - now))
redis.call('PEXPIRE', KEYS[1], keep)
redis.call('PEXPIRE', KEYS[2], keep)
return 1
";

/// KEYS: amounts, expiries. ARGV: id.
const RELEASE: &str = r"
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
return 1
";

/// KEYS: amounts, expiries. The live sum, as text (a script's numbers come back
/// as integers).
const RESERVED: &str = r"
local sum = 0
local all = redis.call('HGETALL', KEYS[1])
for i = 2, #all, 2 do sum = sum + tonumber(all[i]) end
return string.format('%.17g', sum)
";

struct Scripts {
    lease_acquire: Script,
    lease_release: Script,
    rate_admit: Script,
    reserve: Script,
    release: Script,
    reserved: Script,
}

impl Scripts {
    fn new() -> Self {
        let purging = |body: &str| Script::new(&format!("{RESERVATIONS_PURGE}{body}"));
        Self {
            lease_acquire: Script::new(LEASE_ACQUIRE),
            lease_release: Script::new(LEASE_RELEASE),
            rate_admit: Script::new(RATE_ADMIT),
            reserve: purging(RESERVE),
            release: Script::new(RELEASE),
            reserved: purging(RESERVED),
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

    /// The two keys of a reservation pool: amounts, expiries.
    fn pool_keys(&self, pool: &str) -> [String; 2] {
        [
            self.key("reservations", pool),
            self.key("reservation-expiries", pool),
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

    async fn rate_admit(&self, key: &str, per_minute: u32, cost: u32) -> CoordResult<RateDecision> {
        let (per_minute, cost) = check_rate(per_minute, cost)?;
        if cost > per_minute {
            return Ok(RateDecision::Refused {
                retry_after: OVERSIZED_RETRY_AFTER,
            });
        }
        let mut conn = self.conn.clone();
        let wait_us: i64 = self
            .scripts
            .rate_admit
            .key(self.key("rate", &format!("{per_minute}:{key}")))
            .arg(per_minute.get())
            .arg(cost.get())
            .invoke_async(&mut conn)
            .await
            .map_err(|e| redis_err("rate admit", e))?;
        Ok(match u64::try_from(wait_us) {
            Ok(0) | Err(_) => RateDecision::Admitted,
            Ok(us) => RateDecision::Refused {
                retry_after: Duration::from_micros(us),
            },
        })
    }

    async fn reserve(
        &self,
        pool: &str,
        id: &str,
        amount: f64,
        room: f64,
        ttl: Duration,
    ) -> CoordResult<bool> {
        let ttl_ms = check_reservation(amount, room, ttl)?;
        let mut conn = self.conn.clone();
        // `{:?}` writes the shortest text that reads back as the same double.
        let reserved: i64 = self
            .scripts
            .reserve
            .key(self.pool_keys(pool).as_slice())
            .arg(id)
            .arg(format!("{amount:?}"))
            .arg(format!("{room:?}"))
            .arg(ttl_ms)
            .arg(format!("{:?}", room_slack(room)))
            .invoke_async(&mut conn)
            .await
            .map_err(|e| redis_err("reserve", e))?;
        Ok(reserved == 1)
    }

    async fn release(&self, pool: &str, id: &str) -> CoordResult<()> {
        let mut conn = self.conn.clone();
        let _: i64 = self
            .scripts
            .release
            .key(self.pool_keys(pool).as_slice())
            .arg(id)
            .invoke_async(&mut conn)
            .await
            .map_err(|e| redis_err("release", e))?;
        Ok(())
    }

    async fn reserved(&self, pool: &str) -> CoordResult<f64> {
        let mut conn = self.conn.clone();
        let sum: String = self
            .scripts
            .reserved
            .key(self.pool_keys(pool).as_slice())
            .invoke_async(&mut conn)
            .await
            .map_err(|e| redis_err("reserved", e))?;
        sum.parse()
            .map_err(|e| ModelError::Coordination(format!("redis reserved: `{sum}`: {e}")))
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
