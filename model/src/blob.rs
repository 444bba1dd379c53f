//! The blob store that holds uploaded originals and stored results, through
//! `object_store`: a local folder by default, or memory for tests.

use crate::error::ModelError;
use object_store::ObjectStore;
use object_store::local::LocalFileSystem;
use object_store::memory::InMemory;
use std::sync::Arc;

/// Opens `url`: `file:///abs/path`, a plain path, or `memory://`.
pub fn open(url: &str) -> Result<Arc<dyn ObjectStore>, ModelError> {
    if url == "memory://" {
        return Ok(Arc::new(InMemory::new()));
    }
    let path = match url.strip_prefix("file://") {
        Some(path) => path,
        None if url.contains("://") => {
            return Err(ModelError::Config(format!(
                "blob store URL scheme not supported: {} (use file:// or a path)",
                url.split("://").next().unwrap_or("")
            )));
        }
        None => url,
    };
    std::fs::create_dir_all(path)?;
    let store =
        LocalFileSystem::new_with_prefix(path).map_err(|e| ModelError::Blob(e.to_string()))?;
    Ok(Arc::new(store))
}

/// Writes, reads back and deletes a small object: proves the store works.
pub async fn probe(store: &dyn ObjectStore) -> Result<(), ModelError> {
    let path = object_store::path::Path::from(format!("health/{}", crate::ids::new_id()));
    let blob = |e: object_store::Error| ModelError::Blob(e.to_string());
    store.put(&path, bytes_of(b"ok")).await.map_err(blob)?;
    let read = store
        .get(&path)
        .await
        .map_err(blob)?
        .bytes()
        .await
        .map_err(blob)?;
    store.delete(&path).await.map_err(blob)?;
    if read.as_ref() == b"ok" {
        Ok(())
    } else {
        Err(ModelError::Blob("blob store returned other bytes".into()))
    }
}

fn bytes_of(data: &'static [u8]) -> object_store::PutPayload {
    object_store::PutPayload::from_static(data)
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn local_and_memory_stores_pass_the_probe() {
        let dir = tempfile::tempdir().expect("tempdir");
        let local = super::open(dir.path().join("blobs").to_str().expect("utf8")).expect("local");
        super::probe(local.as_ref()).await.expect("local probe");
        let memory = super::open("memory://").expect("memory");
        super::probe(memory.as_ref()).await.expect("memory probe");
        assert!(super::open("s3://bucket").is_err());
    }
}
