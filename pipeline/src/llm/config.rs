//! What a client needs to call one provider, and how a stored provider
//! becomes that: its key and the identifiers that go beside it are read
//! from the environment, never from the database.
//!
//! Environment variables, for a provider whose `api_key_env` is `K`:
//! - `K`: the key (`openai`, `openai_direct`, `openai_responses`,
//!   `anthropic`) or the ChatGPT OAuth access token (`codex_chatgpt`);
//! - `K_ORGANIZATION`, `K_PROJECT` (`openai_direct`, `openai_responses`):
//!   sent as `OpenAI-Organization` and `OpenAI-Project` when set;
//! - `K_ACCOUNT_ID` (`codex_chatgpt`): the ChatGPT account sent as
//!   `chatgpt-account-id`; when unset it is read from the access token's
//!   claims (see [`chatgpt_account_of`]).

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use dragoman_model::entities::provider;
use dragoman_model::vocab::ProviderKind;

/// Suffix of the variable holding the OpenAI organisation.
pub const ORGANIZATION_SUFFIX: &str = "_ORGANIZATION";
/// Suffix of the variable holding the OpenAI project.
pub const PROJECT_SUFFIX: &str = "_PROJECT";
/// Suffix of the variable holding the ChatGPT account id.
pub const ACCOUNT_ID_SUFFIX: &str = "_ACCOUNT_ID";

/// The claim of a ChatGPT access token that carries the account.
const AUTH_CLAIM: &str = "https://api.openai.com/auth";

/// The base URL a kind uses when the administrator gives none; `openai`
/// (any compatible server) has none and needs one.
pub fn default_base_url(kind: ProviderKind) -> Option<&'static str> {
    match kind {
        ProviderKind::OpenAi => None,
        ProviderKind::OpenAiDirect | ProviderKind::OpenAiResponses => {
            Some("https://api.openai.com/v1")
        }
        ProviderKind::Anthropic => Some("https://api.anthropic.com"),
        ProviderKind::CodexChatgpt => Some("https://chatgpt.com/backend-api"),
    }
}

/// Identifiers some providers take beside the key.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AccountIds {
    /// `OpenAI-Organization` (OpenAI's own API).
    pub organization: Option<String>,
    /// `OpenAI-Project` (OpenAI's own API).
    pub project: Option<String>,
    /// `chatgpt-account-id` (ChatGPT Codex backend).
    pub chatgpt_account: Option<String>,
}

/// Everything needed to call one provider.
#[derive(Debug, Clone)]
pub struct ProviderConfig {
    pub kind: ProviderKind,
    pub base_url: String,
    pub model: String,
    /// The key, or the OAuth access token for `codex_chatgpt`.
    pub api_key: Option<String>,
    pub ids: AccountIds,
    /// Whole-request timeout (connect, send, wait, read the body).
    pub timeout: Duration,
    /// Price per million prompt tokens; `None` when unknown.
    pub price_input: Option<f64>,
    /// Price per million completion tokens; `None` when unknown.
    pub price_output: Option<f64>,
    /// Price per million prompt tokens read from the provider's cache;
    /// `None` takes the kind's default share of `price_input` (see
    /// [`super::pricing`]).
    pub price_cached_input: Option<f64>,
}

impl ProviderConfig {
    /// The configuration of a stored provider, its key and identifiers
    /// read from the environment now.
    pub fn for_provider(p: &provider::Model, timeout: Duration) -> ProviderConfig {
        let var = |suffix: &str| -> Option<String> {
            if p.api_key_env.is_empty() {
                return None;
            }
            std::env::var(format!("{}{suffix}", p.api_key_env))
                .ok()
                .filter(|v| !v.trim().is_empty())
        };
        let api_key = var("");
        let ids = match p.kind {
            ProviderKind::OpenAiDirect | ProviderKind::OpenAiResponses => AccountIds {
                organization: var(ORGANIZATION_SUFFIX),
                project: var(PROJECT_SUFFIX),
                chatgpt_account: None,
            },
            ProviderKind::CodexChatgpt => AccountIds {
                chatgpt_account: var(ACCOUNT_ID_SUFFIX)
                    .or_else(|| api_key.as_deref().and_then(chatgpt_account_of)),
                ..AccountIds::default()
            },
            ProviderKind::OpenAi | ProviderKind::Anthropic => AccountIds::default(),
        };
        let base_url = if p.base_url.trim().is_empty() {
            default_base_url(p.kind).unwrap_or_default().to_owned()
        } else {
            p.base_url.clone()
        };
        ProviderConfig {
            kind: p.kind,
            base_url,
            model: p.model.clone(),
            api_key,
            ids,
            timeout,
            price_input: p.price_input,
            price_output: p.price_output,
            price_cached_input: p.price_cached_input,
        }
    }

    /// `base_url` without a trailing slash, followed by `path`.
    pub(super) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url.trim_end_matches('/'))
    }
}

/// The ChatGPT account of an OAuth access token: the `chatgpt_account_id`
/// of its `https://api.openai.com/auth` claim. The token is a JWT read, not
/// verified: the backend verifies it; here it only names the account the
/// backend expects in `chatgpt-account-id`.
pub fn chatgpt_account_of(token: &str) -> Option<String> {
    let payload = token.split('.').nth(1)?;
    let bytes = URL_SAFE_NO_PAD.decode(payload.trim_end_matches('=')).ok()?;
    let claims: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    claims
        .get(AUTH_CLAIM)?
        .get("chatgpt_account_id")?
        .as_str()
        .filter(|id| !id.is_empty())
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jwt(claims: &serde_json::Value) -> String {
        let encode = |v: &[u8]| URL_SAFE_NO_PAD.encode(v);
        format!(
            "{}.{}.{}",
            encode(br#"{"alg":"RS256","typ":"JWT"}"#),
            encode(claims.to_string().as_bytes()),
            encode(b"signature")
        )
    }

    #[test]
    fn the_account_is_read_from_the_token_claims() {
        let token = jwt(&serde_json::json!({
            "sub": "user",
            AUTH_CLAIM: {"chatgpt_account_id": "acc-42", "chatgpt_plan_type": "plus"},
        }));
        assert_eq!(chatgpt_account_of(&token).as_deref(), Some("acc-42"));
        let without = jwt(&serde_json::json!({"sub": "user"}));
        assert_eq!(chatgpt_account_of(&without), None);
        assert_eq!(chatgpt_account_of("sk-not-a-jwt"), None);
        assert_eq!(chatgpt_account_of("a.%%%.c"), None);
    }

    fn stored(kind: ProviderKind, base_url: &str, key_env: &str) -> provider::Model {
        provider::Model {
            id: "p".into(),
            name: "n".into(),
            kind,
            model: "m".into(),
            base_url: base_url.into(),
            api_key_env: key_env.into(),
            price_input: Some(1.0),
            price_output: Some(2.0),
            price_cached_input: None,
            capacity: 1,
            batch_discount: 0.5,
            fallback_provider_id: None,
            created_at: 0,
            updated_at: 0,
        }
    }

    #[test]
    fn a_blank_base_url_takes_the_kinds_default() {
        // A variable nobody sets: nothing is read, and the kind's default
        // base URL fills the blank one. (Set variables are read in the
        // end-to-end tests, where the server's environment is the test's.)
        let key = "DRAGOMAN_LLM_CONFIG_TEST_UNSET_KEY";
        let config = ProviderConfig::for_provider(
            &stored(ProviderKind::OpenAiDirect, "", key),
            Duration::from_secs(1),
        );
        assert_eq!(config.base_url, "https://api.openai.com/v1");
        assert_eq!(config.api_key, None);
        assert_eq!(config.ids, AccountIds::default());
        let config = ProviderConfig::for_provider(
            &stored(ProviderKind::OpenAi, "http://h/v1/", ""),
            Duration::from_secs(1),
        );
        assert_eq!(
            config.url("/chat/completions"),
            "http://h/v1/chat/completions"
        );
        assert_eq!(
            default_base_url(ProviderKind::CodexChatgpt),
            Some("https://chatgpt.com/backend-api")
        );
        assert_eq!(default_base_url(ProviderKind::OpenAi), None);
    }
}
