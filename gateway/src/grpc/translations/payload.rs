//! `SubmitTranslation`'s message read into the JSON payload's types
//! ([`TranslationPayload`]), with the shape rules the REST body meets when
//! serde reads it: `series` and `volume` given, both languages given,
//! closed values known. What the values mean is the scheduler's to judge,
//! as for REST. The message's fields are the payload's, so an issue's
//! location names the message's field as it is.

use crate::error::ApiError;
use dragoman_model::payload::TranslationPayload;
use dragoman_model::vocab::{ErrorCode, Issue, IssueKind};
use dragoman_proto::api::v1::SubmitTranslationRequest;
use dragoman_proto::v1::Submission;
use dragoman_proto::wire;

/// The payload the message carries, and its idempotency key.
pub fn read(
    message: SubmitTranslationRequest,
) -> Result<(TranslationPayload, Option<String>), ApiError> {
    let mut missing = Vec::new();
    if message.series.is_none() {
        missing.push("series");
    }
    if message.volume.is_none() {
        missing.push("volume");
    }
    // proto3 cannot tell an empty text from one not sent: neither names a
    // language, as a JSON body without the field does not.
    if message.source_language.is_empty() {
        missing.push("source_language");
    }
    if message.target_language.is_empty() {
        missing.push("target_language");
    }
    if !missing.is_empty() {
        let issues = missing
            .into_iter()
            .map(|field| Issue::at("body", field, IssueKind::Missing))
            .collect();
        return Err(ApiError::new(ErrorCode::InvalidPayload).with_issues(issues));
    }
    let key = message.idempotency_key.clone();
    let submission = Submission {
        external_id: message.external_id,
        series: message.series,
        volume: message.volume,
        author: message.author,
        source_language: message.source_language,
        target_language: message.target_language,
        chapters: message.chapters,
        replace_changed_chapters: message.replace_changed_chapters,
        discard_human: message.discard_human,
        provider_id: message.provider_id,
        pipeline: message.pipeline,
        output_format: message.output.and_then(|output| output.format),
        callback_url: message.callback_url,
        callback_events: message.callback_events,
    };
    let payload = wire::payload(submission).map_err(|unknown| {
        // A number the enum does not hold, or its UNSPECIFIED value set
        // explicitly: not one of the allowed values, as an unknown name is
        // in JSON.
        let issue = Issue::at("body", unknown.field, IssueKind::Enum);
        ApiError::new(ErrorCode::InvalidPayload).with_issues(vec![issue])
    })?;
    Ok((payload, key))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grpc::status::field_path;
    use dragoman_model::vocab::{Priority, ResultFormat};
    use dragoman_proto::api::v1::PayloadOutput;
    use dragoman_proto::v1::{ChapterText, PipelineChoices, SeriesTarget, VolumeTarget};
    use dragoman_proto::wire::WireEnum;

    fn message() -> SubmitTranslationRequest {
        SubmitTranslationRequest {
            series: Some(SeriesTarget {
                name: Some("Saga".into()),
                create_if_missing: true,
                ..Default::default()
            }),
            volume: Some(VolumeTarget {
                number: Some(2),
                ..Default::default()
            }),
            source_language: "en".into(),
            target_language: "fr".into(),
            chapters: vec![ChapterText {
                number: Some(1),
                content: "Hello.".into(),
                ..Default::default()
            }],
            pipeline: Some(PipelineChoices {
                start: Some(false),
                priority: Some(Priority::High.to_wire()),
                ..Default::default()
            }),
            output: Some(PayloadOutput {
                format: Some(ResultFormat::Txt.to_wire()),
            }),
            idempotency_key: Some("key-1".into()),
            ..Default::default()
        }
    }

    fn paths(error: &ApiError) -> Vec<String> {
        error.issues.iter().map(|i| field_path(&i.loc)).collect()
    }

    #[test]
    fn a_message_is_the_payload_field_for_field() {
        let (payload, key) = read(message()).expect("valid");
        assert_eq!(key.as_deref(), Some("key-1"));
        assert_eq!(payload.series.name.as_deref(), Some("Saga"));
        assert_eq!(payload.volume.number, Some(2));
        assert_eq!(payload.chapters[0].content, "Hello.");
        assert!(!payload.start());
        assert_eq!(payload.pipeline.priority, Some(Priority::High));
        assert_eq!(payload.output.format, Some(ResultFormat::Txt));
        assert!(
            payload
                .check(dragoman_model::vocab::InputKind::Json, 10)
                .is_empty()
        );
    }

    #[test]
    fn what_a_json_body_must_hold_is_required() {
        let mut bare = message();
        bare.series = None;
        bare.volume = None;
        bare.target_language.clear();
        let error = read(bare).expect_err("refused");
        assert_eq!(error.code, ErrorCode::InvalidPayload);
        assert_eq!(paths(&error), ["series", "volume", "target_language"]);
        assert!(error.issues.iter().all(|i| i.kind == IssueKind::Missing));
    }

    #[test]
    fn unknown_closed_values_are_refused_at_the_message_field() {
        let mut odd = message();
        odd.output = Some(PayloadOutput { format: Some(99) });
        let error = read(odd).expect_err("refused");
        assert_eq!(paths(&error), ["output.format"]);
        assert_eq!(error.issues[0].kind, IssueKind::Enum);

        let mut odd = message();
        odd.pipeline = Some(PipelineChoices {
            quality: Some(0),
            ..Default::default()
        });
        let error = read(odd).expect_err("refused");
        assert_eq!(paths(&error), ["pipeline.quality"]);

        let mut odd = message();
        odd.callback_events = vec![42];
        assert_eq!(paths(&read(odd).expect_err("refused")), ["callback_events"]);
    }
}
