//! Files across the public gRPC services: a server stream answers a header
//! then the bytes in chunks; a client stream sends options first, then the
//! bytes. Messages stay small whatever the file, so a result or an upload
//! of `API_MAX_PAYLOAD_MB` never meets the per-message limit.

use std::pin::Pin;
use tokio_stream::Stream;

/// Bytes per chunk of a streamed file.
pub const CHUNK_BYTES: usize = 64 * 1024;

/// The answer of a server-streaming method.
pub type Answer<T> = Pin<Box<dyn Stream<Item = Result<T, tonic::Status>> + Send + 'static>>;

/// `header`, then `body` cut into chunks, each wrapped by `chunk`.
pub fn file_stream<T: Send + 'static>(
    header: T,
    body: Vec<u8>,
    chunk: impl Fn(Vec<u8>) -> T + Send + 'static,
) -> Answer<T> {
    let chunks: Vec<T> = body
        .chunks(CHUNK_BYTES)
        .map(|c| chunk(c.to_vec()))
        .collect();
    Box::pin(tokio_stream::iter(
        std::iter::once(header).chain(chunks).map(Ok),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio_stream::StreamExt;

    #[tokio::test]
    async fn a_file_comes_back_whole_after_its_header() {
        let body: Vec<u8> = (0..(CHUNK_BYTES * 2 + 10))
            .map(|i| (i % 251) as u8)
            .collect();
        let parts: Vec<_> = file_stream(None, body.clone(), Some)
            .collect::<Result<Vec<_>, _>>()
            .await
            .expect("no error");
        assert_eq!(parts.len(), 4);
        assert!(parts[0].is_none());
        let joined: Vec<u8> = parts.into_iter().flatten().flatten().collect();
        assert_eq!(joined, body);
    }
}
