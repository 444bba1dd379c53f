//! A Redis key namespace of one test's own, so tests sharing the Redis of
//! `TEST_REDIS_URL` never see each other's keys; dropping the handle deletes
//! every key under it.

use std::time::Duration;

/// `dragoman-test:<uuid>:`, with its keys deleted on drop.
#[derive(Debug)]
pub struct RedisNamespace {
    redis_url: String,
    prefix: String,
}

impl RedisNamespace {
    /// A namespace nobody has used, on the Redis of `redis_url`.
    pub fn fresh(redis_url: &str) -> RedisNamespace {
        RedisNamespace {
            redis_url: redis_url.to_owned(),
            prefix: format!("dragoman-test:{}:", uuid::Uuid::new_v4().simple()),
        }
    }

    /// The key prefix (what the services take as their namespace).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    pub fn redis_url(&self) -> &str {
        &self.redis_url
    }

    /// Deletes every key under the prefix; how many there were.
    fn purge(&self) -> redis::RedisResult<usize> {
        let client = redis::Client::open(self.redis_url.as_str())?;
        let mut conn = client.get_connection_with_timeout(Duration::from_secs(5))?;
        // The prefix is letters, digits, `-` and `:`: nothing a glob reads.
        let pattern = format!("{}*", self.prefix);
        let mut cursor: u64 = 0;
        let mut deleted = 0;
        loop {
            let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(&pattern)
                .arg("COUNT")
                .arg(500)
                .query(&mut conn)?;
            if !keys.is_empty() {
                let n: usize = redis::cmd("DEL").arg(&keys).query(&mut conn)?;
                deleted += n;
            }
            if next == 0 {
                return Ok(deleted);
            }
            cursor = next;
        }
    }
}

impl Drop for RedisNamespace {
    fn drop(&mut self) {
        // Synchronous on purpose: Drop cannot await, and the sync client
        // needs no runtime.
        if let Err(e) = self.purge() {
            eprintln!("warning: could not delete the keys of {}: {e}", self.prefix);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::RedisNamespace;

    #[test]
    fn namespaces_are_distinct_and_their_keys_are_deleted() {
        let Some(url) = crate::env::redis_url("testing::redis_namespace") else {
            return;
        };
        let first = RedisNamespace::fresh(&url);
        let second = RedisNamespace::fresh(&url);
        assert_ne!(first.prefix(), second.prefix());
        let client = redis::Client::open(url.as_str()).expect("client");
        let mut conn = client.get_connection().expect("connection");
        let key = format!("{}k", first.prefix());
        let () = redis::cmd("SET")
            .arg(&key)
            .arg("v")
            .query(&mut conn)
            .expect("set");
        drop(first);
        let exists: bool = redis::cmd("EXISTS")
            .arg(&key)
            .query(&mut conn)
            .expect("exists");
        assert!(!exists, "{key} survived its namespace");
    }
}
