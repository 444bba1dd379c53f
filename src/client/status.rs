//! `dragoman status ID`: the main fields of a request's status document,
//! or the whole document as the REST API's JSON with `--json`.

use super::connect::connect;
use super::error::ClientError;
use super::progress::Step;
use super::watch::status_of;
use crate::commands::StatusArgs;
use dragoman_model::documents::request::RequestDocument;
use dragoman_model::vocab::ResultFormat;
use dragoman_proto::api::v1::GetTranslationRequest;
use dragoman_proto::v1::StatusDocument;
use dragoman_proto::wire::WireEnum;

pub async fn run(args: StatusArgs) -> Result<(), ClientError> {
    let mut client = connect(&args.server).await?;
    let document = client
        .get_translation(GetTranslationRequest {
            request_id: args.id.clone(),
            wait: 0,
        })
        .await
        .map_err(ClientError::from_status)?
        .into_inner()
        .document
        .ok_or_else(|| ClientError::Protocol("an answer without its document".to_owned()))?;
    if args.json {
        let document = RequestDocument::try_from(document)
            .map_err(|e| ClientError::Protocol(format!("status document: {e}")))?;
        let text = serde_json::to_string_pretty(&document)
            .map_err(|e| ClientError::Protocol(format!("status document: {e}")))?;
        println!("{text}");
    } else {
        println!("{}", summary(&document)?);
    }
    Ok(())
}

/// The fields a person looks at first, one per line.
pub fn summary(document: &StatusDocument) -> Result<String, ClientError> {
    let step = Step::of(document);
    let mut lines = vec![
        format!("request  {}", document.request_id),
        format!("status   {}", status_of(document)?),
        format!("stage    {}", step.stage),
        format!("percent  {}%", step.percent),
    ];
    if !document.error.is_empty() {
        lines.push(format!("error    {}", document.error));
    }
    if !document.stop_reason.is_empty() {
        lines.push(format!("reason   {}", document.stop_reason));
    }
    if let Some(result) = &document.result {
        let format = ResultFormat::from_wire(result.format, "result.format")
            .map(ResultFormat::as_str)
            .unwrap_or("unknown format");
        lines.push(format!(
            "result   {} ({format}, {} bytes)",
            result.filename, result.size
        ));
    }
    Ok(lines.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use dragoman_model::vocab::{RequestStatus, Stage};
    use dragoman_proto::v1::{RequestProgress, StoredResult};

    #[test]
    fn the_summary_shows_status_stage_percent_and_error() {
        let document = StatusDocument {
            request_id: "r1".into(),
            status: RequestStatus::Failed.to_wire(),
            stage: Stage::Translation.to_wire(),
            progress: Some(RequestProgress {
                percent: 42,
                ..Default::default()
            }),
            error: "provider unreachable".into(),
            ..Default::default()
        };
        assert_eq!(
            summary(&document).expect("a summary"),
            "request  r1\nstatus   failed\nstage    translation\npercent  42%\n\
             error    provider unreachable"
        );
    }

    #[test]
    fn a_stored_result_is_named() {
        let document = StatusDocument {
            request_id: "r2".into(),
            status: RequestStatus::Completed.to_wire(),
            stage: Stage::Export.to_wire(),
            result: Some(StoredResult {
                format: ResultFormat::Epub.to_wire(),
                filename: "book.epub".into(),
                size: 1234,
                ..Default::default()
            }),
            ..Default::default()
        };
        let text = summary(&document).expect("a summary");
        assert!(text.contains("status   completed"), "{text}");
        assert!(
            text.ends_with("result   book.epub (epub, 1234 bytes)"),
            "{text}"
        );
    }

    #[test]
    fn a_status_of_no_known_value_is_a_protocol_error() {
        let document = StatusDocument {
            status: 99,
            ..Default::default()
        };
        assert!(matches!(summary(&document), Err(ClientError::Protocol(_))));
    }
}
