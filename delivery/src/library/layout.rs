//! Where a book goes in the library folder: `Author/Title (Series n)/`,
//! holding `Title.epub` and `metadata.json`. Each name is made safe for
//! any file system the folder may live on (a local disk, a network share
//! read from Windows or macOS): no separators, no control characters, none
//! of the characters Windows refuses, no `.`/`..`, no leading dots (hidden
//! files) or trailing dots and spaces, no reserved device names, at most
//! [`MAX_NAME_BYTES`] bytes. Letters of every script are kept, in NFC so a
//! name typed on one system matches the same name from another.

use unicode_normalization::UnicodeNormalization;

/// Longest folder or file stem, in bytes: well under the 255 bytes most
/// file systems allow for a name, leaving room for the extension.
pub const MAX_NAME_BYTES: usize = 120;
/// The folder of books that name no author.
pub const UNKNOWN_AUTHOR: &str = "Unknown author";
/// The title of books that have none.
pub const UNTITLED: &str = "Untitled";
/// The sidecar's file name.
pub const SIDECAR: &str = "metadata.json";

/// Names Windows keeps for devices, whatever their extension.
const RESERVED: [&str; 22] = [
    "CON", "PRN", "AUX", "NUL", "COM1", "COM2", "COM3", "COM4", "COM5", "COM6", "COM7", "COM8",
    "COM9", "LPT1", "LPT2", "LPT3", "LPT4", "LPT5", "LPT6", "LPT7", "LPT8", "LPT9",
];

/// What the layout is made from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shelf<'a> {
    pub title: &'a str,
    pub author: Option<&'a str>,
    /// The series' name and the book's number in it, when the book is a
    /// numbered volume of a series of its own (not one named after it).
    pub series: Option<(&'a str, i64)>,
}

/// The book's place, relative to the library folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// The author's folder.
    pub author: String,
    /// The book's folder inside it.
    pub book: String,
    /// The EPUB's file name.
    pub epub: String,
}

impl Placement {
    /// The EPUB's path under the library, `/`-separated.
    pub fn epub_path(&self) -> String {
        format!("{}/{}/{}", self.author, self.book, self.epub)
    }

    /// The sidecar's path under the library, `/`-separated.
    pub fn sidecar_path(&self) -> String {
        format!("{}/{}/{SIDECAR}", self.author, self.book)
    }
}

/// Where `shelf` goes.
pub fn place(shelf: &Shelf<'_>) -> Placement {
    let author = shelf.author.map(str::trim).filter(|a| !a.is_empty());
    let title = safe_name(shelf.title, UNTITLED);
    let book = match shelf.series {
        Some((series, index)) => {
            // The suffix is kept whole: the title gives way to it.
            let suffix = format!(" ({} {index})", cut(&clean(series), MAX_NAME_BYTES / 2));
            let room = MAX_NAME_BYTES.saturating_sub(suffix.len());
            safe_name(&format!("{}{suffix}", cut(&title, room)), UNTITLED)
        }
        None => title.clone(),
    };
    Placement {
        author: author.map_or_else(
            || UNKNOWN_AUTHOR.to_owned(),
            |a| safe_name(a, UNKNOWN_AUTHOR),
        ),
        book,
        epub: format!("{title}.epub"),
    }
}

/// Whether a series gives the book's folder its `(Series n)`: a name of
/// its own (a book sent alone gets a series named after it, which says
/// nothing more) and a number.
pub fn series_suffix<'a>(
    series_name: &'a str,
    title: &str,
    number: Option<i32>,
) -> Option<(&'a str, i64)> {
    let name = series_name.trim();
    let named = !name.is_empty() && !name.eq_ignore_ascii_case(title.trim());
    number.filter(|_| named).map(|n| (name, i64::from(n)))
}

/// `text` as one safe folder or file name, `fallback` when nothing of it
/// is left.
pub fn safe_name(text: &str, fallback: &str) -> String {
    let name = cut(&clean(text), MAX_NAME_BYTES);
    let name = name
        .trim_start_matches(['.', ' '])
        .trim_end_matches(['.', ' '])
        .to_owned();
    if name.is_empty() {
        return fallback.to_owned();
    }
    let stem = name.split('.').next().unwrap_or_default();
    if RESERVED.iter().any(|r| stem.eq_ignore_ascii_case(r)) {
        return format!("{name}_");
    }
    name
}

/// NFC, separators and refused characters replaced, runs of blanks made
/// one space.
fn clean(text: &str) -> String {
    let replaced: String = text
        .nfc()
        .map(|c| match c {
            '/' | '\\' | ':' | '*' | '?' | '"' | '<' | '>' | '|' => '_',
            c if c.is_control() || c.is_whitespace() => ' ',
            c => c,
        })
        .collect();
    replaced.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// At most `max` bytes of `text`, cut between characters, without the
/// blanks and dots a cut may leave at the end.
fn cut(text: &str, max: usize) -> String {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].trim_end_matches(['.', ' ']).to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shelf<'a>(title: &'a str, author: Option<&'a str>) -> Shelf<'a> {
        Shelf {
            title,
            author,
            series: None,
        }
    }

    #[test]
    fn a_book_goes_under_its_author_and_title() {
        let placed = place(&shelf("Le Petit Prince", Some("Antoine de Saint-Exupéry")));
        assert_eq!(
            placed.epub_path(),
            "Antoine de Saint-Exupéry/Le Petit Prince/Le Petit Prince.epub"
        );
        assert_eq!(
            placed.sidecar_path(),
            "Antoine de Saint-Exupéry/Le Petit Prince/metadata.json"
        );
    }

    #[test]
    fn a_numbered_volume_of_a_named_series_says_so_in_its_folder() {
        let placed = place(&Shelf {
            series: Some(("La Comédie humaine", 3)),
            ..shelf("Le Père Goriot", Some("Balzac"))
        });
        assert_eq!(placed.book, "Le Père Goriot (La Comédie humaine 3)");
        assert_eq!(placed.epub, "Le Père Goriot.epub");
    }

    #[test]
    fn only_a_series_of_its_own_with_a_number_adds_the_suffix() {
        assert_eq!(
            series_suffix("Discworld", "Mort", Some(4)),
            Some(("Discworld", 4))
        );
        assert_eq!(series_suffix("Mort", "Mort", Some(1)), None);
        assert_eq!(series_suffix(" mort ", "Mort", Some(1)), None);
        assert_eq!(series_suffix("Discworld", "Mort", None), None);
        assert_eq!(series_suffix("  ", "Mort", Some(1)), None);
    }

    #[test]
    fn no_author_and_no_title_have_names_of_their_own() {
        let placed = place(&shelf("  ", Some(" ")));
        assert_eq!(placed.epub_path(), "Unknown author/Untitled/Untitled.epub");
        assert_eq!(place(&shelf("Beowulf", None)).author, UNKNOWN_AUTHOR);
    }

    #[test]
    fn names_cannot_leave_the_library_or_hide() {
        for evil in [
            "..",
            "../..",
            "/etc/passwd",
            "..\\..\\boot.ini",
            ".hidden",
            "a/../../b",
        ] {
            let name = safe_name(evil, "X");
            assert!(!name.contains(['/', '\\']), "{evil} -> {name}");
            assert!(!name.starts_with('.'), "{evil} -> {name}");
            assert_ne!(name, "..");
        }
        assert_eq!(safe_name("..", "X"), "X");
        assert_eq!(safe_name("/etc/passwd", "X"), "_etc_passwd");
    }

    #[test]
    fn control_characters_refused_characters_and_trailing_dots_go() {
        assert_eq!(
            safe_name("What?\tA \"Tale\": of <Two>|Cities*...  ", "X"),
            "What_ A _Tale__ of _Two__Cities_"
        );
        assert_eq!(safe_name("line\nbreak\u{0}", "X"), "line break");
        assert_eq!(safe_name("CON", "X"), "CON_");
        assert_eq!(safe_name("nul.txt", "X"), "nul.txt_");
    }

    #[test]
    fn every_script_is_kept_in_one_normal_form() {
        assert_eq!(safe_name("東京物語", "X"), "東京物語");
        assert_eq!(safe_name("Война и мир", "X"), "Война и мир");
        // "é" typed as e + combining accent is the same name as "é".
        assert_eq!(safe_name("Ele\u{301}onore", "X"), "El\u{e9}onore");
    }

    #[test]
    fn long_names_are_cut_between_characters_and_keep_the_series() {
        let long = "é".repeat(200);
        let name = safe_name(&long, "X");
        assert!(name.len() <= MAX_NAME_BYTES && name.chars().all(|c| c == 'é'));
        let placed = place(&Shelf {
            series: Some(("Saga", 12)),
            ..shelf(&long, None)
        });
        assert!(placed.book.len() <= MAX_NAME_BYTES, "{}", placed.book);
        assert!(placed.book.ends_with(" (Saga 12)"), "{}", placed.book);
    }
}
