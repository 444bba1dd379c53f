//! `WatchTranslation`: the status document at once, then again each time
//! it changes, until the request is final.
//!
//! A watcher wakes when the request's coordination channel is notified (a
//! change of its lifecycle) and on a short tick, since the progress of a
//! running job is announced by no notify. Every read goes through the
//! gateway's document cache, so the watchers of one request share one read
//! per change instead of one each. A document identical to the one last
//! sent is not sent again. The stream ends after the final document, when
//! the client goes away, or when the process stops (then with
//! `service_unavailable`: the client watches again, and another gateway
//! answers it).

use super::super::chunks::Answer;
use super::super::status::status;
use crate::error::ApiError;
use crate::messages::Lang;
use crate::operations::Caller;
use crate::operations::requests::{self, Document};
use crate::state::AppState;
use dragoman_model::coordination::Subscription;
use dragoman_model::vocab::{Channel, ErrorCode};
use dragoman_proto::api::v1::WatchTranslationResponse;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

/// How often a watcher reads the document when nothing was notified:
/// well under a second, as the progress it shows moves; the cache answers
/// reads closer together than its time to live.
pub const TICK: Duration = Duration::from_millis(500);

/// Documents waiting for a slow client; past these the watcher waits.
const BUFFERED: usize = 4;

/// The stream of documents; a refusal (scope, unknown request) is the
/// call's own error, before any document.
pub async fn watch(
    state: AppState,
    caller: Caller,
    request_id: String,
    lang: Lang,
) -> Result<Answer<WatchTranslationResponse>, tonic::Status> {
    // Subscribed before the first read: a change meanwhile wakes the first
    // wait at once.
    let subscription = state.coordination.subscribe(&Channel::request(&request_id));
    let first = crate::outage::bounded(&state, requests::read(&state, &caller, &request_id, 0))
        .await
        .map_err(|error| status(error, lang))?;
    let (tx, rx) = mpsc::channel(BUFFERED);
    tokio::spawn(async move {
        let watcher = Watcher {
            state,
            caller,
            request_id,
            lang,
            tx,
        };
        watcher.follow(subscription, first).await;
    });
    Ok(Box::pin(ReceiverStream::new(rx)))
}

struct Watcher {
    state: AppState,
    caller: Caller,
    request_id: String,
    lang: Lang,
    tx: mpsc::Sender<Result<WatchTranslationResponse, tonic::Status>>,
}

impl Watcher {
    async fn follow(self, mut subscription: Subscription, first: Document) {
        let mut stopping = self.state.stopping.clone();
        if !self.send(&first).await {
            return;
        }
        let mut last = first;
        while !last.finished() {
            tokio::select! {
                _ = subscription.wait(TICK) => {}
                () = self.tx.closed() => return,
                Ok(()) = stopping.changed() => {}
            }
            if *stopping.borrow_and_update() {
                let refusal = ApiError::new(ErrorCode::ServiceUnavailable);
                let _ = self.tx.send(Err(status(refusal, self.lang))).await;
                return;
            }
            let doc = match requests::read(&self.state, &self.caller, &self.request_id, 0).await {
                Ok(doc) => doc,
                // The cache answers what it holds while the database is
                // away; with nothing held, the next tick reads again.
                Err(error) if crate::outage::is_unavailable(&error) => continue,
                Err(error) => {
                    let _ = self.tx.send(Err(status(error, self.lang))).await;
                    return;
                }
            };
            if doc.text() != last.text() && !self.send(&doc).await {
                return;
            }
            last = doc;
        }
    }

    /// Sends `doc`; false when the client went away.
    async fn send(&self, doc: &Document) -> bool {
        let message = WatchTranslationResponse {
            document: Some(doc.message().clone()),
        };
        self.tx.send(Ok(message)).await.is_ok()
    }
}
