//! Fuzz target: any bytes given to the DOCX reader must end in a book or an error.
#![no_main]

use dragoman_book::{Split, read_docx};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = read_docx("fuzz.docx", data, Split::None);
    let _ = read_docx("fuzz.docx", data, Split::Headings);
});
