//! The one error type of the crate.
//!
//! Every variant that concerns a file inside an archive names that file, so a user
//! who uploads a broken book learns which document to fix.

/// Why a book could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum BookError {
    /// Text that is not UTF-8 (TXT chapters must be UTF-8; a BOM is tolerated).
    #[error("{file}: the text is not UTF-8 ({detail}); save it as UTF-8 and send it again")]
    Encoding { file: String, detail: String },
    /// The bytes are not a readable ZIP archive.
    #[error("{file}: not a readable ZIP archive ({detail})")]
    Zip { file: String, detail: String },
    /// An archive entry inflates beyond the size cap.
    #[error("{file}: entry inflates beyond {limit} bytes")]
    EntryTooLarge { file: String, limit: u64 },
    /// An archive entry inflates with a suspicious ratio (zip bomb).
    #[error("{file}: compression ratio above {limit}:1 (zip bomb?)")]
    CompressionRatio { file: String, limit: u64 },
    /// The whole archive inflates beyond the total cap.
    #[error("archive inflates beyond {limit} bytes in total (at {file})")]
    ArchiveTooLarge { file: String, limit: u64 },
    /// The archive holds too many entries.
    #[error("archive holds more than {limit} entries")]
    TooManyEntries { limit: usize },
    /// An entry name that could escape its folder or is not a plain relative path.
    #[error("{file}: unsafe entry name in the archive")]
    UnsafeName { file: String },
    /// A symbolic link entry.
    #[error("{file}: symbolic links are not allowed in a book archive")]
    Symlink { file: String },
    /// Two entries with the same name: readers disagree on which one is the book.
    #[error("{file}: the archive holds this entry twice")]
    DuplicateEntry { file: String },
    /// An encrypted entry (password protected or DRM).
    #[error("{file}: the entry is encrypted and cannot be translated")]
    Encrypted { file: String },
    /// A file the format requires is missing.
    #[error("{file}: missing ({what})")]
    Missing { file: String, what: String },
    /// The EPUB `mimetype` entry is missing or wrong.
    #[error("mimetype: {detail}")]
    Mimetype { detail: String },
    /// XML that is not well formed.
    #[error("{file}: malformed XML at byte {position}: {detail}")]
    Xml {
        file: String,
        position: u64,
        detail: String,
    },
    /// Anything else wrong with a named file.
    #[error("{file}: {detail}")]
    Invalid { file: String, detail: String },
    /// A translation map or option the writer cannot use.
    #[error("{0}")]
    Usage(String),
}

impl BookError {
    /// The file inside the upload or archive the error is about, when there is one.
    pub fn file(&self) -> Option<&str> {
        match self {
            BookError::Encoding { file, .. }
            | BookError::Zip { file, .. }
            | BookError::EntryTooLarge { file, .. }
            | BookError::CompressionRatio { file, .. }
            | BookError::ArchiveTooLarge { file, .. }
            | BookError::UnsafeName { file }
            | BookError::Symlink { file }
            | BookError::DuplicateEntry { file }
            | BookError::Encrypted { file }
            | BookError::Missing { file, .. }
            | BookError::Xml { file, .. }
            | BookError::Invalid { file, .. } => Some(file),
            BookError::Mimetype { .. } => Some("mimetype"),
            BookError::TooManyEntries { .. } | BookError::Usage(_) => None,
        }
    }

    /// A stable machine-readable code for the error.
    pub fn code(&self) -> &'static str {
        match self {
            BookError::Encoding { .. } => "encoding",
            BookError::Zip { .. } => "not_zip",
            BookError::EntryTooLarge { .. } => "entry_too_large",
            BookError::CompressionRatio { .. } => "compression_ratio",
            BookError::ArchiveTooLarge { .. } => "archive_too_large",
            BookError::TooManyEntries { .. } => "too_many_entries",
            BookError::UnsafeName { .. } => "unsafe_name",
            BookError::Symlink { .. } => "symlink",
            BookError::DuplicateEntry { .. } => "duplicate_entry",
            BookError::Encrypted { .. } => "encrypted",
            BookError::Missing { .. } => "missing_file",
            BookError::Mimetype { .. } => "mimetype",
            BookError::Xml { .. } => "malformed_xml",
            BookError::Invalid { .. } => "invalid",
            BookError::Usage(_) => "usage",
        }
    }
}

/// Result alias of the crate.
pub type Result<T, E = BookError> = std::result::Result<T, E>;
