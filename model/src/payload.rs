//! The translation payload (spec 2.4): its types, which refuse unknown
//! fields at every level and hold the spec's closed values as enums, its
//! rules of meaning (as located issues, never echoing values), and the
//! content hash that decides idempotent replays.
//!
//! The gateway reads a body into these types (shape: JSON, types, required
//! and unknown fields, allowed values); the scheduler, which owns intake,
//! applies [`TranslationPayload::check`] once.

use crate::vocab::{
    AnalysisMode, CallbackEvent, ContextBackend, InputKind, Issue, IssueKind, Priority, Quality,
    ResultFormat,
};
use crate::vocab::{IssueContext, LocPart};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// A JSON translation request (spec 2.4): one volume of a series and its
/// chapters. Unknown fields are refused at every level; nothing is ever
/// downloaded from a URL it names.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TranslationPayload {
    /// The client's identifier, unique per owner: the same content sent
    /// again with it returns the original request.
    #[serde(default)]
    #[schema(pattern = "^[A-Za-z0-9][A-Za-z0-9._:/-]{0,199}$", max_length = 200)]
    pub external_id: Option<String>,
    pub series: SeriesRef,
    pub volume: VolumeRef,
    #[serde(default)]
    #[schema(max_length = 500)]
    pub author: Option<String>,
    /// BCP 47 tag, at most 35 characters.
    #[schema(pattern = "^[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*$", max_length = 35)]
    pub source_language: String,
    /// BCP 47 tag, at most 35 characters.
    #[schema(pattern = "^[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*$", max_length = 35)]
    pub target_language: String,
    /// At least one, at most `API_MAX_CHAPTERS`; numbers (with their part)
    /// and external ids must not repeat. Numbered chapters are placed by
    /// number and part; a special chapter goes after the chapter it follows
    /// in the list.
    #[schema(min_items = 1)]
    pub chapters: Vec<ChapterIn>,
    /// Replaces chapters already imported with another text (otherwise 409
    /// `chapter_conflict`); unchanged passages keep their translation.
    #[serde(default)]
    pub replace_changed_chapters: bool,
    /// With `replace_changed_chapters`, allows dropping passages a person
    /// edited or validated (otherwise 409 `conflict`).
    #[serde(default)]
    pub discard_human: bool,
    /// The request's provider; else the volume's, else the series default.
    #[serde(default)]
    #[schema(max_length = 36)]
    pub provider_id: Option<String>,
    #[serde(default)]
    pub pipeline: PipelineOptions,
    #[serde(default)]
    pub output: OutputOptions,
    /// Where the webhooks go (section 6): an allowed http or https URL of
    /// at most 2000 characters, else 422 `callback_refused`.
    #[serde(default)]
    #[schema(max_length = 2000)]
    pub callback_url: Option<String>,
    /// Extra webhooks: `chapters.translated` (needs `callback_url`).
    #[serde(default)]
    #[schema(schema_with = requestable_events)]
    pub callback_events: Vec<CallbackEvent>,
}

/// `callback_events`: only the events a request may ask for.
fn requestable_events() -> utoipa::openapi::schema::Array {
    use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, Type};
    let names: Vec<&str> = CallbackEvent::REQUESTABLE
        .iter()
        .map(|e| e.as_str())
        .collect();
    ArrayBuilder::new()
        .items(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .enum_values(Some(names)),
        )
        .build()
}

/// The series of the request: `id` (a series the caller owns) or `name`.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SeriesRef {
    #[serde(default)]
    #[schema(min_length = 1, max_length = 36)]
    pub id: Option<String>,
    #[serde(default)]
    #[schema(min_length = 1, max_length = 500)]
    pub name: Option<String>,
    /// Creates the series named `name` when the caller has none by that
    /// name (otherwise 404 `series_not_found`).
    #[serde(default)]
    pub create_if_missing: bool,
}

/// The volume of the series the chapters go to: found by `external_id`,
/// then by number in the series; otherwise created.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct VolumeRef {
    #[serde(default)]
    #[schema(pattern = "^[A-Za-z0-9][A-Za-z0-9._:/-]{0,199}$", max_length = 200)]
    pub external_id: Option<String>,
    /// Required unless `latest` is true; not together with it.
    #[serde(default)]
    #[schema(minimum = 1, maximum = 10000)]
    pub number: Option<i64>,
    /// Follows a webnovel: the chapters go to the last numbered volume,
    /// else the continuous chapter container, else volume 1.
    #[serde(default)]
    pub latest: bool,
    /// Default: the series name and the number.
    #[serde(default)]
    #[schema(max_length = 500)]
    pub title: Option<String>,
}

/// One chapter of a JSON request.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChapterIn {
    #[serde(default)]
    #[schema(pattern = "^[A-Za-z0-9][A-Za-z0-9._:/-]{0,199}$", max_length = 200)]
    pub external_id: Option<String>,
    /// The chapter's number; none for a special chapter (prologue,
    /// interlude…).
    #[serde(default)]
    #[schema(minimum = 0, maximum = 100000)]
    pub number: Option<i64>,
    /// Part of a split chapter (`Chapter 12 (Part 2)`), from 1.
    #[serde(default)]
    #[schema(minimum = 1, maximum = 1000)]
    pub part: Option<i64>,
    #[serde(default)]
    #[schema(max_length = 500)]
    pub title: Option<String>,
    /// The text, paragraphs separated by blank lines.
    #[schema(min_length = 1)]
    pub content: String,
}

/// How the pipeline runs the request.
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PipelineOptions {
    /// Default true; false only imports (no `pipeline:start` scope needed).
    #[serde(default)]
    pub start: Option<bool>,
    #[serde(default)]
    pub quality: Option<Quality>,
    #[serde(default)]
    pub context_backend: Option<ContextBackend>,
    /// Default true; never runs when the server disables it.
    #[serde(default)]
    pub final_review: Option<bool>,
    /// At most the token's `max_priority` and the account's ceiling (else
    /// 403 `priority_not_allowed`).
    #[serde(default)]
    pub priority: Option<Priority>,
    /// `parallel` or `strict` (spec 2.5); the JSON payload accepts it too,
    /// like `threads`.
    #[serde(default)]
    pub analysis_mode: Option<AnalysisMode>,
    /// 1 to 64; can only lower the volume's share of the provider capacity.
    #[serde(default)]
    #[schema(minimum = 1, maximum = 64)]
    pub threads: Option<i64>,
    /// Whether the calls go by the provider's batch mode (answered within
    /// 24 h at the provider's batch discount). Default: the volume's choice,
    /// else the server setting `DRAGOMAN_BATCH` (false).
    #[serde(default)]
    pub batch: Option<bool>,
}

/// The stored result's format.
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OutputOptions {
    /// `epub` only for an EPUB (and is its default); `json` otherwise.
    #[serde(default)]
    pub format: Option<ResultFormat>,
}

fn at(path: &[LocPart]) -> Vec<LocPart> {
    let mut loc = vec![LocPart::from("body")];
    loc.extend_from_slice(path);
    loc
}

/// The spec's pattern for external ids: `^[A-Za-z0-9][A-Za-z0-9._:/-]{0,199}$`.
pub fn valid_external_id(id: &str) -> bool {
    let mut chars = id.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_alphanumeric());
    first_ok
        && id.len() <= 200
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '/' | '-'))
}

/// The numbers a volume may have.
pub const VOLUME_NUMBERS: std::ops::RangeInclusive<i64> = 1..=10_000;

/// Longest series name, in characters.
pub const SERIES_NAME_MAX: usize = 500;

/// A series name: not blank, at most [`SERIES_NAME_MAX`] characters.
pub fn valid_series_name(name: &str) -> bool {
    !name.trim().is_empty() && name.chars().count() <= SERIES_NAME_MAX
}

/// A BCP 47 tag of at most 35 characters: alphanumeric subtags of 1 to 8
/// characters separated by hyphens, the first alphabetic.
pub fn valid_language(tag: &str) -> bool {
    if tag.is_empty() || tag.len() > 35 {
        return false;
    }
    let mut parts = tag.split('-');
    let first_ok = parts
        .next()
        .is_some_and(|p| (2..=8).contains(&p.len()) && p.chars().all(|c| c.is_ascii_alphabetic()));
    first_ok
        && parts.all(|p| (1..=8).contains(&p.len()) && p.chars().all(|c| c.is_ascii_alphanumeric()))
}

/// Whether two BCP 47 tags name the same language: tags compare without
/// regard to case (`pt-BR` is `pt-br`), and nothing else is equated (`en`
/// and `en-GB` are two languages to a volume).
pub fn same_language(a: &str, b: &str) -> bool {
    a.eq_ignore_ascii_case(b)
}

/// A source and a target language, as a volume or a request holds them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LanguagePair {
    pub source: String,
    pub target: String,
}

impl LanguagePair {
    pub fn new(source: &str, target: &str) -> Self {
        LanguagePair {
            source: source.to_owned(),
            target: target.to_owned(),
        }
    }

    /// Whether both languages are the same as `other`'s.
    pub fn matches(&self, other: &LanguagePair) -> bool {
        same_language(&self.source, &other.source) && same_language(&self.target, &other.target)
    }
}

impl std::fmt::Display for LanguagePair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}→{}", self.source, self.target)
    }
}

/// The issues a check found, in the order its rules ran.
#[derive(Default)]
struct Issues(Vec<Issue>);

impl Issues {
    fn push(&mut self, path: &[LocPart], kind: IssueKind, ctx: Option<IssueContext>) {
        self.0.push(Issue {
            loc: at(path),
            kind,
            ctx: ctx.map(Box::new),
        });
    }
}

impl TranslationPayload {
    /// Every rule of 2.4 that the types alone do not enforce. For an upload
    /// (`input` other than JSON) the chapters come from its files and are
    /// counted once read, and `epub` is a format only an EPUB can have.
    pub fn check(&self, input: InputKind, max_chapters: usize) -> Vec<Issue> {
        let mut issues = Issues::default();
        self.check_book(input, &mut issues);
        self.check_chapters(input, max_chapters, &mut issues);
        self.check_options(input, &mut issues);
        self.check_callbacks(&mut issues);
        issues.0
    }

    /// The book's identity: its external id, its series, its volume, its
    /// title, author and languages.
    fn check_book(&self, input: InputKind, issues: &mut Issues) {
        if let Some(id) = &self.external_id
            && !valid_external_id(id)
        {
            issues.push(&[LocPart::from("external_id")], IssueKind::Pattern, None);
        }
        match (&self.series.id, &self.series.name) {
            (None, None) => issues.push(
                &[LocPart::from("series")],
                IssueKind::Missing,
                Some(IssueContext::new().fields("id or name")),
            ),
            (_, Some(name)) if !valid_series_name(name) => issues.push(
                &[LocPart::from("series"), LocPart::from("name")],
                IssueKind::StringTooLong,
                Some(IssueContext::new().min(1).max(500)),
            ),
            (Some(id), _) if id.is_empty() || id.len() > 36 => issues.push(
                &[LocPart::from("series"), LocPart::from("id")],
                IssueKind::StringTooLong,
                Some(IssueContext::new().max(36)),
            ),
            _ => {}
        }
        if let Some(id) = &self.volume.external_id
            && !valid_external_id(id)
        {
            issues.push(
                &[LocPart::from("volume"), LocPart::from("external_id")],
                IssueKind::Pattern,
                None,
            );
        }
        match (self.volume.number, self.volume.latest) {
            (Some(_), true) => issues.push(
                &[LocPart::from("volume"), LocPart::from("latest")],
                IssueKind::ValueError,
                Some(IssueContext::new().conflicts_with("number")),
            ),
            // An EPUB without a volume takes the number its file name gives.
            (None, false) if self.volume.external_id.is_none() && input != InputKind::Epub => {
                issues.push(
                    &[LocPart::from("volume"), LocPart::from("number")],
                    IssueKind::Missing,
                    None,
                )
            }
            (Some(n), false) if !VOLUME_NUMBERS.contains(&n) => issues.push(
                &[LocPart::from("volume"), LocPart::from("number")],
                IssueKind::OutOfRange,
                Some(
                    IssueContext::new()
                        .min(*VOLUME_NUMBERS.start())
                        .max(*VOLUME_NUMBERS.end()),
                ),
            ),
            _ => {}
        }
        if let Some(title) = &self.volume.title
            && title.chars().count() > 500
        {
            issues.push(
                &[LocPart::from("volume"), LocPart::from("title")],
                IssueKind::StringTooLong,
                Some(IssueContext::new().max(500)),
            );
        }
        if let Some(author) = &self.author
            && author.chars().count() > 500
        {
            issues.push(
                &[LocPart::from("author")],
                IssueKind::StringTooLong,
                Some(IssueContext::new().max(500)),
            );
        }
        for (field, tag) in [
            ("source_language", &self.source_language),
            ("target_language", &self.target_language),
        ] {
            if !valid_language(tag) {
                issues.push(
                    &[LocPart::from(field)],
                    IssueKind::Pattern,
                    Some(IssueContext::new().max(35)),
                );
            }
        }
    }

    /// The chapters of a JSON request: how many, and each one's fields.
    fn check_chapters(&self, input: InputKind, max_chapters: usize, issues: &mut Issues) {
        if input != InputKind::Json {
            // Counted by the upload's rules once its files are read.
        } else if self.chapters.is_empty() {
            issues.push(&[LocPart::from("chapters")], IssueKind::EmptyList, None);
        } else if self.chapters.len() > max_chapters {
            issues.push(
                &[LocPart::from("chapters")],
                IssueKind::TooMany,
                Some(IssueContext::new().max(max_chapters)),
            );
        }
        let mut numbers = std::collections::HashSet::new();
        let mut external_ids = std::collections::HashSet::new();
        for (index, chapter) in self.chapters.iter().enumerate() {
            let base = [LocPart::from("chapters"), LocPart::from(index)];
            if let Some(id) = &chapter.external_id {
                if !valid_external_id(id) {
                    issues.push(
                        &[
                            base[0].clone(),
                            base[1].clone(),
                            LocPart::from("external_id"),
                        ],
                        IssueKind::Pattern,
                        None,
                    );
                } else if !external_ids.insert(id.clone()) {
                    issues.push(
                        &[
                            base[0].clone(),
                            base[1].clone(),
                            LocPart::from("external_id"),
                        ],
                        IssueKind::Duplicate,
                        None,
                    );
                }
            }
            if let Some(number) = chapter.number {
                if !(0..=100_000).contains(&number) {
                    issues.push(
                        &[base[0].clone(), base[1].clone(), LocPart::from("number")],
                        IssueKind::OutOfRange,
                        Some(IssueContext::new().min(0).max(100000)),
                    );
                } else if !numbers.insert((number, chapter.part.unwrap_or(1))) {
                    issues.push(
                        &[base[0].clone(), base[1].clone(), LocPart::from("number")],
                        IssueKind::Duplicate,
                        None,
                    );
                }
            }
            if let Some(part) = chapter.part {
                if chapter.number.is_none() {
                    issues.push(
                        &[base[0].clone(), base[1].clone(), LocPart::from("part")],
                        IssueKind::ValueError,
                        Some(IssueContext::new().requires("number")),
                    );
                } else if !(1..=1000).contains(&part) {
                    issues.push(
                        &[base[0].clone(), base[1].clone(), LocPart::from("part")],
                        IssueKind::OutOfRange,
                        Some(IssueContext::new().min(1).max(1000)),
                    );
                }
            }
            if let Some(title) = &chapter.title
                && title.chars().count() > 500
            {
                issues.push(
                    &[base[0].clone(), base[1].clone(), LocPart::from("title")],
                    IssueKind::StringTooLong,
                    Some(IssueContext::new().max(500)),
                );
            }
            if chapter.content.trim().is_empty() {
                issues.push(
                    &[base[0].clone(), base[1].clone(), LocPart::from("content")],
                    IssueKind::StringTooShort,
                    Some(IssueContext::new().min(1)),
                );
            }
        }
    }

    /// The options of the translation and of its result.
    fn check_options(&self, input: InputKind, issues: &mut Issues) {
        if self.discard_human && !self.replace_changed_chapters {
            issues.push(
                &[LocPart::from("discard_human")],
                IssueKind::ValueError,
                Some(IssueContext::new().requires("replace_changed_chapters")),
            );
        }
        let p = &self.pipeline;
        if let Some(threads) = p.threads
            && !(1..=64).contains(&threads)
        {
            issues.push(
                &[LocPart::from("pipeline"), LocPart::from("threads")],
                IssueKind::OutOfRange,
                Some(IssueContext::new().min(1).max(64)),
            );
        }
        if let Some(format) = self.output.format
            && input != InputKind::Epub
            && !ResultFormat::WITHOUT_EPUB.contains(&format)
        {
            let expected: Vec<&str> = ResultFormat::WITHOUT_EPUB
                .iter()
                .map(|f| f.as_str())
                .collect();
            issues.push(
                &[LocPart::from("output"), LocPart::from("format")],
                IssueKind::Enum,
                Some(IssueContext::new().expected(expected.join(", "))),
            );
        }
    }

    /// The events the callback is asked for.
    fn check_callbacks(&self, issues: &mut Issues) {
        // The callback URL's form is checked with its host and addresses
        // (422 `callback_refused`, spec 4.2), not here.
        let events_len: usize = self
            .callback_events
            .iter()
            .map(|e| e.as_str().chars().count())
            .sum::<usize>()
            + self.callback_events.len().saturating_sub(1);
        if events_len > 200 {
            issues.push(
                &[LocPart::from("callback_events")],
                IssueKind::StringTooLong,
                Some(IssueContext::new().max(200)),
            );
        }
        for (index, event) in self.callback_events.iter().enumerate() {
            if !CallbackEvent::REQUESTABLE.contains(event) {
                let expected: Vec<&str> = CallbackEvent::REQUESTABLE
                    .iter()
                    .map(|e| e.as_str())
                    .collect();
                issues.push(
                    &[LocPart::from("callback_events"), LocPart::from(index)],
                    IssueKind::Enum,
                    Some(IssueContext::new().expected(expected.join(", "))),
                );
            }
        }
        if !self.callback_events.is_empty() && self.callback_url.is_none() {
            issues.push(
                &[LocPart::from("callback_events")],
                IssueKind::ValueError,
                Some(IssueContext::new().requires("callback_url")),
            );
        }
    }

    pub fn start(&self) -> bool {
        self.pipeline.start.unwrap_or(true)
    }

    /// SHA-256 of the payload without its priority, over JSON with sorted
    /// keys: the same content sent again, at any priority, is a replay.
    pub fn content_hash(&self) -> String {
        let mut value = serde_json::to_value(self).unwrap_or(Value::Null);
        if let Some(pipeline) = value.get_mut("pipeline").and_then(Value::as_object_mut) {
            pipeline.remove("priority");
        }
        // serde_json's map keeps keys sorted (no `preserve_order`), so this
        // text is canonical.
        let text = value.to_string();
        hex::encode(Sha256::digest(text.as_bytes()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn payload() -> TranslationPayload {
        serde_json::from_value(json!({
            "series": {"name": "S", "create_if_missing": true},
            "volume": {"number": 1},
            "source_language": "en",
            "target_language": "fr",
            "chapters": [{"number": 1, "title": "One", "content": "Hello.\n\nWorld."}]
        }))
        .expect("valid payload")
    }

    #[test]
    fn a_valid_payload_has_no_issue() {
        assert!(payload().check(InputKind::Json, 100).is_empty());
    }

    #[test]
    fn priority_is_not_content() {
        let a = payload();
        let mut b = payload();
        b.pipeline.priority = Some(Priority::High);
        assert_eq!(a.content_hash(), b.content_hash());
        b.chapters[0].content.push('!');
        assert_ne!(a.content_hash(), b.content_hash());
    }

    #[test]
    fn rules_are_located() {
        let mut p = payload();
        p.external_id = Some("-bad".into());
        p.volume.latest = true;
        p.source_language = "english language tag way too long for bcp".into();
        p.chapters.push(p.chapters[0].clone());
        p.output.format = Some(ResultFormat::Epub);
        let kinds: Vec<(String, &str)> = p
            .check(InputKind::Json, 100)
            .into_iter()
            .map(|i| {
                (
                    i.loc
                        .iter()
                        .map(|v| serde_json::to_string(v).expect("a location serialises"))
                        .collect::<Vec<_>>()
                        .join("/"),
                    i.kind.as_str(),
                )
            })
            .collect();
        assert!(
            kinds.contains(&("\"body\"/\"external_id\"".into(), "pattern")),
            "{kinds:?}"
        );
        assert!(kinds.iter().any(|k| k.0.contains("latest")));
        assert!(kinds.iter().any(|k| k.0.contains("source_language")));
        assert!(
            kinds
                .iter()
                .any(|k| k.0.contains("\"chapters\"/1/\"number\"") && k.1 == "duplicate")
        );
        assert!(
            kinds
                .iter()
                .any(|k| k.0.contains("format") && k.1 == "enum")
        );
        assert_eq!(payload().check(InputKind::Json, 0).len(), 1);
        // An EPUB may ask for its own format; its chapters come from the file.
        let mut epub = payload();
        epub.chapters.clear();
        epub.output.format = Some(ResultFormat::Epub);
        assert!(epub.check(InputKind::Epub, 100).is_empty());
        assert_eq!(epub.check(InputKind::Txt, 100).len(), 1);
    }

    #[test]
    fn external_ids_and_languages() {
        assert!(valid_external_id("book-1/ch.2:a_b"));
        assert!(!valid_external_id(""));
        assert!(!valid_external_id(&"a".repeat(201)));
        assert!(valid_language("zh-Hant-TW"));
        assert!(!valid_language("e"));
        assert!(!valid_language("en_US"));
    }
}
