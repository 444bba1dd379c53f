//! The command-line client of a running server's public gRPC services
//! (`dragoman.api.v1.TranslationsService`): `translate`, `status` and
//! `result`. Each failure is a [`ClientError`] whose exit code tells its
//! kind.

mod connect;
mod error;
mod output;
mod progress;
mod refusal;
mod result;
mod status;
mod submit;
mod translate;
mod watch;

pub use error::ClientError;

use crate::commands::ClientCommand;
use std::process::ExitCode;

/// Runs a client command and prints what stopped it.
pub fn main(command: ClientCommand) -> ExitCode {
    let outcome = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(ClientError::Runtime)
        .and_then(|runtime| {
            runtime.block_on(async move {
                match command {
                    ClientCommand::Translate(args) => translate::run(args).await,
                    ClientCommand::Status(args) => status::run(args).await,
                    ClientCommand::Result(args) => result::run(args).await,
                }
            })
        });
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::from(error.exit_code())
        }
    }
}
