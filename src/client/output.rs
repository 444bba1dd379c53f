//! Where a result goes and how it gets there: the default names (next to
//! the book with the target language, or the server's file name), and the
//! download of `GetTranslationResult` (a header, then chunks) into a
//! partial file renamed into place once every byte arrived, so a broken
//! download never leaves a truncated result under the final name.

use super::connect::Translations;
use super::error::ClientError;
use dragoman_model::vocab::ResultFormat;
use dragoman_proto::api::v1::get_translation_result_response::Part;
use dragoman_proto::api::v1::{GetTranslationResultRequest, ResultHeader};
use std::io::Write;
use std::path::{Path, PathBuf};

/// `book.epub` to French as EPUB: `book.fr.epub`, beside the book.
pub fn beside(file: &Path, language: &str, format: ResultFormat) -> PathBuf {
    let stem = file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "book".to_owned());
    let name = format!("{stem}.{language}.{}", format.extension());
    match file.parent() {
        Some(parent) => parent.join(name),
        None => PathBuf::from(name),
    }
}

/// The server's file name (never a path: only its last part is kept), or
/// `<request id>.<extension>` when it names none.
pub fn server_name(header: &ResultHeader, request_id: &str) -> PathBuf {
    let named = Path::new(&header.filename)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .filter(|n| !n.is_empty() && !n.starts_with('.'));
    match named {
        Some(name) => PathBuf::from(name),
        None => {
            let media = header.media_type.split(';').next().unwrap_or_default();
            let extension = ResultFormat::from_media_type(media.trim())
                .map(ResultFormat::extension)
                .unwrap_or("bin");
            PathBuf::from(format!("{request_id}.{extension}"))
        }
    }
}

/// A result written.
pub struct Downloaded {
    pub path: PathBuf,
    pub header: ResultHeader,
}

/// Downloads the result `request` asks for into the path `place` chooses
/// from its header.
pub async fn download(
    client: &mut Translations,
    request: GetTranslationResultRequest,
    place: impl FnOnce(&ResultHeader) -> PathBuf,
) -> Result<Downloaded, ClientError> {
    let mut stream = client
        .get_translation_result(request)
        .await
        .map_err(ClientError::from_status)?
        .into_inner();
    let header = match stream.message().await.map_err(ClientError::from_status)? {
        Some(message) => match message.part {
            Some(Part::Header(header)) => header,
            _ => return Err(protocol("the result did not start with its header")),
        },
        None => return Err(protocol("the result stream was empty")),
    };
    let path = place(&header);
    let partial = partial_path(&path);
    let written = receive(&mut stream, &partial, &header).await;
    if let Err(error) = written {
        let _ = std::fs::remove_file(&partial);
        return Err(error);
    }
    std::fs::rename(&partial, &path).map_err(|source| {
        let _ = std::fs::remove_file(&partial);
        ClientError::Write {
            path: path.clone(),
            source,
        }
    })?;
    Ok(Downloaded { path, header })
}

/// Writes the chunks into `partial`, checking the header's size.
async fn receive(
    stream: &mut tonic::Streaming<dragoman_proto::api::v1::GetTranslationResultResponse>,
    partial: &Path,
    header: &ResultHeader,
) -> Result<(), ClientError> {
    let write_error = |source| ClientError::Write {
        path: partial.to_owned(),
        source,
    };
    let mut file = std::fs::File::create(partial).map_err(write_error)?;
    let mut received: u64 = 0;
    while let Some(message) = stream.message().await.map_err(ClientError::from_status)? {
        match message.part {
            Some(Part::Chunk(bytes)) => {
                file.write_all(&bytes).map_err(write_error)?;
                received += bytes.len() as u64;
            }
            _ => return Err(protocol("a second header in the result")),
        }
    }
    file.sync_all().map_err(write_error)?;
    if u64::try_from(header.size).ok() != Some(received) {
        return Err(protocol(&format!(
            "the result has {received} bytes, its header announced {}",
            header.size
        )));
    }
    Ok(())
}

/// `dir/.book.fr.epub.part`: beside the result, hidden.
fn partial_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.part"))
}

fn protocol(what: &str) -> ClientError {
    ClientError::Protocol(what.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_result_goes_beside_the_book_with_the_language_and_format() {
        assert_eq!(
            beside(Path::new("books/dune.epub"), "fr", ResultFormat::Epub),
            PathBuf::from("books/dune.fr.epub")
        );
        assert_eq!(
            beside(Path::new("dune.epub"), "fr", ResultFormat::TxtZip),
            PathBuf::from("dune.fr.zip")
        );
        assert_eq!(
            beside(Path::new("/tmp/ch1.txt"), "pt-BR", ResultFormat::Txt),
            PathBuf::from("/tmp/ch1.pt-BR.txt")
        );
        assert_eq!(
            beside(Path::new("payload.json"), "de", ResultFormat::Json),
            PathBuf::from("payload.de.json")
        );
        assert_eq!(
            beside(Path::new("a.b.en.epub"), "fr", ResultFormat::EpubBilingual),
            PathBuf::from("a.b.en.fr.epub")
        );
    }

    #[test]
    fn the_server_name_is_a_name_never_a_path() {
        let header = |filename: &str, media_type: &str| ResultHeader {
            filename: filename.to_owned(),
            media_type: media_type.to_owned(),
            ..Default::default()
        };
        assert_eq!(
            server_name(&header("Dune (fr).epub", "application/epub+zip"), "r1"),
            PathBuf::from("Dune (fr).epub")
        );
        assert_eq!(
            server_name(&header("../../etc/passwd", "text/plain"), "r1"),
            PathBuf::from("passwd")
        );
        assert_eq!(
            server_name(&header("", "text/plain; charset=utf-8"), "r1"),
            PathBuf::from("r1.txt")
        );
        assert_eq!(
            server_name(&header("..", "application/zip"), "r1"),
            PathBuf::from("r1.zip")
        );
    }

    #[test]
    fn the_partial_file_is_hidden_beside_the_result() {
        assert_eq!(
            partial_path(Path::new("out/book.fr.epub")),
            PathBuf::from("out/.book.fr.epub.part")
        );
    }
}
