//! Asking for a book's publication and reading where it stands, for the
//! book's owner or an administrator (the library is the installation's).
//! Asking checks what can be known at once (a folder is configured, the
//! book has a delivered EPUB) and queues the work; the dispatcher writes.

use super::{outbox, settings, source};
use crate::error::DeliveryError;
use dragoman_model::documents::publication::PublicationView;
use dragoman_model::tenancy::{self, Acting};
use sea_orm::ConnectionTrait;

/// Puts the book's publication (back) to `pending`, due now. 404 for a
/// book the caller may not publish, 409 `library_not_configured` without a
/// folder, 409 `nothing_to_publish` without a delivered EPUB. Asking again
/// (after `published` or `failed`, or while `pending`) starts over.
pub async fn publish(
    db: &impl ConnectionTrait,
    who: Acting<'_>,
    project_id: &str,
) -> Result<PublicationView, DeliveryError> {
    let (book, _) = tenancy::administered_book(db, who, project_id).await?;
    if settings::load(db).await?.is_none() {
        return Err(DeliveryError::LibraryNotConfigured);
    }
    if source::delivered_request(db, &book.id).await?.is_none() {
        return Err(DeliveryError::NothingToPublish);
    }
    let row = outbox::request(db, &book.id).await?;
    Ok(outbox::view(Some(&row)))
}

/// Where the book's publication stands; `none` when never asked for.
pub async fn status(
    db: &impl ConnectionTrait,
    who: Acting<'_>,
    project_id: &str,
) -> Result<PublicationView, DeliveryError> {
    let (book, _) = tenancy::administered_book(db, who, project_id).await?;
    Ok(outbox::view(outbox::find(db, &book.id).await?.as_ref()))
}
