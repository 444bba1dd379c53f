//! Provider capacity slots: expiring coordination leases shared by every
//! worker of the installation, so that a provider never gets more calls at
//! once than its capacity, and a crashed worker's slot comes back.

use std::time::Duration;

use dragoman_model::entities::provider;
use dragoman_model::ids;

use super::Worker;
use super::budget_guard::Purse;

/// A slot held; give it back with [`Worker::release_slot`].
pub(super) struct Slot {
    key: String,
    holder: String,
}

impl Worker {
    /// Waits for one of the provider's `capacity` slots; none once the
    /// process of `purse`'s job drains (the call is not to start).
    pub(super) async fn take_slot(
        &self,
        provider: &provider::Model,
        capacity: usize,
        purse: &Purse,
    ) -> Option<Slot> {
        let holder = ids::new_id();
        let ttl = Duration::from_secs(
            u64::try_from(self.config.lease_seconds)
                .unwrap_or(30)
                .max(1)
                * 4,
        );
        loop {
            if purse.draining() {
                return None;
            }
            for index in 0..capacity {
                let key = format!("provider:{}:slot:{index}", provider.id);
                if self
                    .coordination
                    .lease_acquire(&key, &holder, ttl)
                    .await
                    .unwrap_or(false)
                {
                    return Some(Slot { key, holder });
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub(super) async fn release_slot(&self, slot: Slot) {
        let _ = self
            .coordination
            .lease_release(&slot.key, &slot.holder)
            .await;
    }
}
