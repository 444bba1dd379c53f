//! The scheduler's one error type, and its one mapping to the refusal that
//! crosses gRPC: each variant chooses its [`ErrorCode`] and the extra fields
//! of the envelope here, and nowhere else.

use dragoman_model::payload::LanguagePair;
use dragoman_model::vocab::{ErrorCode, Issue, IssueKind, Priority};
use dragoman_model::webhook::Refusal;
use dragoman_proto::api_status::ServiceError;
use dragoman_proto::wire::WireError;
use serde::Serialize;
use serde_json::Value;
use tonic::Status;

/// A volume's languages, as a `volume_conflict` refusal names them.
#[derive(Serialize)]
struct VolumeLanguages<'a> {
    source_language: &'a str,
    target_language: &'a str,
}

/// Which waiting quota is full (spec 7 `queue_full` field `scope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueScope {
    Token,
    Account,
}

impl QueueScope {
    pub fn as_str(self) -> &'static str {
        match self {
            QueueScope::Token => "token",
            QueueScope::Account => "account",
        }
    }
}

/// Why the volume a request names cannot take its chapters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VolumeClash {
    /// The volume `external_id` belongs to another series of the account.
    OtherSeries,
    /// The volume found by `external_id` has another number than the one
    /// the request gives.
    OtherNumber,
    /// Another volume of the series already has the number or label a
    /// book is attached at.
    PlaceTaken,
}

impl VolumeClash {
    /// The `reason` field of the envelope.
    pub fn as_str(self) -> &'static str {
        match self {
            VolumeClash::OtherSeries => "other_series",
            VolumeClash::OtherNumber => "other_number",
            VolumeClash::PlaceTaken => "place_taken",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SchedulerError {
    #[error("invalid payload")]
    InvalidPayload(Vec<Issue>),
    #[error("invalid request: {0}")]
    InvalidRequest(WireError),
    #[error("invalid idempotency key")]
    InvalidIdempotencyKey,
    #[error("idempotency key or external id already used for other content")]
    IdempotencyConflict,
    #[error("series not found")]
    SeriesNotFound,
    #[error("request not found")]
    RequestNotFound,
    /// A book (volume) absent or outside the caller's series.
    #[error("volume not found")]
    VolumeNotFound,
    /// A change a book cannot take while one of its requests has not ended.
    #[error("a request of this book has not ended: {0}")]
    BookWorking(&'static str),
    /// Work asked on a book whose every passage already has a usable
    /// translation (or that has none).
    #[error("nothing left to translate: every passage of this book has a usable translation")]
    NothingToTranslate,
    /// Work that reads the translation (reader-note proposals) asked on a
    /// book with no passage translated yet.
    #[error("nothing translated yet: this work reads the book's translation")]
    NothingTranslated,
    /// Arguments of a library call that break a rule the types do not
    /// carry, located under `arguments`.
    #[error("invalid arguments")]
    InvalidArguments(Vec<Issue>),
    /// A book cannot go where it is asked to; `reason` says why.
    #[error("the book cannot be placed there: {reason}")]
    InvalidPlacement { reason: &'static str },
    /// A series name blank or longer than 500 characters.
    #[error("a series name has 1 to 500 characters")]
    InvalidName,
    /// A change a series cannot take in its state; `reason` says why.
    #[error("the series cannot take this change: {reason}")]
    SeriesConflict { reason: &'static str },
    #[error("series archived")]
    SeriesArchived,
    #[error("volume archived")]
    VolumeArchived,
    #[error("the volume external id names another volume ({})", .0.as_str())]
    VolumeConflict(VolumeClash),
    /// The volume a request names is translated in another language pair
    /// than the request asks for.
    #[error("the volume is translated {volume}, the request asks {request}")]
    VolumeLanguages {
        volume: LanguagePair,
        request: LanguagePair,
    },
    /// Chapters of a request that cannot go where they say they belong in
    /// their volume (`chapters`: their external ids, else their labels).
    #[error("chapters cannot be placed as asked: {reason}")]
    ChaptersNotPlaced {
        reason: &'static str,
        chapters: Vec<String>,
    },
    #[error("chapters already imported have another text")]
    ChapterConflict(Vec<String>),
    #[error("the change would drop passages a person edited or validated")]
    HumanWork(Vec<String>),
    #[error("the job state does not allow {0}")]
    ActionNotAllowed(dragoman_model::vocab::ControlAction),
    #[error("the job is not held by this worker")]
    JobNotHeld,
    #[error("the request has not started")]
    NotStarted,
    /// Work asked of a series its owner suspended with a series `pause`.
    #[error("the series is suspended: resume it before starting work")]
    SeriesSuspended,
    /// A token resuming a paused job that another token started.
    #[error("another token started this job: a token resumes only the jobs it started")]
    NotOwnJob,
    #[error("no provider for this request")]
    ProviderRequired,
    #[error("unknown provider")]
    UnknownProvider,
    #[error("priority above the ceiling {max_priority}")]
    PriorityNotAllowed { max_priority: Priority },
    #[error("spending cap reached")]
    BudgetExceeded(Value),
    /// A resume while the budget that paused the job still holds; the
    /// cap's view.
    #[error("the budget that paused the job is still reached")]
    BudgetStillReached(Value),
    #[error("queue full ({} limit {limit})", .scope.as_str())]
    QueueFull { scope: QueueScope, limit: i64 },
    /// An administrator route called by someone else.
    #[error("this action needs an administrator")]
    AdminRequired,
    /// The request's new words do not fit in the licence's word quota
    /// (`left`: what would still fit, margin included).
    #[error("{words} words do not fit in the licence word quota ({left} left, margin included)")]
    LicenceQuotaInsufficient { words: i64, left: i64 },
    /// The request's new words do not fit in the account's own allowance.
    #[error(
        "{words} words do not fit in the account's word allowance ({left} left, margin included)"
    )]
    AllowanceInsufficient { words: i64, left: i64 },
    #[error("the callback URL is refused: {0}")]
    CallbackRefused(Refusal),
    /// An uploaded file the book readers refuse; `message` says what is
    /// wrong and where.
    #[error("{message}")]
    UnreadableBook {
        input: dragoman_model::vocab::InputKind,
        file: String,
        /// The reader's stable code (`not_zip`, `encrypted`, `encoding`, …).
        reason: String,
        message: String,
    },
    /// The blob store failed at `what`: refused (503 with `Retry-After`,
    /// see [`dragoman_model::blob::is_outage`]) or missing an object that
    /// must exist (a server error).
    #[error("blob store: {what}: {source}")]
    Blob {
        what: String,
        #[source]
        source: object_store::Error,
    },
    #[error("database: {0}")]
    Db(#[from] sea_orm::DbErr),
    #[error("{0}")]
    Model(dragoman_model::ModelError),
}

impl From<dragoman_model::ModelError> for SchedulerError {
    /// A tenancy refusal keeps its kind's own variant; anything else is
    /// the storage's.
    fn from(error: dragoman_model::ModelError) -> SchedulerError {
        use dragoman_model::tenancy::Kind;
        match error {
            dragoman_model::ModelError::NotFound(Kind::Series) => SchedulerError::SeriesNotFound,
            dragoman_model::ModelError::NotFound(Kind::Book) => SchedulerError::VolumeNotFound,
            dragoman_model::ModelError::NotFound(Kind::Request) => SchedulerError::RequestNotFound,
            dragoman_model::ModelError::NotFound(Kind::Provider) => SchedulerError::UnknownProvider,
            other => SchedulerError::Model(other),
        }
    }
}

impl SchedulerError {
    /// A payload field the wire could not decode: one located issue, as the
    /// gateway reports a value outside an enum.
    pub fn payload_field(error: WireError) -> SchedulerError {
        SchedulerError::InvalidPayload(vec![Issue::at("body", error.field, IssueKind::Enum)])
    }

    /// A blob store failure at `what`, for `map_err`.
    pub fn blob(what: impl Into<String>) -> impl FnOnce(object_store::Error) -> SchedulerError {
        let what = what.into();
        move |source| SchedulerError::Blob { what, source }
    }

    /// Whether the error refuses what was asked, as opposed to a failure of
    /// the service's own storage: an action on several volumes reports a
    /// refusal per volume and goes on, but stops at a failure.
    pub fn is_refusal(&self) -> bool {
        match self {
            SchedulerError::Model(dragoman_model::ModelError::NotFound(_)) => true,
            SchedulerError::Db(_) | SchedulerError::Model(_) | SchedulerError::Blob { .. } => false,
            _ => true,
        }
    }
}

impl From<SchedulerError> for ServiceError {
    fn from(error: SchedulerError) -> ServiceError {
        let message = error.to_string();
        let refusal = |code: ErrorCode| ServiceError::new(code, message.clone());
        match error {
            SchedulerError::InvalidPayload(issues) => {
                refusal(ErrorCode::InvalidPayload).with_issues(issues)
            }
            SchedulerError::InvalidRequest(_) => refusal(ErrorCode::InvalidRequest),
            SchedulerError::InvalidIdempotencyKey => refusal(ErrorCode::InvalidIdempotencyKey),
            SchedulerError::IdempotencyConflict => refusal(ErrorCode::IdempotencyConflict),
            SchedulerError::SeriesNotFound => refusal(ErrorCode::SeriesNotFound),
            SchedulerError::RequestNotFound => refusal(ErrorCode::RequestNotFound),
            SchedulerError::VolumeNotFound => refusal(ErrorCode::VolumeNotFound),
            SchedulerError::BookWorking(_) => refusal(ErrorCode::Conflict),
            SchedulerError::NothingToTranslate => {
                refusal(ErrorCode::Conflict).with("reason", "nothing_to_translate")
            }
            SchedulerError::NothingTranslated => {
                refusal(ErrorCode::Conflict).with("reason", "nothing_translated")
            }
            SchedulerError::InvalidArguments(issues) => {
                refusal(ErrorCode::InvalidRequest).with_issues(issues)
            }
            SchedulerError::InvalidName => refusal(ErrorCode::InvalidName),
            SchedulerError::InvalidPlacement { reason } => {
                refusal(ErrorCode::InvalidPlacement).with("reason", reason)
            }
            SchedulerError::SeriesConflict { reason } => {
                refusal(ErrorCode::Conflict).with("reason", reason)
            }
            SchedulerError::SeriesArchived => refusal(ErrorCode::SeriesArchived),
            SchedulerError::VolumeArchived => refusal(ErrorCode::VolumeArchived),
            SchedulerError::VolumeConflict(clash) => {
                refusal(ErrorCode::VolumeConflict).with("reason", clash.as_str())
            }
            SchedulerError::VolumeLanguages { volume, request } => {
                refusal(ErrorCode::VolumeConflict)
                    .with(
                        "reason",
                        format!("the volume is {volume}, the request asks {request}"),
                    )
                    .with_document(
                        "volume_languages",
                        &VolumeLanguages {
                            source_language: &volume.source,
                            target_language: &volume.target,
                        },
                    )
            }
            SchedulerError::ChaptersNotPlaced { reason, chapters } => {
                refusal(ErrorCode::InvalidPlacement)
                    .with("reason", reason)
                    .with("chapters", chapters)
            }
            SchedulerError::ChapterConflict(chapters) => {
                refusal(ErrorCode::ChapterConflict).with("chapters", chapters)
            }
            SchedulerError::HumanWork(chapters) => {
                refusal(ErrorCode::Conflict).with("chapters", chapters)
            }
            SchedulerError::ActionNotAllowed(_) | SchedulerError::JobNotHeld => {
                refusal(ErrorCode::Conflict)
            }
            SchedulerError::NotStarted => refusal(ErrorCode::NotStarted),
            SchedulerError::SeriesSuspended => refusal(ErrorCode::SeriesSuspended),
            SchedulerError::NotOwnJob => refusal(ErrorCode::NotOwnJob),
            SchedulerError::ProviderRequired => refusal(ErrorCode::ProviderRequired),
            SchedulerError::UnknownProvider => refusal(ErrorCode::UnknownProvider),
            SchedulerError::PriorityNotAllowed { max_priority } => {
                refusal(ErrorCode::PriorityNotAllowed).with("max_priority", max_priority.as_str())
            }
            SchedulerError::BudgetExceeded(budget) => {
                refusal(ErrorCode::BudgetExceeded).with("budget", budget)
            }
            SchedulerError::BudgetStillReached(budget) => {
                refusal(ErrorCode::BudgetStillReached).with("budget", budget)
            }
            SchedulerError::QueueFull { scope, limit } => refusal(ErrorCode::QueueFull)
                .with("scope", scope.as_str())
                .with("limit", limit),
            SchedulerError::AdminRequired => refusal(ErrorCode::AdminRequired),
            SchedulerError::LicenceQuotaInsufficient { words, left } => {
                refusal(ErrorCode::LicenceQuotaInsufficient)
                    .with("words", words)
                    .with("left", left)
            }
            SchedulerError::AllowanceInsufficient { words, left } => {
                refusal(ErrorCode::AllowanceInsufficient)
                    .with("words", words)
                    .with("left", left)
            }
            SchedulerError::CallbackRefused(reason) => {
                refusal(ErrorCode::CallbackRefused).with("reason", reason.reason())
            }
            SchedulerError::UnreadableBook {
                input,
                file,
                reason,
                ..
            } => {
                let code = if input == dragoman_model::vocab::InputKind::Epub {
                    ErrorCode::InvalidEpub
                } else {
                    ErrorCode::InvalidPayload
                };
                refusal(code)
                    .with("file", file)
                    .with("reason", reason)
                    .with("problem", message.clone())
            }
            SchedulerError::Db(e) => {
                ServiceError::storage(dragoman_model::db_watch::is_outage(&e), message)
            }
            SchedulerError::Model(dragoman_model::ModelError::NotFound(kind)) => {
                refusal(kind.not_found())
            }
            SchedulerError::Model(e) => ServiceError::storage(e.is_outage(), message),
            SchedulerError::Blob { source, .. } => {
                ServiceError::storage(dragoman_model::blob::is_outage(&source), message)
            }
        }
    }
}

impl From<SchedulerError> for Status {
    fn from(error: SchedulerError) -> Status {
        Status::from(ServiceError::from(error))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn refusal(error: SchedulerError) -> ServiceError {
        // Through a status, as the gateway receives it.
        ServiceError::from_status(&Status::from(error)).expect("a refusal")
    }

    #[test]
    fn tenancy_refusals_are_refusals_with_their_kind_s_code() {
        use dragoman_model::ModelError;
        use dragoman_model::tenancy::Kind;
        for (kind, code) in [
            (Kind::Series, ErrorCode::SeriesNotFound),
            (Kind::Book, ErrorCode::VolumeNotFound),
            (Kind::Request, ErrorCode::RequestNotFound),
            (Kind::Provider, ErrorCode::UnknownProvider),
            (Kind::Glossary, ErrorCode::GlossaryNotFound),
        ] {
            let error = SchedulerError::from(ModelError::NotFound(kind));
            assert!(error.is_refusal(), "{kind}");
            assert_eq!(refusal(error).code, code, "{kind}");
        }
    }

    #[test]
    fn quotas_name_their_scope_and_limit() {
        let sent = refusal(SchedulerError::QueueFull {
            scope: QueueScope::Account,
            limit: 3,
        });
        assert_eq!(sent.code, ErrorCode::QueueFull);
        assert_eq!(sent.extra.get("scope"), Some(&json!("account")));
        assert_eq!(sent.extra.get("limit"), Some(&json!(3)));
    }

    #[test]
    fn word_quotas_name_the_words_and_what_is_left() {
        let sent = refusal(SchedulerError::LicenceQuotaInsufficient {
            words: 1200,
            left: 20,
        });
        assert_eq!(sent.code, ErrorCode::LicenceQuotaInsufficient);
        assert_eq!(sent.code.http_status(), 402);
        assert_eq!(sent.extra.get("words"), Some(&json!(1200)));
        assert_eq!(sent.extra.get("left"), Some(&json!(20)));

        let sent = refusal(SchedulerError::AllowanceInsufficient { words: 7, left: 0 });
        assert_eq!(
            (sent.code.code(), sent.code.http_status()),
            ("allowance_insufficient", 402)
        );
        assert_eq!(sent.extra.get("words"), Some(&json!(7)));
        assert_eq!(sent.extra.get("left"), Some(&json!(0)));
        assert!(
            SchedulerError::AllowanceInsufficient { words: 7, left: 0 }.is_refusal(),
            "a series start reports it per volume and goes on"
        );
    }

    #[test]
    fn refusals_carry_the_fields_their_code_promises() {
        let sent = refusal(SchedulerError::PriorityNotAllowed {
            max_priority: Priority::Normal,
        });
        assert_eq!(sent.code, ErrorCode::PriorityNotAllowed);
        assert_eq!(sent.extra.get("max_priority"), Some(&json!("normal")));

        let sent = refusal(SchedulerError::HumanWork(vec!["ch-2".into()]));
        assert_eq!(sent.code, ErrorCode::Conflict);
        assert_eq!(sent.extra.get("chapters"), Some(&json!(["ch-2"])));

        let sent = refusal(SchedulerError::ChapterConflict(vec!["Chapter 1".into()]));
        assert_eq!(sent.code, ErrorCode::ChapterConflict);

        let sent = refusal(SchedulerError::CallbackRefused(Refusal::NoSigningSecret));
        assert_eq!(sent.extra.get("reason"), Some(&json!("no_signing_secret")));

        let sent = refusal(SchedulerError::BudgetExceeded(json!({"amount": 1.0})));
        assert_eq!(sent.code.http_status(), 402);
        assert_eq!(sent.extra.get("budget"), Some(&json!({"amount": 1.0})));

        let sent = refusal(SchedulerError::SeriesSuspended);
        assert_eq!(sent.code, ErrorCode::SeriesSuspended);
        assert_eq!(
            (sent.code.code(), sent.code.http_status()),
            ("conflict", 409)
        );
        assert_eq!(sent.extra.get("reason"), Some(&json!("series_suspended")));

        let sent = refusal(SchedulerError::NotOwnJob);
        assert_eq!(
            (sent.code.code(), sent.code.http_status()),
            ("conflict", 409)
        );
        assert_eq!(sent.code, ErrorCode::NotOwnJob);
        assert_eq!(sent.extra.get("reason"), Some(&json!("not_own_job")));

        let sent = refusal(SchedulerError::VolumeConflict(VolumeClash::OtherSeries));
        assert_eq!(sent.code, ErrorCode::VolumeConflict);
        assert_eq!(sent.extra.get("reason"), Some(&json!("other_series")));
    }

    #[test]
    fn an_undecodable_field_is_one_located_issue() {
        let sent = refusal(SchedulerError::payload_field(WireError {
            field: "pipeline.quality",
        }));
        assert_eq!(sent.code, ErrorCode::InvalidPayload);
        assert_eq!(
            sent.issues,
            vec![Issue::at("body", "pipeline.quality", IssueKind::Enum)]
        );
        assert_eq!(
            sent.issues[0].loc,
            vec![json!("body"), json!("pipeline"), json!("quality")]
        );
    }

    #[test]
    fn a_refusing_blob_store_is_unavailable_and_a_missing_object_is_not() {
        let refused = SchedulerError::blob("upload uploads/x")(object_store::Error::Generic {
            store: "S3",
            source: "connection refused".into(),
        });
        assert!(!refused.is_refusal());
        let sent = refusal(refused);
        assert_eq!(sent.code, ErrorCode::ServiceUnavailable);
        assert_eq!(sent.code.http_status(), 503);
        assert!(
            sent.extra
                .get("retry_after")
                .is_some_and(|s| s.as_u64() > Some(0))
        );
        assert!(sent.message.contains("uploads/x"), "{}", sent.message);

        let missing = SchedulerError::blob("upload uploads/y")(object_store::Error::NotFound {
            path: "uploads/y".into(),
            source: "absent".into(),
        });
        let sent = refusal(missing);
        assert_eq!(sent.code, ErrorCode::ServerError);
        assert!(!sent.extra.contains_key("retry_after"));
    }

    #[test]
    fn storage_failures_are_server_errors() {
        let sent = refusal(SchedulerError::Db(sea_orm::DbErr::Custom("boom".into())));
        assert_eq!(sent.code, ErrorCode::ServerError);
        assert!(sent.message.contains("boom"));
    }
}
