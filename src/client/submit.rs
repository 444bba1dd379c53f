//! Sending the book of `translate`: an EPUB, TXT or DOCX file is streamed
//! with `UploadTranslation` (options, the file's name, its bytes in
//! chunks); a `.json` file is a translation payload (spec 2.4) sent with
//! `SubmitTranslation`. The command line's choices (target and source
//! language, provider, quality, format) override the payload's.

use super::connect::Translations;
use super::error::ClientError;
use crate::commands::TranslateArgs;
use dragoman_model::payload::TranslationPayload;
use dragoman_proto::api::v1::upload_translation_request::Part;
use dragoman_proto::api::v1::{
    PayloadOutput, SubmitTranslationRequest, UploadFile, UploadOptions, UploadTranslationRequest,
};
use dragoman_proto::v1::RequestSummary;
use dragoman_proto::wire::{WireEnum, submission};
use std::path::Path;

/// Bytes per upload message: small next to any message limit.
const CHUNK_BYTES: usize = 64 * 1024;

/// How a file goes to the server, from its extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Input {
    /// EPUB, TXT or DOCX: uploaded as a file.
    Upload,
    /// A translation payload.
    Json,
}

impl Input {
    pub fn of(path: &Path) -> Result<Input, ClientError> {
        let extension = path
            .extension()
            .map(|e| e.to_string_lossy().to_ascii_lowercase())
            .unwrap_or_default();
        match extension.as_str() {
            "epub" | "txt" | "docx" => Ok(Input::Upload),
            "json" => Ok(Input::Json),
            _ => Err(ClientError::UnknownKind(path.to_owned())),
        }
    }
}

/// Sends the file of `args` and returns the request's summary.
pub async fn send(
    client: &mut Translations,
    args: &TranslateArgs,
    input: Input,
    bytes: Vec<u8>,
) -> Result<RequestSummary, ClientError> {
    let summary = match input {
        Input::Upload => {
            client
                .upload_translation(tokio_stream::iter(upload_messages(args, bytes)))
                .await
                .map_err(ClientError::from_status)?
                .into_inner()
                .summary
        }
        Input::Json => {
            client
                .submit_translation(submission_request(args, &bytes)?)
                .await
                .map_err(ClientError::from_status)?
                .into_inner()
                .summary
        }
    };
    summary.ok_or_else(|| ClientError::Protocol("an answer without its summary".to_owned()))
}

/// The messages of an upload: the options, the file's name, its chunks.
pub fn upload_messages(args: &TranslateArgs, bytes: Vec<u8>) -> Vec<UploadTranslationRequest> {
    let options = UploadOptions {
        target_language: Some(args.to.clone()),
        source_language: args.from.clone(),
        provider_id: args.provider.clone(),
        quality: args.quality.map(WireEnum::to_wire),
        output_format: args.format.map(WireEnum::to_wire),
        ..Default::default()
    };
    let filename = args
        .file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let part = |part| UploadTranslationRequest { part: Some(part) };
    let mut messages = vec![
        part(Part::Options(options)),
        part(Part::File(UploadFile { filename })),
    ];
    messages.extend(
        bytes
            .chunks(CHUNK_BYTES)
            .map(|chunk| part(Part::Chunk(chunk.to_vec()))),
    );
    messages
}

/// The payload of a `.json` file with the command line's choices.
pub fn submission_request(
    args: &TranslateArgs,
    bytes: &[u8],
) -> Result<SubmitTranslationRequest, ClientError> {
    let not_payload = |detail: String| ClientError::Payload {
        path: args.file.clone(),
        detail,
    };
    let mut json: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| not_payload(e.to_string()))?;
    let object = json
        .as_object_mut()
        .ok_or_else(|| not_payload("not a JSON object".to_owned()))?;
    // Set before reading the payload: both are required fields of it.
    object.insert("target_language".into(), args.to.clone().into());
    if let Some(from) = &args.from {
        object.insert("source_language".into(), from.clone().into());
    }
    let mut payload: TranslationPayload =
        serde_json::from_value(json).map_err(|e| not_payload(e.to_string()))?;
    if let Some(provider) = &args.provider {
        payload.provider_id = Some(provider.clone());
    }
    if let Some(quality) = args.quality {
        payload.pipeline.quality = Some(quality);
    }
    if let Some(format) = args.format {
        payload.output.format = Some(format);
    }
    let s = submission(&payload);
    Ok(SubmitTranslationRequest {
        external_id: s.external_id,
        series: s.series,
        volume: s.volume,
        author: s.author,
        source_language: s.source_language,
        target_language: s.target_language,
        chapters: s.chapters,
        replace_changed_chapters: s.replace_changed_chapters,
        discard_human: s.discard_human,
        provider_id: s.provider_id,
        pipeline: s.pipeline,
        output: Some(PayloadOutput {
            format: s.output_format,
        }),
        callback_url: s.callback_url,
        callback_events: s.callback_events,
        idempotency_key: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::ServerArgs;
    use dragoman_model::vocab::{Quality, ResultFormat};
    use std::path::PathBuf;

    fn args(file: &str) -> TranslateArgs {
        TranslateArgs {
            file: PathBuf::from(file),
            to: "fr".into(),
            from: None,
            out: None,
            format: None,
            provider: Some("p1".into()),
            quality: Some(Quality::High),
            server: ServerArgs {
                server: "http://127.0.0.1:8080".into(),
                token_env: "DRAGOMAN_TOKEN".into(),
                lang: None,
            },
        }
    }

    #[test]
    fn the_kind_of_file_comes_from_its_extension() {
        assert_eq!(
            Input::of(Path::new("a/Book.EPUB")).ok(),
            Some(Input::Upload)
        );
        assert_eq!(Input::of(Path::new("001.txt")).ok(), Some(Input::Upload));
        assert_eq!(Input::of(Path::new("c.docx")).ok(), Some(Input::Upload));
        assert_eq!(Input::of(Path::new("p.json")).ok(), Some(Input::Json));
        let error = Input::of(Path::new("book.pdf")).expect_err("a PDF");
        assert!(error.to_string().contains("book.pdf"), "{error}");
    }

    #[test]
    fn an_upload_sends_options_then_the_named_file_in_chunks() {
        let bytes = vec![7u8; CHUNK_BYTES + 10];
        let messages = upload_messages(&args("dir/book.epub"), bytes);
        assert_eq!(messages.len(), 4);
        match &messages[0].part {
            Some(Part::Options(options)) => {
                assert_eq!(options.target_language.as_deref(), Some("fr"));
                assert_eq!(options.provider_id.as_deref(), Some("p1"));
                assert_eq!(options.quality, Some(Quality::High.to_wire()));
                assert_eq!(options.source_language, None);
            }
            other => panic!("options first, not {other:?}"),
        }
        assert!(
            matches!(&messages[1].part, Some(Part::File(f)) if f.filename == "book.epub"),
            "{:?}",
            messages[1]
        );
        let sizes: Vec<usize> = messages[2..]
            .iter()
            .map(|m| match &m.part {
                Some(Part::Chunk(c)) => c.len(),
                other => panic!("a chunk, not {other:?}"),
            })
            .collect();
        assert_eq!(sizes, [CHUNK_BYTES, 10]);
    }

    #[test]
    fn a_payload_takes_the_command_line_choices() {
        let mut args = args("p.json");
        args.format = Some(ResultFormat::Txt);
        args.from = Some("en".into());
        let body = br#"{"series":{"name":"S","create_if_missing":true},"volume":{"number":1},
            "source_language":"de","target_language":"es",
            "chapters":[{"number":1,"content":"Hello."}]}"#;
        let request = submission_request(&args, body).expect("a payload");
        assert_eq!(request.target_language, "fr");
        assert_eq!(request.source_language, "en");
        assert_eq!(request.provider_id.as_deref(), Some("p1"));
        assert_eq!(
            request.output.and_then(|o| o.format),
            Some(ResultFormat::Txt.to_wire())
        );
        assert_eq!(
            request.pipeline.and_then(|p| p.quality),
            Some(Quality::High.to_wire())
        );
        assert_eq!(request.chapters.len(), 1);
    }

    #[test]
    fn a_json_file_that_is_no_payload_is_refused_before_sending() {
        let error =
            submission_request(&args("p.json"), br#"{"chapters": 3}"#).expect_err("not a payload");
        assert!(error.to_string().contains("p.json"), "{error}");
        let error = submission_request(&args("p.json"), b"[1]").expect_err("an array");
        assert!(error.to_string().contains("not a JSON object"), "{error}");
    }
}
