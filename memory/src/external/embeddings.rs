//! Vectors of texts from an OpenAI-compatible embeddings endpoint
//! (`POST {base_url}/embeddings`), which the provider simulator also serves.
//!
//! The model's dimension is learned from its first answer (a one-text
//! probe when [`Embedder::model`] is asked first) and every later answer
//! must keep it: vectors of another length would land in the wrong
//! collection, so such an answer is an error, never stored. Errors say
//! what failed (the status, the provider's error code) and never carry the
//! key, the URL's query or the texts sent.

use super::EmbeddingSettings;
use crate::error::{MemoryError, MemoryResult};
use serde::{Deserialize, Serialize};
use std::sync::Mutex;
use std::time::Duration;

/// The longest one embeddings request may take.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// The most texts sent in one request (OpenAI accepts 2048; smaller
/// requests keep each answer's size reasonable).
pub const MAX_TEXTS_PER_REQUEST: usize = 256;

/// What the dimension probe embeds.
const PROBE: &str = "dimension probe";

/// A model and the length of its vectors.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct EmbeddingModel {
    pub name: String,
    pub dimension: usize,
}

/// The installation's embeddings endpoint.
pub struct Embedder {
    client: reqwest::Client,
    url: reqwest::Url,
    model: String,
    api_key: Option<String>,
    dimensions: Option<u32>,
    /// The dimension of the model's vectors, once an answer showed it.
    learned: Mutex<Option<usize>>,
}

/// The body of an OpenAI-style `POST /embeddings`.
#[derive(Serialize)]
struct Request<'a> {
    /// Asked only when configured: not every endpoint accepts it.
    #[serde(skip_serializing_if = "Option::is_none")]
    dimensions: Option<u32>,
    encoding_format: EncodingFormat,
    input: &'a [String],
    model: &'a str,
}

/// How the vectors are sent back: plain numbers, never base64.
#[derive(Serialize)]
#[serde(rename_all = "lowercase")]
enum EncodingFormat {
    Float,
}

#[derive(Deserialize)]
struct Answer {
    data: Vec<Datum>,
}

#[derive(Deserialize)]
struct Datum {
    index: usize,
    embedding: Vec<f32>,
}

fn failed(message: impl Into<String>) -> MemoryError {
    MemoryError::External(format!("embeddings: {}", message.into()))
}

/// The provider's error code (`invalid_api_key`, `model_not_found`, …)
/// from an OpenAI-shaped error body: short, and never the key itself.
fn error_code(body: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(body).ok()?;
    let error = value.get("error")?;
    let code = error
        .get("code")
        .and_then(|c| c.as_str())
        .or_else(|| error.get("type").and_then(|t| t.as_str()))?;
    let safe = code.len() <= 64
        && code
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.');
    safe.then(|| code.to_owned())
}

impl Embedder {
    pub fn new(settings: &EmbeddingSettings) -> MemoryResult<Embedder> {
        // `{base}/embeddings`, a query of the base (Azure's `api-version`)
        // kept after the path.
        let mut url = reqwest::Url::parse(settings.base_url.trim())
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https") && !u.cannot_be_a_base())
            .ok_or_else(|| failed("the embeddings base URL is not an http(s) URL"))?;
        if let Ok(mut path) = url.path_segments_mut() {
            path.pop_if_empty().push("embeddings");
        }
        if settings.model.trim().is_empty() {
            return Err(failed("no embedding model is configured"));
        }
        let client = reqwest::Client::builder()
            .timeout(REQUEST_TIMEOUT)
            .build()
            .map_err(|e| failed(format!("cannot build the HTTP client: {e}")))?;
        Ok(Embedder {
            client,
            url,
            model: settings.model.trim().to_owned(),
            api_key: settings.api_key.clone().filter(|k| !k.is_empty()),
            dimensions: settings.dimensions.filter(|d| *d > 0),
            learned: Mutex::new(None),
        })
    }

    fn learned(&self) -> Option<usize> {
        *self.learned.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The model in use and its dimension (learned from the first answer).
    pub async fn model(&self) -> MemoryResult<EmbeddingModel> {
        let dimension = match self.learned() {
            Some(dimension) => dimension,
            None => {
                let vectors = self.embed(&[PROBE.to_owned()]).await?;
                vectors
                    .first()
                    .map(Vec::len)
                    .ok_or_else(|| failed("the endpoint answered no vector"))?
            }
        };
        Ok(EmbeddingModel {
            name: self.model.clone(),
            dimension,
        })
    }

    /// One vector per text, in order.
    pub async fn embed(&self, texts: &[String]) -> MemoryResult<Vec<Vec<f32>>> {
        let mut vectors = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(MAX_TEXTS_PER_REQUEST) {
            vectors.extend(self.embed_chunk(chunk).await?);
        }
        Ok(vectors)
    }

    async fn embed_chunk(&self, texts: &[String]) -> MemoryResult<Vec<Vec<f32>>> {
        let body = Request {
            dimensions: self.dimensions,
            encoding_format: EncodingFormat::Float,
            input: texts,
            model: &self.model,
        };
        let mut request = self.client.post(self.url.clone()).json(&body);
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key);
        }
        // `without_url`: the configured URL could carry a key in its query.
        let response = request
            .send()
            .await
            .map_err(|e| failed(format!("no answer: {}", e.without_url())))?;
        let status = response.status();
        let text = response
            .text()
            .await
            .map_err(|e| failed(format!("answer not read: {}", e.without_url())))?;
        if !status.is_success() {
            return Err(failed(match error_code(&text) {
                Some(code) => format!("the endpoint answered {status} ({code})"),
                None => format!("the endpoint answered {status}"),
            }));
        }
        let answer: Answer = serde_json::from_str(&text)
            .map_err(|_| failed("the answer is not an embeddings list"))?;
        let mut slots: Vec<Option<Vec<f32>>> = vec![None; texts.len()];
        for datum in answer.data {
            let slot = slots
                .get_mut(datum.index)
                .ok_or_else(|| failed("the answer has a vector for no text"))?;
            if slot.replace(datum.embedding).is_some() {
                return Err(failed("the answer has two vectors for one text"));
            }
        }
        let vectors = slots
            .into_iter()
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| failed("the answer lacks a vector"))?;
        self.check_dimension(&vectors)?;
        Ok(vectors)
    }

    /// Every vector has the model's dimension (the first answer's).
    fn check_dimension(&self, vectors: &[Vec<f32>]) -> MemoryResult<()> {
        let mut learned = self.learned.lock().unwrap_or_else(|e| e.into_inner());
        for vector in vectors {
            if vector.is_empty() || vector.iter().any(|x| !x.is_finite()) {
                return Err(failed("the answer has an empty or non-finite vector"));
            }
            match *learned {
                None => *learned = Some(vector.len()),
                Some(dimension) if dimension != vector.len() => {
                    return Err(failed(format!(
                        "the answer has vectors of {} values where the model gave {dimension}",
                        vector.len()
                    )));
                }
                Some(_) => {}
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::external::chroma::testkit;

    #[test]
    fn provider_error_codes_are_kept_only_when_short_and_plain() {
        assert_eq!(
            error_code(
                r#"{"error":{"message":"Incorrect API key sk-abc","code":"invalid_api_key"}}"#
            ),
            Some("invalid_api_key".to_owned())
        );
        assert_eq!(
            error_code(r#"{"error":{"message":"m","type":"server_error","code":null}}"#),
            Some("server_error".to_owned())
        );
        assert_eq!(error_code(r#"{"error":{"code":"sk-abc def"}}"#), None);
        assert_eq!(error_code("not json"), None);
    }

    #[test]
    fn settings_are_checked() {
        let settings = |base_url: &str, model: &str| EmbeddingSettings {
            base_url: base_url.to_owned(),
            model: model.to_owned(),
            api_key: None,
            dimensions: None,
        };
        let embedder = Embedder::new(&settings("http://127.0.0.1:1/v1/", "m")).expect("valid");
        assert_eq!(embedder.url.as_str(), "http://127.0.0.1:1/v1/embeddings");
        let azure = Embedder::new(&settings("https://x.example/openai/d/e?api-version=1", "m"))
            .expect("valid");
        assert_eq!(
            azure.url.as_str(),
            "https://x.example/openai/d/e/embeddings?api-version=1"
        );
        assert!(Embedder::new(&settings("no url", "m")).is_err());
        assert!(Embedder::new(&settings("http://127.0.0.1:1/v1", " ")).is_err());
    }

    fn embedder(base_url: &str) -> Embedder {
        Embedder::new(&testkit::settings("http://127.0.0.1:9", base_url).embeddings)
            .expect("embedder")
    }

    #[test]
    fn a_change_of_dimension_is_refused() {
        let embedder = embedder("http://127.0.0.1:9/v1");
        embedder.check_dimension(&[vec![0.5; 4]]).expect("first");
        let error = embedder
            .check_dimension(&[vec![0.5; 4], vec![0.5; 3]])
            .expect_err("another length");
        assert!(
            error
                .to_string()
                .contains("of 3 values where the model gave 4"),
            "{error}"
        );
        assert!(embedder.check_dimension(&[vec![f32::NAN; 4]]).is_err());
    }

    #[tokio::test]
    async fn vectors_come_in_order_with_the_model_and_its_dimension() {
        let simulator = testkit::simulator().await;
        let embedder = embedder(&simulator.openai_base_url());
        assert!(embedder.embed(&[]).await.expect("nothing").is_empty());
        assert_eq!(simulator.stats().embeddings, 0, "no call for no text");
        let model = embedder.model().await.expect("model");
        assert_eq!(
            model,
            EmbeddingModel {
                name: testkit::MODEL.into(),
                dimension: 64
            }
        );
        let texts = [
            "Ishmael on the deck.".to_owned(),
            "A recipe for bread.".to_owned(),
        ];
        let forward = embedder.embed(&texts).await.expect("vectors");
        let reversed: Vec<String> = texts.iter().rev().cloned().collect();
        let backward = embedder.embed(&reversed).await.expect("vectors");
        assert_eq!(forward.len(), 2);
        assert!(forward.iter().all(|v| v.len() == 64));
        assert_eq!(forward[0], backward[1]);
        assert_eq!(forward[1], backward[0]);
        assert_ne!(forward[0], forward[1]);
        // The dimension probe and the two calls; the model is remembered.
        embedder.model().await.expect("model");
        assert_eq!(simulator.stats().embeddings, 3);
    }

    #[tokio::test]
    async fn endpoint_failures_are_errors_without_the_key() {
        use dragoman_simulator::SimulatorConfig;
        let texts = ["text".to_owned()];
        let failing = testkit::simulator_with(SimulatorConfig {
            rate_500: 1.0,
            ..SimulatorConfig::default()
        })
        .await;
        let error = embedder(&failing.openai_base_url())
            .embed(&texts)
            .await
            .expect_err("500");
        let message = error.to_string();
        assert!(matches!(error, MemoryError::External(_)));
        assert!(
            message.contains("500") && message.contains("server_error"),
            "{message}"
        );
        assert!(!message.contains("sk-test-secret"), "{message}");

        let malformed = testkit::simulator_with(SimulatorConfig {
            rate_malformed: 1.0,
            ..SimulatorConfig::default()
        })
        .await;
        let error = embedder(&malformed.openai_base_url())
            .embed(&texts)
            .await
            .expect_err("not JSON");
        assert!(
            error.to_string().contains("not an embeddings list"),
            "{error}"
        );

        let nobody = embedder("http://127.0.0.1:9/v1?key=sk-test-secret")
            .embed(&texts)
            .await
            .expect_err("nobody listens");
        assert!(!nobody.to_string().contains("sk-test-secret"), "{nobody}");
    }
}
