//! The quality checks' inputs and outputs: the sheet of terms and names,
//! a reviewer's flag, the passage to check, the signals found and the
//! assessment made of them.

use dragoman_model::vocab::{PassageStatus, Severity, SignalCode};

/// What the checks know of the volume: the glossary in force and the
/// characters. Readable from JSON, so that a tool outside the service can
/// run the checks with a sheet of its own.
#[derive(Debug, Clone, Default, serde::Deserialize)]
pub struct Sheet {
    #[serde(default)]
    pub terms: Vec<SheetTerm>,
    #[serde(default)]
    pub names: Vec<SheetName>,
}

impl From<dragoman_proto::v1::QualitySheetResponse> for Sheet {
    /// The volume's glossary in force and characters, as the memory
    /// service answers them.
    fn from(answer: dragoman_proto::v1::QualitySheetResponse) -> Sheet {
        Sheet {
            terms: answer
                .terms
                .into_iter()
                .map(|t| SheetTerm {
                    source: t.source,
                    translation: t.translation,
                    locked: t.locked,
                })
                .collect(),
            names: answer
                .names
                .into_iter()
                .map(|n| SheetName {
                    names: std::iter::once(n.name).chain(n.aliases).collect(),
                    rendering: n.rendering,
                })
                .collect(),
        }
    }
}

/// A term of the glossary in force.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct SheetTerm {
    pub source: String,
    pub translation: String,
    /// A locked term must appear in every passage whose source has it.
    #[serde(default)]
    pub locked: bool,
}

/// A character of the volume.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct SheetName {
    /// The name and its aliases, source side.
    pub names: Vec<String>,
    /// The canonical target rendering.
    pub rendering: String,
}

/// A reviewer's flag on a passage.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Flag {
    pub severity: Severity,
    pub code: String,
    pub message: String,
}

/// One passage to assess.
#[derive(Debug, Clone, Copy)]
pub struct Check<'a> {
    /// May contain placeholders `⟦1⟧ ⟦/1⟧ ⟦1/⟧` (see
    /// [`dragoman_book::placeholder`]).
    pub source: &'a str,
    /// `None` when the passage has no translation.
    pub translation: Option<&'a str>,
    /// BCP 47, e.g. "en", "fr-CA", "zh-Hans".
    pub source_language: &'a str,
    pub target_language: &'a str,
    pub flags: &'a [Flag],
}

/// One kind of problem found in a passage, as every service reads it.
pub use dragoman_model::quality::Signal;

/// A passage's signals, score (0 to 100) and resulting status.
#[derive(Debug, Clone, PartialEq)]
pub struct Assessment {
    pub signals: Vec<Signal>,
    pub score: i32,
    pub status: PassageStatus,
}

impl Assessment {
    /// Whether a signal asks the autopilot to act whatever the score (a
    /// hard signal or a locked term).
    pub fn must_fix(&self) -> bool {
        self.signals.iter().any(|s| s.code.must_fix())
    }

    /// Whether a signal is a major or critical issue: the autopilot takes
    /// the passage up whatever its score.
    pub fn serious(&self) -> bool {
        self.signals.iter().any(Signal::serious)
    }

    /// Whether a signal makes the translation unusable.
    pub fn hard(&self) -> bool {
        self.signals.iter().any(|s| s.code.is_hard())
    }

    /// The signal of `code`, if found.
    pub fn signal(&self, code: SignalCode) -> Option<&Signal> {
        self.signals.iter().find(|s| s.code == code)
    }
}
