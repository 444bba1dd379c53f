//! Following a request until it is final with `WatchTranslation`, showing
//! its progress, and Ctrl-C while waiting: on a terminal the user is asked
//! whether to cancel the request (a second Ctrl-C while asking is a yes);
//! without one Ctrl-C cancels it. Once the signal is handled here the
//! process no longer dies of it, so every later wait goes through
//! [`or_interrupt`].

use super::connect::Translations;
use super::error::ClientError;
use super::progress::Progress;
use dragoman_model::vocab::RequestStatus;
use dragoman_proto::api::v1::{ControlTranslationRequest, WatchTranslationRequest};
use dragoman_proto::v1::{ControlAction, StatusDocument};
use dragoman_proto::wire::WireEnum;
use std::io::{IsTerminal, Write};
use std::time::Duration;

/// Watches opened again in a row, without a document between them, before
/// giving up (a server restarting, a proxy cutting long streams).
const REWATCH_ATTEMPTS: u32 = 5;
const REWATCH_PAUSE: Duration = Duration::from_secs(2);

/// The request's status in a document.
pub fn status_of(document: &StatusDocument) -> Result<RequestStatus, ClientError> {
    RequestStatus::from_wire(document.status, "status")
        .map_err(|e| ClientError::Protocol(format!("status document: {e}")))
}

/// Follows request `id` until its status is final and returns that last
/// document.
pub async fn follow(
    client: &mut Translations,
    id: &str,
    progress: &mut Progress,
) -> Result<StatusDocument, ClientError> {
    let mut failures = 0;
    loop {
        match watch_once(client, id, progress).await? {
            Watched::Final(document) => return Ok(*document),
            Watched::Cut { documents, error } => {
                failures = if documents > 0 { 1 } else { failures + 1 };
                if failures > REWATCH_ATTEMPTS {
                    return Err(error.unwrap_or_else(|| {
                        ClientError::Protocol(
                            "the status stream ended before the request was final".to_owned(),
                        )
                    }));
                }
                or_interrupt(tokio::time::sleep(REWATCH_PAUSE)).await?;
            }
        }
    }
}

enum Watched {
    Final(Box<StatusDocument>),
    /// The stream ended (or broke) before a final document, after
    /// `documents` documents.
    Cut {
        documents: usize,
        error: Option<ClientError>,
    },
}

async fn watch_once(
    client: &mut Translations,
    id: &str,
    progress: &mut Progress,
) -> Result<Watched, ClientError> {
    let request = WatchTranslationRequest {
        request_id: id.to_owned(),
    };
    let mut stream = match client.watch_translation(request).await {
        Ok(answer) => answer.into_inner(),
        Err(status) => return cut_or_fail(0, status),
    };
    let mut documents = 0;
    loop {
        tokio::select! {
            message = stream.message() => match message {
                Ok(Some(message)) => {
                    let document = message.document.ok_or_else(|| {
                        ClientError::Protocol("a watch message without its document".to_owned())
                    })?;
                    documents += 1;
                    progress.show(&document);
                    if status_of(&document)?.is_final() {
                        return Ok(Watched::Final(Box::new(document)));
                    }
                }
                Ok(None) => return Ok(Watched::Cut { documents, error: None }),
                Err(status) => return cut_or_fail(documents, status),
            },
            _ = tokio::signal::ctrl_c() => {
                progress.hide();
                if confirm_cancel(id).await {
                    cancel(client, id).await?;
                    return Err(ClientError::Interrupted(format!("request {id} cancelled")));
                }
                progress.unhide();
            }
        }
    }
}

/// A broken watch: worth opening again when the transport broke, final
/// when the service refused.
fn cut_or_fail(documents: usize, status: tonic::Status) -> Result<Watched, ClientError> {
    let error = ClientError::from_status(status);
    match error {
        ClientError::Server {
            code: tonic::Code::Unavailable | tonic::Code::Unknown | tonic::Code::Internal,
            ..
        } => Ok(Watched::Cut {
            documents,
            error: Some(error),
        }),
        other => Err(other),
    }
}

/// Asks on the terminal whether to cancel; without a terminal to ask on,
/// the Ctrl-C alone decides.
async fn confirm_cancel(id: &str) -> bool {
    if !std::io::stdin().is_terminal() {
        return true;
    }
    eprint!("Cancel request {id}? [y/N] ");
    let _ = std::io::stderr().flush();
    // A thread of its own: a read of the terminal cannot be abandoned, and
    // a thread left reading does not keep the process alive.
    let (answer, answered) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let read = std::io::stdin().read_line(&mut line).map(|_| line);
        let _ = answer.send(read);
    });
    tokio::select! {
        answer = answered => matches!(answer, Ok(Ok(line)) if is_yes(&line)),
        _ = tokio::signal::ctrl_c() => {
            eprintln!();
            true
        }
    }
}

/// `y` or `yes`, any case; anything else (an empty line too) is no.
pub fn is_yes(answer: &str) -> bool {
    matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

async fn cancel(client: &mut Translations, id: &str) -> Result<(), ClientError> {
    client
        .control_translation(ControlTranslationRequest {
            request_id: id.to_owned(),
            action: ControlAction::Cancel as i32,
        })
        .await
        .map_err(ClientError::from_status)?;
    Ok(())
}

/// `work`, unless Ctrl-C comes first.
pub async fn or_interrupt<T>(work: impl Future<Output = T>) -> Result<T, ClientError> {
    tokio::select! {
        done = work => Ok(done),
        _ = tokio::signal::ctrl_c() => Err(ClientError::Interrupted("interrupted".to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_explicit_yes_cancels() {
        assert!(is_yes("y\n"));
        assert!(is_yes(" YES \n"));
        assert!(!is_yes("\n"));
        assert!(!is_yes("n\n"));
        assert!(!is_yes("yep\n"));
        assert!(!is_yes(""));
    }
}
