//! The spec's error codes (spec 7), each with the HTTP status and the gRPC
//! code it answers with. A code is decided once, where the rule lives; the
//! gateway renders it and the gRPC layer carries it, both from this table.
//!
//! `budget_exceeded` answers 402 at intake and 409 on a resume (spec 4.4,
//! 7): two variants with one spec code, so the status is known where the
//! refusal is made, not guessed from the context later.

use tonic::Code;

macro_rules! error_codes {
    ( $( $(#[$meta:meta])* $variant:ident = ($wire:literal, $code:literal, $http:literal, $grpc:ident) ),+ $(,)? ) => {
        /// A stable error code of the envelope (spec 2.12, 7).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum ErrorCode {
            $( $(#[$meta])* $variant, )+
        }

        impl ErrorCode {
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$variant),+];

            /// The `code` clients see.
            pub fn code(self) -> &'static str {
                match self { $(ErrorCode::$variant => $code,)+ }
            }

            /// The HTTP status it answers with.
            pub fn http_status(self) -> u16 {
                match self { $(ErrorCode::$variant => $http,)+ }
            }

            /// The gRPC status code it travels with.
            pub fn grpc_code(self) -> Code {
                match self { $(ErrorCode::$variant => Code::$grpc,)+ }
            }

            /// A name unique to the variant (two variants may share a spec
            /// code), used to carry it between processes.
            pub fn wire_name(self) -> &'static str {
                match self { $(ErrorCode::$variant => $wire,)+ }
            }

            pub fn from_wire_name(name: &str) -> Option<ErrorCode> {
                Self::ALL.iter().copied().find(|c| c.wire_name() == name)
            }

            /// What a shared spec code leaves out, for a `reason` beside
            /// it: the variant's own name when it answers with another's
            /// code (`not_own_job` answers `conflict`); `None` when the
            /// code says it all.
            pub fn reason(self) -> Option<&'static str> {
                (self.wire_name() != self.code()).then(|| self.wire_name())
            }
        }
    };
}

error_codes! {
    MissingToken = ("missing_token", "missing_token", 401, Unauthenticated),
    InvalidToken = ("invalid_token", "invalid_token", 401, Unauthenticated),
    RevokedToken = ("revoked_token", "revoked_token", 401, Unauthenticated),
    ExpiredToken = ("expired_token", "expired_token", 401, Unauthenticated),
    InactiveAccount = ("inactive_account", "inactive_account", 401, Unauthenticated),
    Unauthorized = ("unauthorized", "unauthorized", 401, Unauthenticated),
    /// The password was right and the account has a second factor: sign in
    /// again with `code` (a current TOTP code or an unused recovery code).
    SecondFactorRequired = ("second_factor_required", "second_factor_required", 401, Unauthenticated),

    /// The token's spending cap is reached at intake (fields `budget`).
    BudgetExceeded = ("budget_exceeded", "budget_exceeded", 402, ResourceExhausted),
    LicenceQuotaInsufficient = ("licence_quota_insufficient", "licence_quota_insufficient", 402, ResourceExhausted),
    AllowanceInsufficient = ("allowance_insufficient", "allowance_insufficient", 402, ResourceExhausted),
    AutomationNotLicensed = ("automation_not_licensed", "automation_not_licensed", 402, PermissionDenied),

    InsufficientScope = ("insufficient_scope", "insufficient_scope", 403, PermissionDenied),
    Forbidden = ("forbidden", "forbidden", 403, PermissionDenied),
    AdminRequired = ("admin_required", "admin_required", 403, PermissionDenied),
    PriorityNotAllowed = ("priority_not_allowed", "priority_not_allowed", 403, PermissionDenied),
    DemoReadOnly = ("demo_read_only", "demo_read_only", 403, PermissionDenied),

    NotFound = ("not_found", "not_found", 404, NotFound),
    SeriesNotFound = ("series_not_found", "series_not_found", 404, NotFound),
    RequestNotFound = ("request_not_found", "request_not_found", 404, NotFound),
    VolumeNotFound = ("volume_not_found", "volume_not_found", 404, NotFound),
    GlossaryNotFound = ("glossary_not_found", "glossary_not_found", 404, NotFound),
    TokenNotFound = ("token_not_found", "token_not_found", 404, NotFound),
    UserNotFound = ("user_not_found", "user_not_found", 404, NotFound),
    /// A mail of the outbox that does not exist.
    MailNotFound = ("mail_not_found", "mail_not_found", 404, NotFound),
    /// A term absent or outside the caller's books, series and glossaries.
    TermNotFound = ("term_not_found", "term_not_found", 404, NotFound),
    /// A passage absent or outside the caller's books.
    PassageNotFound = ("passage_not_found", "passage_not_found", 404, NotFound),

    MethodNotAllowed = ("method_not_allowed", "method_not_allowed", 405, Unimplemented),
    /// The `Accept` header names no media type the route answers with.
    NotAcceptable = ("not_acceptable", "not_acceptable", 406, InvalidArgument),

    IdempotencyConflict = ("idempotency_conflict", "idempotency_conflict", 409, AlreadyExists),
    ChapterConflict = ("chapter_conflict", "chapter_conflict", 409, FailedPrecondition),
    Conflict = ("conflict", "conflict", 409, FailedPrecondition),
    VolumeConflict = ("volume_conflict", "volume_conflict", 409, FailedPrecondition),
    SeriesArchived = ("series_archived", "series_archived", 409, FailedPrecondition),
    VolumeArchived = ("volume_archived", "volume_archived", 409, FailedPrecondition),
    /// Work asked of a series suspended by a series `pause` (field `reason`).
    SeriesSuspended = ("series_suspended", "conflict", 409, FailedPrecondition),
    /// A paused job another token started: a token resumes only its own.
    NotOwnJob = ("not_own_job", "conflict", 409, FailedPrecondition),
    NotStarted = ("not_started", "not_started", 409, FailedPrecondition),
    /// A resume while the spending cap that paused the job still holds.
    BudgetStillReached = ("budget_still_reached", "budget_exceeded", 409, FailedPrecondition),
    ResultNotReady = ("result_not_ready", "result_not_ready", 409, FailedPrecondition),
    RequestFailed = ("request_failed", "request_failed", 409, FailedPrecondition),
    RequestCancelled = ("request_cancelled", "request_cancelled", 409, FailedPrecondition),
    FormatUnavailable = ("format_unavailable", "format_unavailable", 409, FailedPrecondition),
    GlossaryExists = ("glossary_exists", "glossary_exists", 409, AlreadyExists),
    TokenLimit = ("token_limit", "token_limit", 409, FailedPrecondition),
    UsernameTaken = ("username_taken", "username_taken", 409, AlreadyExists),
    /// Deleting, disabling or demoting the only active administrator.
    LastAdministrator = ("last_administrator", "last_administrator", 409, FailedPrecondition),
    /// Deleting an account that still owns series, glossaries, requests or
    /// provider defaults without `transfer_to`.
    AccountNotEmpty = ("account_not_empty", "account_not_empty", 409, FailedPrecondition),
    /// Creating or enabling an account beyond the licence's seats.
    SeatLimit = ("seat_limit", "seat_limit", 409, FailedPrecondition),
    /// Sending mail while no mail server is configured.
    MailNotConfigured = ("mail_not_configured", "mail_not_configured", 409, FailedPrecondition),
    /// A password-reset link asked for while the service does not know its
    /// public address (`DRAGOMAN_PUBLIC_URL`): a link built from the
    /// request's own `Host` header would go wherever the asker wants.
    PublicUrlRequired = ("public_url_required", "public_url_required", 409, FailedPrecondition),
    /// Enrolling a second factor on an account that already has one.
    SecondFactorEnabled = ("second_factor_enabled", "second_factor_enabled", 409, FailedPrecondition),
    ProviderExists = ("provider_exists", "provider_exists", 409, AlreadyExists),
    /// An edit based on a version that is no longer the stored one (a
    /// passage's `version`, a reader note's `previous_note`): read again.
    StaleEdit = ("stale_edit", "conflict", 409, Aborted),
    /// Publishing while no library folder is configured.
    LibraryNotConfigured = ("library_not_configured", "library_not_configured", 409, FailedPrecondition),
    /// Publishing a book that has no delivered EPUB yet.
    NothingToPublish = ("nothing_to_publish", "nothing_to_publish", 409, FailedPrecondition),
    /// A reconcile naming a remote batch that is not the job's (another
    /// key in its metadata or items), or a key the job never used.
    BatchForeign = ("batch_foreign", "conflict", 409, FailedPrecondition),
    /// A reconcile naming a remote batch the provider has not finished.
    BatchUnfinished = ("batch_unfinished", "conflict", 409, FailedPrecondition),

    /// A request the transport itself could not read (malformed headers).
    BadRequest = ("bad_request", "bad_request", 400, InvalidArgument),
    PayloadTooLarge = ("payload_too_large", "payload_too_large", 413, InvalidArgument),
    UnsupportedMediaType = ("unsupported_media_type", "unsupported_media_type", 415, InvalidArgument),

    InvalidPayload = ("invalid_payload", "invalid_payload", 422, InvalidArgument),
    InvalidIdempotencyKey = ("invalid_idempotency_key", "invalid_idempotency_key", 422, InvalidArgument),
    UnknownProvider = ("unknown_provider", "unknown_provider", 422, InvalidArgument),
    ProviderRequired = ("provider_required", "provider_required", 422, InvalidArgument),
    InvalidEpub = ("invalid_epub", "invalid_epub", 422, InvalidArgument),
    CallbackRefused = ("callback_refused", "callback_refused", 422, InvalidArgument),
    InvalidPlacement = ("invalid_placement", "invalid_placement", 422, InvalidArgument),
    InvalidRequest = ("invalid_request", "invalid_request", 422, InvalidArgument),
    InvalidName = ("invalid_name", "invalid_name", 422, InvalidArgument),
    DeliveryFailed = ("delivery_failed", "delivery_failed", 422, InvalidArgument),
    /// A second-factor code that does not match (enrolment confirmation).
    InvalidCode = ("invalid_code", "invalid_code", 422, InvalidArgument),
    /// A password-reset link that is unknown, used or past its hour.
    InvalidResetLink = ("invalid_reset_link", "invalid_reset_link", 422, InvalidArgument),
    /// An edited translation that lost placeholders of the passage's markup
    /// (field `missing`: the placeholders).
    MissingPlaceholders = ("missing_placeholders", "invalid_request", 422, InvalidArgument),

    RateLimited = ("rate_limited", "rate_limited", 429, ResourceExhausted),
    QueueFull = ("queue_full", "queue_full", 429, ResourceExhausted),

    ServerError = ("server_error", "server_error", 500, Internal),
    /// The provider could not confirm a batch named in a reconcile (it did
    /// not answer, or does not know the id).
    BatchUnverified = ("batch_unverified", "provider_unavailable", 502, Unavailable),
    /// The database does not answer (an outage): nothing was done, asking
    /// again later may succeed (`Retry-After`).
    ServiceUnavailable = ("service_unavailable", "service_unavailable", 503, Unavailable),
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn wire_names_are_unique_and_round_trip() {
        let mut seen = HashSet::new();
        for code in ErrorCode::ALL {
            assert!(seen.insert(code.wire_name()), "{code:?}");
            assert_eq!(ErrorCode::from_wire_name(code.wire_name()), Some(*code));
        }
        assert_eq!(ErrorCode::from_wire_name("no_such_code"), None);
    }

    #[test]
    fn budget_exceeded_is_402_at_intake_and_409_on_resume() {
        assert_eq!(ErrorCode::BudgetExceeded.code(), "budget_exceeded");
        assert_eq!(ErrorCode::BudgetStillReached.code(), "budget_exceeded");
        assert_eq!(ErrorCode::BudgetExceeded.http_status(), 402);
        assert_eq!(ErrorCode::BudgetStillReached.http_status(), 409);
    }

    #[test]
    fn a_shared_code_names_its_reason() {
        assert_eq!(ErrorCode::NotOwnJob.code(), "conflict");
        assert_eq!(ErrorCode::NotOwnJob.reason(), Some("not_own_job"));
        assert_eq!(
            ErrorCode::SeriesSuspended.reason(),
            Some("series_suspended")
        );
        assert_eq!(
            ErrorCode::BudgetStillReached.reason(),
            Some("budget_still_reached")
        );
        assert_eq!(ErrorCode::Conflict.reason(), None);
        assert_eq!(ErrorCode::LicenceQuotaInsufficient.reason(), None);
    }

    #[test]
    fn statuses_follow_the_spec_table() {
        assert_eq!(ErrorCode::QueueFull.http_status(), 429);
        assert_eq!(ErrorCode::CallbackRefused.http_status(), 422);
        assert_eq!(ErrorCode::PriorityNotAllowed.http_status(), 403);
        assert_eq!(ErrorCode::ServerError.grpc_code(), Code::Internal);
        assert_eq!(ErrorCode::TermNotFound.http_status(), 404);
        assert_eq!(ErrorCode::TermNotFound.grpc_code(), Code::NotFound);
        assert_eq!(ErrorCode::ServiceUnavailable.http_status(), 503);
        assert_eq!(ErrorCode::ServiceUnavailable.grpc_code(), Code::Unavailable);
        assert_eq!(ErrorCode::ServiceUnavailable.code(), "service_unavailable");
    }
}
