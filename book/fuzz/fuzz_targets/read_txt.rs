//! Fuzz target: the TXT reader, with and without the heading split, and the TXT
//! export of what it read.
#![no_main]

use dragoman_book::{Split, read_txt, write_txt};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for split in [Split::None, Split::Headings] {
        if let Ok(book) = read_txt("chapter-1.txt", data, split) {
            let (text, report) = write_txt(&book, &book.identity_translations(), "en");
            assert!(report.residuals.is_empty());
            assert!(!text.is_empty());
        }
    }
});
