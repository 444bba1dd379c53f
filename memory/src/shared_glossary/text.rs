//! A glossary file's bytes as text, and positions in that text as lines.
//!
//! Encodings, in order: a UTF-8 byte order mark (`utf-8-sig`), a UTF-16
//! one (`utf-16le`, `utf-16be`), valid UTF-8 without a mark (`utf-8`), and
//! otherwise Windows-1252, which every byte sequence decodes as (spreadsheet
//! exports on Windows; ISO-8859-1 files read the same for every letter).
//! A file that announces UTF-8 or UTF-16 by its mark and then breaks it is
//! refused rather than guessed.

use crate::error::MemoryError;

/// The file as text, without its byte order mark.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded {
    pub text: String,
    /// The name the import report gives the encoding.
    pub encoding: &'static str,
}

const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

pub fn decode(bytes: &[u8]) -> Result<Decoded, MemoryError> {
    let broken = |encoding: &str| MemoryError::InvalidFile {
        message: format!("the file starts with a {encoding} byte order mark but is not {encoding}"),
        line: None,
        column: None,
    };
    if let Some(rest) = bytes.strip_prefix(UTF8_BOM) {
        let text = std::str::from_utf8(rest).map_err(|_| broken("UTF-8"))?;
        return Ok(Decoded {
            text: text.to_owned(),
            encoding: "utf-8-sig",
        });
    }
    for (mark, encoding, name) in [
        (b"\xFF\xFE", encoding_rs::UTF_16LE, "utf-16le"),
        (b"\xFE\xFF", encoding_rs::UTF_16BE, "utf-16be"),
    ] {
        if let Some(rest) = bytes.strip_prefix(mark) {
            let text = encoding
                .decode_without_bom_handling_and_without_replacement(rest)
                .ok_or_else(|| broken("UTF-16"))?;
            return Ok(Decoded {
                text: text.into_owned(),
                encoding: name,
            });
        }
    }
    if let Ok(text) = std::str::from_utf8(bytes) {
        return Ok(Decoded {
            text: text.to_owned(),
            encoding: "utf-8",
        });
    }
    let (text, _) = encoding_rs::WINDOWS_1252.decode_without_bom_handling(bytes);
    Ok(Decoded {
        text: text.into_owned(),
        encoding: "windows-1252",
    })
}

/// Turns byte offsets of one text into lines, counting forward from the
/// last offset asked (offsets of a parse mostly grow, so a file is walked
/// about once).
pub struct Lines<'a> {
    text: &'a str,
    offset: usize,
    line: usize,
}

impl<'a> Lines<'a> {
    pub fn new(text: &'a str) -> Self {
        Self {
            text,
            offset: 0,
            line: 1,
        }
    }

    /// The 1-based line of a byte offset (clamped to the text).
    pub fn line(&mut self, offset: usize) -> usize {
        let offset = offset.min(self.text.len());
        if offset < self.offset {
            self.offset = 0;
            self.line = 1;
        }
        let between = self.text.as_bytes().get(self.offset..offset).unwrap_or(&[]);
        self.line += between.iter().filter(|b| **b == b'\n').count();
        self.offset = offset;
        self.line
    }
}

/// The 1-based line and column (in characters) of a byte offset.
pub fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = text.get(..offset).unwrap_or_default();
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before.get(line_start..).unwrap_or_default().chars().count() + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_and_fallbacks_name_the_encoding() {
        let plain = decode("café".as_bytes()).expect("utf-8");
        assert_eq!((plain.text.as_str(), plain.encoding), ("café", "utf-8"));
        let marked = decode(b"\xEF\xBB\xBFcaf\xC3\xA9").expect("utf-8-sig");
        assert_eq!(
            (marked.text.as_str(), marked.encoding),
            ("café", "utf-8-sig")
        );
        let wide = decode(b"\xFF\xFEc\0a\0f\0\xE9\0").expect("utf-16le");
        assert_eq!((wide.text.as_str(), wide.encoding), ("café", "utf-16le"));
        let big = decode(b"\xFE\xFF\0c\0a\0f\0\xE9").expect("utf-16be");
        assert_eq!((big.text.as_str(), big.encoding), ("café", "utf-16be"));
        // 0x80 is the euro sign in Windows-1252, not a Latin-1 control.
        let legacy = decode(b"caf\xE9 \x80").expect("windows-1252");
        assert_eq!(
            (legacy.text.as_str(), legacy.encoding),
            ("café €", "windows-1252")
        );
        assert!(matches!(
            decode(b"\xEF\xBB\xBFcaf\xE9"),
            Err(MemoryError::InvalidFile { .. })
        ));
        assert!(matches!(
            decode(b"\xFF\xFEc\0\x00\xD8"),
            Err(MemoryError::InvalidFile { .. })
        ));
    }

    #[test]
    fn offsets_become_lines_and_columns() {
        let text = "ab\nçd\n\nx";
        assert_eq!(line_column(text, 0), (1, 1));
        assert_eq!(line_column(text, 3), (2, 1));
        // After "ç" (two bytes): the third byte is column 2.
        assert_eq!(line_column(text, 5), (2, 2));
        assert_eq!(line_column(text, 100), (4, 2));
        let mut lines = Lines::new(text);
        assert_eq!(lines.line(0), 1);
        assert_eq!(lines.line(9), 4);
        assert_eq!(lines.line(3), 2);
        assert_eq!(lines.line(7), 3);
    }
}
