//! The HTTP client of the OTLP trace exporter: the workspace's reqwest,
//! driven on the process's Tokio runtime. The SDK exports batches from a
//! thread of its own with a plain executor; each export is handed to the
//! runtime and awaited from there, so no second HTTP stack is needed.

use async_trait::async_trait;
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use std::time::Duration;

/// Largest collector answer read (an OTLP answer is a few bytes, or a
/// partial-success message).
const MAX_ANSWER_BYTES: usize = 4 * 1024 * 1024;

/// The default export timeout of the OTLP specification.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// Sends the exporter's requests with reqwest on a Tokio runtime.
#[derive(Debug)]
pub struct RuntimeClient {
    client: reqwest::Client,
    runtime: tokio::runtime::Handle,
}

impl RuntimeClient {
    /// A client whose calls run on `runtime`, each within the export
    /// timeout (`OTEL_EXPORTER_OTLP_TRACES_TIMEOUT`, else
    /// `OTEL_EXPORTER_OTLP_TIMEOUT`, in milliseconds; 10 s by default).
    pub fn new(runtime: tokio::runtime::Handle) -> Result<RuntimeClient, crate::error::Error> {
        let client = reqwest::Client::builder()
            .timeout(export_timeout())
            .build()
            .map_err(crate::error::Error::TraceClient)?;
        Ok(RuntimeClient { client, runtime })
    }
}

fn export_timeout() -> Duration {
    [
        "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
        "OTEL_EXPORTER_OTLP_TIMEOUT",
    ]
    .iter()
    .find_map(|name| std::env::var(name).ok()?.trim().parse::<u64>().ok())
    .map(Duration::from_millis)
    .unwrap_or(DEFAULT_TIMEOUT)
}

#[async_trait]
impl HttpClient for RuntimeClient {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let client = self.client.clone();
        let call = async move {
            let (parts, body) = request.into_parts();
            let mut answer = client
                .request(parts.method, parts.uri.to_string())
                .headers(parts.headers)
                .body(body)
                .send()
                .await?;
            let mut read = Vec::new();
            while let Some(chunk) = answer.chunk().await? {
                if read.len() + chunk.len() > MAX_ANSWER_BYTES {
                    return Err(HttpError::from(
                        opentelemetry_http::ResponseBodyTooLarge::new(),
                    ));
                }
                read.extend_from_slice(&chunk);
            }
            let mut response = Response::new(Bytes::from(read));
            *response.status_mut() = answer.status();
            *response.headers_mut() = answer.headers().clone();
            Ok::<_, HttpError>(response)
        };
        self.runtime.spawn(call).await?
    }
}
