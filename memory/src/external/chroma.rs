//! The Chroma collections of the external memory: a small client of
//! Chroma's HTTP API v2 (`chroma run`, PyPI `chromadb` 1.5), one collection
//! per embedding model and dimension, so vectors of two models never meet
//! in one index.
//!
//! The official Rust client is not used: its types crate compiles Chroma's
//! protobuf files at build time and needs a system `protoc`, and this
//! workspace builds with Rust alone. The few calls used here are plain
//! JSON (the request and answer shapes follow the official client's
//! `chroma-api-types`).
//!
//! A collection is named `dragoman-<model slug>-<dimension>`, uses cosine
//! distance (1 − cosine similarity, 0 for the same direction) and carries
//! `{owner: "dragoman", embedding_model, dimension, schema_version: 2}` in
//! its metadata; [`Store::collection_names`] lists only collections with
//! that owner, so Dragoman never touches another application's collections
//! on a shared server. A [`Collection`] holds the server's id of the
//! collection: if the collection is deleted behind its back (a wiped
//! server), its calls fail with "does not exist" and the caller asks
//! [`Store::collection`] again, which creates it afresh.
//!
//! Every call is bounded by [`OPERATION_TIMEOUT`], so a Chroma that accepts
//! connections but never answers cannot hold the sync loop forever;
//! retrieval puts its own, tighter deadline around these calls. There are
//! no retries here: the sync loop has its backoff and retrieval its
//! deadline. Errors become [`MemoryError::External`] naming the operation,
//! the status and Chroma's error kind with a shortened message; never the
//! token (it travels in a header) and never a record sent.

use super::ExternalSettings;
use super::embeddings::EmbeddingModel;
use super::items::SCHEMA_VERSION;
use crate::error::{MemoryError, MemoryResult};
use requests::{
    CollectionConfiguration, CollectionMetadata, CreateCollection, Delete, Get, HnswConfiguration,
    Include, Query, Space, Upsert,
};
use reqwest::{Method, StatusCode, Url};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::time::Duration;

mod requests;

pub use requests::{KindIs, Where};

/// The longest one Chroma call may take before it counts as failed.
pub const OPERATION_TIMEOUT: Duration = Duration::from_secs(30);

/// How long connecting to Chroma may take: a stopped server refuses at
/// once, an unreachable host should not eat a retrieval's whole deadline.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// Prefix of every collection Dragoman creates.
pub const COLLECTION_PREFIX: &str = "dragoman-";

/// `owner` in the metadata of Dragoman's collections.
pub const OWNER: &str = "dragoman";

/// Collections read per page when listing them.
const LIST_PAGE: usize = 100;

/// The longest part of Chroma's error message kept in an error.
const MESSAGE_KEPT: usize = 160;

/// The HTTP side shared by the store and its collections.
#[derive(Clone)]
struct Http {
    client: reqwest::Client,
    /// `{url}/api/v2`.
    api: Url,
    tenant: String,
    database: String,
    token: Option<String>,
}

/// The Chroma server of the installation.
pub struct Store {
    http: Http,
}

/// A collection holding the vectors of one embedding model.
pub struct Collection {
    http: Http,
    id: String,
    name: String,
    metadata: Map<String, Value>,
}

/// One mirrored item as written to Chroma.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub id: String,
    /// The text embedded.
    pub document: String,
    pub embedding: Vec<f32>,
    /// Scalars only (Chroma's metadata); holds `schema_version` 2.
    pub metadata: Map<String, Value>,
}

/// One answer of a nearest-neighbour query.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub id: String,
    /// Cosine distance: 0 for the same direction, 1 for orthogonal.
    pub distance: f32,
    pub document: Option<String>,
    pub metadata: Map<String, Value>,
}

/// How a call failed: `NotFound` is told apart because several callers
/// treat "does not exist" as an answer, not a failure.
enum CallError {
    NotFound,
    Failed(MemoryError),
}

impl From<CallError> for MemoryError {
    fn from(error: CallError) -> MemoryError {
        match error {
            CallError::NotFound => MemoryError::External("chroma: does not exist".to_owned()),
            CallError::Failed(error) => error,
        }
    }
}

/// Chroma's error body: `{"error": "NotFoundError", "message": "…"}`.
#[derive(Deserialize)]
struct ErrorBody {
    error: Option<String>,
    message: Option<String>,
}

#[derive(Deserialize)]
struct CollectionModel {
    id: String,
    name: String,
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
}

/// The metadata of one record as Chroma answers it (`null` when none).
type RecordMetadata = Option<Map<String, Value>>;

#[derive(Deserialize)]
struct GetAnswer {
    ids: Vec<String>,
    #[serde(default)]
    metadatas: Option<Vec<RecordMetadata>>,
}

#[derive(Deserialize)]
struct QueryAnswer {
    ids: Vec<Vec<String>>,
    #[serde(default)]
    documents: Option<Vec<Vec<Option<String>>>>,
    #[serde(default)]
    metadatas: Option<Vec<Vec<RecordMetadata>>>,
    #[serde(default)]
    distances: Option<Vec<Vec<Option<f32>>>>,
}

fn failed(operation: &str, what: impl std::fmt::Display) -> CallError {
    CallError::Failed(MemoryError::External(format!("chroma {operation}: {what}")))
}

/// `text` cut to at most `max` characters (on a character boundary).
fn shortened(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

impl Http {
    /// `{api}/{segments…}`, each segment percent-encoded.
    fn url(&self, segments: &[&str]) -> Url {
        let mut url = self.api.clone();
        if let Ok(mut path) = url.path_segments_mut() {
            path.pop_if_empty().extend(segments);
        }
        url
    }

    /// `{api}/tenants/{tenant}/databases/{database}/collections/{rest…}`.
    fn collections_url(&self, rest: &[&str]) -> Url {
        let mut segments = vec![
            "tenants",
            self.tenant.as_str(),
            "databases",
            self.database.as_str(),
            "collections",
        ];
        segments.extend_from_slice(rest);
        self.url(&segments)
    }

    /// One call, its answer read as `T`.
    async fn call<T: DeserializeOwned, B: Serialize>(
        &self,
        operation: &str,
        method: Method,
        url: Url,
        body: Option<&B>,
    ) -> Result<T, CallError> {
        let mut request = self.client.request(method, url);
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request.send().await.map_err(|error| {
            if error.is_timeout() {
                failed(
                    operation,
                    format_args!("no answer within {}s", OPERATION_TIMEOUT.as_secs()),
                )
            } else {
                failed(operation, error.without_url())
            }
        })?;
        let status = response.status();
        let text = response
            .text()
            .await
            .map_err(|error| failed(operation, error.without_url()))?;
        if status == StatusCode::NOT_FOUND {
            return Err(CallError::NotFound);
        }
        if !status.is_success() {
            let body: Option<ErrorBody> = serde_json::from_str(&text).ok();
            let kind = body.as_ref().and_then(|b| b.error.clone());
            let message = body
                .as_ref()
                .and_then(|b| b.message.as_deref())
                .map(|m| shortened(m, MESSAGE_KEPT));
            // Some errors (a missing collection asked by id) come as a 4xx
            // other than 404 with Chroma's NotFoundError kind.
            if kind.as_deref() == Some("NotFoundError") {
                return Err(CallError::NotFound);
            }
            let detail = match (kind, message) {
                (Some(kind), Some(message)) => format!("{status} {kind}: {message}"),
                (Some(kind), None) => format!("{status} {kind}"),
                (None, _) => status.to_string(),
            };
            return Err(failed(operation, detail));
        }
        serde_json::from_str(&text).map_err(|_| failed(operation, "the answer is not understood"))
    }
}

/// The collection name of `model`: `dragoman-<slug>-<dimension>`. The
/// slug is the model name when it is made of Chroma's name characters
/// alone; otherwise every other character becomes `-` and 8 hex digits of
/// the name's SHA-256 are added, so two names that differ only there (say
/// `org/model` and `org-model`) never share a collection.
pub fn collection_name(model: &EmbeddingModel) -> String {
    let allowed = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.';
    let mut slug = String::with_capacity(model.name.len());
    for c in model.name.chars() {
        let c = if allowed(c) { c } else { '-' };
        // Chroma refuses two periods in a row; runs of `-` only look odd.
        if (c == '.' || c == '-') && slug.ends_with(c) {
            continue;
        }
        slug.push(c);
    }
    // Chroma names start and end with a letter or digit; 200 characters
    // keep the whole name far below Chroma's 512.
    let slug: String = slug
        .trim_matches(|c: char| !c.is_ascii_alphanumeric())
        .chars()
        .take(200)
        .collect();
    let slug = slug.trim_end_matches(|c: char| !c.is_ascii_alphanumeric());
    if slug == model.name && !slug.is_empty() {
        format!("{COLLECTION_PREFIX}{slug}-{}", model.dimension)
    } else {
        let digest = hex::encode(Sha256::digest(model.name.as_bytes()));
        let short = digest.get(..8).unwrap_or("00000000");
        let slug = if slug.is_empty() { "model" } else { slug };
        format!("{COLLECTION_PREFIX}{slug}-{short}-{}", model.dimension)
    }
}

/// The metadata a collection of `model` is created with.
fn collection_metadata(model: &EmbeddingModel) -> CollectionMetadata<'_> {
    CollectionMetadata {
        dimension: model.dimension,
        embedding_model: &model.name,
        owner: OWNER,
        schema_version: SCHEMA_VERSION,
    }
}

/// Whether a collection is one of Dragoman's (by name and owner).
fn is_ours(collection: &CollectionModel) -> bool {
    collection.name.starts_with(COLLECTION_PREFIX)
        && collection
            .metadata
            .as_ref()
            .and_then(|m| m.get("owner"))
            .is_some_and(|owner| owner == OWNER)
}

/// A record's metadata for Chroma: scalars only, nulls left out (Chroma
/// stores no null on insert, and an absent field reads the same).
fn record_metadata(id: &str, metadata: &Map<String, Value>) -> MemoryResult<Map<String, Value>> {
    let mut out = Map::new();
    for (key, value) in metadata {
        match value {
            Value::Null => {}
            Value::Bool(_) | Value::Number(_) | Value::String(_) => {
                out.insert(key.clone(), value.clone());
            }
            Value::Array(_) | Value::Object(_) => {
                return Err(MemoryError::External(format!(
                    "record {id}: metadata field {key} is not a scalar"
                )));
            }
        }
    }
    Ok(out)
}

/// The tenant or database name, when Chroma would accept it (checked here
/// so a typo in the configuration is named at start, not at every call).
fn valid_scope_name(name: &str) -> bool {
    (3..=512).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
}

impl Store {
    /// The client of `settings.url`; no request is made yet.
    pub fn new(settings: &ExternalSettings) -> MemoryResult<Store> {
        let invalid = |what: &str| MemoryError::External(format!("the external memory {what}"));
        let base = settings.url.trim().trim_end_matches('/');
        let mut api = Url::parse(base).map_err(|_| invalid("URL is not a valid URL"))?;
        if !matches!(api.scheme(), "http" | "https") || api.cannot_be_a_base() {
            return Err(invalid("URL is not an http(s) URL"));
        }
        if let Ok(mut path) = api.path_segments_mut() {
            path.pop_if_empty().extend(["api", "v2"]);
        }
        if !valid_scope_name(&settings.tenant) {
            return Err(invalid("tenant is not a valid Chroma name"));
        }
        if !valid_scope_name(&settings.database) {
            return Err(invalid("database is not a valid Chroma name"));
        }
        let token = settings.token.clone().filter(|t| !t.is_empty());
        if token.as_deref().is_some_and(|t| {
            reqwest::header::HeaderValue::from_str(&format!("Bearer {t}")).is_err()
        }) {
            return Err(invalid("token is not a valid header value"));
        }
        let client = reqwest::Client::builder()
            .timeout(OPERATION_TIMEOUT)
            .connect_timeout(CONNECT_TIMEOUT)
            .build()
            .map_err(|e| MemoryError::External(format!("chroma: no HTTP client: {e}")))?;
        Ok(Store {
            http: Http {
                client,
                api,
                tenant: settings.tenant.clone(),
                database: settings.database.clone(),
                token,
            },
        })
    }

    /// Whether the server answers.
    pub async fn heartbeat(&self) -> MemoryResult<()> {
        let url = self.http.url(&["heartbeat"]);
        self.http
            .call::<Value, ()>("heartbeat", Method::GET, url, None)
            .await?;
        Ok(())
    }

    fn collection_of(&self, model: CollectionModel) -> Collection {
        Collection {
            http: self.http.clone(),
            id: model.id,
            name: model.name,
            metadata: model.metadata.unwrap_or_default(),
        }
    }

    /// The collection of `model`, created when missing with the model and
    /// its dimension in its metadata.
    pub async fn collection(&self, model: &EmbeddingModel) -> MemoryResult<Collection> {
        let body = CreateCollection {
            // Cosine: distances read the same for every model, normalised
            // vectors or not.
            configuration: CollectionConfiguration {
                hnsw: HnswConfiguration {
                    space: Space::Cosine,
                },
            },
            get_or_create: true,
            metadata: collection_metadata(model),
            name: collection_name(model),
        };
        let url = self.http.collections_url(&[]);
        let found: CollectionModel = self
            .http
            .call("create collection", Method::POST, url, Some(&body))
            .await?;
        Ok(self.collection_of(found))
    }

    /// Dragoman's collection of that name, when it exists (reads never
    /// create one: a missing collection means nothing is mirrored there).
    pub async fn collection_named(&self, name: &str) -> MemoryResult<Option<Collection>> {
        let url = self.http.collections_url(&[name]);
        match self
            .http
            .call::<CollectionModel, ()>("get collection", Method::GET, url, None)
            .await
        {
            Ok(found) if is_ours(&found) => Ok(Some(self.collection_of(found))),
            Ok(_) | Err(CallError::NotFound) => Ok(None),
            Err(CallError::Failed(error)) => Err(error),
        }
    }

    /// The collection of `model` when it exists.
    pub async fn existing_collection(
        &self,
        model: &EmbeddingModel,
    ) -> MemoryResult<Option<Collection>> {
        self.collection_named(&collection_name(model)).await
    }

    /// The names of Dragoman's collections (every model), for reindexing
    /// and orphan scans.
    pub async fn collection_names(&self) -> MemoryResult<Vec<String>> {
        let mut names = Vec::new();
        let mut offset = 0;
        loop {
            let mut url = self.http.collections_url(&[]);
            url.query_pairs_mut()
                .append_pair("limit", &LIST_PAGE.to_string())
                .append_pair("offset", &offset.to_string());
            let page: Vec<CollectionModel> = self
                .http
                .call::<_, ()>("list collections", Method::GET, url, None)
                .await?;
            let read = page.len();
            names.extend(page.into_iter().filter(is_ours).map(|c| c.name));
            if read < LIST_PAGE {
                break;
            }
            offset += read;
        }
        names.sort();
        Ok(names)
    }

    /// Deletes the collection; one already gone is not an error.
    pub async fn delete_collection(&self, name: &str) -> MemoryResult<()> {
        let url = self.http.collections_url(&[name]);
        match self
            .http
            .call::<Value, ()>("delete collection", Method::DELETE, url, None)
            .await
        {
            Ok(_) | Err(CallError::NotFound) => Ok(()),
            Err(CallError::Failed(error)) => Err(error),
        }
    }
}

impl Collection {
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The embedding model recorded in the collection's metadata.
    pub fn embedding_model(&self) -> Option<EmbeddingModel> {
        let name = self.metadata.get("embedding_model")?.as_str()?.to_owned();
        let dimension = usize::try_from(self.metadata.get("dimension")?.as_u64()?).ok()?;
        Some(EmbeddingModel { name, dimension })
    }

    async fn call<T: DeserializeOwned, B: Serialize>(
        &self,
        operation: &str,
        method: Method,
        action: &str,
        body: Option<&B>,
    ) -> MemoryResult<T> {
        let url = self.http.collections_url(&[&self.id, action]);
        self.http
            .call(operation, method, url, body)
            .await
            .map_err(|error| match error {
                CallError::NotFound => MemoryError::External(format!(
                    "chroma {operation}: collection {} does not exist",
                    self.name
                )),
                CallError::Failed(error) => error,
            })
    }

    /// Writes the records, replacing those of the same ids.
    pub async fn upsert(&self, records: Vec<Record>) -> MemoryResult<()> {
        if records.is_empty() {
            return Ok(());
        }
        let mut ids = Vec::with_capacity(records.len());
        let mut embeddings = Vec::with_capacity(records.len());
        let mut documents = Vec::with_capacity(records.len());
        let mut metadatas = Vec::with_capacity(records.len());
        for record in records {
            metadatas.push(record_metadata(&record.id, &record.metadata)?);
            ids.push(record.id);
            embeddings.push(record.embedding);
            documents.push(record.document);
        }
        let body = Upsert {
            documents,
            embeddings,
            ids,
            metadatas,
        };
        self.call::<Value, _>("upsert", Method::POST, "upsert", Some(&body))
            .await?;
        Ok(())
    }

    pub async fn delete_ids(&self, ids: Vec<String>) -> MemoryResult<()> {
        if ids.is_empty() {
            return Ok(());
        }
        let body = Delete {
            ids: Some(ids),
            filter: None,
        };
        self.call::<Value, _>("delete", Method::POST, "delete", Some(&body))
            .await?;
        Ok(())
    }

    /// Deletes what matches a Chroma `where` filter (Chroma's own JSON
    /// form: `{"project_id": "…"}`, `{"$and": [...]}`, `{"kind": {"$in":
    /// [...]}}`…).
    pub async fn delete_where(&self, filter: &Where) -> MemoryResult<()> {
        let body = Delete {
            ids: None,
            filter: Some(filter),
        };
        self.call::<Value, _>("delete", Method::POST, "delete", Some(&body))
            .await?;
        Ok(())
    }

    /// Ids and metadata of the records matching `filter` (all without), a
    /// page at a time.
    pub async fn list(
        &self,
        filter: Option<&Where>,
        limit: usize,
        offset: usize,
    ) -> MemoryResult<Vec<(String, Map<String, Value>)>> {
        let body = Get {
            ids: None,
            include: [Include::Metadatas],
            limit: Some(limit),
            offset: Some(offset),
            filter,
        };
        let answer: GetAnswer = self.call("get", Method::POST, "get", Some(&body)).await?;
        Ok(pairs(answer))
    }

    /// The records of `ids` that exist, with their metadata.
    pub async fn get(&self, ids: Vec<String>) -> MemoryResult<Vec<(String, Map<String, Value>)>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let body = Get {
            ids: Some(ids),
            include: [Include::Metadatas],
            limit: None,
            offset: None,
            filter: None,
        };
        let answer: GetAnswer = self.call("get", Method::POST, "get", Some(&body)).await?;
        Ok(pairs(answer))
    }

    /// The `n` nearest records to each embedding, matching `filter`.
    pub async fn query(
        &self,
        embeddings: Vec<Vec<f32>>,
        n: usize,
        filter: Option<&Where>,
    ) -> MemoryResult<Vec<Vec<Hit>>> {
        if embeddings.is_empty() {
            return Ok(Vec::new());
        }
        let asked = embeddings.len();
        if n == 0 {
            return Ok(vec![Vec::new(); asked]);
        }
        let body = Query {
            include: [Include::Documents, Include::Metadatas, Include::Distances],
            n_results: n,
            query_embeddings: embeddings,
            filter,
        };
        let answer: QueryAnswer = self
            .call("query", Method::POST, "query", Some(&body))
            .await?;
        let mut documents = answer.documents.unwrap_or_default().into_iter();
        let mut metadatas = answer.metadatas.unwrap_or_default().into_iter();
        let mut distances = answer.distances.unwrap_or_default().into_iter();
        let mut hits: Vec<Vec<Hit>> = answer
            .ids
            .into_iter()
            .map(|ids| {
                let mut documents = documents.next().unwrap_or_default().into_iter();
                let mut metadatas = metadatas.next().unwrap_or_default().into_iter();
                let mut distances = distances.next().unwrap_or_default().into_iter();
                ids.into_iter()
                    .map(|id| Hit {
                        id,
                        document: documents.next().flatten(),
                        metadata: metadatas.next().flatten().unwrap_or_default(),
                        // A hit without a distance sorts last.
                        distance: distances.next().flatten().unwrap_or(f32::MAX),
                    })
                    .collect()
            })
            .collect();
        // One list per embedding asked, whatever the server sent.
        hits.resize(asked, Vec::new());
        Ok(hits)
    }

    pub async fn count(&self) -> MemoryResult<usize> {
        self.call::<_, ()>("count", Method::GET, "count", None)
            .await
    }
}

/// Ids with their metadata, as a get answers them.
fn pairs(answer: GetAnswer) -> Vec<(String, Map<String, Value>)> {
    let mut metadatas = answer.metadatas.unwrap_or_default().into_iter();
    answer
        .ids
        .into_iter()
        .map(|id| (id, metadatas.next().flatten().unwrap_or_default()))
        .collect()
}

#[cfg(test)]
mod tests;

/// What the external memory's tests share: a real Chroma (see
/// `dragoman_testing::chroma`), the in-process provider simulator for
/// embeddings, and settings pointing at both.
#[cfg(test)]
pub(crate) mod testkit {
    use super::super::{EmbeddingSettings, ExternalSettings};
    use dragoman_simulator::{RunningSimulator, SimulatorConfig};
    use std::time::Duration;

    /// The model the tests embed with (the simulator echoes any).
    pub const MODEL: &str = "text-embedding-3-small";

    /// Settings of a Chroma at `chroma_url` embedding through
    /// `embeddings_base` (`http://…/v1`), 64 dimensions.
    pub fn settings(chroma_url: &str, embeddings_base: &str) -> ExternalSettings {
        ExternalSettings {
            url: chroma_url.to_owned(),
            tenant: "default_tenant".into(),
            database: "default_database".into(),
            token: None,
            embeddings: EmbeddingSettings {
                base_url: embeddings_base.to_owned(),
                model: MODEL.into(),
                api_key: Some("sk-test-secret".into()),
                dimensions: Some(64),
            },
            hybrid_deadline: Duration::from_millis(800),
            external_deadline: Duration::from_secs(5),
            sync_batch: 64,
        }
    }

    /// A simulator without latency or faults.
    pub async fn simulator() -> RunningSimulator {
        simulator_with(SimulatorConfig::default()).await
    }

    pub async fn simulator_with(config: SimulatorConfig) -> RunningSimulator {
        RunningSimulator::start(config).await.expect("simulator")
    }
}
