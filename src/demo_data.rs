//! Where `dragoman demo` keeps its data, and the configuration it runs
//! with: a data folder of its own (a fresh temporary one, removed when the
//! demo stops, or one named with `--data-dir`), never the installation's.
//! The demo creates an account, a token, a provider pointing at a
//! simulator that lives only as long as the demo, and requests: in an
//! installation's database they would stay behind, so the storage, the
//! coordination, the key and the external memory of the configuration are
//! all replaced by the demo's own.

use crate::config::Config;
use crate::error::Error;
use std::path::{Path, PathBuf};

/// The file that marks a folder as made by the demo, so a later demo may
/// use it again.
pub const MARKER: &str = ".dragoman-demo";

/// What the marker says to whoever finds it.
const MARKER_TEXT: &str = "This folder holds the data of `dragoman demo` (its own database, \
blobs and key). A later `dragoman demo --data-dir` with this folder uses it again; delete the \
folder to forget the demo.\n";

/// The demo's data folder.
pub enum DemoData {
    /// A fresh temporary folder, removed when dropped.
    Temporary(tempfile::TempDir),
    /// A folder named by the user, kept.
    Kept(PathBuf),
}

impl DemoData {
    /// The folder named with `--data-dir` (created when missing, refused
    /// when it holds files an earlier demo did not make), else a fresh
    /// temporary one.
    pub fn open(requested: Option<&Path>) -> Result<DemoData, Error> {
        let Some(folder) = requested else {
            return tempfile::Builder::new()
                .prefix("dragoman-demo-")
                .tempdir()
                .map(DemoData::Temporary)
                .map_err(|source| Error::DemoFolder {
                    context: "a temporary folder for the demo".to_owned(),
                    source,
                });
        };
        let failed = |source| Error::DemoFolder {
            context: folder.display().to_string(),
            source,
        };
        if folder.join(MARKER).is_file() {
            return Ok(DemoData::Kept(folder.to_path_buf()));
        }
        let empty = match std::fs::read_dir(folder) {
            Ok(mut entries) => entries.next().is_none(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
            Err(e) => return Err(failed(e)),
        };
        if !empty {
            return Err(Error::DemoFolderInUse(folder.to_path_buf()));
        }
        std::fs::create_dir_all(folder).map_err(failed)?;
        std::fs::write(folder.join(MARKER), MARKER_TEXT).map_err(failed)?;
        Ok(DemoData::Kept(folder.to_path_buf()))
    }

    pub fn path(&self) -> &Path {
        match self {
            DemoData::Temporary(folder) => folder.path(),
            DemoData::Kept(folder) => folder,
        }
    }

    /// One line telling where the data is and whether it stays.
    pub fn describe(&self) -> String {
        match self {
            DemoData::Temporary(folder) => format!(
                "demo data in {} (temporary: removed when the demo stops; keep it with --data-dir)",
                folder.path().display()
            ),
            DemoData::Kept(folder) => format!("demo data in {} (kept)", folder.display()),
        }
    }
}

/// The demo's configuration: the user's settings (addresses, limits,
/// pipeline tuning), with every role in this one process, on the demo's
/// own SQLite database, blobs and key under `data_dir`, in-process
/// coordination and no external memory. A `DRAGOMAN_DATABASE_URL`,
/// `DRAGOMAN_BLOB_URL`, `DRAGOMAN_REDIS_URL`, `DRAGOMAN_SECRET_KEY` or
/// `DRAGOMAN_MEMORY_EXTERNAL_URL` of the environment or the configuration
/// file names an installation's storage, so it is not used; nor is
/// `DEMO_MODE`, which would refuse the demo's own writes.
pub fn isolate(config: &Config, data_dir: &Path) -> Config {
    let defaults = Config::default();
    Config {
        data_dir: data_dir.to_path_buf(),
        database_url: None,
        blob_url: None,
        redis_url: None,
        secret_key: None,
        memory_external_url: None,
        roles: defaults.roles,
        services_url: None,
        scheduler_url: None,
        pipeline_url: None,
        delivery_url: None,
        memory_url: None,
        grpc_listen: "off".into(),
        migrate_on_start: true,
        demo_mode: false,
        ..config.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_installation_storage_is_never_the_demos() {
        let installation = Config {
            data_dir: PathBuf::from("/srv/dragoman"),
            database_url: Some("postgres://dragoman@db/dragoman".into()),
            blob_url: Some("/srv/dragoman/blobs".into()),
            redis_url: Some("redis://cache:6379".into()),
            secret_key: Some("a key".into()),
            memory_external_url: Some("http://chroma:8000".into()),
            roles: "gateway".into(),
            services_url: Some("http://services:8081".into()),
            demo_mode: true,
            listen: "127.0.0.1:9000".into(),
            ..Config::default()
        };
        let demo = isolate(&installation, Path::new("/tmp/demo"));
        assert_eq!(demo.database_url(), "sqlite:///tmp/demo/dragoman.db");
        assert_eq!(demo.blob_url(), "/tmp/demo/blobs");
        assert_eq!(demo.redis_url, None);
        assert_eq!(demo.secret_key, None);
        assert_eq!(demo.memory_external_url, None);
        assert_eq!(demo.services_url, None);
        assert!(!demo.demo_mode);
        assert_eq!(demo.validate().map(|roles| roles.len()), Ok(5));
        // What is not storage stays the user's.
        assert_eq!(demo.listen, "127.0.0.1:9000");
    }

    #[test]
    fn a_folder_the_demo_did_not_make_is_refused() {
        let root = tempfile::tempdir().expect("temporary folder");
        let installation = root.path().join("data");
        std::fs::create_dir(&installation).expect("create");
        std::fs::write(installation.join("dragoman.db"), b"not the demo's").expect("write");
        assert!(DemoData::open(Some(&installation)).is_err());
        assert!(!installation.join(MARKER).exists());

        // A new folder is made and marked, and can be used again.
        let fresh = root.path().join("demo-data");
        let first = DemoData::open(Some(&fresh)).expect("a new folder");
        assert!(fresh.join(MARKER).is_file());
        std::fs::write(fresh.join("dragoman.db"), b"the demo's").expect("write");
        drop(first);
        assert!(DemoData::open(Some(&fresh)).is_ok());
        assert!(fresh.join("dragoman.db").is_file(), "a kept folder stays");

        // The default is temporary: gone when the demo is.
        let temporary = DemoData::open(None).expect("a temporary folder");
        let path = temporary.path().to_path_buf();
        assert!(path.is_dir());
        drop(temporary);
        assert!(!path.exists());
    }
}
