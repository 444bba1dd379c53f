//! The audit log's vocabulary: what was done, and to what kind of thing.

use sea_orm::sea_query::StringLen;

vocabulary! {
    /// `target_type` of an audit entry.
    AuditTarget {
        Account = "account",
        ApiToken = "api_token",
        /// A book.
        Project = "project",
        /// An installation setting (licence, mail, onboarding).
        Setting = "setting",
    }
}

vocabulary! {
    /// `action` of an audit entry.
    AuditAction {
        AccountCreate = "account.create",
        /// Username, e-mail, administrator flag, priority ceiling or
        /// allowance changed by an administrator.
        AccountUpdate = "account.update",
        AccountEnable = "account.enable",
        AccountDisable = "account.disable",
        AccountPassword = "account.password",
        AccountAllowance = "account.allowance",
        /// Deleted, with what it owned moved to `transfer_to`.
        AccountDelete = "account.delete",
        /// The account's own preferences (mail on a request's end, mail
        /// language, e-mail address).
        AccountPreferences = "account.preferences",
        SecondFactorEnable = "account.second_factor.enable",
        SecondFactorDisable = "account.second_factor.disable",
        /// An administrator removed an account's second factor.
        SecondFactorReset = "account.second_factor.reset",
        /// A recovery code was used to sign in.
        SecondFactorRecoveryUsed = "account.second_factor.recovery_used",
        /// The user replaced their recovery codes with a fresh set.
        SecondFactorRecoveryRenew = "account.second_factor.recovery_renew",
        PasswordResetRequest = "account.password_reset.request",
        PasswordResetComplete = "account.password_reset.complete",
        TokenCreate = "token.create",
        TokenRevoke = "token.revoke",
        TokenQueue = "token.queue",
        TokenBudget = "token.budget",
        BookBudget = "book.budget",
        LicenceSet = "licence.set",
        LicenceClear = "licence.clear",
        MailSettingsUpdate = "mail.settings.update",
        MailSettingsClear = "mail.settings.clear",
        MailTest = "mail.test",
        MailRetry = "mail.retry",
        OnboardingUpdate = "onboarding.update",
        LibrarySettingsUpdate = "library.settings.update",
        LibrarySettingsClear = "library.settings.clear",
        /// A book's publication to the library folder asked for.
        BookPublish = "book.publish",
        /// A person edited or validated a passage.
        PassageEdit = "passage.edit",
        /// A person set a book's reader note on a glossary term.
        ReaderNoteSet = "reader_note.set",
        /// The owner reconciled a provider batch of one of the book's jobs.
        BatchReconcile = "book.batch.reconcile",
    }
}

impl AuditAction {
    /// The kind of thing the action is done to.
    pub fn target(self) -> AuditTarget {
        use AuditAction::*;
        match self {
            AccountCreate
            | AccountUpdate
            | AccountEnable
            | AccountDisable
            | AccountPassword
            | AccountAllowance
            | AccountDelete
            | AccountPreferences
            | SecondFactorEnable
            | SecondFactorDisable
            | SecondFactorReset
            | SecondFactorRecoveryUsed
            | PasswordResetRequest
            | PasswordResetComplete => AuditTarget::Account,
            SecondFactorRecoveryRenew => AuditTarget::Account,
            TokenCreate | TokenRevoke | TokenQueue | TokenBudget => AuditTarget::ApiToken,
            BookBudget | BookPublish | PassageEdit | ReaderNoteSet | BatchReconcile => {
                AuditTarget::Project
            }
            LicenceSet
            | LicenceClear
            | MailSettingsUpdate
            | MailSettingsClear
            | MailTest
            | MailRetry
            | OnboardingUpdate
            | LibrarySettingsUpdate
            | LibrarySettingsClear => AuditTarget::Setting,
        }
    }
}
