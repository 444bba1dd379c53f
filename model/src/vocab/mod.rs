//! The service's vocabulary: every status, format, scope, layout, action,
//! priority, stage and channel the spec names, as types.
//!
//! Each enum is declared once with its spec string; that string is its
//! serde form and its database form (the columns holding it are typed), so
//! no status or format is ever written as a literal elsewhere. Error codes
//! and validation issues live here too, because every service produces them
//! and the gateway renders them.

#[macro_use]
mod macros;
mod audit;
mod batch;
mod channel;
mod error_code;
mod glossary;
mod issue;
mod mail;
mod memory;
mod onboarding;
mod options;
mod person_work;
mod quality;
mod results;
mod scope;
mod status;
mod usage;

pub use audit::{AuditAction, AuditTarget};
pub use batch::BatchState;
pub use channel::Channel;
pub use error_code::ErrorCode;
pub use glossary::{CsvDelimiter, GlossaryFormat, ImportStrategy};
pub use issue::{ContextValue, Issue, IssueContext, IssueKind, Loc, LocPart};
pub use mail::{MailKind, MailLanguage, MailSecurity, MailState};
pub use memory::{BibleAspect, EntityKind, Origin, TermLayer, VersionReason};
pub use onboarding::OnboardingItem;
pub use options::{
    AnalysisMode, BudgetPeriod, CallbackEvent, ContextBackend, ControlAction, InputKind, Priority,
    ProjectKind, ProviderKind, Quality, SeriesAction, SeriesKind, Split, Stage,
};
pub use person_work::{JobOperation, NotePlacement, PublicationStatus};
pub use quality::{AutopilotAction, AutopilotOutcome, Band, Severity, SignalCode};
pub use results::{Layout, ResultFormat, ResultScope};
pub use scope::Scope;
pub use status::{
    JobOutcome, JobStatus, PassageStatus, RequestStatus, RequestWebhookState, VolumeStatus,
    WebhookState,
};
pub use usage::UsageStage;

/// A string that names no value of a vocabulary type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{value:?} is not one of: {expected}")]
pub struct UnknownValue {
    pub value: String,
    pub expected: String,
}
