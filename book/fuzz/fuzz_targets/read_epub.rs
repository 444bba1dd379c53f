//! Fuzz target: any bytes given to the EPUB reader, and when they read, a rebuild
//! with the identity translation that must read back.
#![no_main]

use dragoman_book::{EpubWriteOptions, read_epub, write_epub};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(book) = read_epub(data) {
        let opts = EpubWriteOptions {
            target_language: "fr".into(),
            ..Default::default()
        };
        if let Ok((out, _)) = write_epub(data, &book.identity_translations(), &opts) {
            let again = read_epub(&out).expect("a rebuilt book reads back");
            assert_eq!(book.chapters.len(), again.chapters.len());
        }
    }
});
