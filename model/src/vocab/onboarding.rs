//! The administrator's first-run checklist: the steps it lists.

use sea_orm::sea_query::StringLen;

vocabulary! {
    /// `key` of a checklist item (`GET /api/onboarding`), each done when
    /// the installation's state shows it, whatever way it was reached.
    OnboardingItem {
        /// At least one provider is registered.
        Provider = "provider",
        /// A default provider is in force.
        DefaultProvider = "default_provider",
        /// Mail settings are saved.
        Mail = "mail",
        /// Webhooks can be sent: a signing secret and allowed hosts.
        Webhooks = "webhooks",
        /// Some account holds a non-revoked API token.
        FirstToken = "first_token",
        /// A request was sent or a book exists.
        FirstBook = "first_book",
    }
}
