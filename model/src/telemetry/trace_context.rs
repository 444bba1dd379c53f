//! The W3C trace context (`traceparent`, `tracestate`) of a span, read from
//! the headers of a call that arrives and written into the headers (or gRPC
//! metadata) of a call that leaves, so that one trace follows a call from
//! the gateway through every process that serves it.
//!
//! Off until the process that exports traces calls [`enable`] (after
//! installing the propagator): until then the edges create no span and
//! nothing is read or written, so a process without trace export pays one
//! atomic load per call.

pub use opentelemetry::propagation::Injector;
use opentelemetry_http::HeaderExtractor;
use std::sync::atomic::{AtomicBool, Ordering};
use tracing_opentelemetry::OpenTelemetrySpanExt;

static ENABLED: AtomicBool = AtomicBool::new(false);

/// Turns the edges' spans and the context's propagation on, for the life
/// of the process. Called once the global propagator and the tracer are
/// installed.
pub fn enable() {
    ENABLED.store(true, Ordering::Release);
}

/// Whether traces are exported: the edges create their spans only then.
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Acquire)
}

/// Makes `span` continue the trace that `headers` carry; without a valid
/// `traceparent` it stays the root of a new trace.
pub fn continue_from(span: &tracing::Span, headers: &http::HeaderMap) {
    if !enabled() {
        return;
    }
    let parent = opentelemetry::global::get_text_map_propagator(|propagator| {
        propagator.extract(&HeaderExtractor(headers))
    });
    // Fails only for a span that has started already, which no caller has.
    let _ = span.set_parent(parent);
}

/// Writes the trace context of `span` with `injector` (HTTP headers, gRPC
/// metadata), so the callee's spans join its trace.
pub fn inject(span: &tracing::Span, injector: &mut dyn Injector) {
    if !enabled() {
        return;
    }
    let context = span.context();
    opentelemetry::global::get_text_map_propagator(|propagator| {
        propagator.inject_context(&context, injector)
    });
}
