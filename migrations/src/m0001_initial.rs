//! `m0001_initial`: the fifteen tables of the first schema, their indexes and foreign keys.
//!
//! Column types: ids and other strings are `varchar` (unbounded), long texts `text`,
//! times and counters `bigint`/`integer`, money `double`, JSON `json` (`json_text` on
//! SQLite). Foreign keys are declared inside `CREATE TABLE` (SQLite cannot add them
//! later), so tables are created parents first and dropped children first.
//!
//! On delete: ownership chains cascade (account → series → project → chapter →
//! passage, project → request → job/result/webhook delivery, account → session/token);
//! optional references to providers and tokens are set to NULL; a provider with
//! recorded calls cannot be deleted (its cost history would be lost).

use crate::keys::{fk, index, pk_string};
use sea_orm_migration::{prelude::*, schema::*};

/// The initial schema.
#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Accounts {
    Table,
    Id,
    Username,
    PasswordHash,
    Email,
    IsAdmin,
    Active,
    PriorityCeiling,
    MaxRunning,
    MaxQueued,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum Sessions {
    Table,
    Id,
    AccountId,
    CreatedAt,
    ExpiresAt,
    LastSeenAt,
}

#[derive(DeriveIden)]
enum ApiTokens {
    Table,
    Id,
    AccountId,
    Name,
    Prefix,
    SecretHash,
    Scopes,
    CreatedAt,
    ExpiresAt,
    RevokedAt,
    LastUsedAt,
    WebhookSecretEnc,
    MaxPriority,
    MaxRunning,
    MaxQueued,
    BudgetAmount,
    BudgetPeriod,
}

#[derive(DeriveIden)]
enum AuditLog {
    Table,
    Id,
    At,
    ActorAccountId,
    Action,
    TargetType,
    TargetId,
    Details,
}

#[derive(DeriveIden)]
enum Providers {
    Table,
    Id,
    Name,
    Kind,
    Model,
    BaseUrl,
    ApiKeyEnv,
    PriceInput,
    PriceOutput,
    Capacity,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum Series {
    Table,
    Id,
    AccountId,
    Name,
    Kind,
    SourceLanguage,
    TargetLanguage,
    Archived,
    DefaultProviderId,
    SharedGlossaryId,
    Suspended,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum Projects {
    Table,
    Id,
    SeriesId,
    AccountId,
    Title,
    VolumeNumber,
    VolumeLabel,
    ExternalId,
    SourceFormat,
    ProjectKind,
    Status,
    ProviderId,
    SourceLanguage,
    TargetLanguage,
    Author,
    OriginalBlob,
    AnalysisMode,
    Threads,
    Archived,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum Chapters {
    Table,
    Id,
    ProjectId,
    ExternalId,
    Number,
    Part,
    PartCount,
    Kind,
    Label,
    Title,
    TranslatedTitle,
    Position,
    SourceSha256,
    Words,
    Mapping,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum Passages {
    Table,
    Id,
    ChapterId,
    ProjectId,
    Position,
    Source,
    Markup,
    Translation,
    Status,
    LastError,
    Human,
    Validated,
    Attempts,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum Requests {
    Table,
    Id,
    AccountId,
    TokenId,
    ExternalId,
    IdempotencyKey,
    ContentHash,
    SeriesId,
    ProjectId,
    JobId,
    Input,
    Status,
    Stage,
    Step,
    Error,
    StopReason,
    Priority,
    Options,
    CallbackUrl,
    CallbackEvents,
    Chapters,
    Result,
    Report,
    NextAttempt,
    CreatedAt,
    UpdatedAt,
    FinishedAt,
}

#[derive(DeriveIden)]
enum Jobs {
    Table,
    Id,
    RequestId,
    ProjectId,
    AccountId,
    TokenId,
    Status,
    Priority,
    ProviderId,
    LeaseHolder,
    LeaseExpiresAt,
    Attempts,
    Progress,
    Estimate,
    CreatedAt,
    UpdatedAt,
    StartedAt,
    FinishedAt,
}

#[derive(DeriveIden)]
enum Results {
    Table,
    Id,
    RequestId,
    Format,
    Scope,
    MediaType,
    Filename,
    Size,
    Sha256,
    BlobKey,
    CreatedAt,
    ExpiresAt,
}

#[derive(DeriveIden)]
enum WebhookDeliveries {
    Table,
    Id,
    RequestId,
    Event,
    Batch,
    Url,
    Body,
    State,
    Attempts,
    NextAttemptAt,
    LastError,
    CreatedAt,
    UpdatedAt,
    DeliveredAt,
}

#[derive(DeriveIden)]
enum ProviderCalls {
    Table,
    Id,
    ProviderId,
    AccountId,
    TokenId,
    RequestId,
    JobId,
    PromptTokens,
    CompletionTokens,
    Cached,
    Cost,
    DurationMs,
    Status,
    Error,
    CreatedAt,
}

#[derive(DeriveIden)]
enum Settings {
    Table,
    Key,
    Value,
    UpdatedAt,
}

/// A string primary key (application-generated UUID, or a setting name).
/// Every table, parents first. (Long by design: a released migration stays as written.)
fn tables() -> Vec<TableCreateStatement> {
    use ForeignKeyAction::{Cascade, Restrict, SetNull};

    vec![
        Table::create()
            .table(Accounts::Table)
            .col(pk_string(Accounts::Id))
            .col(string(Accounts::Username))
            .col(string(Accounts::PasswordHash))
            .col(string_null(Accounts::Email))
            .col(boolean(Accounts::IsAdmin))
            .col(boolean(Accounts::Active))
            .col(string(Accounts::PriorityCeiling))
            .col(integer_null(Accounts::MaxRunning))
            .col(integer_null(Accounts::MaxQueued))
            .col(big_integer(Accounts::CreatedAt))
            .col(big_integer(Accounts::UpdatedAt))
            .take(),
        Table::create()
            .table(Providers::Table)
            .col(pk_string(Providers::Id))
            .col(string(Providers::Name))
            .col(string(Providers::Kind))
            .col(string(Providers::Model))
            .col(string(Providers::BaseUrl))
            .col(string(Providers::ApiKeyEnv))
            .col(double_null(Providers::PriceInput))
            .col(double_null(Providers::PriceOutput))
            .col(integer(Providers::Capacity))
            .col(big_integer(Providers::CreatedAt))
            .col(big_integer(Providers::UpdatedAt))
            .take(),
        Table::create()
            .table(Sessions::Table)
            .col(pk_string(Sessions::Id))
            .col(string(Sessions::AccountId))
            .col(big_integer(Sessions::CreatedAt))
            .col(big_integer(Sessions::ExpiresAt))
            .col(big_integer(Sessions::LastSeenAt))
            .foreign_key(&mut fk(
                "fk_sessions_account_id",
                (Sessions::Table, Sessions::AccountId),
                (Accounts::Table, Accounts::Id),
                Cascade,
            ))
            .take(),
        Table::create()
            .table(ApiTokens::Table)
            .col(pk_string(ApiTokens::Id))
            .col(string(ApiTokens::AccountId))
            .col(string(ApiTokens::Name))
            .col(string(ApiTokens::Prefix))
            .col(string(ApiTokens::SecretHash))
            .col(json(ApiTokens::Scopes))
            .col(big_integer(ApiTokens::CreatedAt))
            .col(big_integer_null(ApiTokens::ExpiresAt))
            .col(big_integer_null(ApiTokens::RevokedAt))
            .col(big_integer_null(ApiTokens::LastUsedAt))
            .col(string_null(ApiTokens::WebhookSecretEnc))
            .col(string(ApiTokens::MaxPriority))
            .col(integer(ApiTokens::MaxRunning))
            .col(integer(ApiTokens::MaxQueued))
            .col(double_null(ApiTokens::BudgetAmount))
            .col(string_null(ApiTokens::BudgetPeriod))
            .foreign_key(&mut fk(
                "fk_api_tokens_account_id",
                (ApiTokens::Table, ApiTokens::AccountId),
                (Accounts::Table, Accounts::Id),
                Cascade,
            ))
            .take(),
        Table::create()
            .table(AuditLog::Table)
            .col(pk_string(AuditLog::Id))
            .col(big_integer(AuditLog::At))
            .col(string_null(AuditLog::ActorAccountId))
            .col(string(AuditLog::Action))
            .col(string(AuditLog::TargetType))
            .col(string_null(AuditLog::TargetId))
            .col(json(AuditLog::Details))
            .take(),
        Table::create()
            .table(Series::Table)
            .col(pk_string(Series::Id))
            .col(string(Series::AccountId))
            .col(string(Series::Name))
            .col(string(Series::Kind))
            .col(string_null(Series::SourceLanguage))
            .col(string_null(Series::TargetLanguage))
            .col(boolean(Series::Archived))
            .col(string_null(Series::DefaultProviderId))
            .col(string_null(Series::SharedGlossaryId))
            .col(boolean(Series::Suspended))
            .col(big_integer(Series::CreatedAt))
            .col(big_integer(Series::UpdatedAt))
            .foreign_key(&mut fk(
                "fk_series_account_id",
                (Series::Table, Series::AccountId),
                (Accounts::Table, Accounts::Id),
                Cascade,
            ))
            .foreign_key(&mut fk(
                "fk_series_default_provider_id",
                (Series::Table, Series::DefaultProviderId),
                (Providers::Table, Providers::Id),
                SetNull,
            ))
            .take(),
        Table::create()
            .table(Projects::Table)
            .col(pk_string(Projects::Id))
            .col(string(Projects::SeriesId))
            .col(string(Projects::AccountId))
            .col(string(Projects::Title))
            .col(integer_null(Projects::VolumeNumber))
            .col(string_null(Projects::VolumeLabel))
            .col(string_null(Projects::ExternalId))
            .col(string_null(Projects::SourceFormat))
            .col(string(Projects::ProjectKind))
            .col(string(Projects::Status))
            .col(string_null(Projects::ProviderId))
            .col(string(Projects::SourceLanguage))
            .col(string(Projects::TargetLanguage))
            .col(string_null(Projects::Author))
            .col(string_null(Projects::OriginalBlob))
            .col(string_null(Projects::AnalysisMode))
            .col(integer_null(Projects::Threads))
            .col(boolean(Projects::Archived))
            .col(big_integer(Projects::CreatedAt))
            .col(big_integer(Projects::UpdatedAt))
            .foreign_key(&mut fk(
                "fk_projects_series_id",
                (Projects::Table, Projects::SeriesId),
                (Series::Table, Series::Id),
                Cascade,
            ))
            .foreign_key(&mut fk(
                "fk_projects_account_id",
                (Projects::Table, Projects::AccountId),
                (Accounts::Table, Accounts::Id),
                Cascade,
            ))
            .foreign_key(&mut fk(
                "fk_projects_provider_id",
                (Projects::Table, Projects::ProviderId),
                (Providers::Table, Providers::Id),
                SetNull,
            ))
            .take(),
        Table::create()
            .table(Chapters::Table)
            .col(pk_string(Chapters::Id))
            .col(string(Chapters::ProjectId))
            .col(string_null(Chapters::ExternalId))
            .col(integer_null(Chapters::Number))
            .col(integer_null(Chapters::Part))
            .col(integer_null(Chapters::PartCount))
            .col(string(Chapters::Kind))
            .col(string_null(Chapters::Label))
            .col(string_null(Chapters::Title))
            .col(string_null(Chapters::TranslatedTitle))
            .col(integer(Chapters::Position))
            .col(string(Chapters::SourceSha256))
            .col(big_integer(Chapters::Words))
            .col(json_null(Chapters::Mapping))
            .col(big_integer(Chapters::CreatedAt))
            .col(big_integer(Chapters::UpdatedAt))
            .foreign_key(&mut fk(
                "fk_chapters_project_id",
                (Chapters::Table, Chapters::ProjectId),
                (Projects::Table, Projects::Id),
                Cascade,
            ))
            .take(),
        Table::create()
            .table(Passages::Table)
            .col(pk_string(Passages::Id))
            .col(string(Passages::ChapterId))
            .col(string(Passages::ProjectId))
            .col(integer(Passages::Position))
            .col(text(Passages::Source))
            .col(json_null(Passages::Markup))
            .col(text_null(Passages::Translation))
            .col(string(Passages::Status))
            .col(string_null(Passages::LastError))
            .col(boolean(Passages::Human))
            .col(boolean(Passages::Validated))
            .col(integer(Passages::Attempts))
            .col(big_integer(Passages::CreatedAt))
            .col(big_integer(Passages::UpdatedAt))
            .foreign_key(&mut fk(
                "fk_passages_chapter_id",
                (Passages::Table, Passages::ChapterId),
                (Chapters::Table, Chapters::Id),
                Cascade,
            ))
            .foreign_key(&mut fk(
                "fk_passages_project_id",
                (Passages::Table, Passages::ProjectId),
                (Projects::Table, Projects::Id),
                Cascade,
            ))
            .take(),
        Table::create()
            .table(Requests::Table)
            .col(pk_string(Requests::Id))
            .col(string(Requests::AccountId))
            .col(string_null(Requests::TokenId))
            .col(string_null(Requests::ExternalId))
            .col(string_null(Requests::IdempotencyKey))
            .col(string(Requests::ContentHash))
            .col(string(Requests::SeriesId))
            .col(string(Requests::ProjectId))
            .col(string_null(Requests::JobId))
            .col(string(Requests::Input))
            .col(string(Requests::Status))
            .col(string(Requests::Stage))
            .col(string(Requests::Step))
            .col(string(Requests::Error))
            .col(string(Requests::StopReason))
            .col(string(Requests::Priority))
            .col(json(Requests::Options))
            .col(string_null(Requests::CallbackUrl))
            .col(json(Requests::CallbackEvents))
            .col(json(Requests::Chapters))
            .col(json_null(Requests::Result))
            .col(json_null(Requests::Report))
            .col(big_integer(Requests::NextAttempt))
            .col(big_integer(Requests::CreatedAt))
            .col(big_integer(Requests::UpdatedAt))
            .col(big_integer_null(Requests::FinishedAt))
            .foreign_key(&mut fk(
                "fk_requests_account_id",
                (Requests::Table, Requests::AccountId),
                (Accounts::Table, Accounts::Id),
                Cascade,
            ))
            .foreign_key(&mut fk(
                "fk_requests_token_id",
                (Requests::Table, Requests::TokenId),
                (ApiTokens::Table, ApiTokens::Id),
                SetNull,
            ))
            .foreign_key(&mut fk(
                "fk_requests_series_id",
                (Requests::Table, Requests::SeriesId),
                (Series::Table, Series::Id),
                Cascade,
            ))
            .foreign_key(&mut fk(
                "fk_requests_project_id",
                (Requests::Table, Requests::ProjectId),
                (Projects::Table, Projects::Id),
                Cascade,
            ))
            .take(),
        Table::create()
            .table(Jobs::Table)
            .col(pk_string(Jobs::Id))
            .col(string(Jobs::RequestId))
            .col(string(Jobs::ProjectId))
            .col(string(Jobs::AccountId))
            .col(string_null(Jobs::TokenId))
            .col(string(Jobs::Status))
            .col(string(Jobs::Priority))
            .col(string_null(Jobs::ProviderId))
            .col(string_null(Jobs::LeaseHolder))
            .col(big_integer_null(Jobs::LeaseExpiresAt))
            .col(integer(Jobs::Attempts))
            .col(json(Jobs::Progress))
            .col(json_null(Jobs::Estimate))
            .col(big_integer(Jobs::CreatedAt))
            .col(big_integer(Jobs::UpdatedAt))
            .col(big_integer_null(Jobs::StartedAt))
            .col(big_integer_null(Jobs::FinishedAt))
            .foreign_key(&mut fk(
                "fk_jobs_request_id",
                (Jobs::Table, Jobs::RequestId),
                (Requests::Table, Requests::Id),
                Cascade,
            ))
            .foreign_key(&mut fk(
                "fk_jobs_project_id",
                (Jobs::Table, Jobs::ProjectId),
                (Projects::Table, Projects::Id),
                Cascade,
            ))
            .foreign_key(&mut fk(
                "fk_jobs_account_id",
                (Jobs::Table, Jobs::AccountId),
                (Accounts::Table, Accounts::Id),
                Cascade,
            ))
            .take(),
        Table::create()
            .table(Results::Table)
            .col(pk_string(Results::Id))
            .col(string(Results::RequestId))
            .col(string(Results::Format))
            .col(string(Results::Scope))
            .col(string(Results::MediaType))
            .col(string(Results::Filename))
            .col(big_integer(Results::Size))
            .col(string(Results::Sha256))
            .col(string(Results::BlobKey))
            .col(big_integer(Results::CreatedAt))
            .col(big_integer_null(Results::ExpiresAt))
            .foreign_key(&mut fk(
                "fk_results_request_id",
                (Results::Table, Results::RequestId),
                (Requests::Table, Requests::Id),
                Cascade,
            ))
            .take(),
        Table::create()
            .table(WebhookDeliveries::Table)
            .col(pk_string(WebhookDeliveries::Id))
            .col(string(WebhookDeliveries::RequestId))
            .col(string(WebhookDeliveries::Event))
            .col(integer_null(WebhookDeliveries::Batch))
            .col(string(WebhookDeliveries::Url))
            .col(text(WebhookDeliveries::Body))
            .col(string(WebhookDeliveries::State))
            .col(integer(WebhookDeliveries::Attempts))
            .col(big_integer_null(WebhookDeliveries::NextAttemptAt))
            .col(string(WebhookDeliveries::LastError))
            .col(big_integer(WebhookDeliveries::CreatedAt))
            .col(big_integer(WebhookDeliveries::UpdatedAt))
            .col(big_integer_null(WebhookDeliveries::DeliveredAt))
            .foreign_key(&mut fk(
                "fk_webhook_deliveries_request_id",
                (WebhookDeliveries::Table, WebhookDeliveries::RequestId),
                (Requests::Table, Requests::Id),
                Cascade,
            ))
            .take(),
        Table::create()
            .table(ProviderCalls::Table)
            .col(pk_string(ProviderCalls::Id))
            .col(string(ProviderCalls::ProviderId))
            .col(string(ProviderCalls::AccountId))
            .col(string_null(ProviderCalls::TokenId))
            .col(string_null(ProviderCalls::RequestId))
            .col(string_null(ProviderCalls::JobId))
            .col(big_integer(ProviderCalls::PromptTokens))
            .col(big_integer(ProviderCalls::CompletionTokens))
            .col(boolean(ProviderCalls::Cached))
            .col(double_null(ProviderCalls::Cost))
            .col(big_integer(ProviderCalls::DurationMs))
            .col(string(ProviderCalls::Status))
            .col(string(ProviderCalls::Error))
            .col(big_integer(ProviderCalls::CreatedAt))
            .foreign_key(&mut fk(
                "fk_provider_calls_provider_id",
                (ProviderCalls::Table, ProviderCalls::ProviderId),
                (Providers::Table, Providers::Id),
                Restrict,
            ))
            .foreign_key(&mut fk(
                "fk_provider_calls_account_id",
                (ProviderCalls::Table, ProviderCalls::AccountId),
                (Accounts::Table, Accounts::Id),
                Cascade,
            ))
            .take(),
        Table::create()
            .table(Settings::Table)
            .col(pk_string(Settings::Key))
            .col(json(Settings::Value))
            .col(big_integer(Settings::UpdatedAt))
            .take(),
    ]
}

/// Every index. Those of the first schema first, then the extra ones (marked), which
/// serve foreign-key checks on delete and periodic clean-ups. (Long by design: a
/// released migration stays as written.)
fn indexes() -> Vec<IndexCreateStatement> {
    vec![
        index(
            "idx_accounts_username",
            Accounts::Table,
            [Accounts::Username],
            true,
        ),
        index(
            "idx_sessions_account_id",
            Sessions::Table,
            [Sessions::AccountId],
            false,
        ),
        index(
            "idx_api_tokens_prefix",
            ApiTokens::Table,
            [ApiTokens::Prefix],
            true,
        ),
        index(
            "idx_api_tokens_account_id",
            ApiTokens::Table,
            [ApiTokens::AccountId],
            false,
        ),
        index("idx_audit_log_at", AuditLog::Table, [AuditLog::At], false),
        index(
            "idx_providers_name",
            Providers::Table,
            [Providers::Name],
            true,
        ),
        index(
            "idx_series_account_id_name",
            Series::Table,
            [Series::AccountId, Series::Name],
            true,
        ),
        index(
            "idx_projects_series_id",
            Projects::Table,
            [Projects::SeriesId],
            false,
        ),
        index(
            "idx_projects_account_id_external_id",
            Projects::Table,
            [Projects::AccountId, Projects::ExternalId],
            true,
        ),
        index(
            "idx_chapters_project_id_position",
            Chapters::Table,
            [Chapters::ProjectId, Chapters::Position],
            false,
        ),
        index(
            "idx_passages_chapter_id_position",
            Passages::Table,
            [Passages::ChapterId, Passages::Position],
            false,
        ),
        index(
            "idx_passages_project_id",
            Passages::Table,
            [Passages::ProjectId],
            false,
        ),
        index(
            "idx_requests_account_id_external_id",
            Requests::Table,
            [Requests::AccountId, Requests::ExternalId],
            // Unique: concurrent identical submissions store one request.
            true,
        ),
        index(
            "idx_requests_account_id_idempotency_key",
            Requests::Table,
            [Requests::AccountId, Requests::IdempotencyKey],
            // Unique: concurrent identical submissions store one request.
            true,
        ),
        index(
            "idx_requests_project_id",
            Requests::Table,
            [Requests::ProjectId],
            false,
        ),
        index(
            "idx_requests_status",
            Requests::Table,
            [Requests::Status],
            false,
        ),
        index("idx_jobs_status", Jobs::Table, [Jobs::Status], false),
        index("idx_jobs_request_id", Jobs::Table, [Jobs::RequestId], false),
        index(
            "idx_results_request_id",
            Results::Table,
            [Results::RequestId],
            false,
        ),
        index(
            "idx_webhook_deliveries_state_next_attempt_at",
            WebhookDeliveries::Table,
            [WebhookDeliveries::State, WebhookDeliveries::NextAttemptAt],
            false,
        ),
        index(
            "idx_webhook_deliveries_request_id",
            WebhookDeliveries::Table,
            [WebhookDeliveries::RequestId],
            false,
        ),
        index(
            "idx_provider_calls_token_id_created_at",
            ProviderCalls::Table,
            [ProviderCalls::TokenId, ProviderCalls::CreatedAt],
            false,
        ),
        index(
            "idx_provider_calls_request_id",
            ProviderCalls::Table,
            [ProviderCalls::RequestId],
            false,
        ),
        // Extra: expired-session clean-up.
        index(
            "idx_sessions_expires_at",
            Sessions::Table,
            [Sessions::ExpiresAt],
            false,
        ),
        // Extra: cascades and filters on series.
        index(
            "idx_requests_series_id",
            Requests::Table,
            [Requests::SeriesId],
            false,
        ),
        // Extra: cascades from projects.
        index("idx_jobs_project_id", Jobs::Table, [Jobs::ProjectId], false),
        // Extra: cascades from accounts.
        index("idx_jobs_account_id", Jobs::Table, [Jobs::AccountId], false),
        // Extra: expired-result clean-up.
        index(
            "idx_results_expires_at",
            Results::Table,
            [Results::ExpiresAt],
            false,
        ),
        // Extra: per-account usage over time, and cascades from accounts.
        index(
            "idx_provider_calls_account_id_created_at",
            ProviderCalls::Table,
            [ProviderCalls::AccountId, ProviderCalls::CreatedAt],
            false,
        ),
        // Extra: the RESTRICT check when a provider is deleted.
        index(
            "idx_provider_calls_provider_id",
            ProviderCalls::Table,
            [ProviderCalls::ProviderId],
            false,
        ),
    ]
}

/// Tables in drop order (children first).
fn drop_order() -> Vec<DynIden> {
    vec![
        Settings::Table.into_iden(),
        ProviderCalls::Table.into_iden(),
        WebhookDeliveries::Table.into_iden(),
        Results::Table.into_iden(),
        Jobs::Table.into_iden(),
        Requests::Table.into_iden(),
        Passages::Table.into_iden(),
        Chapters::Table.into_iden(),
        Projects::Table.into_iden(),
        Series::Table.into_iden(),
        AuditLog::Table.into_iden(),
        ApiTokens::Table.into_iden(),
        Sessions::Table.into_iden(),
        Providers::Table.into_iden(),
        Accounts::Table.into_iden(),
    ]
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in tables() {
            manager.create_table(table).await?;
        }
        for idx in indexes() {
            manager.create_index(idx).await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        // Dropping a table drops its indexes and the foreign keys it declares.
        for table in drop_order() {
            manager
                .drop_table(Table::drop().table(table).if_exists().take())
                .await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_table_is_created_and_dropped() {
        let created: Vec<String> = tables()
            .iter()
            .map(|t| t.to_string(PostgresQueryBuilder))
            .collect();
        assert_eq!(created.len(), 15);
        assert_eq!(drop_order().len(), 15);
        for name in drop_order() {
            let quoted = format!("CREATE TABLE \"{name}\"");
            assert!(
                created.iter().any(|sql| sql.starts_with(&quoted)),
                "{quoted} missing"
            );
        }
    }
}
