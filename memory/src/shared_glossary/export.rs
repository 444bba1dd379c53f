//! A glossary as a file to download: its terms in JSON, CSV or TBX, the
//! media type and a file name made from the glossary's name.

use super::fields::TermFields;
use super::{ExportFile, csv_file, json_file, tbx_file};
use crate::error::MemoryResult;
use dragoman_model::entities::glossary;
use dragoman_model::vocab::{CsvDelimiter, GlossaryFormat};
use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

/// Characters of a file name's stem at most.
const SLUG_MAX: usize = 80;

/// A file name stem safe everywhere: ASCII letters and digits in lowercase
/// (accents dropped), other runs as one `-`; `glossary` when nothing is
/// left (a name in a script without Latin letters).
pub fn slug(name: &str) -> String {
    let mut slug = String::new();
    for c in name.nfd().filter(|c| !is_combining_mark(*c)) {
        if c.is_ascii_alphanumeric() {
            slug.push(c.to_ascii_lowercase());
        } else if !slug.is_empty() && !slug.ends_with('-') {
            slug.push('-');
        }
        if slug.len() >= SLUG_MAX {
            break;
        }
    }
    let slug = slug.trim_end_matches('-');
    if slug.is_empty() {
        "glossary".to_owned()
    } else {
        slug.to_owned()
    }
}

pub fn file(
    glossary: &glossary::Model,
    terms: &[TermFields],
    format: GlossaryFormat,
    delimiter: CsvDelimiter,
    bom: bool,
) -> MemoryResult<ExportFile> {
    let (content, media_type) = match format {
        GlossaryFormat::Json => (json_file::write(terms)?, "application/json"),
        GlossaryFormat::Csv => (csv_file::write(terms, delimiter, bom)?, "text/csv"),
        GlossaryFormat::Tbx => {
            let languages = (
                glossary.source_language.as_deref(),
                glossary.target_language.as_deref(),
            );
            (
                tbx_file::write(terms, &glossary.name, languages)?,
                "application/x-tbx+xml",
            )
        }
    };
    Ok(ExportFile {
        content,
        media_type,
        filename: format!("{}.{}", slug(&glossary.name), format.as_str()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_become_safe_file_names() {
        assert_eq!(slug("My Glossary"), "my-glossary");
        assert_eq!(slug("  Éléments / «Magie» : v2.0 "), "elements-magie-v2-0");
        assert_eq!(slug("../../etc/passwd"), "etc-passwd");
        assert_eq!(slug("魔法用語"), "glossary");
        assert_eq!(slug(&"a".repeat(300)).len(), SLUG_MAX);
    }
}
