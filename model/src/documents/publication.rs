//! Publication to the library folder (spec 4.9): the administrator's folder
//! (`/api/settings/library`) and where a book's publication stands
//! (`/api/projects/{pid}/publication`). The delivery role owns both: it
//! checks the folder, and writes the books into it.

use crate::vocab::PublicationStatus;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The `settings` row that holds the library folder; the library is
/// configured exactly when it exists.
pub const SETTINGS_KEY: &str = "library";

/// The body of `PUT /api/settings/library`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LibrarySettingsInput {
    /// An absolute path to an existing folder the server can write to.
    pub path: String,
}

/// The library folder in force; `path` is null while none is configured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct LibrarySettingsView {
    #[schema(required = true)]
    pub path: Option<String>,
    #[schema(required = true)]
    pub updated_at: Option<i64>,
}

impl LibrarySettingsView {
    /// The view while no folder is configured.
    pub fn unconfigured() -> LibrarySettingsView {
        LibrarySettingsView {
            path: None,
            updated_at: None,
        }
    }
}

/// Where a book's publication stands. `none` (every other field null or
/// zero) before it was asked for; `pending` while an attempt is due;
/// `published` with `path` (relative to the library folder) and
/// `published_at`; `failed` once its attempts are used, with `last_error`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct PublicationView {
    pub status: PublicationStatus,
    /// Writing attempts made so far (at most eight).
    pub attempts: u32,
    /// Why the last attempt failed; null when none did.
    #[schema(required = true)]
    pub last_error: Option<String>,
    /// The EPUB's path under the library folder, once written.
    #[schema(required = true)]
    pub path: Option<String>,
    #[schema(required = true)]
    pub published_at: Option<i64>,
    #[schema(required = true)]
    pub updated_at: Option<i64>,
}

impl PublicationView {
    /// The view of a book whose publication was never asked for.
    pub fn none() -> PublicationView {
        PublicationView {
            status: PublicationStatus::None,
            attempts: 0,
            last_error: None,
            path: None,
            published_at: None,
            updated_at: None,
        }
    }
}
