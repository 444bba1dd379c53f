//! The installation's export settings (spec 4.9 `PUT /api/settings/exports`,
//! administrators only): whether every EPUB written afterwards carries the
//! AI-assisted-translation mention, where a book has no value of its own.
//! Delivery writes the EPUBs, so it owns the setting.

use crate::error::DeliveryError;
use dragoman_model::exports::{self, ExportSettings};
use dragoman_proto::principal::Principal;
use sea_orm::ConnectionTrait;

/// Saves `settings` for an administrator and answers them as saved.
pub async fn update(
    db: &impl ConnectionTrait,
    who: &Principal,
    settings: ExportSettings,
) -> Result<ExportSettings, DeliveryError> {
    if !who.admin {
        return Err(DeliveryError::AdminRequired);
    }
    exports::save(db, settings).await?;
    tracing::info!(account = %who.account_id, ai_disclosure = settings.ai_disclosure,
        "export settings changed");
    Ok(settings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use dragoman_migrations::{Migrator, MigratorTrait};

    fn principal(admin: bool) -> Principal {
        Principal {
            account_id: "a1".into(),
            token_id: None,
            admin,
        }
    }

    #[tokio::test]
    async fn only_an_administrator_changes_what_every_epub_follows() {
        let db = dragoman_model::db::connect("sqlite::memory:")
            .await
            .expect("in-memory database");
        Migrator::up(&db, None).await.expect("migrations");
        let off = ExportSettings {
            ai_disclosure: false,
        };

        let refused = update(&db, &principal(false), off).await;
        assert!(
            matches!(refused, Err(DeliveryError::AdminRequired)),
            "{refused:?}"
        );
        assert_eq!(
            exports::current(&db).await.expect("read"),
            ExportSettings::default()
        );

        let saved = update(&db, &principal(true), off).await.expect("saved");
        assert_eq!(saved, off);
        assert_eq!(exports::current(&db).await.expect("read"), off);
    }
}
