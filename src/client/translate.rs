//! `dragoman translate FILE --to LANG`: send the book, follow it to the
//! end, download the result and say where it went. A request that ends
//! `failed` or `cancelled` is an error with the document's reason;
//! `completed_with_residuals` is a success with a note.

use super::connect::connect;
use super::error::ClientError;
use super::output::{beside, download};
use super::progress::Progress;
use super::submit::{Input, send};
use super::watch::{follow, or_interrupt, status_of};
use crate::commands::TranslateArgs;
use dragoman_model::vocab::{RequestStatus, ResultFormat};
use dragoman_proto::api::v1::GetTranslationResultRequest;
use dragoman_proto::v1::StatusDocument;
use dragoman_proto::wire::WireEnum;

pub async fn run(args: TranslateArgs) -> Result<(), ClientError> {
    let input = Input::of(&args.file)?;
    let bytes = std::fs::read(&args.file).map_err(|source| ClientError::Read {
        path: args.file.clone(),
        source,
    })?;
    let mut client = connect(&args.server).await?;
    let summary = send(&mut client, &args, input, bytes).await?;
    let id = summary.request_id;
    eprintln!("request {id} sent");

    let mut progress = Progress::new();
    let followed = follow(&mut client, &id, &mut progress).await;
    progress.finish();
    let document = followed?;
    let status = status_of(&document)?;
    if let Some(reason) = unfinished(status, &document) {
        return Err(ClientError::Ended {
            id,
            status: status.as_str(),
            reason,
        });
    }

    let format = match args.format {
        Some(format) => format,
        None => request_format(&document)?,
    };
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| beside(&args.file, &args.to, format));
    let request = GetTranslationResultRequest {
        request_id: id.clone(),
        format: Some(format.to_wire()),
        ..Default::default()
    };
    let downloaded = or_interrupt(download(&mut client, request, |_| out)).await??;
    if status == RequestStatus::CompletedWithResiduals {
        let residuals = document.report.as_ref().map(|r| r.residual_total);
        eprintln!("note: {}", residual_note(&id, residuals));
    }
    println!("wrote {}", downloaded.path.display());
    Ok(())
}

/// Why a final request has nothing to download; `None` when it completed.
pub fn unfinished(status: RequestStatus, document: &StatusDocument) -> Option<String> {
    match status {
        RequestStatus::Completed | RequestStatus::CompletedWithResiduals => None,
        RequestStatus::Imported => {
            Some("imported without translating (the pipeline was not started)".to_owned())
        }
        _ => Some(reason(document)),
    }
}

/// The document's own words for why the request stopped.
fn reason(document: &StatusDocument) -> String {
    let report_reason = document.report.as_ref().and_then(|r| r.reason.clone());
    [
        Some(document.error.clone()),
        Some(document.stop_reason.clone()),
        report_reason,
    ]
    .into_iter()
    .flatten()
    .find(|text| !text.is_empty())
    .unwrap_or_else(|| "no reason given".to_owned())
}

/// The format the request asked for, from its document.
fn request_format(document: &StatusDocument) -> Result<ResultFormat, ClientError> {
    let format = document
        .options
        .as_ref()
        .map(|o| o.output_format)
        .unwrap_or_default();
    ResultFormat::from_wire(format, "options.output_format")
        .map_err(|e| ClientError::Protocol(format!("status document: {e}")))
}

fn residual_note(id: &str, residuals: Option<u64>) -> String {
    let count = match residuals {
        Some(1) => "1 passage".to_owned(),
        Some(n) => format!("{n} passages"),
        None => "some passages".to_owned(),
    };
    format!(
        "request {id} completed with residuals: {count} kept their source text \
         (`dragoman status {id} --json` lists them in its report)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use dragoman_proto::v1::CompletionReport;

    #[test]
    fn a_failed_request_gives_its_error_then_its_stop_reason() {
        let mut document = StatusDocument {
            stop_reason: "budget_exceeded".into(),
            ..Default::default()
        };
        assert_eq!(
            unfinished(RequestStatus::Failed, &document).as_deref(),
            Some("budget_exceeded")
        );
        document.error = "the budget of the series is spent".into();
        assert_eq!(
            unfinished(RequestStatus::Cancelled, &document).as_deref(),
            Some("the budget of the series is spent")
        );
        let reported = StatusDocument {
            report: Some(CompletionReport {
                reason: Some("cancelled by its owner".into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(
            unfinished(RequestStatus::Cancelled, &reported).as_deref(),
            Some("cancelled by its owner")
        );
        assert_eq!(
            unfinished(RequestStatus::Failed, &StatusDocument::default()).as_deref(),
            Some("no reason given")
        );
    }

    #[test]
    fn residuals_are_a_success_with_a_note() {
        assert_eq!(
            unfinished(
                RequestStatus::CompletedWithResiduals,
                &StatusDocument::default()
            ),
            None
        );
        assert!(residual_note("r1", Some(3)).contains("3 passages kept their source text"));
        assert!(residual_note("r1", Some(1)).contains("1 passage kept"));
    }
}
