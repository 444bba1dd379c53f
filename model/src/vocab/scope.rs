//! API token scopes (spec section 5), checked by the gateway and recorded
//! on tokens.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// What a token may do. The string forms are the spec's.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    utoipa::ToSchema,
)]
pub enum Scope {
    #[serde(rename = "series:read")]
    SeriesRead,
    #[serde(rename = "content:write")]
    ContentWrite,
    #[serde(rename = "pipeline:start")]
    PipelineStart,
    #[serde(rename = "jobs:read")]
    JobsRead,
    #[serde(rename = "jobs:control")]
    JobsControl,
    #[serde(rename = "results:read")]
    ResultsRead,
    #[serde(rename = "narrative:read")]
    NarrativeRead,
    #[serde(rename = "library:read")]
    LibraryRead,
    #[serde(rename = "library:write")]
    LibraryWrite,
    #[serde(rename = "library:delete")]
    LibraryDelete,
}

impl Scope {
    pub const ALL: [Scope; 10] = [
        Scope::SeriesRead,
        Scope::ContentWrite,
        Scope::PipelineStart,
        Scope::JobsRead,
        Scope::JobsControl,
        Scope::ResultsRead,
        Scope::NarrativeRead,
        Scope::LibraryRead,
        Scope::LibraryWrite,
        Scope::LibraryDelete,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Scope::SeriesRead => "series:read",
            Scope::ContentWrite => "content:write",
            Scope::PipelineStart => "pipeline:start",
            Scope::JobsRead => "jobs:read",
            Scope::JobsControl => "jobs:control",
            Scope::ResultsRead => "results:read",
            Scope::NarrativeRead => "narrative:read",
            Scope::LibraryRead => "library:read",
            Scope::LibraryWrite => "library:write",
            Scope::LibraryDelete => "library:delete",
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Scope {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        Scope::ALL
            .into_iter()
            .find(|scope| scope.as_str() == s)
            .ok_or(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_parse_their_own_names_only() {
        for scope in Scope::ALL {
            assert_eq!(scope.as_str().parse::<Scope>(), Ok(scope));
        }
        assert!("series:write".parse::<Scope>().is_err());
    }
}
