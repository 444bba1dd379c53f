//! The one error of the client commands (`translate`, `status`, `result`)
//! and the exit code each kind of failure ends the process with, so that a
//! script can tell a refusal from a failed translation or an unreachable
//! server.

use super::refusal::Refusal;
use std::path::PathBuf;

/// Exit code of a request that ended `failed`, `cancelled` or without a
/// translation (`imported`).
pub const EXIT_REQUEST_ENDED: u8 = 1;
/// Exit code of a command line or environment that cannot work (no token,
/// a file that cannot be read or is of no known kind).
pub const EXIT_USAGE: u8 = 2;
/// Exit code of a call the server refused (its error code is printed).
pub const EXIT_REFUSED: u8 = 3;
/// Exit code of a server that could not be reached or answered something
/// this client does not understand.
pub const EXIT_SERVER: u8 = 4;
/// Exit code of a result that could not be written.
pub const EXIT_WRITE: u8 = 5;
/// Exit code after Ctrl-C (the shell's convention for SIGINT).
pub const EXIT_INTERRUPTED: u8 = 130;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The variable that should hold the API token is unset or empty.
    #[error(
        "no API token: set the environment variable {variable} to an API token \
         (or name another variable with --token-env)"
    )]
    NoToken { variable: String },
    /// The token holds characters a metadata value cannot carry.
    #[error("the API token in {variable} holds characters a token never has")]
    BadToken { variable: String },
    /// `--server` is not a URL a gRPC channel opens.
    #[error("--server {url}: {detail}")]
    ServerAddress { url: String, detail: String },
    /// Nothing answered at the server's address.
    #[error("cannot reach the server at {url}: {detail}")]
    Unreachable { url: String, detail: String },
    /// The file to translate could not be read.
    #[error("cannot read {}: {source}", .path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file to translate is of no kind the server takes.
    #[error("{}: expected an .epub, .txt, .docx or .json file", .0.display())]
    UnknownKind(PathBuf),
    /// A `.json` file that is not a translation payload (spec 2.4).
    #[error("{}: not a translation payload (spec 2.4): {detail}", .path.display())]
    Payload { path: PathBuf, detail: String },
    /// The server refused the call: its message and error code.
    #[error("{0}")]
    Refused(Refusal),
    /// The call failed without a refusal of the service (transport error,
    /// a method the server does not serve).
    #[error("the server answered {code:?}: {message}")]
    Server { code: tonic::Code, message: String },
    /// The server's answer does not read as the protocol says.
    #[error("unexpected answer from the server: {0}")]
    Protocol(String),
    /// The request ended without a translation to download.
    #[error("request {id} ended {status}: {reason}")]
    Ended {
        id: String,
        status: &'static str,
        reason: String,
    },
    /// Ctrl-C: the request was cancelled (or the download stopped).
    #[error("{0}")]
    Interrupted(String),
    /// The result could not be written where asked.
    #[error("cannot write {}: {source}", .path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The runtime of the command could not start.
    #[error("cannot start the runtime: {0}")]
    Runtime(#[source] std::io::Error),
}

impl ClientError {
    /// A failed call: the service's refusal when the status carries one
    /// (`ErrorInfo`), the bare status otherwise.
    pub fn from_status(status: tonic::Status) -> ClientError {
        match Refusal::from_status(&status) {
            Some(refusal) => ClientError::Refused(refusal),
            None => ClientError::Server {
                code: status.code(),
                message: status.message().to_owned(),
            },
        }
    }

    /// The process's exit code for this failure.
    pub fn exit_code(&self) -> u8 {
        match self {
            ClientError::Ended { .. } => EXIT_REQUEST_ENDED,
            ClientError::NoToken { .. }
            | ClientError::BadToken { .. }
            | ClientError::ServerAddress { .. }
            | ClientError::Read { .. }
            | ClientError::UnknownKind(_)
            | ClientError::Payload { .. } => EXIT_USAGE,
            ClientError::Refused(_) => EXIT_REFUSED,
            ClientError::Unreachable { .. }
            | ClientError::Server { .. }
            | ClientError::Protocol(_)
            | ClientError::Runtime(_) => EXIT_SERVER,
            ClientError::Write { .. } => EXIT_WRITE,
            ClientError::Interrupted(_) => EXIT_INTERRUPTED,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_and_a_failed_request_exit_differently() {
        let refused = ClientError::from_status(
            <tonic::Status as tonic_types::StatusExt>::with_error_details(
                tonic::Code::PermissionDenied,
                "denied",
                tonic_types::ErrorDetails::with_error_info(
                    "insufficient_scope",
                    "dragoman",
                    std::collections::HashMap::new(),
                ),
            ),
        );
        assert_eq!(refused.exit_code(), EXIT_REFUSED);
        let bare = ClientError::from_status(tonic::Status::unimplemented("not served"));
        assert_eq!(bare.exit_code(), EXIT_SERVER);
        let ended = ClientError::Ended {
            id: "r".into(),
            status: "failed",
            reason: "budget_exceeded".into(),
        };
        assert_eq!(ended.exit_code(), EXIT_REQUEST_ENDED);
        assert_eq!(ended.to_string(), "request r ended failed: budget_exceeded");
    }
}
