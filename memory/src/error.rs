//! The memory service's one error type, and its one mapping to the refusal
//! that crosses gRPC: each variant chooses its [`ErrorCode`] here and
//! nowhere else.

use dragoman_model::vocab::{ContextValue, ErrorCode, Issue, IssueContext, IssueKind};
use dragoman_proto::api_status::ServiceError;
use tonic::Status;

#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    /// Located problems of the request; never the submitted values.
    #[error("invalid request")]
    InvalidRequest(Vec<Issue>),
    #[error("volume not found")]
    VolumeNotFound,
    #[error("series not found")]
    SeriesNotFound,
    #[error("glossary not found")]
    GlossaryNotFound,
    /// A term absent or outside the caller's books, series and glossaries.
    #[error("term not found")]
    TermNotFound,
    /// A new term whose source the same book or series already has: the
    /// caller edits that term instead.
    #[error("the term exists: change it with edit_term")]
    TermExists { term_id: String },
    /// A reader note changed since the person read it: the note and
    /// placement now held.
    #[error("the reader note changed since it was read")]
    StaleReaderNote {
        note: Option<String>,
        placement: dragoman_model::vocab::NotePlacement,
    },
    /// A passage absent or outside the book named.
    #[error("passage not found")]
    PassageNotFound,
    /// A passage edit made on a version that is no longer the stored one:
    /// the version now held.
    #[error("the passage changed since it was read")]
    StalePassage { version: String },
    /// A person's translation that does not keep the passage's
    /// placeholders: those it lost, and those the source does not have.
    #[error("the translation does not keep the passage's placeholders")]
    MissingPlaceholders {
        missing: Vec<String>,
        unexpected: Vec<String>,
    },
    /// Validating a passage that has no usable translation.
    #[error("the passage has no translation to validate")]
    NothingToValidate,
    /// A shelved book whose translations are not changed.
    #[error("volume archived")]
    VolumeArchived,
    /// A replacement whose scan holds more than one scan may: nothing was
    /// written.
    #[error("the scan exceeds its {measure} limit: narrow it with chapter_id or series false")]
    ScanTooLarge {
        /// `passages` or `characters`.
        measure: &'static str,
        limit: usize,
        found: usize,
    },
    /// A shared glossary's name blank or longer than 200 characters.
    #[error("invalid name")]
    InvalidName,
    /// The account already has a shared glossary of that name.
    #[error("glossary exists")]
    GlossaryExists,
    /// A glossary file that cannot be read as a whole (not well-formed,
    /// empty, broken encoding): where and why, never what it holds.
    #[error("invalid glossary file: {message}")]
    InvalidFile {
        message: String,
        line: Option<usize>,
        column: Option<usize>,
    },
    /// An import with invalid rows and without `skip_invalid`: nothing was
    /// written; the report (with `applied: false`) says which rows.
    #[error("import refused: the file has invalid rows")]
    ImportRefused(serde_json::Value),
    /// A glossary file could not be written (never expected: it is built
    /// in memory).
    #[error("export: {0}")]
    Export(String),
    /// No external memory is configured: nothing to act on.
    #[error("no external memory is configured")]
    ExternalNotConfigured,
    /// A cleanup record that does not exist.
    #[error("cleanup not found")]
    CleanupNotFound,
    /// Chroma or the embeddings endpoint did not answer, or answered an
    /// error: what failed, never what was sent.
    #[error("external memory: {0}")]
    External(String),
    /// A built document could not be turned into JSON (never expected:
    /// its types hold nothing JSON cannot).
    #[error("document: {0}")]
    Document(#[from] serde_json::Error),
    #[error("database: {0}")]
    Database(#[from] sea_orm::DbErr),
    #[error("{0}")]
    Model(dragoman_model::ModelError),
}

impl From<dragoman_model::ModelError> for MemoryError {
    /// A tenancy refusal keeps its kind's own variant; anything else is
    /// the storage's.
    fn from(error: dragoman_model::ModelError) -> MemoryError {
        use dragoman_model::tenancy::Kind;
        match error {
            dragoman_model::ModelError::NotFound(Kind::Book) => MemoryError::VolumeNotFound,
            dragoman_model::ModelError::NotFound(Kind::Series) => MemoryError::SeriesNotFound,
            dragoman_model::ModelError::NotFound(Kind::Glossary) => MemoryError::GlossaryNotFound,
            dragoman_model::ModelError::NotFound(Kind::Term) => MemoryError::TermNotFound,
            other => MemoryError::Model(other),
        }
    }
}

/// What every memory operation answers.
pub type MemoryResult<T> = Result<T, MemoryError>;

impl From<MemoryError> for ServiceError {
    fn from(error: MemoryError) -> ServiceError {
        let message = error.to_string();
        let refusal = |code: ErrorCode| ServiceError::new(code, message.clone());
        match error {
            MemoryError::InvalidRequest(issues) => {
                refusal(ErrorCode::InvalidRequest).with_issues(issues)
            }
            MemoryError::VolumeNotFound => refusal(ErrorCode::VolumeNotFound),
            MemoryError::SeriesNotFound => refusal(ErrorCode::SeriesNotFound),
            MemoryError::GlossaryNotFound => refusal(ErrorCode::GlossaryNotFound),
            MemoryError::TermNotFound => refusal(ErrorCode::TermNotFound),
            MemoryError::TermExists { term_id } => {
                refusal(ErrorCode::Conflict).with("term_id", term_id)
            }
            MemoryError::StaleReaderNote { note, placement } => refusal(ErrorCode::StaleEdit)
                .with("reader_note", note)
                .with("note_placement", placement.as_str()),
            MemoryError::PassageNotFound => refusal(ErrorCode::PassageNotFound),
            MemoryError::StalePassage { version } => {
                refusal(ErrorCode::StaleEdit).with("version", version)
            }
            MemoryError::MissingPlaceholders {
                missing,
                unexpected,
            } => refusal(ErrorCode::MissingPlaceholders)
                .with("missing", missing)
                .with("unexpected", unexpected)
                .with_issues(vec![Issue::at(
                    "body",
                    "translation",
                    IssueKind::ValueError,
                )]),
            MemoryError::NothingToValidate => refusal(ErrorCode::Conflict),
            MemoryError::VolumeArchived => refusal(ErrorCode::VolumeArchived),
            MemoryError::ScanTooLarge {
                measure,
                limit,
                found,
            } => refusal(ErrorCode::InvalidRequest).with_issues(vec![
                Issue::at("body", "book_id", IssueKind::TooMany).with_ctx(
                    IssueContext::new()
                        .measure(measure)
                        .limit(limit)
                        .found(found),
                ),
            ]),
            MemoryError::InvalidName => refusal(ErrorCode::InvalidName),
            MemoryError::GlossaryExists => refusal(ErrorCode::GlossaryExists),
            MemoryError::InvalidFile { line, column, .. } => {
                let ctx = IssueContext {
                    line: line.map(ContextValue::from),
                    column: column.map(ContextValue::from),
                    ..IssueContext::default()
                };
                let mut issue = Issue::at("body", "file", IssueKind::ValueError);
                if ctx != IssueContext::default() {
                    issue = issue.with_ctx(ctx);
                }
                refusal(ErrorCode::InvalidRequest).with_issues(vec![issue])
            }
            MemoryError::ImportRefused(report) => refusal(ErrorCode::InvalidRequest)
                .with_issues(vec![Issue::at("body", "file", IssueKind::ValueError)])
                .with("report", report),
            MemoryError::ExternalNotConfigured => refusal(ErrorCode::Conflict),
            MemoryError::CleanupNotFound => refusal(ErrorCode::NotFound),
            MemoryError::Database(e) => {
                ServiceError::storage(dragoman_model::db_watch::is_outage(&e), message)
            }
            MemoryError::Model(dragoman_model::ModelError::NotFound(kind)) => {
                refusal(kind.not_found())
            }
            MemoryError::Model(e) => ServiceError::storage(e.is_outage(), message),
            MemoryError::External(_) | MemoryError::Export(_) | MemoryError::Document(_) => {
                refusal(ErrorCode::ServerError)
            }
        }
    }
}

impl From<MemoryError> for Status {
    fn from(error: MemoryError) -> Status {
        Status::from(ServiceError::from(error))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(error: MemoryError) -> ServiceError {
        // Through a status, as a remote caller receives it.
        ServiceError::from_status(&Status::from(error)).expect("a refusal")
    }

    #[test]
    fn owners_not_found_keep_their_own_code() {
        assert_eq!(
            refusal(MemoryError::VolumeNotFound).code,
            ErrorCode::VolumeNotFound
        );
        assert_eq!(
            refusal(MemoryError::SeriesNotFound).code,
            ErrorCode::SeriesNotFound
        );
        assert_eq!(
            refusal(MemoryError::GlossaryNotFound).code,
            ErrorCode::GlossaryNotFound
        );
        assert_eq!(
            Status::from(MemoryError::VolumeNotFound).code(),
            tonic::Code::NotFound
        );
    }

    #[test]
    fn tenancy_refusals_become_the_owners_not_found() {
        use dragoman_model::ModelError;
        use dragoman_model::tenancy::Kind;
        for (kind, code) in [
            (Kind::Book, ErrorCode::VolumeNotFound),
            (Kind::Series, ErrorCode::SeriesNotFound),
            (Kind::Glossary, ErrorCode::GlossaryNotFound),
            (Kind::Term, ErrorCode::TermNotFound),
            (Kind::Request, ErrorCode::RequestNotFound),
        ] {
            let error = MemoryError::from(ModelError::NotFound(kind));
            assert_eq!(refusal(error).code, code, "{kind}");
        }
    }

    #[test]
    fn invalid_requests_carry_their_issues() {
        let issue = Issue::at("body", "source", IssueKind::StringTooShort);
        let sent = refusal(MemoryError::InvalidRequest(vec![issue.clone()]));
        assert_eq!(sent.code, ErrorCode::InvalidRequest);
        assert_eq!(sent.issues, vec![issue]);
    }

    #[test]
    fn glossary_refusals_keep_their_codes_and_the_report() {
        assert_eq!(
            refusal(MemoryError::InvalidName).code,
            ErrorCode::InvalidName
        );
        assert_eq!(
            refusal(MemoryError::GlossaryExists).code,
            ErrorCode::GlossaryExists
        );
        let file = refusal(MemoryError::InvalidFile {
            message: "not well-formed XML at line 4, column 2".into(),
            line: Some(4),
            column: Some(2),
        });
        assert_eq!(file.code, ErrorCode::InvalidRequest);
        assert!(file.message.contains("line 4, column 2"));
        assert_eq!(
            serde_json::to_value(&file.issues).expect("issues"),
            serde_json::json!([{"loc": ["body", "file"], "type": "value_error",
                "ctx": {"line": 4, "column": 2}}])
        );
        let report = serde_json::json!({"applied": false, "counts": {"errors": 1}});
        let refused = refusal(MemoryError::ImportRefused(report.clone()));
        assert_eq!(refused.code, ErrorCode::InvalidRequest);
        assert_eq!(refused.extra.get("report"), Some(&report));
    }

    #[test]
    fn term_refusals_keep_their_codes() {
        let absent = Status::from(MemoryError::TermNotFound);
        assert_eq!(absent.code(), tonic::Code::NotFound);
        assert_eq!(
            refusal(MemoryError::TermNotFound).code,
            ErrorCode::TermNotFound
        );
        let exists = refusal(MemoryError::TermExists {
            term_id: "t1".into(),
        });
        assert_eq!(exists.code, ErrorCode::Conflict);
        assert_eq!(exists.extra.get("term_id"), Some(&serde_json::json!("t1")));
        let large = refusal(MemoryError::ScanTooLarge {
            measure: "passages",
            limit: 2,
            found: 3,
        });
        assert_eq!(large.code, ErrorCode::InvalidRequest);
        assert_eq!(
            serde_json::to_value(&large.issues).expect("issues"),
            serde_json::json!([{"loc": ["body", "book_id"], "type": "too_many",
                "ctx": {"measure": "passages", "limit": 2, "found": 3}}])
        );
    }

    #[test]
    fn storage_failures_are_server_errors() {
        let sent = refusal(MemoryError::Database(sea_orm::DbErr::Custom("boom".into())));
        assert_eq!(sent.code, ErrorCode::ServerError);
    }
}
