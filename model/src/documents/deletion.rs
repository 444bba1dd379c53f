//! The answer of a deletion on the tool protocol (spec 4.10): the id of
//! what is gone. A book, a series and a term answer alike.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// `{"deleted": id}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Deleted {
    /// The id of what was deleted.
    pub deleted: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deletion_names_the_id() {
        let written = serde_json::to_string(&Deleted {
            deleted: "b1".into(),
        })
        .expect("serializes");
        assert_eq!(written, r#"{"deleted":"b1"}"#);
    }
}
