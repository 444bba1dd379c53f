//! The simulated OpenAI-compatible embeddings endpoint
//! (`POST /v1/embeddings`): deterministic vectors, so that the external
//! memory can be tested and measured without downloading a model.
//!
//! A text's vector is built from hashed features, each adding its weight to
//! one of `dimensions` buckets with a sign also taken from its hash: every
//! lower-cased word (weight 1) and every character trigram of each word
//! padded with spaces (weight 0.5). The vector is then L2-normalised. Texts
//! sharing words (or parts of words, as an inflection or a misspelt name
//! does) share buckets, so they are near in cosine and Euclidean distance;
//! unrelated texts land on unrelated buckets and are nearly orthogonal. The
//! hash is FNV-1a, fixed here, so a text has the same vector on every
//! machine and in every version of the toolchain.

use serde::Deserialize;
use serde_json::{Value, json};

/// Vector length when the request asks for none (small on purpose: the
/// tests and benchmarks store many of them).
pub(super) const DEFAULT_DIMENSIONS: usize = 256;

/// The longest vector a request may ask for (OpenAI's largest model has
/// 3072).
pub(super) const MAX_DIMENSIONS: usize = 4096;

/// The most inputs one request may carry, as OpenAI allows.
pub(super) const MAX_INPUTS: usize = 2048;

/// Weight of a word feature.
const WORD_WEIGHT: f32 = 1.0;

/// Weight of a character-trigram feature: lower than a word's, so a shared
/// word counts for more than a few shared letters.
const TRIGRAM_WEIGHT: f32 = 0.5;

/// A well-formed embeddings request.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct EmbeddingRequest {
    pub model: String,
    pub inputs: Vec<String>,
    pub dimensions: usize,
}

#[derive(Deserialize)]
struct Wire {
    model: Option<String>,
    input: Option<Value>,
    dimensions: Option<Value>,
    encoding_format: Option<String>,
}

/// Reads a request body, or says why it is refused (a 400).
pub(super) fn parse(body: &[u8]) -> Result<EmbeddingRequest, String> {
    let wire: Wire =
        serde_json::from_slice(body).map_err(|e| format!("the body is not a JSON object: {e}"))?;
    let model = wire
        .model
        .filter(|m| !m.trim().is_empty())
        .ok_or("`model` is required")?;
    let inputs = match wire.input {
        Some(Value::String(text)) => vec![text],
        Some(Value::Array(items)) => items
            .into_iter()
            .map(|item| match item {
                Value::String(text) => Ok(text),
                // Token arrays are valid for OpenAI; the simulator only reads text.
                _ => Err("`input` must be a string or an array of strings".to_owned()),
            })
            .collect::<Result<Vec<_>, _>>()?,
        _ => return Err("`input` must be a string or an array of strings".into()),
    };
    if inputs.is_empty() {
        return Err("`input` must not be empty".into());
    }
    if inputs.len() > MAX_INPUTS {
        return Err(format!("`input` holds more than {MAX_INPUTS} items"));
    }
    let dimensions = match wire.dimensions {
        None | Some(Value::Null) => DEFAULT_DIMENSIONS,
        Some(value) => value
            .as_u64()
            .and_then(|d| usize::try_from(d).ok())
            .filter(|d| (1..=MAX_DIMENSIONS).contains(d))
            .ok_or_else(|| format!("`dimensions` must be an integer from 1 to {MAX_DIMENSIONS}"))?,
    };
    match wire.encoding_format.as_deref() {
        None | Some("float") => {}
        Some(_) => return Err("only `encoding_format: float` is simulated".into()),
    }
    Ok(EmbeddingRequest {
        model,
        inputs,
        dimensions,
    })
}

/// FNV-1a, 64 bits: small, fixed and good enough to spread features.
fn fnv1a(prefix: u8, text: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in std::iter::once(prefix).chain(text.bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// Adds one feature to the vector: its bucket from the hash, its sign from
/// the hash's top bit (signed hashing keeps collisions from only ever
/// adding up).
fn add(vector: &mut [f32], hash: u64, weight: f32) {
    let len = vector.len() as u64;
    // `len` is at least 1 (checked when parsing), and the bucket is below it.
    let bucket = usize::try_from(hash % len).unwrap_or(0);
    let sign = if hash >> 63 == 0 { 1.0 } else { -1.0 };
    vector[bucket] += sign * weight;
}

/// The unit vector of `text` in `dimensions` buckets.
pub(super) fn embed(text: &str, dimensions: usize) -> Vec<f32> {
    let dimensions = dimensions.max(1);
    let mut vector = vec![0.0f32; dimensions];
    let lower = text.to_lowercase();
    for word in lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        add(&mut vector, fnv1a(b'w', word), WORD_WEIGHT);
        let padded: Vec<char> = std::iter::once(' ')
            .chain(word.chars())
            .chain(std::iter::once(' '))
            .collect();
        for trigram in padded.windows(3) {
            let trigram: String = trigram.iter().collect();
            add(&mut vector, fnv1a(b't', &trigram), TRIGRAM_WEIGHT);
        }
    }
    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        for x in &mut vector {
            *x /= norm;
        }
    } else {
        // A text without words (blank, punctuation only) still gets a unit
        // vector, the same for all of them: a zero vector has no direction
        // and vector stores refuse or mishandle it.
        add(&mut vector, fnv1a(b'e', ""), 1.0);
        for x in &mut vector {
            *x = x.abs();
        }
    }
    vector
}

/// The answer to `request` in OpenAI's shape; `tokens` estimates the
/// usage of one input.
pub(super) fn answer(request: &EmbeddingRequest, tokens: impl Fn(&str) -> u64) -> Value {
    let data: Vec<Value> = request
        .inputs
        .iter()
        .enumerate()
        .map(|(index, text)| {
            json!({
                "object": "embedding",
                "index": index,
                "embedding": embed(text, request.dimensions),
            })
        })
        .collect();
    let used = request
        .inputs
        .iter()
        .map(|t| tokens(t))
        .fold(0u64, u64::saturating_add);
    json!({
        "object": "list",
        "data": data,
        "model": request.model,
        "usage": {"prompt_tokens": used, "total_tokens": used},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cosine(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    #[test]
    fn vectors_are_unit_length_and_deterministic() {
        for text in ["Alice met Bob.", "", "…", "Ünïcödé wörds"] {
            let v = embed(text, 64);
            assert_eq!(v.len(), 64);
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            assert!((norm - 1.0).abs() < 1e-5, "{text:?}: {norm}");
            assert_eq!(v, embed(text, 64));
        }
    }

    #[test]
    fn similar_texts_are_nearer_than_unrelated_ones() {
        let a = embed("Captain Ahab watched the white whale from the deck.", 256);
        let near = embed("From the deck, captain Ahab watched the whale.", 256);
        let inflected = embed("Captains watching whales", 256);
        let far = embed("The recipe needs two eggs and some flour.", 256);
        assert!(cosine(&a, &near) > 0.7, "{}", cosine(&a, &near));
        assert!(cosine(&a, &inflected) > cosine(&a, &far));
        assert!(cosine(&a, &far) < 0.3, "{}", cosine(&a, &far));
    }

    #[test]
    fn requests_are_read_or_refused() {
        let r = parse(br#"{"model":"m","input":"one"}"#).expect("string input");
        assert_eq!(r.inputs, vec!["one".to_owned()]);
        assert_eq!(r.dimensions, DEFAULT_DIMENSIONS);
        let r =
            parse(br#"{"model":"m","input":["a","b"],"dimensions":8,"encoding_format":"float"}"#)
                .expect("array input");
        assert_eq!((r.inputs.len(), r.dimensions), (2, 8));
        for bad in [
            &br#"{"input":"x"}"#[..],
            br#"{"model":"m"}"#,
            br#"{"model":"m","input":[]}"#,
            br#"{"model":"m","input":[[1,2]]}"#,
            br#"{"model":"m","input":"x","dimensions":0}"#,
            br#"{"model":"m","input":"x","dimensions":"8"}"#,
            br#"{"model":"m","input":"x","encoding_format":"base64"}"#,
            b"not json",
        ] {
            assert!(parse(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }
}
