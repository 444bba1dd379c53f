//! Statuses (spec 2.3, 3): of requests, jobs, passages, volumes and webhook
//! deliveries.

use sea_orm::sea_query::StringLen;

vocabulary! {
    /// A request's status (spec 2.3).
    RequestStatus {
        Pending = "pending",
        Queued = "queued",
        Running = "running",
        Completed = "completed",
        CompletedWithResiduals = "completed_with_residuals",
        Failed = "failed",
        Cancelled = "cancelled",
        Imported = "imported",
    }
}

impl RequestStatus {
    /// Statuses a request never leaves (spec 2.3, 3).
    pub const FINAL: [RequestStatus; 5] = [
        RequestStatus::Completed,
        RequestStatus::CompletedWithResiduals,
        RequestStatus::Failed,
        RequestStatus::Cancelled,
        RequestStatus::Imported,
    ];

    /// Statuses of a request waiting to start (the waiting quotas count them).
    pub const WAITING: [RequestStatus; 2] = [RequestStatus::Pending, RequestStatus::Queued];

    pub fn is_final(self) -> bool {
        Self::FINAL.contains(&self)
    }
}

vocabulary! {
    /// The state of the job behind a request.
    JobStatus {
        Pending = "pending",
        Running = "running",
        Paused = "paused",
        Done = "done",
        Failed = "failed",
        Cancelled = "cancelled",
    }
}

vocabulary! {
    /// How a worker's job ended.
    JobOutcome {
        /// Every passage went through the pipeline (some may be residuals).
        Done = "done",
        /// The job cannot go on; the request fails with the reason given.
        Failed = "failed",
    }
}

vocabulary! {
    /// A passage's status (spec 2.6, 2.7).
    PassageStatus {
        Pending = "pending",
        Ok = "ok",
        Check = "check",
        Error = "error",
        SourceRetained = "source_retained",
        Refused = "refused",
    }
}

impl PassageStatus {
    /// Statuses whose stored translation may be delivered.
    pub const USABLE: [PassageStatus; 2] = [PassageStatus::Ok, PassageStatus::Check];
}

vocabulary! {
    /// A volume's status (spec 2.8 leaves the values to us).
    VolumeStatus {
        /// Created, nothing imported yet.
        Empty = "empty",
        /// Chapters imported, no translation running.
        Imported = "imported",
        Translating = "translating",
        /// The last request completed with every passage translated.
        Translated = "translated",
        /// The last request ended with residuals.
        Incomplete = "incomplete",
    }
}

vocabulary! {
    /// A webhook delivery's state (spec 3): what the outbox stores for
    /// every call.
    WebhookState {
        Pending = "pending",
        Delivered = "delivered",
        Failed = "failed",
    }
}

// Not a value of `WebhookState`: no outbox row is ever `none`.
vocabulary! {
    /// `webhook.state` of the status document (spec 2.2): the final
    /// event's delivery state, `pending` until that event is delivered or
    /// failed for good, or `none` for a request that named no
    /// `callback_url` (no call will ever be made, so nothing is pending).
    RequestWebhookState {
        None = "none",
        Pending = "pending",
        Delivered = "delivered",
        Failed = "failed",
    }
}

impl RequestWebhookState {
    /// The state shown for a request: `callback` tells whether it named a
    /// `callback_url`, `final_event` the state of its final event once
    /// queued.
    pub fn of(callback: bool, final_event: Option<WebhookState>) -> RequestWebhookState {
        match final_event {
            Some(WebhookState::Pending) => RequestWebhookState::Pending,
            Some(WebhookState::Delivered) => RequestWebhookState::Delivered,
            Some(WebhookState::Failed) => RequestWebhookState::Failed,
            None if callback => RequestWebhookState::Pending,
            None => RequestWebhookState::None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_round_trip_through_every_form() {
        for status in RequestStatus::ALL {
            assert_eq!(status.as_str().parse::<RequestStatus>(), Ok(*status));
            let json = serde_json::to_value(status).expect("serializes");
            assert_eq!(json, serde_json::json!(status.as_str()));
        }
        assert!("done".parse::<RequestStatus>().is_err());
        assert_eq!(
            "completed_with_residuals".parse::<RequestStatus>(),
            Ok(RequestStatus::CompletedWithResiduals)
        );
    }

    #[test]
    fn a_request_without_callback_has_no_pending_webhook() {
        assert_eq!(
            RequestWebhookState::of(false, None),
            RequestWebhookState::None
        );
        assert_eq!(RequestWebhookState::None.as_str(), "none");
        // With a callback, pending until the final event is delivered or
        // failed for good.
        assert_eq!(
            RequestWebhookState::of(true, None),
            RequestWebhookState::Pending
        );
        for (stored, shown) in [
            (WebhookState::Pending, RequestWebhookState::Pending),
            (WebhookState::Delivered, RequestWebhookState::Delivered),
            (WebhookState::Failed, RequestWebhookState::Failed),
        ] {
            assert_eq!(RequestWebhookState::of(true, Some(stored)), shown);
            assert_eq!(shown.as_str(), stored.as_str());
        }
    }

    #[test]
    fn final_statuses() {
        assert!(RequestStatus::Imported.is_final());
        assert!(RequestStatus::Failed.is_final());
        assert!(!RequestStatus::Queued.is_final());
        assert!(!RequestStatus::Running.is_final());
    }
}
