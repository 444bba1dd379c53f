//! The shared glossary's vocabulary (spec 4.7): file formats of export and
//! import, CSV delimiters and import strategies.

use sea_orm::sea_query::StringLen;

vocabulary! {
    /// A glossary file format.
    GlossaryFormat {
        /// A JSON list of terms.
        Json = "json",
        Csv = "csv",
        /// TermBase eXchange (v2 and v3 read, v3 written).
        Tbx = "tbx",
    }
}

vocabulary! {
    /// The field separator of a CSV file.
    CsvDelimiter {
        Comma = "comma",
        Semicolon = "semicolon",
        Tab = "tab",
    }
}

impl CsvDelimiter {
    /// The separating byte.
    pub fn byte(self) -> u8 {
        match self {
            CsvDelimiter::Comma => b',',
            CsvDelimiter::Semicolon => b';',
            CsvDelimiter::Tab => b'\t',
        }
    }
}

vocabulary! {
    /// What an import does with a term whose source the glossary holds.
    #[derive(Default)]
    ImportStrategy {
        /// Keeps every existing term.
        #[default]
        Skip = "skip",
        /// Replaces unlocked terms that differ.
        Replace = "replace",
        /// Replaces locked terms too.
        ReplaceAll = "replace_all",
    }
}
