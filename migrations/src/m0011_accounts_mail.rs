//! `m0011_accounts_mail`: second factor and mail preferences on accounts,
//! the mail outbox and password-reset links.
//!
//! - `accounts.second_factor_secret`: the TOTP secret sealed with the
//!   server key; `second_factor_enabled_at` is set once the user confirmed
//!   a code (a secret without it is an enrolment in progress);
//!   `recovery_codes`: the SHA-256 (hex) of each unused recovery code.
//! - `accounts.notify_on_finish`: mail the owner when a request ends;
//!   `accounts.mail_language`: `en` or `fr`.
//! - `mail_outbox`: every mail the service sends, written in the
//!   transaction that causes it and sent by the delivery role. No foreign
//!   key: a sent mail outlives the account it went to.
//! - `password_resets`: one-use links, keyed by the SHA-256 of the secret.

use crate::keys::{fk, index, pk_string};
use sea_orm_migration::prelude::ForeignKeyAction::Cascade;
use sea_orm_migration::{prelude::*, schema::*};

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m0011_accounts_mail"
    }
}

#[derive(DeriveIden)]
enum Accounts {
    Table,
    Id,
    SecondFactorSecret,
    SecondFactorEnabledAt,
    RecoveryCodes,
    NotifyOnFinish,
    MailLanguage,
}

#[derive(DeriveIden)]
enum MailOutbox {
    Table,
    Id,
    Kind,
    AccountId,
    ToAddress,
    Subject,
    Body,
    State,
    Attempts,
    NextAttemptAt,
    LastError,
    CreatedAt,
    UpdatedAt,
    SentAt,
}

#[derive(DeriveIden)]
enum PasswordResets {
    Table,
    Id,
    AccountId,
    CreatedAt,
    ExpiresAt,
    UsedAt,
}

/// The columns added to `accounts`, one statement each (SQLite alters one
/// column at a time).
fn account_columns() -> Vec<ColumnDef> {
    vec![
        string_null(Accounts::SecondFactorSecret).take(),
        big_integer_null(Accounts::SecondFactorEnabledAt).take(),
        json_null(Accounts::RecoveryCodes).take(),
        boolean(Accounts::NotifyOnFinish).default(false).take(),
        string(Accounts::MailLanguage).default("en").take(),
    ]
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for mut column in account_columns() {
            manager
                .alter_table(
                    Table::alter()
                        .table(Accounts::Table)
                        .add_column(&mut column)
                        .to_owned(),
                )
                .await?;
        }
        manager
            .create_table(
                Table::create()
                    .table(MailOutbox::Table)
                    .col(pk_string(MailOutbox::Id))
                    .col(string(MailOutbox::Kind))
                    .col(string_null(MailOutbox::AccountId))
                    .col(string(MailOutbox::ToAddress))
                    .col(string(MailOutbox::Subject))
                    .col(text(MailOutbox::Body))
                    .col(string(MailOutbox::State))
                    .col(integer(MailOutbox::Attempts))
                    .col(big_integer_null(MailOutbox::NextAttemptAt))
                    .col(text(MailOutbox::LastError))
                    .col(big_integer(MailOutbox::CreatedAt))
                    .col(big_integer(MailOutbox::UpdatedAt))
                    .col(big_integer_null(MailOutbox::SentAt))
                    .take(),
            )
            .await?;
        manager
            .create_index(index(
                "idx_mail_outbox_state_next_attempt_at",
                MailOutbox::Table,
                [MailOutbox::State, MailOutbox::NextAttemptAt],
                false,
            ))
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(PasswordResets::Table)
                    .col(pk_string(PasswordResets::Id))
                    .col(string(PasswordResets::AccountId))
                    .col(big_integer(PasswordResets::CreatedAt))
                    .col(big_integer(PasswordResets::ExpiresAt))
                    .col(big_integer_null(PasswordResets::UsedAt))
                    .foreign_key(&mut fk(
                        "fk_password_resets_account_id",
                        (PasswordResets::Table, PasswordResets::AccountId),
                        (Accounts::Table, Accounts::Id),
                        Cascade,
                    ))
                    .take(),
            )
            .await?;
        manager
            .create_index(index(
                "idx_password_resets_account_id",
                PasswordResets::Table,
                [PasswordResets::AccountId],
                false,
            ))
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(PasswordResets::Table).to_owned())
            .await?;
        manager
            .drop_table(Table::drop().table(MailOutbox::Table).to_owned())
            .await?;
        for column in [
            Accounts::MailLanguage,
            Accounts::NotifyOnFinish,
            Accounts::RecoveryCodes,
            Accounts::SecondFactorEnabledAt,
            Accounts::SecondFactorSecret,
        ] {
            manager
                .alter_table(
                    Table::alter()
                        .table(Accounts::Table)
                        .drop_column(column)
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }
}
