//! Webhooks (spec 6): the outbox of calls in the database, the loop that
//! makes them with retries, the event bodies, the signature, the SSRF-safe
//! sender and the administrator settings.

pub mod admin;
pub mod dispatcher;
pub mod events;
pub mod outbox;
pub mod schedule;
pub mod sender;
pub mod sign;

pub use dispatcher::Dispatcher;
pub use schedule::RetrySchedule;
pub use sender::{Outgoing, Sender};
