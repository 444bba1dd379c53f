//! Conversions between the vocabulary of `dragoman_model::vocab` and the
//! proto enums, and between the translation payload and the `Submission`
//! message that carries it to the scheduler.
//!
//! An enum field left at 0 (`UNSPECIFIED`) or holding a number this build
//! does not know is a [`WireError`] naming the field: the receiving service
//! refuses the call as an invalid payload.

use crate::v1;
use dragoman_model::analysis::{
    ExtractedEntity, ExtractedTerm, Extraction, PassageExtraction, StyleNote,
};
use dragoman_model::payload::{
    ChapterIn, OutputOptions, PipelineOptions, SeriesRef, TranslationPayload, VolumeRef,
};
use dragoman_model::provider_input::{NewProvider, ProviderChanges};
use dragoman_model::upload::UploadedFile;
use dragoman_model::vocab;

/// A message field that holds no value of its enum.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("field {field} holds no known value")]
pub struct WireError {
    pub field: &'static str,
}

/// A vocabulary type and its proto enum.
pub trait WireEnum: Sized + Copy {
    /// The proto number of the value.
    fn to_wire(self) -> i32;
    /// The value of a proto number; `field` names the field for the error.
    fn from_wire(value: i32, field: &'static str) -> Result<Self, WireError>;

    /// An optional enum field.
    fn from_wire_opt(value: Option<i32>, field: &'static str) -> Result<Option<Self>, WireError> {
        value.map(|v| Self::from_wire(v, field)).transpose()
    }
}

/// Implements [`WireEnum`] for enums in scope and the proto enums of the
/// same variants: `Rust => Proto { Variants }`, or `Name { Variants }` when
/// both are named alike.
macro_rules! wire_enum {
    ($($name:ident => $wire:ident { $($variant:ident),+ $(,)? })+) => {
        $(
            impl $crate::wire::WireEnum for $name {
                fn to_wire(self) -> i32 {
                    match self {
                        $($name::$variant => $crate::v1::$wire::$variant as i32,)+
                    }
                }

                fn from_wire(
                    value: i32,
                    field: &'static str,
                ) -> Result<Self, $crate::wire::WireError> {
                    match $crate::v1::$wire::try_from(value) {
                        $(Ok($crate::v1::$wire::$variant) => Ok($name::$variant),)+
                        _ => Err($crate::wire::WireError { field }),
                    }
                }
            }
        )+
    };
    ($($name:ident { $($variant:ident),+ $(,)? })+) => {
        $crate::wire::wire_enum! { $($name => $name { $($variant),+ })+ }
    };
}
pub(crate) use wire_enum;

/// The vocabulary's enums, in a module of their own so that their names
/// can be in scope without shadowing the proto's.
mod vocabulary {
    use dragoman_model::vocab::*;

    wire_enum! {
        RequestStatus { Pending, Queued, Running, Completed, CompletedWithResiduals, Failed, Cancelled, Imported }
        InputKind { Epub, Txt, Docx, Json }
        ResultFormat { Json, Txt, TxtZip, Epub, EpubBilingual }
        ResultScope { Request, New, Volume }
        Layout { Interleaved, SideBySide }
        ControlAction { Pause, Resume, Cancel }
        Priority { Low, Normal, High }
        Quality { Fast, Normal, High, Maximum }
        ContextBackend { Internal, External, Hybrid }
        AnalysisMode { Parallel, Strict }
        Split { None, Headings }
        CallbackEvent { Finished, ChaptersTranslated }
        JobOutcome { Done, Failed }
        ProviderKind { OpenAi, OpenAiDirect, OpenAiResponses, Anthropic, CodexChatgpt }
        SeriesKind { Numbered, Continuous }
        ProjectKind { Volume, Continuous }
        VolumeStatus { Empty, Imported, Translating, Translated, Incomplete }
        Origin { Analysis, Human }
        TermLayer { Book, Series, Shared }
        EntityKind { Character, Place, Organisation, Object }
        BibleAspect { Register, Tone, Tense, Address, Style }
        SeriesAction { Start, Pause, Resume, Cancel }
        JobOperation { Translate, TranslatorNotes }
        NotePlacement { First, Each, Never }
        GlossaryFormat { Json, Csv, Tbx }
        CsvDelimiter { Comma, Semicolon, Tab }
        ImportStrategy { Skip, Replace, ReplaceAll }
        MailSecurity { None, Starttls, Tls }
        MailState { Pending, Sent, Failed }
        MailKind { Test, RequestFinished, PasswordReset }
        MailLanguage { En, Fr }
        PublicationStatus { None, Pending, Published, Failed }
    }
}

/// The payload as a `Submission` message.
pub fn submission(payload: &TranslationPayload) -> v1::Submission {
    let p = &payload.pipeline;
    v1::Submission {
        external_id: payload.external_id.clone(),
        series: Some(v1::SeriesTarget {
            id: payload.series.id.clone(),
            name: payload.series.name.clone(),
            create_if_missing: payload.series.create_if_missing,
        }),
        volume: Some(v1::VolumeTarget {
            external_id: payload.volume.external_id.clone(),
            number: payload.volume.number,
            latest: payload.volume.latest,
            title: payload.volume.title.clone(),
        }),
        author: payload.author.clone(),
        source_language: payload.source_language.clone(),
        target_language: payload.target_language.clone(),
        chapters: payload
            .chapters
            .iter()
            .map(|c| v1::ChapterText {
                external_id: c.external_id.clone(),
                number: c.number,
                part: c.part,
                title: c.title.clone(),
                content: c.content.clone(),
            })
            .collect(),
        replace_changed_chapters: payload.replace_changed_chapters,
        discard_human: payload.discard_human,
        provider_id: payload.provider_id.clone(),
        pipeline: Some(v1::PipelineChoices {
            start: p.start,
            quality: p.quality.map(WireEnum::to_wire),
            context_backend: p.context_backend.map(WireEnum::to_wire),
            final_review: p.final_review,
            priority: p.priority.map(WireEnum::to_wire),
            threads: p.threads,
            analysis_mode: p.analysis_mode.map(WireEnum::to_wire),
            batch: p.batch,
        }),
        output_format: payload.output.format.map(WireEnum::to_wire),
        callback_url: payload.callback_url.clone(),
        callback_events: payload
            .callback_events
            .iter()
            .map(|e| e.to_wire())
            .collect(),
    }
}

/// The payload a `Submission` carries.
pub fn payload(message: v1::Submission) -> Result<TranslationPayload, WireError> {
    let series = message.series.unwrap_or_default();
    let volume = message.volume.unwrap_or_default();
    let p = message.pipeline.unwrap_or_default();
    Ok(TranslationPayload {
        external_id: message.external_id,
        series: SeriesRef {
            id: series.id,
            name: series.name,
            create_if_missing: series.create_if_missing,
        },
        volume: VolumeRef {
            external_id: volume.external_id,
            number: volume.number,
            latest: volume.latest,
            title: volume.title,
        },
        author: message.author,
        source_language: message.source_language,
        target_language: message.target_language,
        chapters: message
            .chapters
            .into_iter()
            .map(|c| ChapterIn {
                external_id: c.external_id,
                number: c.number,
                part: c.part,
                title: c.title,
                content: c.content,
            })
            .collect(),
        replace_changed_chapters: message.replace_changed_chapters,
        discard_human: message.discard_human,
        provider_id: message.provider_id,
        pipeline: PipelineOptions {
            start: p.start,
            quality: WireEnum::from_wire_opt(p.quality, "pipeline.quality")?,
            context_backend: WireEnum::from_wire_opt(
                p.context_backend,
                "pipeline.context_backend",
            )?,
            final_review: p.final_review,
            priority: WireEnum::from_wire_opt(p.priority, "pipeline.priority")?,
            threads: p.threads,
            analysis_mode: WireEnum::from_wire_opt(p.analysis_mode, "pipeline.analysis_mode")?,
            batch: p.batch,
        },
        output: OutputOptions {
            format: WireEnum::from_wire_opt(message.output_format, "output.format")?,
        },
        callback_url: message.callback_url,
        callback_events: message
            .callback_events
            .into_iter()
            .map(|e| WireEnum::from_wire(e, "callback_events"))
            .collect::<Result<_, _>>()?,
    })
}

/// Uploaded files as `UploadedFile` messages.
pub fn uploaded_files(files: &[UploadedFile]) -> Vec<v1::UploadedFile> {
    files
        .iter()
        .map(|f| v1::UploadedFile {
            name: f.name.clone(),
            blob_key: f.blob_key.clone(),
            sha256: f.sha256.clone(),
            size: f.size,
        })
        .collect()
}

/// The uploaded files a `SubmitRequest` names.
pub fn files(message: Vec<v1::UploadedFile>) -> Vec<UploadedFile> {
    message
        .into_iter()
        .map(|f| UploadedFile {
            name: f.name,
            blob_key: f.blob_key,
            sha256: f.sha256,
            size: f.size,
        })
        .collect()
}

/// The split a `SubmitRequest` asks for; not given is `none`.
pub fn split(value: i32) -> Result<vocab::Split, WireError> {
    if value == 0 {
        return Ok(vocab::Split::None);
    }
    vocab::Split::from_wire(value, "split")
}

/// A provider to register as an `AddProvider` message.
pub fn add_provider(new: &NewProvider) -> v1::AddProviderRequest {
    v1::AddProviderRequest {
        name: new.name.clone(),
        kind: new.kind.to_wire(),
        model: new.model.clone(),
        base_url: new.base_url.clone(),
        api_key_env: new.api_key_env.clone(),
        price_input: new.price_input,
        price_output: new.price_output,
        price_cached_input: new.price_cached_input,
        capacity: new.capacity.map(capacity_of),
        fallback: new.fallback.clone(),
        batch_discount: new.batch_discount,
    }
}

/// Saturated, so a huge capacity is still refused as out of range.
fn capacity_of(capacity: i64) -> i32 {
    i32::try_from(capacity).unwrap_or(if capacity < 0 { i32::MIN } else { i32::MAX })
}

/// An administrator's changes to provider `provider_id` as an
/// `UpdateProvider` message.
pub fn update_provider(provider_id: &str, changes: &ProviderChanges) -> v1::UpdateProviderRequest {
    v1::UpdateProviderRequest {
        provider_id: provider_id.to_owned(),
        model: changes.model.clone(),
        base_url: changes.base_url.clone(),
        api_key_env: changes.api_key_env.clone(),
        price_input: changes.price_input,
        price_output: changes.price_output,
        price_cached_input: changes.price_cached_input,
        capacity: changes.capacity.map(capacity_of),
        batch_discount: changes.batch_discount,
    }
}

/// The provider and the changes an `UpdateProvider` message names.
pub fn provider_changes(message: v1::UpdateProviderRequest) -> (String, ProviderChanges) {
    let changes = ProviderChanges {
        model: message.model,
        base_url: message.base_url,
        api_key_env: message.api_key_env,
        price_input: message.price_input,
        price_output: message.price_output,
        price_cached_input: message.price_cached_input,
        capacity: message.capacity.map(i64::from),
        batch_discount: message.batch_discount,
    };
    (message.provider_id, changes)
}

/// The provider an `AddProvider` message describes.
pub fn new_provider(message: v1::AddProviderRequest) -> Result<NewProvider, WireError> {
    Ok(NewProvider {
        name: message.name,
        kind: WireEnum::from_wire(message.kind, "kind")?,
        model: message.model,
        base_url: message.base_url,
        api_key_env: message.api_key_env,
        price_input: message.price_input,
        price_output: message.price_output,
        price_cached_input: message.price_cached_input,
        capacity: message.capacity.map(i64::from),
        fallback: message.fallback,
        batch_discount: message.batch_discount,
    })
}

/// A passage's analysis as the memory service receives it.
pub fn passage_analysis(analysis: PassageExtraction) -> v1::PassageAnalysis {
    let Extraction {
        entities,
        terms,
        style,
        summary,
        events,
    } = analysis.extraction;
    v1::PassageAnalysis {
        passage_id: analysis.passage_id,
        entities: entities
            .into_iter()
            .map(|e| v1::ExtractedEntity {
                kind: e.kind.to_wire(),
                name: e.name,
                aliases: e.aliases,
                target_name: e.target_name,
                gender: e.gender,
                address: e.address,
                description: e.description,
                evidence: e.evidence,
            })
            .collect(),
        terms: terms
            .into_iter()
            .map(|t| v1::ExtractedTerm {
                source: t.source,
                translation: t.translation,
                category: t.category,
                evidence: t.evidence,
            })
            .collect(),
        style: style
            .into_iter()
            .map(|s| v1::StyleNote {
                aspect: s.aspect.to_wire(),
                text: s.text,
                evidence: s.evidence,
            })
            .collect(),
        summary,
        events,
        failed: analysis.failed,
    }
}

/// A passage's analysis from the wire; entities and style notes whose kind
/// or aspect this build does not know are left out rather than refusing
/// the whole analysis.
pub fn passage_extraction(analysis: v1::PassageAnalysis) -> PassageExtraction {
    let entities = analysis
        .entities
        .into_iter()
        .filter_map(|e| {
            Some(ExtractedEntity {
                kind: vocab::EntityKind::from_wire(e.kind, "kind").ok()?,
                name: e.name,
                aliases: e.aliases,
                target_name: e.target_name,
                gender: e.gender,
                address: e.address,
                description: e.description,
                evidence: e.evidence,
            })
        })
        .collect();
    let terms = analysis
        .terms
        .into_iter()
        .map(|t| ExtractedTerm {
            source: t.source,
            translation: t.translation,
            category: t.category,
            evidence: t.evidence,
        })
        .collect();
    let style = analysis
        .style
        .into_iter()
        .filter_map(|s| {
            Some(StyleNote {
                aspect: vocab::BibleAspect::from_wire(s.aspect, "aspect").ok()?,
                text: s.text,
                evidence: s.evidence,
            })
        })
        .collect();
    PassageExtraction {
        passage_id: analysis.passage_id,
        extraction: Extraction {
            entities,
            terms,
            style,
            summary: analysis.summary,
            events: analysis.events,
        },
        failed: analysis.failed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dragoman_model::vocab::{Priority, Quality, RequestStatus, ResultFormat};

    #[test]
    fn an_analysis_crosses_and_comes_back() {
        let original = PassageExtraction {
            passage_id: "p".into(),
            extraction: Extraction {
                entities: vec![ExtractedEntity {
                    kind: vocab::EntityKind::Place,
                    name: "Ys".into(),
                    aliases: vec!["Is".into()],
                    target_name: Some("Ys".into()),
                    gender: None,
                    address: None,
                    description: "a drowned city".into(),
                    evidence: "the city of Ys".into(),
                }],
                terms: vec![ExtractedTerm {
                    source: "korrigan".into(),
                    translation: None,
                    category: "creature".into(),
                    evidence: "a korrigan".into(),
                }],
                style: vec![StyleNote {
                    aspect: vocab::BibleAspect::Tense,
                    text: "past".into(),
                    evidence: "sank".into(),
                }],
                summary: "Ys sinks.".into(),
                events: vec!["Ys sinks".into()],
            },
            failed: false,
        };
        assert_eq!(
            passage_extraction(passage_analysis(original.clone())),
            original
        );
        let mut unknown = passage_analysis(original);
        unknown.entities[0].kind = 0;
        assert!(passage_extraction(unknown).extraction.entities.is_empty());
    }

    #[test]
    fn every_status_crosses_and_comes_back() {
        for status in RequestStatus::ALL {
            assert_eq!(
                RequestStatus::from_wire(status.to_wire(), "status"),
                Ok(*status)
            );
        }
        assert_eq!(
            RequestStatus::from_wire(0, "status"),
            Err(WireError { field: "status" })
        );
        assert!(RequestStatus::from_wire(99, "status").is_err());
    }

    #[test]
    fn a_payload_crosses_unchanged() {
        let original: TranslationPayload = serde_json::from_value(serde_json::json!({
            "external_id": "book-1",
            "series": {"name": "S", "create_if_missing": true},
            "volume": {"number": 2, "title": "Deux"},
            "source_language": "en",
            "target_language": "fr",
            "chapters": [{"number": 1, "part": 2, "title": "One", "content": "Été.\n\nHiver."}],
            "pipeline": {"quality": "high", "priority": "low", "threads": 3},
            "output": {"format": "txt-zip"},
            "callback_url": "https://hooks.example.com/x",
            "callback_events": ["chapters.translated"]
        }))
        .expect("valid payload");
        let back = payload(submission(&original)).expect("decodes");
        assert_eq!(back.content_hash(), original.content_hash());
        assert_eq!(back.pipeline.quality, Some(Quality::High));
        assert_eq!(back.pipeline.priority, Some(Priority::Low));
        assert_eq!(back.output.format, Some(ResultFormat::TxtZip));
    }
}
