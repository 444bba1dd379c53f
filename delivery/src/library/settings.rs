//! The administrator's library folder: checked when saved (an absolute
//! path to an existing folder this process can write to, proved by writing
//! and removing a probe file), kept in the `settings` row
//! [`SETTINGS_KEY`] (the library is configured exactly when it exists).

use crate::error::DeliveryError;
use dragoman_model::documents::publication::{
    LibrarySettingsInput, LibrarySettingsView, SETTINGS_KEY,
};
use dragoman_model::entities::setting;
use dragoman_model::ids;
use dragoman_model::vocab::{Issue, IssueContext, IssueKind};
use sea_orm::{ConnectionTrait, EntityTrait};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Longest path kept (Linux's `PATH_MAX`).
const MAX_PATH_BYTES: usize = 4096;

/// The setting as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredLibrarySettings {
    pub path: PathBuf,
}

/// The saved folder and when it was saved; `None` while the library is
/// not configured. A row that no longer reads is reported, not ignored.
pub async fn load(
    db: &impl ConnectionTrait,
) -> Result<Option<(StoredLibrarySettings, i64)>, DeliveryError> {
    let Some(row) = setting::Entity::find_by_id(SETTINGS_KEY.to_owned())
        .one(db)
        .await?
    else {
        return Ok(None);
    };
    let stored = serde_json::from_value(row.value)
        .map_err(|e| DeliveryError::DeliveryFailed(format!("library settings do not read: {e}")))?;
    Ok(Some((stored, row.updated_at)))
}

fn view_of(stored: Option<&(StoredLibrarySettings, i64)>) -> LibrarySettingsView {
    match stored {
        Some((s, updated_at)) => LibrarySettingsView {
            path: Some(s.path.to_string_lossy().into_owned()),
            updated_at: Some(*updated_at),
        },
        None => LibrarySettingsView::unconfigured(),
    }
}

/// The view of the folder in force.
pub async fn view(db: &impl ConnectionTrait) -> Result<LibrarySettingsView, DeliveryError> {
    Ok(view_of(load(db).await?.as_ref()))
}

fn refused(kind: IssueKind) -> Vec<Issue> {
    vec![
        Issue::at("body", "path", kind).with_ctx(
            IssueContext::new()
                .expected("an absolute path to an existing folder the server can write to"),
        ),
    ]
}

/// Checks that `path` names a folder this process can write to; the
/// issues are at `body.path`, without the path itself.
pub fn checked(path: &str) -> Result<PathBuf, Vec<Issue>> {
    if path.is_empty() {
        return Err(refused(IssueKind::StringTooShort));
    }
    if path.len() > MAX_PATH_BYTES {
        return Err(refused(IssueKind::StringTooLong));
    }
    if path.chars().any(char::is_control) || path.trim() != path {
        return Err(refused(IssueKind::ValueError));
    }
    let folder = PathBuf::from(path);
    if !folder.is_absolute() || !folder.is_dir() || probe(&folder).is_err() {
        return Err(refused(IssueKind::ValueError));
    }
    Ok(folder)
}

/// Writes and removes a file in `folder`: the only proof that this
/// process may write there (permissions, a read-only mount, quotas).
fn probe(folder: &Path) -> std::io::Result<()> {
    let file = folder.join(format!(".dragoman-probe-{}", ids::new_id()));
    let written = std::fs::File::create_new(&file).and_then(|mut f| f.write_all(b"probe"));
    let removed = std::fs::remove_file(&file);
    written.and(removed)
}

/// Saves the folder and returns the new view; 422 at `body.path` when it
/// is not a folder this process can write to.
pub async fn update(
    db: &impl ConnectionTrait,
    input: LibrarySettingsInput,
) -> Result<LibrarySettingsView, DeliveryError> {
    let path = input.path;
    let folder = tokio::task::spawn_blocking(move || checked(&path))
        .await
        .map_err(|e| DeliveryError::DeliveryFailed(format!("checking the folder: {e}")))?
        .map_err(DeliveryError::InvalidRequest)?;
    let stored = StoredLibrarySettings { path: folder };
    let now = setting::save(db, SETTINGS_KEY, &stored).await?;
    Ok(view_of(Some(&(stored, now))))
}

/// Drops the folder: nothing is published any more (pending publications
/// wait for a folder, their attempts untouched).
pub async fn clear(db: &impl ConnectionTrait) -> Result<LibrarySettingsView, DeliveryError> {
    setting::Entity::delete_by_id(SETTINGS_KEY.to_owned())
        .exec(db)
        .await?;
    Ok(LibrarySettingsView::unconfigured())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(result: Result<PathBuf, Vec<Issue>>) -> Vec<(String, IssueKind)> {
        result
            .expect_err("refused")
            .into_iter()
            .map(|i| (serde_json::to_string(&i.loc).expect("loc"), i.kind))
            .collect()
    }

    #[test]
    fn a_writable_folder_is_accepted_and_left_as_it_was() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().to_str().expect("utf-8");
        assert_eq!(checked(path), Ok(dir.path().to_path_buf()));
        let left: Vec<_> = std::fs::read_dir(dir.path()).expect("list").collect();
        assert!(left.is_empty(), "the probe file is removed");
    }

    #[test]
    fn anything_but_an_absolute_existing_folder_is_refused_at_body_path() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("book.epub");
        std::fs::write(&file, b"x").expect("file");
        let at_path = r#"["body","path"]"#.to_owned();
        for wrong in [
            "relative/folder".to_owned(),
            dir.path().join("missing").to_string_lossy().into_owned(),
            file.to_string_lossy().into_owned(),
            format!("{} ", dir.path().display()),
        ] {
            assert_eq!(
                kinds(checked(&wrong)),
                [(at_path.clone(), IssueKind::ValueError)],
                "{wrong}"
            );
        }
        assert_eq!(kinds(checked("")), [(at_path, IssueKind::StringTooShort)]);
    }
}
