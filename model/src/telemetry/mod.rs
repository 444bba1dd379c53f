//! What a process tells its operators besides its logs: metric points
//! ([`metrics`]) and the trace context that ties one call's spans together
//! across processes ([`trace_context`]). Both cost nothing until the
//! process that runs them turns them on (a recorder installed, trace export
//! configured).

pub mod metrics;
pub mod trace_context;
