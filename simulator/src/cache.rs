//! The simulated prompt cache, deterministic so that a test can predict
//! every cached token.
//!
//! A request has up to two cacheable prefixes: its system prompt, and its
//! whole prompt (system prompt then user message), each counted with the
//! token estimate of its text. Which ones the provider caches depends on
//! the protocol:
//! - OpenAI's (chat completions, Responses, Codex): both, without being
//!   asked, as OpenAI caches any prefix it has seen;
//! - Anthropic's: only those ending at a block marked `cache_control`
//!   (the system prompt, the user message).
//!
//! A request reads from the cache the longest of its cacheable prefixes
//! already seen, and (Anthropic only, which bills it) writes the rest of
//! its longest cacheable prefix when that one is new. Prefixes are
//! remembered per protocol and model, as a provider keeps one cache per
//! model; a request's prefixes are remembered once it is answered.

use std::collections::HashSet;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Mutex;

use crate::protocol::{Cacheable, Request, Wire};
use crate::state::lock;

/// Prefixes remembered before the cache is emptied, to bound memory.
const ENTRIES: usize = 100_000;

/// What the cache did for one request, in tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct CacheUse {
    pub read: u64,
    pub written: u64,
}

/// The prefixes seen so far.
pub(super) struct PromptCache {
    seen: Mutex<HashSet<u64>>,
}

impl PromptCache {
    pub fn new() -> PromptCache {
        PromptCache {
            seen: Mutex::new(HashSet::new()),
        }
    }

    /// Serves `request` (whose system prompt and whole prompt count
    /// `system_tokens` and `prompt_tokens`) and remembers its prefixes.
    pub fn serve(
        &self,
        wire: Wire,
        request: &Request,
        system_tokens: u64,
        prompt_tokens: u64,
    ) -> CacheUse {
        let key = |with_user: bool| {
            let mut h = DefaultHasher::new();
            (wire.name(), &request.model, &request.system).hash(&mut h);
            if with_user {
                request.user.hash(&mut h);
            }
            h.finish()
        };
        let (system, whole) = match request.cacheable {
            Cacheable::Automatic => (true, true),
            Cacheable::Marked { system, user } => (system, user),
        };
        // Shortest first; an empty system prompt is no prefix.
        let prefixes: Vec<(u64, u64)> = [
            (system && system_tokens > 0).then(|| (key(false), system_tokens)),
            whole.then(|| (key(true), prompt_tokens)),
        ]
        .into_iter()
        .flatten()
        .collect();
        let mut seen = lock(&self.seen);
        if seen.len() + prefixes.len() > ENTRIES {
            seen.clear();
        }
        let read = prefixes
            .iter()
            .filter(|(k, _)| seen.contains(k))
            .map(|(_, tokens)| *tokens)
            .max()
            .unwrap_or(0);
        let written = match prefixes.last() {
            Some((k, tokens)) if wire == Wire::Anthropic && !seen.contains(k) => {
                tokens.saturating_sub(read)
            }
            _ => 0,
        };
        seen.extend(prefixes.iter().map(|(k, _)| *k));
        CacheUse { read, written }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(system: &str, user: &str, cacheable: Cacheable) -> Request {
        Request {
            model: "m".into(),
            system: system.into(),
            user: user.into(),
            max_tokens: None,
            cacheable,
            cache_key: None,
            stream: false,
        }
    }

    #[test]
    fn openai_caches_what_it_has_seen() {
        let cache = PromptCache::new();
        let serve =
            |wire, user: &str| cache.serve(wire, &request("S", user, Cacheable::Automatic), 10, 15);
        assert_eq!(serve(Wire::OpenAi, "a"), CacheUse::default());
        assert_eq!(
            serve(Wire::OpenAi, "b"),
            CacheUse {
                read: 10,
                written: 0
            }
        );
        assert_eq!(
            serve(Wire::OpenAi, "a"),
            CacheUse {
                read: 15,
                written: 0
            }
        );
        // Another protocol or model has its own cache.
        assert_eq!(serve(Wire::Responses, "a"), CacheUse::default());
        let other_model = Request {
            model: "n".into(),
            ..request("S", "a", Cacheable::Automatic)
        };
        assert_eq!(
            cache.serve(Wire::OpenAi, &other_model, 10, 15),
            CacheUse::default()
        );
    }

    #[test]
    fn anthropic_caches_only_marked_prefixes_and_bills_the_writes() {
        let cache = PromptCache::new();
        let unmarked = Cacheable::Marked {
            system: false,
            user: false,
        };
        let system = Cacheable::Marked {
            system: true,
            user: false,
        };
        let both = Cacheable::Marked {
            system: true,
            user: true,
        };
        let serve = |user: &str, c| cache.serve(Wire::Anthropic, &request("S", user, c), 10, 15);
        assert_eq!(serve("a", unmarked), CacheUse::default());
        assert_eq!(serve("a", unmarked), CacheUse::default());
        assert_eq!(
            serve("a", system),
            CacheUse {
                read: 0,
                written: 10
            }
        );
        assert_eq!(
            serve("b", system),
            CacheUse {
                read: 10,
                written: 0
            }
        );
        assert_eq!(
            serve("c", both),
            CacheUse {
                read: 10,
                written: 5
            }
        );
        assert_eq!(
            serve("c", both),
            CacheUse {
                read: 15,
                written: 0
            }
        );
    }
}
