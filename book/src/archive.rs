//! Safe ZIP reading for EPUB and DOCX.
//!
//! Sizes and ratios in ZIP headers are attacker-chosen, so caps are enforced on
//! the bytes actually produced while inflating, chunk by chunk: an entry stops
//! the moment it passes its cap. Names that could escape a folder, symbolic
//! links, duplicate names and encrypted entries are refused before anything is
//! inflated.

use std::io::{Cursor, Read};

use zip::ZipArchive;

use crate::error::{BookError, Result};

/// Caps applied while reading an archive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest inflated size of one entry.
    pub max_entry_bytes: u64,
    /// Largest inflated size of all entries read together.
    pub max_total_bytes: u64,
    /// Largest inflated/compressed ratio, checked once an entry passes `ratio_floor_bytes`.
    pub max_ratio: u64,
    pub ratio_floor_bytes: u64,
    /// Most entries in the archive.
    pub max_entries: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_entry_bytes: 128 * 1024 * 1024,
            max_total_bytes: 512 * 1024 * 1024,
            max_ratio: 200,
            ratio_floor_bytes: 1024 * 1024,
            max_entries: 20_000,
        }
    }
}

/// A validated archive whose entries are inflated on demand.
pub(crate) struct Archive<'a> {
    zip: ZipArchive<Cursor<&'a [u8]>>,
    names: Vec<String>,
    limits: Limits,
    inflated: u64,
}

/// True when `name` is a plain relative path inside the archive.
pub(crate) fn safe_name(name: &str) -> bool {
    let unsafe_name = name.is_empty()
        || name.starts_with('/')
        || name.contains('\\')
        || name.contains('\0')
        || name.split('/').any(|c| c == ".." || c == ".")
        || (name.len() >= 2 && name.as_bytes()[1] == b':');
    !unsafe_name
}

/// Names of central-directory records, read directly so that a duplicate can be
/// named (the zip crate keeps only one entry per name).
fn central_names(bytes: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i + 46 <= bytes.len() {
        if &bytes[i..i + 4] == b"PK\x01\x02" {
            let len = u16::from_le_bytes([bytes[i + 28], bytes[i + 29]]) as usize;
            if let Some(name) = bytes.get(i + 46..i + 46 + len) {
                out.push(String::from_utf8_lossy(name).into_owned());
            }
            i += 46;
        } else {
            i += 1;
        }
    }
    out
}

impl<'a> Archive<'a> {
    /// Opens and validates an archive. `file` names the upload in errors.
    pub fn open(file: &str, bytes: &'a [u8], limits: Limits) -> Result<Self> {
        let zip = ZipArchive::new(Cursor::new(bytes)).map_err(|e| BookError::Zip {
            file: file.to_string(),
            detail: e.to_string(),
        })?;
        if zip.has_duplicate_names() {
            let names = central_names(bytes);
            let mut seen = std::collections::HashSet::new();
            let dup = names
                .into_iter()
                .find(|n| !seen.insert(n.clone()))
                .unwrap_or_else(|| "(unknown entry)".into());
            return Err(BookError::DuplicateEntry { file: dup });
        }
        if zip.len() > limits.max_entries {
            return Err(BookError::TooManyEntries {
                limit: limits.max_entries,
            });
        }
        let mut names = Vec::with_capacity(zip.len());
        for i in 0..zip.len() {
            let entry = zip.by_index_data(i).map_err(|e| BookError::Zip {
                file: file.to_string(),
                detail: e.to_string(),
            })?;
            let name = entry.name().map_err(|e| BookError::Zip {
                file: file.to_string(),
                detail: e.to_string(),
            })?;
            let name = name.to_string();
            if !safe_name(&name) || entry.enclosed_name().is_none() {
                return Err(BookError::UnsafeName { file: name });
            }
            if entry.is_symlink() {
                return Err(BookError::Symlink { file: name });
            }
            if entry.encrypted() {
                return Err(BookError::Encrypted { file: name });
            }
            names.push(name);
        }
        Ok(Archive {
            zip,
            names,
            limits,
            inflated: 0,
        })
    }

    /// Entry names in archive order.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    pub fn contains(&self, name: &str) -> bool {
        self.names.iter().any(|n| n == name)
    }

    /// The underlying zip archive (for raw copies when writing).
    pub fn zip_mut(&mut self) -> &mut ZipArchive<Cursor<&'a [u8]>> {
        &mut self.zip
    }

    /// Inflates one entry under the caps.
    pub fn read(&mut self, name: &str) -> Result<Vec<u8>> {
        let index =
            self.names
                .iter()
                .position(|n| n == name)
                .ok_or_else(|| BookError::Missing {
                    file: name.to_string(),
                    what: "entry not in the archive".into(),
                })?;
        let zip_err = |e: &dyn std::fmt::Display| BookError::Zip {
            file: name.to_string(),
            detail: e.to_string(),
        };
        let mut entry = self.zip.by_index(index).map_err(|e| zip_err(&e))?;
        if entry.is_dir() {
            return Ok(Vec::new());
        }
        let compressed = entry.compressed_size().max(1);
        let mut out = Vec::with_capacity(entry.size().min(1 << 20) as usize);
        let mut chunk = [0u8; 64 * 1024];
        loop {
            let n = entry.read(&mut chunk).map_err(|e| zip_err(&e))?;
            if n == 0 {
                break;
            }
            out.extend_from_slice(&chunk[..n]);
            let len = out.len() as u64;
            if len > self.limits.max_entry_bytes {
                return Err(BookError::EntryTooLarge {
                    file: name.to_string(),
                    limit: self.limits.max_entry_bytes,
                });
            }
            if len > self.limits.ratio_floor_bytes && len / compressed > self.limits.max_ratio {
                return Err(BookError::CompressionRatio {
                    file: name.to_string(),
                    limit: self.limits.max_ratio,
                });
            }
            if self.inflated + len > self.limits.max_total_bytes {
                return Err(BookError::ArchiveTooLarge {
                    file: name.to_string(),
                    limit: self.limits.max_total_bytes,
                });
            }
        }
        self.inflated += out.len() as u64;
        Ok(out)
    }

    /// Inflates an entry that must be UTF-8 text (BOM tolerated).
    pub fn read_text(&mut self, name: &str) -> Result<String> {
        let bytes = self.read(name)?;
        let body = bytes.strip_prefix(&[0xEF, 0xBB, 0xBF]).unwrap_or(&bytes);
        String::from_utf8(body.to_vec()).map_err(|e| BookError::Encoding {
            file: name.to_string(),
            detail: format!("invalid UTF-8 at byte {}", e.utf8_error().valid_up_to()),
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::io::Write;
    use zip::write::SimpleFileOptions;

    /// Builds a zip from (name, bytes, deflate) entries.
    pub fn make_zip(entries: &[(&str, &[u8], bool)]) -> Vec<u8> {
        let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
        for (name, data, deflate) in entries {
            let method = if *deflate {
                zip::CompressionMethod::Deflated
            } else {
                zip::CompressionMethod::Stored
            };
            w.start_file(
                *name,
                SimpleFileOptions::default().compression_method(method),
            )
            .unwrap();
            w.write_all(data).unwrap();
        }
        w.finish().unwrap().into_inner()
    }

    #[test]
    fn bomb_is_stopped_while_inflating() {
        let zeros = vec![0u8; 50 * 1024 * 1024];
        let bytes = make_zip(&[("big.xhtml", &zeros, true)]);
        assert!(bytes.len() < 1024 * 1024);
        let mut a = Archive::open("b.epub", &bytes, Limits::default()).unwrap();
        let err = a.read("big.xhtml").unwrap_err();
        assert_eq!(err.code(), "compression_ratio");
        assert_eq!(err.file(), Some("big.xhtml"));
        let limits = Limits {
            max_entry_bytes: 1000,
            ..Limits::default()
        };
        let small = make_zip(&[("a.txt", &[b'a'; 5000], false)]);
        let mut a = Archive::open("b.epub", &small, limits).unwrap();
        assert_eq!(a.read("a.txt").unwrap_err().code(), "entry_too_large");
    }

    #[test]
    fn unsafe_names_are_refused() {
        for name in ["../evil.xhtml", "/etc/passwd", "a/../../b", "C:/x", "a\\b"] {
            let bytes = make_zip(&[(name, b"x", false)]);
            let err = Archive::open("b.epub", &bytes, Limits::default())
                .err()
                .unwrap_or_else(|| panic!("{name} accepted"));
            assert!(
                matches!(err.code(), "unsafe_name" | "not_zip"),
                "{name}: {err}"
            );
        }
    }

    #[test]
    fn symlinks_are_refused() {
        let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
        w.add_symlink(
            "OEBPS/link.xhtml",
            "/etc/passwd",
            SimpleFileOptions::default(),
        )
        .unwrap();
        let bytes = w.finish().unwrap().into_inner();
        let err = Archive::open("b.epub", &bytes, Limits::default())
            .err()
            .unwrap();
        assert_eq!(err.code(), "symlink");
        assert_eq!(err.file(), Some("OEBPS/link.xhtml"));
    }

    #[test]
    fn not_a_zip_is_a_clear_error() {
        let err = Archive::open("b.epub", b"hello", Limits::default())
            .err()
            .unwrap();
        assert_eq!(err.code(), "not_zip");
        assert!(err.to_string().contains("b.epub"));
    }
}
