//! Apertium, the rule-based machine translator, as the simulator's
//! translator in `--translator apertium` mode: real target-language text
//! for the quality checks and the benchmarks instead of pseudo-translation.
//!
//! The installed translation directions ("modes") are listed once, with
//! `apertium -l`, when the simulator starts. A request's languages (BCP 47
//! tags) are matched to a mode by their primary subtag, in its two-letter
//! and its three-letter form (`en`/`eng`, `es`/`spa`: Apertium names modes
//! both ways), and a mode variant named by a later subtag of the target
//! (`en-US` picks `spa-eng_US`, `ca-ES-valencia` picks `eng-cat_valencia`)
//! is preferred to the plain `<source>-<target>` mode.
//!
//! All the texts of one answer go through ONE `apertium -u -f txt <mode>`
//! process (it takes about a third of a second to start): each text on a
//! paragraph of its own, followed by a separator line `⟦§i⟧` that
//! Apertium passes through untouched, and the output is split back at the
//! separators. Texts come back with their own leading and trailing
//! whitespace, runs of spaces (which Apertium leaves where it drops a
//! pronoun) collapsed, and the case of their first letter as in the source.
//!
//! Everything between the brackets `⟦` and `⟧` (placeholders, and the
//! tokens the caller puts in place of what must not be translated) must
//! come back exactly, in the same order. Sent as they are, Apertium reads
//! the number in a bracket as a word and its reordering rules move it, or
//! put a space inside the bracket; so each bracket is sent as a stand-in,
//! a private-use character Apertium takes for a blank, which it keeps in
//! order while it reorders the words around it (`a ⟦1⟧beautiful⟦/1⟧
//! night` comes back `una ⟦1⟧noche⟦/1⟧ bella`: real grammar, the markup
//! on the word now in that place). It still drops a blank with a word it
//! drops, now and then: a text whose brackets do not come back the same
//! is translated again piece by piece, the pieces between its brackets
//! each on their own (a second run), and rejoined around the brackets as
//! they were. (Over 1,100 paragraphs of a novel with a bracket every two or
//! three words, one in twenty needs that.)
//!
//! Translations are kept in memory per (mode, text), the
//! [`CACHE_ENTRIES`] most recent ones, so retries and repeated runs do not
//! start Apertium again, and a text reads the same however it is batched.
//! At most as many Apertium processes as the machine has cores run at once;
//! each is killed after [`TIMEOUT`].

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Mutex;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::process::Command;
use tokio::sync::Semaphore;

use crate::state::lock;

/// How long one Apertium run may take before it is killed and the answer
/// fails.
pub(super) const TIMEOUT: Duration = Duration::from_secs(60);

/// How many translated texts are kept in memory.
pub(super) const CACHE_ENTRIES: usize = 20_000;

/// ISO 639-1 codes and the ISO 639-3 codes Apertium names its modes with,
/// for the languages it has pairs for. Serbian, Croatian and Bosnian are
/// one language there (`hbs`).
const CODES: [(&str, &str); 58] = [
    ("af", "afr"),
    ("an", "arg"),
    ("ar", "ara"),
    ("be", "bel"),
    ("bg", "bul"),
    ("br", "bre"),
    ("bs", "hbs"),
    ("ca", "cat"),
    ("cs", "ces"),
    ("cy", "cym"),
    ("da", "dan"),
    ("de", "deu"),
    ("el", "ell"),
    ("en", "eng"),
    ("eo", "epo"),
    ("es", "spa"),
    ("et", "est"),
    ("eu", "eus"),
    ("fa", "fas"),
    ("fi", "fin"),
    ("fo", "fao"),
    ("fr", "fra"),
    ("ga", "gle"),
    ("gd", "gla"),
    ("gl", "glg"),
    ("gv", "glv"),
    ("he", "heb"),
    ("hi", "hin"),
    ("hr", "hbs"),
    ("hu", "hun"),
    ("id", "ind"),
    ("is", "isl"),
    ("it", "ita"),
    ("kk", "kaz"),
    ("kv", "kpv"),
    ("ky", "kir"),
    ("lt", "lit"),
    ("lv", "lav"),
    ("mk", "mkd"),
    ("ms", "msa"),
    ("mt", "mlt"),
    ("nb", "nob"),
    ("nl", "nld"),
    ("nn", "nno"),
    ("no", "nob"),
    ("oc", "oci"),
    ("pl", "pol"),
    ("pt", "por"),
    ("ro", "ron"),
    ("ru", "rus"),
    ("sc", "srd"),
    ("se", "sme"),
    ("sk", "slk"),
    ("sl", "slv"),
    ("sq", "sqi"),
    ("sr", "hbs"),
    ("sv", "swe"),
    ("uk", "ukr"),
];

/// The codes a language tag's primary subtag goes by in mode names, and
/// its later subtags (lower-cased), which may name a mode variant.
fn codes(tag: &str) -> (Vec<String>, Vec<String>) {
    let mut subtags = tag
        .split(['-', '_'])
        .map(|s| s.trim().to_ascii_lowercase())
        .filter(|s| !s.is_empty());
    let primary = subtags.next().unwrap_or_default();
    let mut names = vec![primary.clone()];
    for (two, three) in CODES {
        if primary == two && !names.iter().any(|n| n == three) {
            names.push(three.to_owned());
        }
        if primary == three && !names.iter().any(|n| n == two) {
            names.push(two.to_owned());
        }
    }
    (names, subtags.collect())
}

/// A mode name read as source code, target code and variant
/// (`spa-eng_US`: `spa`, `eng`, `us`).
fn parts(mode: &str) -> Option<(String, String, Option<String>)> {
    let (source, rest) = mode.split_once('-')?;
    let (target, variant) = match rest.split_once('_') {
        Some((target, variant)) => (target, Some(variant.to_ascii_lowercase())),
        None => (rest, None),
    };
    Some((
        source.to_ascii_lowercase(),
        target.to_ascii_lowercase(),
        variant,
    ))
}

/// The mode of `modes` that translates `source` into `target` (language
/// tags): the variant a subtag of the target names, else the plain mode,
/// else the first variant.
fn pick_mode(modes: &[String], source: &str, target: &str) -> Option<String> {
    let (sources, _) = codes(source);
    let (targets, variants) = codes(target);
    let fitting: Vec<(&String, Option<String>)> = modes
        .iter()
        .filter_map(|m| {
            let (s, t, variant) = parts(m)?;
            (sources.contains(&s) && targets.contains(&t)).then_some((m, variant))
        })
        .collect();
    let named = fitting
        .iter()
        .find(|(_, v)| v.as_ref().is_some_and(|v| variants.contains(v)));
    let plain = fitting.iter().find(|(_, v)| v.is_none());
    named
        .or(plain)
        .or(fitting.first())
        .map(|(m, _)| (*m).clone())
}

/// A plain mode of `modes` from `source` into a language other than
/// `target`, the first in name order; `None` when there is none.
fn pick_other_mode(modes: &[String], source: &str, target: &str) -> Option<String> {
    let (sources, _) = codes(source);
    let (targets, _) = codes(target);
    let mut others: Vec<&String> = modes
        .iter()
        .filter(|m| {
            parts(m).is_some_and(|(s, t, variant)| {
                variant.is_none() && sources.contains(&s) && !targets.contains(&t)
            })
        })
        .collect();
    others.sort();
    others.first().map(|m| (*m).clone())
}

/// The bracketed tokens of `text` (`⟦…⟧`: placeholders and the caller's
/// own tokens), in order.
pub(super) fn brackets(text: &str) -> Vec<&str> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find('⟦') {
        let Some(len) = rest[start..].find('⟧') else {
            break;
        };
        let end = start + len + '⟧'.len_utf8();
        found.push(&rest[start..end]);
        rest = &rest[end..];
    }
    found
}

/// A piece of a text cut at its brackets.
#[derive(Debug, PartialEq, Eq)]
enum Piece<'a> {
    Text(&'a str),
    Bracket(&'a str),
}

/// `text` cut into the text between its brackets and the brackets.
fn pieces(text: &str) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    let mut rest = text;
    for bracket in brackets(text) {
        let Some(at) = rest.find(bracket) else {
            break;
        };
        if at > 0 {
            out.push(Piece::Text(&rest[..at]));
        }
        out.push(Piece::Bracket(bracket));
        rest = &rest[at + bracket.len()..];
    }
    if !rest.is_empty() {
        out.push(Piece::Text(rest));
    }
    out
}

/// Whether a text has anything to translate: a letter outside brackets.
fn has_words(text: &str) -> bool {
    pieces(text).iter().any(|p| match p {
        Piece::Text(t) => t.chars().any(char::is_alphabetic),
        Piece::Bracket(_) => false,
    })
}

/// The first of the private-use characters a text's brackets are sent as.
const STAND_IN: u32 = 0xE000;

/// How many brackets of one text can have a stand-in.
const STAND_INS: usize = 0x1900;

/// `text` with each bracket replaced by a stand-in: the private-use
/// character `U+E000 + i` for its `i`th bracket. Apertium takes a character
/// it does not know for a blank, and keeps blanks in their order where a
/// word-like token (the number in `⟦1⟧`) would be moved by its reordering
/// rules, and dropped or split with the words around it. A text with more
/// brackets than stand-ins is sent as it is.
fn stand_in(text: &str) -> String {
    let found = brackets(text);
    if found.len() > STAND_INS {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    for (i, bracket) in found.iter().enumerate() {
        let Some(at) = rest.find(bracket) else {
            break;
        };
        out.push_str(&rest[..at]);
        let code = u32::try_from(i).map_or(STAND_IN, |i| STAND_IN + i);
        out.extend(char::from_u32(code));
        rest = &rest[at + bracket.len()..];
    }
    out.push_str(rest);
    out
}

/// `translated` with the stand-ins of `source`'s brackets ([`stand_in`])
/// written back as those brackets.
fn stand_out(source: &str, translated: &str) -> String {
    let found = brackets(source);
    let mut out = String::with_capacity(translated.len());
    for c in translated.chars() {
        let bracket = u32::from(c)
            .checked_sub(STAND_IN)
            .and_then(|i| usize::try_from(i).ok())
            .and_then(|i| found.get(i));
        match bracket {
            Some(bracket) => out.push_str(bracket),
            None => out.push(c),
        }
    }
    out
}

/// The separator line after text `i`: `⟦§i⟧`, with as many `§` as it takes
/// for the separators to occur in none of the texts.
fn separator_mark(texts: &[&str]) -> String {
    let mut mark = "⟦§".to_owned();
    while texts.iter().any(|t| t.contains(&mark)) {
        mark.push('§');
    }
    mark
}

/// The input of one Apertium run for `texts`, and the separators' mark.
fn join(texts: &[&str]) -> (String, String) {
    let mark = separator_mark(texts);
    let mut input = String::new();
    for (i, text) in texts.iter().enumerate() {
        input.push_str(text.trim());
        input.push_str(&format!("\n\n{mark}{i}⟧\n\n"));
    }
    (input, mark)
}

/// Apertium's output of [`join`] cut back into `n` texts; `None` when a
/// separator is missing, out of order or followed by more text.
fn split(output: &str, mark: &str, n: usize) -> Option<Vec<String>> {
    let mut texts = Vec::with_capacity(n);
    let mut current: Vec<&str> = Vec::new();
    for line in output.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with(mark) {
            if trimmed != format!("{mark}{}⟧", texts.len()) {
                return None;
            }
            texts.push(current.join("\n").trim_matches('\n').to_owned());
            current.clear();
        } else if texts.len() == n {
            if !trimmed.is_empty() {
                return None;
            }
        } else {
            current.push(line);
        }
    }
    (texts.len() == n).then_some(texts)
}

/// Apertium's translation of `source` made tidy: runs of spaces collapsed
/// and spaces trimmed at line ends, the first letter in the case of the
/// source's first letter, and the source's own leading and trailing
/// whitespace.
fn tidy(source: &str, translated: &str) -> String {
    let mut body = translated
        .lines()
        .map(|line| tidy_line(source, line))
        .collect::<Vec<_>>()
        .join("\n")
        .trim_matches('\n')
        .to_owned();
    let wanted = first_letter(source).map(|(_, c)| c);
    if let (Some(wanted), Some((at, found))) = (wanted, first_letter(&body)) {
        let cased: String = if wanted.is_uppercase() {
            found.to_uppercase().collect()
        } else if wanted.is_lowercase() {
            found.to_lowercase().collect()
        } else {
            found.to_string()
        };
        body.replace_range(at..at + found.len_utf8(), &cased);
    }
    let lead = &source[..source.len() - source.trim_start().len()];
    let trail = &source[source.trim_end().len()..];
    format!("{lead}{body}{trail}")
}

/// Marks that open a quote or a clause: the word after them follows
/// without a space.
const OPENING: [char; 7] = ['"', '“', '‘', '«', '¿', '¡', '('];

/// A line of a translation with single spaces between its words, and none
/// after an opening mark where the source has none: Apertium keeps the
/// space after a pronoun it drops (`"We need` gives `" Necesitamos`).
fn tidy_line(source: &str, line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut glue = true;
    for word in line.split(' ').filter(|w| !w.is_empty()) {
        if !glue {
            out.push(' ');
        }
        out.push_str(word);
        let mut chars = word.chars();
        glue = match (chars.next(), chars.next()) {
            // A straight quote opens when the quotes before it are paired.
            (Some('"'), None) => out.matches('"').count() % 2 == 1,
            (Some(mark), None) if OPENING.contains(&mark) => !source.contains(&format!("{mark} ")),
            _ => false,
        };
    }
    out
}

/// The first letter of `text` outside brackets, with its byte offset.
fn first_letter(text: &str) -> Option<(usize, char)> {
    let mut inside = false;
    for (i, c) in text.char_indices() {
        match c {
            '⟦' => inside = true,
            '⟧' => inside = false,
            c if !inside && c.is_alphabetic() => return Some((i, c)),
            _ => {}
        }
    }
    None
}

/// `raw`, Apertium's translation of `source`, tidied; `None` when its
/// brackets are not exactly the source's, in the same order.
fn checked(source: &str, raw: &str) -> Option<String> {
    let text = tidy(source, raw);
    (brackets(&text) == brackets(source)).then_some(text)
}

/// The pieces of `source` between its brackets that have words: what is
/// translated on its own when [`checked`] refused the whole.
fn loose(source: &str) -> Vec<&str> {
    pieces(source)
        .into_iter()
        .filter_map(|p| match p {
            Piece::Text(t) if has_words(t) => Some(t),
            _ => None,
        })
        .collect()
}

/// `source` with each of its [`loose`] pieces replaced by its translation
/// in `done` and its brackets as they are.
fn rejoin(source: &str, done: &HashMap<&str, String>) -> String {
    pieces(source)
        .into_iter()
        .map(|p| match p {
            Piece::Bracket(b) => b.to_owned(),
            Piece::Text(t) => done.get(t).cloned().unwrap_or_else(|| t.to_owned()),
        })
        .collect()
}

/// Translations kept for reuse, the oldest dropped first.
struct Cache {
    entries: HashMap<(String, String), String>,
    order: VecDeque<(String, String)>,
    capacity: usize,
}

impl Cache {
    fn new(capacity: usize) -> Cache {
        Cache {
            entries: HashMap::new(),
            order: VecDeque::new(),
            capacity,
        }
    }

    fn get(&self, mode: &str, text: &str) -> Option<String> {
        self.entries
            .get(&(mode.to_owned(), text.to_owned()))
            .cloned()
    }

    fn put(&mut self, mode: &str, text: &str, translation: String) {
        let key = (mode.to_owned(), text.to_owned());
        if self.entries.insert(key.clone(), translation).is_none() {
            self.order.push_back(key);
        }
        while self.order.len() > self.capacity {
            if let Some(old) = self.order.pop_front() {
                self.entries.remove(&old);
            }
        }
    }
}

/// An Apertium installation: its binary, its modes, the translations done.
pub(super) struct Apertium {
    bin: PathBuf,
    modes: Vec<String>,
    cache: Mutex<Cache>,
    slots: Semaphore,
}

impl Apertium {
    /// Apertium at `bin` (`apertium` on `PATH` when `None`), with the modes
    /// `apertium -l` lists; fails when it cannot be run or lists none.
    pub async fn open(bin: Option<&Path>) -> std::io::Result<Apertium> {
        let bin = bin.map_or_else(|| PathBuf::from("apertium"), Path::to_path_buf);
        let listed = Command::new(&bin)
            .arg("-l")
            .stdin(Stdio::null())
            .output()
            .await
            .map_err(|e| {
                std::io::Error::new(e.kind(), format!("cannot run {}: {e}", bin.display()))
            })?;
        let modes: Vec<String> = String::from_utf8_lossy(&listed.stdout)
            .lines()
            .map(str::trim)
            .filter(|m| parts(m).is_some())
            .map(str::to_owned)
            .collect();
        if modes.is_empty() {
            return Err(std::io::Error::other(format!(
                "{} -l lists no translation mode: install a pair such as apertium-eng-spa",
                bin.display()
            )));
        }
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        Ok(Apertium {
            bin,
            modes,
            cache: Mutex::new(Cache::new(CACHE_ENTRIES)),
            slots: Semaphore::new(cores),
        })
    }

    /// The mode translating `source` into `target` (language tags), or why
    /// there is none.
    pub fn mode(&self, source: &str, target: &str) -> Result<String, String> {
        pick_mode(&self.modes, source, target).ok_or_else(|| {
            format!(
                "the language pair {source}-{target} is not installed in Apertium \
                 (installed modes: {})",
                self.modes.join(", ")
            )
        })
    }

    /// A mode translating `source` into another language than `target`.
    pub fn other_mode(&self, source: &str, target: &str) -> Option<String> {
        pick_other_mode(&self.modes, source, target)
    }

    /// The translations of `texts` in `mode`, in order, each with exactly
    /// its brackets (see the module doc).
    pub async fn translate(&self, mode: &str, texts: &[String]) -> Result<Vec<String>, String> {
        let mut out: Vec<Option<String>> = {
            let cache = lock(&self.cache);
            texts
                .iter()
                .map(|t| {
                    if has_words(t) {
                        cache.get(mode, t)
                    } else {
                        Some(t.clone())
                    }
                })
                .collect()
        };
        let mut todo: Vec<usize> = Vec::new();
        for i in (0..texts.len()).filter(|&i| out[i].is_none()) {
            if !todo.iter().any(|&j| texts[j] == texts[i]) {
                todo.push(i);
            }
        }
        let fresh: Vec<&str> = todo.iter().map(|&i| texts[i].as_str()).collect();
        let done = self.run(mode, &fresh).await?;
        let mut again: Vec<&str> = Vec::new();
        let mut translated: HashMap<&str, String> = HashMap::new();
        for (source, raw) in fresh.iter().copied().zip(done) {
            match checked(source, &raw) {
                Some(text) => {
                    translated.insert(source, text);
                }
                None => again.push(source),
            }
        }
        let parts: Vec<&str> = again.iter().flat_map(|t| loose(t)).collect();
        let parts_done: HashMap<&str, String> = parts
            .iter()
            .copied()
            .zip(self.run(mode, &parts).await?)
            .map(|(source, raw)| (source, tidy(source, &raw)))
            .collect();
        for source in again {
            translated.insert(source, rejoin(source, &parts_done));
        }
        {
            let mut cache = lock(&self.cache);
            for (source, text) in &translated {
                cache.put(mode, source, text.clone());
            }
        }
        for (i, slot) in out.iter_mut().enumerate() {
            if slot.is_none() {
                *slot = translated.get(texts[i].as_str()).cloned();
            }
        }
        Ok(out
            .into_iter()
            .zip(texts)
            .map(|(t, source)| t.unwrap_or_else(|| source.clone()))
            .collect())
    }

    /// One Apertium run over `texts`: their raw translations, in order.
    async fn run(&self, mode: &str, texts: &[&str]) -> Result<Vec<String>, String> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let sent: Vec<String> = texts.iter().map(|t| stand_in(t)).collect();
        let sent: Vec<&str> = sent.iter().map(String::as_str).collect();
        let (input, mark) = join(&sent);
        let _slot = self
            .slots
            .acquire()
            .await
            .map_err(|e| format!("apertium: {e}"))?;
        let mut child = Command::new(&self.bin)
            .args(["-u", "-f", "txt", mode])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", self.bin.display()))?;
        let mut stdin = child
            .stdin
            .take()
            .ok_or_else(|| "apertium: no stdin".to_owned())?;
        // Written while the output is read, so that neither pipe fills up.
        let writer = tokio::spawn(async move {
            let written = stdin.write_all(input.as_bytes()).await;
            drop(stdin);
            written
        });
        let output = tokio::time::timeout(TIMEOUT, child.wait_with_output())
            .await
            .map_err(|_| format!("apertium {mode} took longer than {TIMEOUT:?}"))?
            .map_err(|e| format!("apertium {mode}: {e}"))?;
        let _ = writer.await;
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            return Err(format!(
                "apertium {mode} failed ({}): {}",
                output.status,
                stderr.trim()
            ));
        }
        let stdout = String::from_utf8_lossy(&output.stdout);
        let back = split(&stdout, &mark, texts.len())
            .ok_or_else(|| format!("apertium {mode} lost the separators between passages"))?;
        Ok(texts
            .iter()
            .zip(back)
            .map(|(source, translated)| stand_out(source, &translated))
            .collect())
    }
}

/// Apertium with the `eng-spa` mode, for the tests that run it; `None`
/// (after [`dragoman_testing::env::missing`]: a failure under CI) when
/// it is not installed.
#[cfg(test)]
pub(super) async fn for_tests() -> Option<Apertium> {
    match Apertium::open(None).await {
        Ok(apertium) if apertium.mode("en", "es").is_ok() => Some(apertium),
        Ok(apertium) => {
            dragoman_testing::env::missing(
                "the Apertium pair eng-spa",
                &format!("apertium -l lists {}", apertium.modes.join(", ")),
            );
            None
        }
        Err(e) => {
            dragoman_testing::env::missing("apertium", &e.to_string());
            None
        }
    }
}

#[cfg(test)]
mod tests;
