//! `dragoman result ID`: download a request's result, in the format asked
//! for (the request's own otherwise), under `--out` or the server's file
//! name in the current folder.

use super::connect::connect;
use super::error::ClientError;
use super::output::{download, server_name};
use crate::commands::ResultArgs;
use dragoman_proto::api::v1::GetTranslationResultRequest;
use dragoman_proto::wire::WireEnum;

pub async fn run(args: ResultArgs) -> Result<(), ClientError> {
    let mut client = connect(&args.server).await?;
    let request = GetTranslationResultRequest {
        request_id: args.id.clone(),
        format: args.format.map(WireEnum::to_wire),
        partial: args.partial,
        ..Default::default()
    };
    let id = args.id.clone();
    let out = args.out.clone();
    let downloaded = download(&mut client, request, |header| {
        out.unwrap_or_else(|| server_name(header, &id))
    })
    .await?;
    if !downloaded.header.complete {
        eprintln!("note: the result is partial (request {id} is not complete)");
    }
    println!("wrote {}", downloaded.path.display());
    Ok(())
}
