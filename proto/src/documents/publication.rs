//! The library folder setting and a book's publication between the delivery
//! role and the gateway.

use crate::v1;
use crate::wire::{WireEnum, WireError};
use dragoman_model::documents::publication::{
    LibrarySettingsInput, LibrarySettingsView, PublicationView,
};
use dragoman_model::vocab::PublicationStatus;

impl From<LibrarySettingsView> for v1::LibrarySettingsView {
    fn from(s: LibrarySettingsView) -> Self {
        v1::LibrarySettingsView {
            path: s.path,
            updated_at: s.updated_at,
        }
    }
}

impl From<v1::LibrarySettingsView> for LibrarySettingsView {
    fn from(m: v1::LibrarySettingsView) -> Self {
        LibrarySettingsView {
            path: m.path,
            updated_at: m.updated_at,
        }
    }
}

impl From<LibrarySettingsInput> for v1::UpdateLibrarySettingsRequest {
    fn from(s: LibrarySettingsInput) -> Self {
        v1::UpdateLibrarySettingsRequest { path: s.path }
    }
}

impl From<v1::UpdateLibrarySettingsRequest> for LibrarySettingsInput {
    fn from(m: v1::UpdateLibrarySettingsRequest) -> Self {
        LibrarySettingsInput { path: m.path }
    }
}

impl From<PublicationView> for v1::PublicationView {
    fn from(p: PublicationView) -> Self {
        v1::PublicationView {
            status: p.status.to_wire(),
            attempts: p.attempts,
            last_error: p.last_error,
            path: p.path,
            published_at: p.published_at,
            updated_at: p.updated_at,
        }
    }
}

impl TryFrom<v1::PublicationView> for PublicationView {
    type Error = WireError;
    fn try_from(m: v1::PublicationView) -> Result<Self, WireError> {
        Ok(PublicationView {
            status: PublicationStatus::from_wire(m.status, "status")?,
            attempts: m.attempts,
            last_error: m.last_error,
            path: m.path,
            published_at: m.published_at,
            updated_at: m.updated_at,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_publication_crosses_the_wire_intact() {
        let view = PublicationView {
            status: PublicationStatus::Failed,
            attempts: 8,
            last_error: Some("Permission denied (os error 13)".into()),
            path: None,
            published_at: None,
            updated_at: Some(1_700_000_000),
        };
        let back = PublicationView::try_from(v1::PublicationView::from(view.clone()));
        assert_eq!(back, Ok(view));
        let unknown = v1::PublicationView {
            status: 0,
            ..v1::PublicationView::default()
        };
        assert_eq!(
            PublicationView::try_from(unknown),
            Err(WireError { field: "status" })
        );
    }
}
