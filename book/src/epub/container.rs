//! The OCF container: the `mimetype` entry, `META-INF/container.xml` (where the
//! package document is) and `META-INF/encryption.xml` (which files are
//! encrypted; only obfuscated fonts can be read past).

use crate::archive::Archive;
use crate::error::{BookError, Result};
use crate::model::Warning;
use crate::xml::Doc;

use super::parsed::ManifestItem;
use super::resolve;

/// Font obfuscation algorithms: the font is scrambled, the text is not.
const FONT_OBFUSCATION: [&str; 2] = [
    "http://www.idpf.org/2008/embedding",
    "http://ns.adobe.com/pdf/enc#RC",
];

/// Checks the `mimetype` entry. Flaws a rebuilt book fixes are warnings; an
/// archive with neither a mimetype nor a container document is not an EPUB.
pub(super) fn check_mimetype(archive: &mut Archive<'_>, warnings: &mut Vec<Warning>) -> Result<()> {
    if !archive.contains("mimetype") {
        if archive.contains("META-INF/container.xml") {
            warnings.push(Warning::new(
                "mimetype_missing",
                Some("mimetype"),
                "the mimetype entry is missing; the rebuilt book will have one",
            ));
            return Ok(());
        }
        return Err(BookError::Mimetype {
            detail: "missing, and there is no META-INF/container.xml: not an EPUB".into(),
        });
    }
    let raw = archive.read("mimetype")?;
    let text = String::from_utf8_lossy(&raw);
    if text == "application/epub+zip" {
        if archive.names().first().map(String::as_str) != Some("mimetype") {
            warnings.push(Warning::new(
                "mimetype_not_first",
                Some("mimetype"),
                "the mimetype entry is not the first in the archive",
            ));
        }
        return Ok(());
    }
    if text.trim() == "application/epub+zip" {
        warnings.push(Warning::new(
            "mimetype_whitespace",
            Some("mimetype"),
            "the mimetype entry has extra whitespace; the rebuilt book fixes it",
        ));
        return Ok(());
    }
    Err(BookError::Mimetype {
        detail: format!(
            "says \"{}\" instead of application/epub+zip",
            text.chars().take(60).collect::<String>()
        ),
    })
}

/// Archive paths of encrypted files with their encryption algorithm.
pub(super) fn encrypted_paths(archive: &mut Archive<'_>) -> Result<Vec<(String, String)>> {
    const NAME: &str = "META-INF/encryption.xml";
    if !archive.contains(NAME) {
        return Ok(Vec::new());
    }
    let src = archive.read_text(NAME)?;
    let doc = Doc::parse(NAME, &src)?;
    let mut out = Vec::new();
    for data in doc.descendants(0, "encrypteddata") {
        let algo = doc
            .descendants(data, "encryptionmethod")
            .first()
            .and_then(|&m| doc.attr(m, "Algorithm"))
            .unwrap_or("")
            .to_string();
        for r in doc.descendants(data, "cipherreference") {
            if let Some(uri) = doc.attr(r, "URI")
                && let Some(path) = resolve("", uri)
            {
                out.push((path, algo.clone()));
            }
        }
    }
    Ok(out)
}

/// Refuses a book whose spine documents are encrypted (DRM): their text
/// cannot be read. Obfuscated fonts do not matter.
pub(super) fn check_encryption(
    encrypted: &[(String, String)],
    spine: &[ManifestItem],
) -> Result<()> {
    for (path, algo) in encrypted {
        let is_content = spine.iter().any(|m| &m.path == path);
        if is_content && !FONT_OBFUSCATION.contains(&algo.as_str()) {
            return Err(BookError::Encrypted { file: path.clone() });
        }
    }
    Ok(())
}

/// The archive path of the package document (OPF) the container names.
pub(super) fn rootfile(archive: &mut Archive<'_>) -> Result<String> {
    const NAME: &str = "META-INF/container.xml";
    if !archive.contains(NAME) {
        return Err(BookError::Missing {
            file: NAME.into(),
            what: "the EPUB container document".into(),
        });
    }
    let src = archive.read_text(NAME)?;
    let doc = Doc::parse(NAME, &src)?;
    let rootfiles = doc.descendants(0, "rootfile");
    let chosen = rootfiles
        .iter()
        .find(|&&r| doc.attr(r, "media-type") == Some("application/oebps-package+xml"))
        .or(rootfiles.first())
        .and_then(|&r| doc.attr(r, "full-path"))
        .ok_or_else(|| BookError::Invalid {
            file: NAME.into(),
            detail: "no rootfile names the package document".into(),
        })?;
    resolve("", chosen).ok_or_else(|| BookError::Invalid {
        file: NAME.into(),
        detail: format!("rootfile path \"{chosen}\" is not inside the archive"),
    })
}
