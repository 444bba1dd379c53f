//! The export stage of an EPUB request, asked of the delivery role once
//! every passage is stored.

use super::{Stop, Worker};
use dragoman_model::vocab::{ErrorCode, JobOutcome};
use dragoman_proto::api_status::ServiceError;
use dragoman_proto::v1::{FinishJobRequest, JobTicket, RequestRef};
use dragoman_proto::wire::WireEnum;

impl Worker {
    /// The export stage of an EPUB request: the delivery role rebuilds,
    /// validates, repairs and stores the book, and says what it decided,
    /// which the job's end carries into the report. Exhausted repairs, or a
    /// book that cannot be rebuilt at all, fail the request. When the
    /// delivery role cannot be reached the job is released: its lease
    /// expires and the job is tried again, its passages all stored.
    pub(super) async fn export_epub(
        &self,
        ticket: &JobTicket,
        finish: &mut FinishJobRequest,
    ) -> Result<(), Stop> {
        let call = RequestRef {
            request_id: ticket.request_id.clone(),
        };
        match self
            .delivery
            .deliver_epub(self.credential.system_request(call))
            .await
        {
            Ok(answer) => {
                let answer = answer.into_inner();
                if answer.failed {
                    finish.outcome = JobOutcome::Failed.to_wire();
                    finish.error =
                        "the EPUB validator still rejects the book after every repair".into();
                    finish.stop_reason = Some(ErrorCode::DeliveryFailed.code().to_owned());
                }
                finish.delivery = answer.delivery;
                Ok(())
            }
            Err(status) => match ServiceError::from_status(&status) {
                Some(refusal) if refusal.code == ErrorCode::DeliveryFailed => {
                    finish.stop_reason = Some(ErrorCode::DeliveryFailed.code().to_owned());
                    Err(Stop::Failed(refusal.message))
                }
                // Its passages all stored: the export is asked again once
                // the database is back.
                Some(refusal) if refusal.code == ErrorCode::ServiceUnavailable => {
                    Err(Stop::Unavailable)
                }
                _ => {
                    tracing::warn!(job = %ticket.job_id, error = %status, "delivering the EPUB failed; the job is tried again");
                    Err(Stop::Released)
                }
            },
        }
    }
}
