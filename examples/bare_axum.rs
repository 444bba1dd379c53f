//! The baseline of the status-read benchmark (`bench/status_wrk.sh`): a bare
//! axum server answering `GET /api/v1/translation-requests/{id}` with a fixed
//! JSON body read from a file at start, so wrk measures what the HTTP stack
//! alone costs on this machine for an answer of the same size.
//!
//! Usage: `cargo run --release --example bare_axum -- 127.0.0.1:18590 body.json`

use axum::Router;
use axum::body::Bytes;
use axum::extract::Path;
use axum::http::header;
use axum::routing::get;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let listen = args.next().ok_or("usage: bare_axum LISTEN BODY_FILE")?;
    let body_file = args.next().ok_or("usage: bare_axum LISTEN BODY_FILE")?;
    let body = Bytes::from(std::fs::read(&body_file)?);
    let app = Router::new().route(
        "/api/v1/translation-requests/{request_id}",
        get(move |Path(_request_id): Path<String>| {
            let body = body.clone();
            async move { ([(header::CONTENT_TYPE, "application/json")], body) }
        }),
    );
    let listener = tokio::net::TcpListener::bind(&listen).await?;
    println!("bare axum listening on http://{}", listener.local_addr()?);
    axum::serve(listener, app).await?;
    Ok(())
}
