//! Free local ports for the servers a test starts itself.

use std::net::TcpListener;

/// A port of 127.0.0.1 that nothing listens on now (the OS's choice for
/// port 0).
///
/// # Panics
///
/// When no port can be bound.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .unwrap_or_else(|e| panic!("no free local port: {e}"))
}
