//! Book uploads (spec 2.5, 4.2): the options a multipart form or a raw EPUB's
//! query string carries, the files it sent, and the rules that only uploads
//! have.
//!
//! The gateway reads the fields into [`UploadForm`] (shape: known fields,
//! types, allowed values), streams each file into the blob store and sends
//! the options as a [`TranslationPayload`] without chapters plus the
//! [`UploadedFile`]s. The scheduler reads the files with the `book` crate,
//! fills what an EPUB states itself, and applies [`check`] once: the
//! payload's rules located at the form's field names, then the upload's own.

use crate::payload::{OutputOptions, PipelineOptions, SeriesRef, TranslationPayload, VolumeRef};
use crate::vocab::{
    AnalysisMode, CallbackEvent, ContextBackend, InputKind, Issue, IssueKind, Priority, Quality,
    ResultFormat, Split,
};
use crate::vocab::{IssueContext, LocPart};
use serde::{Deserialize, Deserializer};
use sha2::{Digest, Sha256};

/// `volume`: a number, or `latest` (spec 2.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VolumeChoice {
    Number(i64),
    Latest,
}

impl<'de> Deserialize<'de> for VolumeChoice {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        if text == "latest" {
            return Ok(VolumeChoice::Latest);
        }
        text.parse::<i64>().map(VolumeChoice::Number).map_err(|_| {
            serde::de::Error::invalid_type(
                serde::de::Unexpected::Other("text"),
                &"an integer or `latest`",
            )
        })
    }
}

/// The upload fields of spec 2.5, as text fields or query parameters give
/// them. Empty fields are dropped before reading, so they count as not given.
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UploadForm {
    /// The client's identifier (same pattern as in JSON).
    #[serde(default)]
    #[schema(pattern = "^[A-Za-z0-9][A-Za-z0-9._:/-]{0,199}$", max_length = 200)]
    pub external_id: Option<String>,
    /// A series by name, created when missing; not with `series_id`;
    /// required for TXT or DOCX.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 500)]
    pub series: Option<String>,
    /// A series the caller owns.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 36)]
    pub series_id: Option<String>,
    /// 1 to 10000, or `latest` (TXT only); required for TXT. For an EPUB in
    /// a series it is taken from the file name when free, else the next
    /// number.
    #[serde(default)]
    #[schema(schema_with = volume_choice)]
    pub volume: Option<VolumeChoice>,
    #[serde(default)]
    #[schema(pattern = "^[A-Za-z0-9][A-Za-z0-9._:/-]{0,199}$", max_length = 200)]
    pub volume_external_id: Option<String>,
    /// An EPUB keeps its own title otherwise.
    #[serde(default)]
    #[schema(max_length = 500)]
    pub title: Option<String>,
    #[serde(default)]
    #[schema(max_length = 500)]
    pub author: Option<String>,
    /// BCP 47; required for TXT or DOCX.
    #[serde(default)]
    #[schema(pattern = "^[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*$", max_length = 35)]
    pub source_language: Option<String>,
    /// BCP 47; required for TXT or DOCX.
    #[serde(default)]
    #[schema(pattern = "^[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*$", max_length = 35)]
    pub target_language: Option<String>,
    #[serde(default)]
    #[schema(max_length = 36)]
    pub provider_id: Option<String>,
    #[serde(default)]
    pub quality: Option<Quality>,
    #[serde(default)]
    pub context_backend: Option<ContextBackend>,
    /// Default true; false only imports.
    #[serde(default)]
    pub start: Option<bool>,
    /// Default true; never runs when the server disables it.
    #[serde(default)]
    pub final_review: Option<bool>,
    /// `epub` only for an EPUB (and is its default).
    #[serde(default)]
    pub output_format: Option<ResultFormat>,
    #[serde(default)]
    #[schema(max_length = 2000)]
    pub callback_url: Option<String>,
    /// Comma-separated event names.
    #[serde(default)]
    #[schema(max_length = 200)]
    pub callback_events: Option<String>,
    /// Default false.
    #[serde(default)]
    pub replace_changed_chapters: Option<bool>,
    /// Default false.
    #[serde(default)]
    pub discard_human: Option<bool>,
    #[serde(default)]
    pub priority: Option<Priority>,
    /// Default: the volume's choice, else the server setting
    /// `ANALYSIS_MODE`.
    #[serde(default)]
    pub analysis_mode: Option<AnalysisMode>,
    /// Can only lower the volume's share of the provider's capacity.
    #[serde(default)]
    #[schema(minimum = 1, maximum = 64)]
    pub threads: Option<i64>,
    /// Whether the calls go by the provider's batch mode. Default: the
    /// volume's choice, else the server setting `DRAGOMAN_BATCH` (false).
    #[serde(default)]
    pub batch: Option<bool>,
    /// TXT or DOCX only: `headings` cuts one file at its chapter headings.
    #[serde(default)]
    pub split: Option<Split>,
}

/// `volume`: an integer 1 to 10000 or `latest`.
fn volume_choice() -> utoipa::openapi::schema::Schema {
    use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Schema, Type};
    let choice = OneOfBuilder::new()
        .item(
            ObjectBuilder::new()
                .schema_type(Type::Integer)
                .minimum(Some(1))
                .maximum(Some(10_000)),
        )
        .item(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .enum_values(Some(["latest"])),
        )
        .build();
    Schema::OneOf(choice)
}

impl UploadForm {
    /// The options as a payload without chapters, and the split. An unknown
    /// event name in `callback_events` is a shape error, located there.
    pub fn into_payload(self) -> Result<(TranslationPayload, Split), Issue> {
        let callback_events = match &self.callback_events {
            None => Vec::new(),
            Some(list) => list
                .split(',')
                .map(str::trim)
                .filter(|name| !name.is_empty())
                .map(|name| {
                    name.parse::<CallbackEvent>().map_err(|_| {
                        Issue::at("body", "callback_events", IssueKind::Enum).with_ctx(
                            IssueContext::new()
                                .expected(CallbackEvent::ChaptersTranslated.as_str()),
                        )
                    })
                })
                .collect::<Result<Vec<_>, _>>()?,
        };
        let payload = TranslationPayload {
            external_id: self.external_id,
            series: SeriesRef {
                create_if_missing: self.series.is_some(),
                id: self.series_id,
                name: self.series,
            },
            volume: VolumeRef {
                external_id: self.volume_external_id,
                number: match self.volume {
                    Some(VolumeChoice::Number(n)) => Some(n),
                    _ => None,
                },
                latest: self.volume == Some(VolumeChoice::Latest),
                title: self.title,
            },
            author: self.author,
            source_language: self.source_language.unwrap_or_default(),
            target_language: self.target_language.unwrap_or_default(),
            chapters: Vec::new(),
            replace_changed_chapters: self.replace_changed_chapters.unwrap_or(false),
            discard_human: self.discard_human.unwrap_or(false),
            provider_id: self.provider_id,
            pipeline: PipelineOptions {
                start: self.start,
                quality: self.quality,
                context_backend: self.context_backend,
                final_review: self.final_review,
                priority: self.priority,
                analysis_mode: self.analysis_mode,
                threads: self.threads,
                batch: self.batch,
            },
            output: OutputOptions {
                format: self.output_format,
            },
            callback_url: self.callback_url,
            callback_events,
        };
        Ok((payload, self.split.unwrap_or_default()))
    }
}

/// One uploaded file, already in the blob store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadedFile {
    /// The client's file name (its number names a TXT or DOCX chapter).
    pub name: String,
    /// Where the gateway stored it.
    pub blob_key: String,
    /// SHA-256 (hex) of its bytes, computed as they arrived.
    pub sha256: String,
    pub size: u64,
}

/// What a file name says it holds. Markdown and HTML are named so that
/// their refusal can say so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileType {
    Book(InputKind),
    Markdown,
    Html,
    Unknown,
}

/// The kind of a file from its extension.
pub fn file_type(name: &str) -> FileType {
    let lower = name.to_ascii_lowercase();
    let extension = lower.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
    match extension {
        "epub" => FileType::Book(InputKind::Epub),
        "txt" | "text" => FileType::Book(InputKind::Txt),
        "docx" => FileType::Book(InputKind::Docx),
        "json" => FileType::Book(InputKind::Json),
        "md" | "markdown" | "mdown" => FileType::Markdown,
        "html" | "htm" | "xhtml" => FileType::Html,
        _ => FileType::Unknown,
    }
}

/// The form field a payload location stands for: `volume.number` is the
/// `volume` field, `pipeline.threads` is `threads`, and so on.
pub fn form_loc(loc: &[LocPart]) -> Vec<LocPart> {
    let parts: Vec<&str> = loc.iter().skip(1).filter_map(LocPart::as_str).collect();
    let field = match parts.as_slice() {
        ["series", "id", ..] => "series_id",
        ["series", ..] => "series",
        ["volume", "external_id", ..] => "volume_external_id",
        ["volume", "title", ..] => "title",
        ["volume", ..] => "volume",
        ["pipeline", option, ..] => option,
        ["output", ..] => "output_format",
        [first, ..] => first,
        [] => return loc.to_vec(),
    };
    vec![LocPart::from("body"), LocPart::from(field)]
}

/// The rules of an upload, with the payload's own located at form fields.
/// `chapters` is the number of chapters read from the files.
pub fn check(
    payload: &TranslationPayload,
    input: InputKind,
    split: Split,
    chapters: usize,
    max_chapters: usize,
) -> Vec<Issue> {
    let mut issues: Vec<Issue> = payload
        .check(input, max_chapters)
        .into_iter()
        .map(|issue| Issue {
            loc: form_loc(&issue.loc),
            ..issue
        })
        .collect();
    let field = |name: &str, kind: IssueKind| Issue::at("body", name, kind);
    if payload.series.id.is_some() && payload.series.name.is_some() {
        issues.push(
            field("series_id", IssueKind::ValueError)
                .with_ctx(IssueContext::new().conflicts_with("series")),
        );
    }
    // A series and a volume are required by the payload's rules; an EPUB
    // has them filled from what it states before this check.
    let chapters_kind = matches!(input, InputKind::Txt | InputKind::Docx);
    if payload.volume.latest && input != InputKind::Txt {
        issues.push(
            field("volume", IssueKind::ValueError).with_ctx(IssueContext::new().latest("TXT only")),
        );
    }
    if split == Split::Headings && !chapters_kind {
        issues.push(
            field("split", IssueKind::ValueError)
                .with_ctx(IssueContext::new().split("TXT or DOCX only")),
        );
    }
    if chapters == 0 {
        issues.push(field("file", IssueKind::EmptyList));
    } else if chapters > max_chapters {
        issues.push(
            field("files", IssueKind::TooMany).with_ctx(IssueContext::new().max(max_chapters)),
        );
    }
    issues.dedup();
    issues
}

/// What a replay must match: the options (priority aside, as for JSON), the
/// files' names and contents, and the split.
pub fn content_hash(payload: &TranslationPayload, files: &[UploadedFile], split: Split) -> String {
    let mut hash = Sha256::new();
    hash.update(payload.content_hash().as_bytes());
    for file in files {
        hash.update(b"\0");
        hash.update(file.name.as_bytes());
        hash.update(b"\0");
        hash.update(file.sha256.as_bytes());
    }
    hash.update(b"\0");
    hash.update(split.as_str().as_bytes());
    hex::encode(hash.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(pairs: &[(&str, &str)]) -> Result<UploadForm, serde_urlencoded::de::Error> {
        let text = serde_urlencoded::to_string(pairs).expect("encodes");
        serde_urlencoded::from_str(&text)
    }

    fn payload(pairs: &[(&str, &str)]) -> (TranslationPayload, Split) {
        form(pairs)
            .expect("valid form")
            .into_payload()
            .expect("valid events")
    }

    fn fields(issues: &[Issue]) -> Vec<String> {
        issues
            .iter()
            .map(|i| {
                i.loc
                    .get(1)
                    .and_then(LocPart::as_str)
                    .unwrap_or("")
                    .to_owned()
            })
            .collect()
    }

    #[test]
    fn fields_become_the_payload_options() {
        let (p, split) = payload(&[
            ("series", "Saga"),
            ("volume", "latest"),
            ("source_language", "en"),
            ("target_language", "fr"),
            ("threads", "4"),
            ("start", "false"),
            ("split", "headings"),
            ("callback_url", "https://hooks.example.com/x"),
            ("callback_events", " chapters.translated "),
        ]);
        assert_eq!(split, Split::Headings);
        assert_eq!(p.series.name.as_deref(), Some("Saga"));
        assert!(p.series.create_if_missing);
        assert!(p.volume.latest && p.volume.number.is_none());
        assert_eq!(p.pipeline.threads, Some(4));
        assert!(!p.start());
        assert_eq!(p.callback_events, vec![CallbackEvent::ChaptersTranslated]);
        assert!(check(&p, InputKind::Txt, split, 3, 10).is_empty());
    }

    #[test]
    fn shape_errors_are_refused_while_reading() {
        assert!(form(&[("volume", "first")]).is_err());
        assert!(form(&[("threads", "many")]).is_err());
        assert!(form(&[("start", "yes")]).is_err());
        assert!(form(&[("colour", "red")]).is_err());
        assert!(form(&[("output_format", "pdf")]).is_err());
        let unknown_event = form(&[("callback_events", "chapters.translated,book.sold")])
            .expect("a text field")
            .into_payload()
            .unwrap_err();
        assert_eq!(unknown_event.kind, IssueKind::Enum);
    }

    #[test]
    fn rules_are_located_at_form_fields() {
        let (p, split) = payload(&[
            ("series", "S"),
            ("series_id", "abc"),
            ("volume", "0"),
            ("target_language", "fr"),
            ("threads", "99"),
            ("split", "headings"),
            ("output_format", "epub"),
        ]);
        let issues = check(&p, InputKind::Txt, split, 1, 10);
        let at = fields(&issues);
        for expected in [
            "series_id",
            "volume",
            "threads",
            "source_language",
            "output_format",
        ] {
            assert!(at.contains(&expected.to_owned()), "{expected} in {at:?}");
        }

        // An EPUB states its own series, volume and languages, but not
        // `latest` nor a split.
        let (p, split) = payload(&[
            ("target_language", "fr"),
            ("volume", "latest"),
            ("split", "headings"),
        ]);
        let mut p = p;
        p.series.name = Some("Book".into());
        p.source_language = "en".into();
        let at = fields(&check(&p, InputKind::Epub, split, 4, 10));
        assert_eq!(at, ["volume", "split"]);

        let (p, split) = payload(&[
            ("series", "S"),
            ("volume", "1"),
            ("source_language", "en"),
            ("target_language", "fr"),
        ]);
        assert_eq!(fields(&check(&p, InputKind::Docx, split, 0, 10)), ["file"]);
        assert_eq!(
            fields(&check(&p, InputKind::Docx, split, 11, 10)),
            ["files"]
        );
        let at = fields(&check(&p, InputKind::Docx, Split::None, 2, 10));
        assert!(at.is_empty(), "{at:?}");
    }

    #[test]
    fn file_types_come_from_extensions() {
        assert_eq!(file_type("Book.EPUB"), FileType::Book(InputKind::Epub));
        assert_eq!(file_type("012.txt"), FileType::Book(InputKind::Txt));
        assert_eq!(
            file_type("Chapter 12.docx"),
            FileType::Book(InputKind::Docx)
        );
        assert_eq!(file_type("req.json"), FileType::Book(InputKind::Json));
        assert_eq!(file_type("notes.md"), FileType::Markdown);
        assert_eq!(file_type("page.html"), FileType::Html);
        assert_eq!(file_type("archive.zip"), FileType::Unknown);
        assert_eq!(file_type("noextension"), FileType::Unknown);
    }

    #[test]
    fn the_hash_covers_files_and_split_but_not_priority() {
        let (p, split) = payload(&[("series", "S"), ("volume", "1")]);
        let file = UploadedFile {
            name: "01.txt".into(),
            blob_key: "uploads/a".into(),
            sha256: "aa".into(),
            size: 2,
        };
        let base = content_hash(&p, std::slice::from_ref(&file), split);
        let mut other_key = file.clone();
        other_key.blob_key = "uploads/b".into();
        assert_eq!(base, content_hash(&p, &[other_key], split));
        let mut high = p.clone();
        high.pipeline.priority = Some(Priority::High);
        assert_eq!(
            base,
            content_hash(&high, std::slice::from_ref(&file), split)
        );
        let mut renamed = file.clone();
        renamed.name = "02.txt".into();
        assert_ne!(base, content_hash(&p, &[renamed], split));
        assert_ne!(base, content_hash(&p, &[file], Split::Headings));
    }
}
