//! Holding a leased job: the heartbeat that renews its lease until the job
//! ends (fencing provider calls when renewals fail, see [`lease_hold`]),
//! and handing the job back to the scheduler when the worker lets it go.

use super::{Worker, lease_hold, refused_for_outage};
use dragoman_proto::v1::{HeartbeatRequest, ReleaseJobRequest};
use std::time::Duration;
use tokio::sync::watch;

/// How long handing a job back may take: the scheduler answers at once or
/// is not there, and the job's lease then expires on its own.
const RELEASE_TIMEOUT: Duration = Duration::from_secs(3);

impl Worker {
    /// Renews the lease until the job ends; returns when the worker must
    /// let the job go (the scheduler says so, or the lease ran out without
    /// a renewal). Turns `fence` true when the job must start no provider
    /// call any more: the process stops, or renewals failed until the
    /// margin before the lease runs out ([`lease_hold`]).
    pub(super) async fn heartbeat(
        &self,
        worker_id: String,
        job_id: String,
        lost: watch::Sender<bool>,
        fence: watch::Sender<bool>,
        mut stop: watch::Receiver<bool>,
    ) {
        let lease = Duration::from_secs(u64::try_from(self.config.lease_seconds).unwrap_or(30));
        let every = lease_hold::beat_every(lease);
        let mut hold = lease_hold::LeaseHold::new(lease, tokio::time::Instant::now());
        let mut next_beat = tokio::time::Instant::now() + every;
        let mut stopping = false;
        loop {
            if !stopping && *stop.borrow() {
                stopping = true;
                fence.send_replace(true);
            }
            let fenced = *fence.borrow();
            let mut wake = next_beat.min(hold.lost_at());
            if !fenced {
                wake = wake.min(hold.fence_at());
            }
            tokio::select! {
                _ = tokio::time::sleep_until(wake) => {}
                changed = stop.changed(), if !stopping => {
                    if changed.is_err() {
                        stopping = true;
                    }
                    continue;
                }
            }
            let now = tokio::time::Instant::now();
            if now >= hold.lost_at() {
                tracing::warn!(job = %job_id, "no renewal of the lease before it ran out: the job is let go");
                let _ = lost.send(true);
                return;
            }
            if !fenced && now >= hold.fence_at() {
                tracing::warn!(job = %job_id, "the lease is not renewed and runs out soon: no provider call starts any more");
                fence.send_replace(true);
            }
            if now < next_beat {
                continue;
            }
            let beat = HeartbeatRequest {
                job_id: job_id.clone(),
                worker_id: worker_id.clone(),
                lease_seconds: i32::try_from(self.config.lease_seconds).unwrap_or(30),
            };
            let sent = tokio::time::Instant::now();
            match self
                .scheduler
                .heartbeat(self.credential.system_request(beat))
                .await
            {
                Ok(answer) if answer.get_ref().keep_going => hold.renewed(sent),
                Ok(_) => {
                    let _ = lost.send(true);
                    return;
                }
                // The scheduler's database is away: no other worker can take
                // the job meanwhile, and the scheduler judges the lease
                // from the database's return.
                Err(status) if refused_for_outage(&status) => hold.renewed(sent),
                // A missed beat is not fatal: the lease outlives two.
                Err(status) => tracing::warn!(job = %job_id, error = %status, "heartbeat failed"),
            }
            next_beat = tokio::time::Instant::now() + every;
        }
    }

    /// Hands the job back to the scheduler so that another worker takes it
    /// over at once; when the scheduler cannot be reached, its lease
    /// expires instead.
    pub(super) async fn release(&self, worker_id: &str, job_id: &str) {
        let call = ReleaseJobRequest {
            job_id: job_id.to_owned(),
            worker_id: worker_id.to_owned(),
        };
        let answer = tokio::time::timeout(
            RELEASE_TIMEOUT,
            self.scheduler
                .release_job(self.credential.system_request(call)),
        )
        .await;
        match answer {
            Ok(Ok(answer)) if answer.get_ref().released => {
                tracing::info!(job = %job_id, "job handed back")
            }
            // Not held any more: lost, paused, cancelled or ended meanwhile.
            Ok(Ok(_)) => {}
            Ok(Err(status)) => {
                tracing::warn!(job = %job_id, error = %status, "handing the job back failed; its lease expires")
            }
            Err(_) => {
                tracing::warn!(job = %job_id, "handing the job back timed out; its lease expires")
            }
        }
    }
}
