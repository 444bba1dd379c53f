//! Every provider kind of spec 2.10 end to end: one provider of each kind
//! registered with `dragoman provider add --kind …` against the simulator
//! (which speaks each protocol), two small JSON requests translated with
//! each to `completed`, the report's usage filled. Each kind's calls reach
//! the simulator in its own protocol with its own fields (cache key,
//! OpenAI organisation and project, ChatGPT account read from the access
//! token). The second request reads the system prompt from the provider's
//! (simulated) prompt cache: its report shows cached prompt tokens, its
//! `cached_calls` stays 0 (nothing came from the translation memory), and
//! every recorded call costs its plain, cached and written prompt tokens at
//! the provider's prices.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use dragoman_e2e::translation::chapter;
use dragoman_e2e::{Api, Backend, on_both_backends};
use sea_orm::{ConnectionTrait, Statement};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::Duration;

on_both_backends!(every_kind_translates_and_prices_its_cache);

const MINUTE: Duration = Duration::from_secs(60);

const KEY_VARIABLE: &str = "E2E_KINDS_KEY";
const DIRECT_KEY_VARIABLE: &str = "E2E_KINDS_DIRECT_KEY";
const CODEX_TOKEN_VARIABLE: &str = "E2E_KINDS_CODEX_TOKEN";
const ACCOUNT: &str = "acc-e2e-kinds";
const PRICE_INPUT: f64 = 2.0;
const PRICE_OUTPUT: f64 = 6.0;

/// One provider of the test.
struct Kind {
    kind: &'static str,
    /// The simulator's protocol for it (`/prompts` `wire`).
    wire: &'static str,
    /// `--price-cached-input`, when set.
    cached_price: Option<f64>,
    /// What a cached prompt token costs at this provider without one.
    default_share: f64,
}

const KINDS: [Kind; 5] = [
    Kind {
        kind: "openai",
        wire: "chat",
        cached_price: None,
        default_share: 0.5,
    },
    Kind {
        kind: "openai_direct",
        wire: "chat",
        cached_price: Some(0.25),
        default_share: 0.5,
    },
    Kind {
        kind: "openai_responses",
        wire: "responses",
        cached_price: None,
        default_share: 0.5,
    },
    Kind {
        kind: "anthropic",
        wire: "messages",
        cached_price: None,
        default_share: 0.1,
    },
    Kind {
        kind: "codex_chatgpt",
        wire: "codex",
        cached_price: Some(0.0),
        default_share: 0.5,
    },
];

/// A ChatGPT access token as the OAuth flow gives it: a JWT whose claims
/// name the account (the signature is the backend's business).
fn chatgpt_access_token() -> String {
    let encode = |v: &[u8]| URL_SAFE_NO_PAD.encode(v);
    let claims = json!({
        "sub": "user-e2e",
        "https://api.openai.com/auth": {"chatgpt_account_id": ACCOUNT},
    });
    format!(
        "{}.{}.{}",
        encode(br#"{"alg":"RS256","typ":"JWT"}"#),
        encode(claims.to_string().as_bytes()),
        encode(b"not-checked")
    )
}

async fn add_provider(api: &Api, k: &Kind) -> String {
    let base_url = match k.wire {
        "messages" => api.simulator.base().to_owned(),
        "codex" => api.simulator.codex_base_url(),
        _ => api.simulator.openai_base_url(),
    };
    let key_variable = match k.kind {
        "openai_direct" => DIRECT_KEY_VARIABLE,
        "codex_chatgpt" => CODEX_TOKEN_VARIABLE,
        _ => KEY_VARIABLE,
    };
    let model = format!("sim-{}", k.kind);
    let (price_input, price_output) = (PRICE_INPUT.to_string(), PRICE_OUTPUT.to_string());
    let cached_price = k.cached_price.map(|p| p.to_string());
    let mut args = vec![
        "provider",
        "add",
        "--name",
        k.kind,
        "--kind",
        k.kind,
        "--model",
        &model,
        "--base-url",
        &base_url,
        "--api-key-env",
        key_variable,
        "--price-input",
        &price_input,
        "--price-output",
        &price_output,
    ];
    if let Some(price) = &cached_price {
        args.extend(["--price-cached-input", price.as_str()]);
    }
    let output = api.server.installation.cli_ok(&args).await;
    output
        .trim()
        .strip_prefix("added provider ")
        .unwrap_or_else(|| panic!("unexpected `provider add` output: {output}"))
        .to_owned()
}

/// A small JSON request (spec 2.4) of one chapter with the provider.
fn request(provider_id: &str, series: &str, tag: &str) -> Value {
    json!({
        "series": {"name": series, "create_if_missing": true},
        "volume": {"number": 1},
        "source_language": "en",
        "target_language": "fr",
        "provider_id": provider_id,
        "chapters": [chapter(tag, 1, 3)],
    })
}

/// Translates one request to its end and returns its report's usage.
async fn translate(api: &Api, body: &Value) -> Value {
    let summary = api.submit_ok(body).await;
    let id = summary["request_id"]
        .as_str()
        .unwrap_or_else(|| panic!("no request id in {summary}"))
        .to_owned();
    let done = api.wait_final(&id, MINUTE).await;
    assert_eq!(done["status"], "completed", "{done}");
    done["report"]["usage"].clone()
}

/// A provider's call as recorded: (prompt, cached, written, completion
/// tokens, cost, status).
type CallRow = (i64, i64, i64, i64, Option<f64>, String);

async fn recorded_calls(api: &Api) -> BTreeMap<String, Vec<CallRow>> {
    let db = api.server.installation.sql().await;
    let statement = Statement::from_string(
        db.get_database_backend(),
        "SELECT p.name AS name, c.prompt_tokens AS prompt_tokens, \
         c.cached_prompt_tokens AS cached_prompt_tokens, \
         c.cache_write_tokens AS cache_write_tokens, \
         c.completion_tokens AS completion_tokens, c.cost AS cost, c.status AS status \
         FROM provider_calls c JOIN providers p ON p.id = c.provider_id \
         ORDER BY c.created_at"
            .to_owned(),
    );
    let rows = db.query_all_raw(statement).await.expect("provider calls");
    let mut calls: BTreeMap<String, Vec<CallRow>> = BTreeMap::new();
    for row in rows {
        let get = |column: &str| -> i64 { row.try_get("", column).expect(column) };
        let name: String = row.try_get("", "name").expect("name");
        calls.entry(name).or_default().push((
            get("prompt_tokens"),
            get("cached_prompt_tokens"),
            get("cache_write_tokens"),
            get("completion_tokens"),
            row.try_get("", "cost").expect("cost"),
            row.try_get("", "status").expect("status"),
        ));
    }
    calls
}

async fn every_kind_translates_and_prices_its_cache(backend: Backend) {
    let api = Api::builder(backend)
        .without_provider()
        // The five kinds' requests run side by side.
        .env("QUEUE_MAX_RUNNING_PER_ACCOUNT", "5")
        .env(KEY_VARIABLE, "sk-e2e-kinds")
        .env(DIRECT_KEY_VARIABLE, "sk-e2e-direct")
        .env(&format!("{DIRECT_KEY_VARIABLE}_ORGANIZATION"), "org-e2e")
        .env(&format!("{DIRECT_KEY_VARIABLE}_PROJECT"), "proj-e2e")
        .env(CODEX_TOKEN_VARIABLE, &chatgpt_access_token())
        .start()
        .await;
    let mut ids = Vec::new();
    for k in &KINDS {
        ids.push(add_provider(&api, k).await);
    }
    // Registered and listed under their own kinds.
    let listed = api.get("/api/v1/providers").await.expect(200);
    let kinds: Vec<&str> = listed
        .as_array()
        .expect("array")
        .iter()
        .filter_map(|p| p["kind"].as_str())
        .collect();
    let mut expected: Vec<&str> = KINDS.iter().map(|k| k.kind).collect();
    expected.sort_unstable();
    assert_eq!(kinds, expected, "sorted by name, which is the kind");

    // The kinds side by side, each translating two requests in turn.
    let runs = KINDS.iter().zip(&ids).map(|(k, id)| {
        let api = &api;
        async move {
            // Texts of their own: nothing may come from the translation
            // memory, which the owner shares across providers.
            let (one, two) = (format!("{} one", k.kind), format!("{} two", k.kind));
            let first = translate(api, &request(id, &one, &one)).await;
            let second = translate(api, &request(id, &two, &two)).await;
            (k, first, second)
        }
    });
    for (k, first, second) in futures::future::join_all(runs).await {
        for usage in [&first, &second] {
            assert!(usage["calls"].as_u64() >= Some(2), "{}: {usage}", k.kind);
            assert!(
                usage["prompt_tokens"].as_u64() > Some(0),
                "{}: {usage}",
                k.kind
            );
            assert!(
                usage["completion_tokens"].as_u64() > Some(0),
                "{}: {usage}",
                k.kind
            );
            assert!(usage["cost"].is_number(), "{}: {usage}", k.kind);
            // Nothing was served from the translation memory.
            assert_eq!(usage["cached_calls"], 0, "{}: {usage}", k.kind);
        }
        // The second request's prompts begin with the system prompts the
        // first request's calls left in the cache.
        assert!(
            second["cached_prompt_tokens"].as_u64() > Some(0),
            "{}: {second}",
            k.kind
        );
        assert!(
            second["cached_prompt_tokens"].as_u64() < second["prompt_tokens"].as_u64(),
            "{}: {second}",
            k.kind
        );
    }

    // Each kind spoke its own protocol with its own fields.
    let prompts = api.simulator.prompts().await;
    for k in &KINDS {
        let model_calls: Vec<&Value> = prompts
            .iter()
            .filter(|p| p["wire"] == k.wire)
            .filter(|p| match k.kind {
                // Both chat kinds share the protocol: told apart by key.
                "openai" => p.get("cache_key").is_none(),
                "openai_direct" => p.get("cache_key").is_some(),
                _ => true,
            })
            .collect();
        assert!(!model_calls.is_empty(), "{}: no call in {}", k.kind, k.wire);
        for p in model_calls {
            let field = |name: &str| p.get(name).and_then(Value::as_str);
            let expected = match k.kind {
                "openai_direct" => (Some("org-e2e"), Some("proj-e2e"), None),
                "codex_chatgpt" => (None, None, Some(ACCOUNT)),
                _ => (None, None, None),
            };
            assert_eq!(
                (field("organization"), field("project"), field("account_id")),
                expected,
                "{}: {p}",
                k.kind
            );
            let keyed = !matches!(k.kind, "openai" | "anthropic");
            assert_eq!(p.get("cache_key").is_some(), keyed, "{}: {p}", k.kind);
        }
    }
    let stats = api.simulator.stats().await;
    for protocol in ["openai", "anthropic", "responses", "codex"] {
        assert!(stats[protocol].as_u64() > Some(0), "{protocol}: {stats}");
    }
    assert_eq!(stats["bad_requests"], 0, "{stats}");

    // Every call priced with its cache: reads at the provider's cached
    // price (or the kind's share of the input price), Anthropic's writes at
    // 125 %.
    let calls = recorded_calls(&api).await;
    for k in &KINDS {
        let rows = calls
            .get(k.kind)
            .unwrap_or_else(|| panic!("{}: no call recorded", k.kind));
        let read_price = k.cached_price.unwrap_or(PRICE_INPUT * k.default_share);
        let write_price = if k.kind == "anthropic" {
            PRICE_INPUT * 1.25
        } else {
            PRICE_INPUT
        };
        assert!(
            rows.iter().any(|r| r.1 > 0),
            "{}: no call read the cache: {rows:?}",
            k.kind
        );
        assert_eq!(
            rows.iter().any(|r| r.2 > 0),
            k.kind == "anthropic",
            "{}: only Anthropic reports cache writes: {rows:?}",
            k.kind
        );
        // Calls without an answer have no tokens and cost 0 at these prices.
        for (prompt, read, written, completion, cost, _) in rows {
            let plain = prompt - read - written;
            let want = (plain as f64 * PRICE_INPUT
                + *read as f64 * read_price
                + *written as f64 * write_price
                + *completion as f64 * PRICE_OUTPUT)
                / 1e6;
            let got = cost.unwrap_or_else(|| panic!("{}: a priced call without cost", k.kind));
            assert!(
                (got - want).abs() < 1e-12,
                "{}: cost {got}, expected {want} for {prompt} prompt ({read} read, \
                 {written} written) and {completion} completion tokens",
                k.kind
            );
        }
    }
}
