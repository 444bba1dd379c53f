//! Where `epubcheck` is installed (CI: `apt-get install -y epubcheck`), every EPUB
//! the writers produce from the corpus passes with no error beyond those the
//! original already had. Every book gets a reader note, so each EPUB 2 is
//! upgraded to EPUB 3 and that upgrade is checked too. Each file is validated
//! once, two at a time. Without epubcheck the test fails under CI (`CI=true`)
//! and is skipped, with a note, elsewhere.

mod common;

use std::collections::BTreeSet;
use std::process::Command;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::*;
use dragoman_book::{
    BilingualOptions, EpubWriteOptions, ReaderNote, read_epub, write_bilingual_epub, write_epub,
};

/// The epubcheck command: the `epubcheck` launcher, or `java -jar` on it when
/// the launcher is a bare jar (Debian's, without binfmt support for jars).
fn epubcheck_command() -> Option<Command> {
    if Command::new("epubcheck")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        return Some(Command::new("epubcheck"));
    }
    for jar in ["/usr/bin/epubcheck", "/usr/share/java/epubcheck.jar"] {
        let is_jar = std::fs::read(jar).is_ok_and(|b| b.starts_with(b"PK"));
        if is_jar
            && Command::new("java")
                .arg("-version")
                .output()
                .is_ok_and(|o| o.status.success())
        {
            let mut c = Command::new("java");
            c.arg("-jar").arg(jar);
            return Some(c);
        }
    }
    None
}

/// JVM options for `java -jar`: epubcheck runs are short, so the C1 compiler
/// alone and the serial collector make each one faster and lighter on the
/// CPU (the checks are the same).
const JVM_OPTIONS: [&str; 3] = [
    "-XX:TieredStopAtLevel=1",
    "-XX:+UseSerialGC",
    "-Xshare:auto",
];

/// Validations run at once (one JVM each).
const THREADS: usize = 2;

/// Error and fatal codes with the file they concern (line numbers dropped, since
/// a rebuild moves lines), parsed from epubcheck's text output.
fn parse_errors(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter(|l| l.starts_with("ERROR") || l.starts_with("FATAL"))
        .map(|l| {
            let code = l.split(')').next().unwrap_or(l);
            let file = l
                .split_once(": ")
                .map(|(_, rest)| {
                    rest.split('(')
                        .next()
                        .unwrap_or("")
                        .rsplit(".epub/")
                        .next()
                        .unwrap_or("")
                })
                .unwrap_or("");
            format!("{code}) {file}")
        })
        .collect()
}

/// What epubcheck said about one file.
struct Checked {
    errors: BTreeSet<String>,
    /// The EPUB version whose rules were applied ("2.0.1", "3.0.1"…).
    rules: String,
}

/// Runs epubcheck on every file, `THREADS` at a time; results in input order.
fn check_all(files: &[std::path::PathBuf]) -> Vec<Checked> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Checked>>> = Mutex::new((0..files.len()).map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..THREADS {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(path) = files.get(i) else { break };
                    let mut cmd = epubcheck_command().unwrap();
                    if cmd.get_program() == "java" {
                        let args: Vec<_> = cmd.get_args().map(|a| a.to_owned()).collect();
                        cmd = Command::new("java");
                        cmd.args(JVM_OPTIONS).args(args);
                    }
                    let out = cmd.arg(path).output().unwrap();
                    let text = String::from_utf8_lossy(&out.stdout).into_owned()
                        + &String::from_utf8_lossy(&out.stderr);
                    // A run that did not get to its summary validated nothing.
                    assert!(
                        text.contains("Messages:"),
                        "epubcheck did not complete on {}:\n{text}",
                        path.display()
                    );
                    let rules = text
                        .split("Validating using EPUB version ")
                        .nth(1)
                        .and_then(|r| r.split_whitespace().next())
                        .unwrap_or("")
                        .to_string();
                    let checked = Checked {
                        errors: parse_errors(&text),
                        rules,
                    };
                    results.lock().unwrap()[i] = Some(checked);
                }
            });
        }
    });
    results
        .into_inner()
        .unwrap()
        .into_iter()
        .map(|r| r.expect("every file checked"))
        .collect()
}

/// One corpus book and the EPUBs written from it.
struct Case {
    name: String,
    epub2: bool,
    /// A reader note was inserted (its footnote is in the rebuilt book).
    noted: bool,
    original: usize,
    rebuilt: usize,
    bilingual: Option<usize>,
}

#[test]
fn rebuilt_and_bilingual_epubs_add_no_epubcheck_error() {
    if epubcheck_command().is_none() {
        missing("the epubcheck command", "not found, nor its jar with java");
        return;
    }
    let started = std::time::Instant::now();
    let dir = std::env::temp_dir().join(format!("dragoman-epubcheck-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut files = Vec::new();
    let mut push = |bytes: &[u8], tag: String| {
        let path = dir.join(format!("{tag}.epub"));
        std::fs::write(&path, bytes).unwrap();
        files.push(path);
        files.len() - 1
    };
    let mut cases = Vec::new();
    for (n, name) in corpus_files(".epub").into_iter().enumerate() {
        let bytes = corpus(&name).unwrap();
        let Ok(book) = read_epub(&bytes) else {
            continue;
        };
        let tr = book.identity_translations();
        let first = book
            .passages()
            .next()
            .map(|p| p.id.clone())
            .unwrap_or_default();
        // Every book gets a note: on an EPUB 2 it triggers the upgrade to EPUB 3.
        let opts = EpubWriteOptions {
            target_language: "fr".into(),
            ai_mention: Some("Dragoman (AI-assisted translation)".into()),
            notes: vec![ReaderNote {
                passage_id: first,
                text: "A reader note.".into(),
            }],
        };
        let (out, _) = write_epub(&bytes, &tr, &opts).unwrap();
        let noted = unzip(&out)
            .iter()
            .any(|(_, b)| String::from_utf8_lossy(b).contains("id=\"dragoman-note-1\""));
        let bilingual = book.passages().next().is_some().then(|| {
            let (bi, _) = write_bilingual_epub(
                &book,
                &tr,
                &BilingualOptions {
                    target_language: "fr".into(),
                    ai_mention: opts.ai_mention.clone(),
                    notes: opts.notes.clone(),
                    ..Default::default()
                },
            )
            .unwrap();
            push(&bi, format!("{n}-bilingual"))
        });
        cases.push(Case {
            epub2: book
                .epub_version
                .as_deref()
                .is_some_and(|v| v.starts_with('2')),
            noted,
            original: push(&bytes, format!("{n}-original")),
            rebuilt: push(&out, format!("{n}-rebuilt")),
            bilingual,
            name,
        });
    }
    let checked = check_all(&files);
    let _ = std::fs::remove_dir_all(&dir);

    let mut failures = Vec::new();
    let mut upgraded = 0;
    for case in &cases {
        let (before, after) = (&checked[case.original], &checked[case.rebuilt]);
        let new: Vec<_> = after.errors.difference(&before.errors).collect();
        if !new.is_empty() {
            failures.push(format!("{}: new epubcheck errors {new:?}", case.name));
        }
        if case.epub2 && case.noted {
            if after.rules.starts_with('3') {
                upgraded += 1;
            } else {
                failures.push(format!(
                    "{}: a note was inserted but the book was checked as EPUB {}",
                    case.name, after.rules
                ));
            }
        }
        if let Some(bi) = case.bilingual.map(|i| &checked[i])
            && !bi.errors.is_empty()
        {
            failures.push(format!("{} bilingual: {:?}", case.name, bi.errors));
        }
        eprintln!(
            "{}: original {:?}, rebuilt (EPUB {}{}) {:?}",
            case.name,
            before.errors,
            after.rules,
            if case.noted { ", note" } else { "" },
            after.errors
        );
    }
    eprintln!(
        "{} files checked in {:.0?} ({} EPUB 2 books upgraded)",
        files.len(),
        started.elapsed(),
        upgraded
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The corpus holds several EPUB 2 books with XHTML content: the upgrade must
    // have been exercised, not skipped.
    if !cases.is_empty() {
        assert!(upgraded >= 5, "only {upgraded} EPUB 2 books were upgraded");
    }
}
