//! One-shot measurement of the benchmark book: wall time and peak memory (VmHWM)
//! of reading and of rebuilding, on one thread. Run with
//! `cargo run --release -p dragoman-book --example measure`.

use std::time::Instant;

use dragoman_book::{EpubWriteOptions, read_epub, write_epub};

#[path = "../benches/synthetic.rs"]
mod synthetic;

fn peak_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

fn main() {
    let (epub, chars) = synthetic::synthetic_epub();
    let base = peak_kib();
    println!(
        "EPUB {} bytes, {} text characters; baseline peak {} KiB",
        epub.len(),
        chars,
        base
    );
    let t = Instant::now();
    let book = read_epub(&epub).expect("read");
    let read_s = t.elapsed().as_secs_f64();
    let after_read = peak_kib();
    println!(
        "read: {:.3} s, {} chapters, {} words; peak +{} KiB",
        read_s,
        book.chapters.len(),
        book.words(),
        after_read - base
    );
    let tr = book.identity_translations();
    let opts = EpubWriteOptions {
        target_language: "fr".into(),
        ..Default::default()
    };
    let t = Instant::now();
    let (out, report) = write_epub(&epub, &tr, &opts).expect("write");
    let write_s = t.elapsed().as_secs_f64();
    let after_write = peak_kib();
    println!(
        "rebuild: {:.3} s, {} bytes, {} passages translated; peak +{} KiB ({:.1}x the file size)",
        write_s,
        out.len(),
        report.translated,
        after_write - base,
        (after_write - base) as f64 * 1024.0 / epub.len() as f64
    );
}
