//! Criterion benchmark: read, and rebuild, a synthetic 5 MB EPUB of about a
//! million characters. Figures are recorded in docs/benchmarks.md.

use criterion::{Criterion, criterion_group, criterion_main};
use dragoman_book::{EpubWriteOptions, read_epub, write_epub};

mod synthetic;

fn bench(c: &mut Criterion) {
    let (epub, _) = synthetic::synthetic_epub();
    let book = read_epub(&epub).expect("synthetic book reads");
    let tr = book.identity_translations();
    let opts = EpubWriteOptions {
        target_language: "fr".into(),
        ..Default::default()
    };
    let mut g = c.benchmark_group("epub_5mb_1m_chars");
    g.sample_size(10);
    g.bench_function("read", |b| b.iter(|| read_epub(&epub).expect("read")));
    g.bench_function("rebuild", |b| {
        b.iter(|| write_epub(&epub, &tr, &opts).expect("write"))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
