//! Writing a book into the library folder so that a reader of the folder
//! (a library application, a sync client) never sees half a file: each
//! file is written to a temporary file in its own folder, flushed to disk,
//! then renamed over its name, and the folder is flushed so the rename
//! survives a crash. The library folder itself is never created: a missing
//! one is an unmounted disk, not a folder to make on the system disk.

use super::layout::SIDECAR;
use super::source::Publishable;
use std::io::Write;
use std::path::Path;

/// Writes `book` under `library` and answers the EPUB's path relative to
/// it. The error names the file by that relative path and the kind of
/// failure (an I/O error's text may hold the absolute path, which is the
/// administrator's, not every book owner's, to know).
pub fn write(library: &Path, book: &Publishable) -> Result<String, String> {
    if !library.is_dir() {
        return Err("the library folder is missing or is not a folder".into());
    }
    let placement = &book.placement;
    let folder = library.join(&placement.author).join(&placement.book);
    std::fs::create_dir_all(&folder).map_err(|e| {
        format!(
            "cannot create the folder {}/{}: {}",
            placement.author,
            placement.book,
            e.kind()
        )
    })?;
    let sidecar = serde_json::to_vec_pretty(&book.sidecar)
        .map_err(|e| format!("the metadata do not serialise: {e}"))?;
    replace(&folder, &placement.epub, &book.epub)
        .map_err(|e| format!("cannot write {}: {}", placement.epub_path(), e.kind()))?;
    replace(&folder, SIDECAR, &sidecar)
        .map_err(|e| format!("cannot write {}: {}", placement.sidecar_path(), e.kind()))?;
    Ok(placement.epub_path())
}

/// Puts `bytes` at `folder/name` in one rename.
fn replace(folder: &Path, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    let mut temporary = tempfile::Builder::new()
        .prefix(".dragoman-")
        .suffix(".part")
        .tempfile_in(folder)?;
    temporary.write_all(bytes)?;
    temporary.as_file().sync_all()?;
    temporary.persist(folder.join(name)).map_err(|e| e.error)?;
    sync_folder(folder)
}

/// Flushes a folder's entries (the rename) to disk where the system
/// allows it.
#[cfg(unix)]
fn sync_folder(folder: &Path) -> std::io::Result<()> {
    std::fs::File::open(folder)?.sync_all()
}

#[cfg(not(unix))]
fn sync_folder(_: &Path) -> std::io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::layout::{Shelf, place};
    use super::super::source::Sidecar;
    use super::*;

    fn book() -> Publishable {
        Publishable {
            epub: b"PK epub bytes".to_vec(),
            sidecar: Sidecar {
                title: "Mort".into(),
                authors: vec!["Terry Pratchett".into()],
                source_language: "en".into(),
                target_language: "fr".into(),
                series: Some("Discworld".into()),
                series_index: Some(4),
                project_id: "p1".into(),
                request_id: "r1".into(),
            },
            placement: place(&Shelf {
                title: "Mort",
                author: Some("Terry Pratchett"),
                series: Some(("Discworld", 4)),
            }),
        }
    }

    #[test]
    fn the_book_and_its_sidecar_land_in_their_folder_and_nothing_else() {
        let library = tempfile::tempdir().expect("tempdir");
        let path = write(library.path(), &book()).expect("written");
        assert_eq!(path, "Terry Pratchett/Mort (Discworld 4)/Mort.epub");
        assert_eq!(
            std::fs::read(library.path().join(&path)).expect("epub"),
            b"PK epub bytes"
        );
        let folder = library.path().join("Terry Pratchett/Mort (Discworld 4)");
        let sidecar: serde_json::Value =
            serde_json::from_slice(&std::fs::read(folder.join("metadata.json")).expect("read"))
                .expect("json");
        assert_eq!(sidecar["series"], "Discworld");
        assert_eq!(sidecar["series_index"], 4);
        assert_eq!(sidecar["authors"][0], "Terry Pratchett");
        let mut names: Vec<String> = std::fs::read_dir(&folder)
            .expect("list")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(
            names,
            ["Mort.epub", "metadata.json"],
            "no temporary file left"
        );
    }

    #[test]
    fn publishing_again_replaces_the_files() {
        let library = tempfile::tempdir().expect("tempdir");
        write(library.path(), &book()).expect("first");
        let mut again = book();
        again.epub = b"PK newer".to_vec();
        let path = write(library.path(), &again).expect("second");
        assert_eq!(
            std::fs::read(library.path().join(path)).expect("epub"),
            b"PK newer"
        );
    }

    #[test]
    fn a_missing_library_folder_is_not_created() {
        let parent = tempfile::tempdir().expect("tempdir");
        let gone = parent.path().join("unmounted");
        let error = write(&gone, &book()).expect_err("refused");
        assert!(error.contains("library folder is missing"), "{error}");
        assert!(!gone.exists());
        assert!(
            !error.contains(&*parent.path().to_string_lossy()),
            "{error}"
        );
    }

    #[test]
    fn a_place_taken_by_a_file_is_reported_by_its_relative_path() {
        let library = tempfile::tempdir().expect("tempdir");
        std::fs::write(library.path().join("Terry Pratchett"), b"not a folder").expect("file");
        let error = write(library.path(), &book()).expect_err("refused");
        assert!(
            error.starts_with("cannot create the folder Terry Pratchett/Mort (Discworld 4)"),
            "{error}"
        );
        assert!(
            !error.contains(&*library.path().to_string_lossy()),
            "{error}"
        );
    }
}
