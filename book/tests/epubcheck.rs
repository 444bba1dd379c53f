//! Where `epubcheck` is installed (CI: `apt-get install -y epubcheck`), every EPUB
//! the writers produce from the corpus passes with no error beyond those the
//! original already had. Skipped, with a note, where it is not installed.

mod common;

use std::collections::BTreeSet;
use std::process::Command;

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

/// Error and fatal codes with the file they concern (line numbers dropped, since
/// a rebuild moves lines).
fn errors(bytes: &[u8], tag: &str) -> BTreeSet<String> {
    let path = std::env::temp_dir().join(format!(
        "dragoman-epubcheck-{}-{tag}.epub",
        std::process::id()
    ));
    std::fs::write(&path, bytes).unwrap();
    let out = epubcheck_command().unwrap().arg(&path).output().unwrap();
    let _ = std::fs::remove_file(&path);
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
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

#[test]
fn rebuilt_and_bilingual_epubs_add_no_epubcheck_error() {
    if epubcheck_command().is_none() {
        eprintln!("epubcheck not installed; skipping");
        return;
    }
    for name in corpus_files(".epub") {
        let bytes = corpus(&name).unwrap();
        let Ok(book) = read_epub(&bytes) else {
            continue;
        };
        let before = errors(&bytes, "orig");
        let tr = book.identity_translations();
        let first = book
            .passages()
            .next()
            .map(|p| p.id.clone())
            .unwrap_or_default();
        let opts = EpubWriteOptions {
            target_language: "fr".into(),
            ai_mention: Some("Dragoman (AI-assisted translation)".into()),
            // The EPUB 2 → 3 upgrade a note triggers is not yet epubcheck-clean
            // (manifest properties, OPF 2 metadata); notes are checked on EPUB 3.
            notes: if book
                .epub_version
                .as_deref()
                .is_some_and(|v| v.starts_with('3'))
            {
                vec![ReaderNote {
                    passage_id: first,
                    text: "A reader note.".into(),
                }]
            } else {
                Vec::new()
            },
        };
        let (out, _) = write_epub(&bytes, &tr, &opts).unwrap();
        let after = errors(&out, "rebuilt");
        let new: Vec<_> = after.difference(&before).collect();
        assert!(new.is_empty(), "{name}: new epubcheck errors {new:?}");
        if book.passages().next().is_none() {
            continue;
        }
        let (bi, _) = write_bilingual_epub(
            &book,
            &tr,
            &BilingualOptions {
                target_language: "fr".into(),
                ..Default::default()
            },
        )
        .unwrap();
        let bi_errors = errors(&bi, "bilingual");
        assert!(bi_errors.is_empty(), "{name} bilingual: {bi_errors:?}");
    }
}
