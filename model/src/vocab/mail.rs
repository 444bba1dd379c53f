//! Mail: what a mail of the outbox is for, and where its sending stands.

use sea_orm::sea_query::StringLen;

vocabulary! {
    /// `state` of a mail in the outbox: `pending` until it is sent or has
    /// used its attempts (`failed`); an administrator may retry a failed one.
    MailState {
        Pending = "pending",
        Sent = "sent",
        Failed = "failed",
    }
}

vocabulary! {
    /// `kind` of a mail: why the service sends it.
    MailKind {
        /// `POST /api/settings/mail/test`.
        Test = "test",
        /// A request ended, to its owner when the owner asked for it.
        RequestFinished = "request_finished",
        /// A password-reset link.
        PasswordReset = "password_reset",
    }
}

vocabulary! {
    /// `security` of the mail settings: how the connection to the mail
    /// server is protected.
    MailSecurity {
        /// Plain SMTP, no encryption.
        None = "none",
        /// Plain connection upgraded with STARTTLS (usually port 587).
        Starttls = "starttls",
        /// TLS from the first byte (usually port 465).
        Tls = "tls",
    }
}

vocabulary! {
    /// The language an account receives its mails in.
    MailLanguage {
        En = "en",
        Fr = "fr",
    }
}
