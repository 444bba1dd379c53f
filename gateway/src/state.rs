//! What every handler can reach: the database, coordination, the four
//! services (local or remote behind the same trait) and the gateway settings.

use dragoman_model::coordination::Coordination;
use dragoman_model::db_watch::DatabaseWatch;
use dragoman_model::server_key::ServerKey;
use dragoman_proto::principal::{InternalCredential, Principal};
use dragoman_proto::{Delivery, Memory, Pipeline, Scheduler};
use sea_orm::DatabaseConnection;
use std::sync::Arc;

/// A service handle and whether it runs in this process.
pub struct Service<T: ?Sized> {
    pub handle: Arc<T>,
    pub local: bool,
}

impl<T: ?Sized> Clone for Service<T> {
    fn clone(&self) -> Self {
        Self {
            handle: self.handle.clone(),
            local: self.local,
        }
    }
}

#[derive(Debug, Clone)]
pub struct GatewaySettings {
    /// Largest accepted request body, in bytes (`API_MAX_PAYLOAD_MB`).
    pub max_payload_bytes: usize,
    pub demo_mode: bool,
    /// Public base URL when known (`DRAGOMAN_PUBLIC_URL`): decides the
    /// `Secure` cookie flag and the origin that session writes must come from.
    pub public_url: Option<String>,
    pub session_days: i64,
    /// `API_RESULT_MAX_WAIT_SECONDS`: the longest long poll.
    pub max_wait_seconds: u64,
    /// `API_RATE_LIMIT_PER_MINUTE`: calls per token per minute (at least 1).
    pub rate_limit_per_minute: u32,
    /// Roles this process runs, for `/health`.
    pub roles: Vec<String>,
    /// Where the licence is found (`DRAGOMAN_LICENCE_FILE`, else the
    /// administrator setting) and `LICENCE_QUOTA_OVERRUN_WORDS`.
    pub licence: dragoman_model::licence::LicenceSettings,
}

pub struct Gateway {
    pub db: DatabaseConnection,
    /// Whether the database answers: the API answers at once with
    /// `service_unavailable` instead of waiting for it (see
    /// [`crate::outage`]).
    pub database: Arc<DatabaseWatch>,
    pub coordination: Arc<dyn Coordination>,
    pub scheduler: Service<dyn Scheduler>,
    pub pipeline: Service<dyn Pipeline>,
    pub delivery: Service<dyn Delivery>,
    pub memory: Service<dyn Memory>,
    pub credential: InternalCredential,
    pub server_key: ServerKey,
    pub settings: GatewaySettings,
    /// Where uploads are streamed before the scheduler reads them.
    pub blobs: Arc<dyn object_store::ObjectStore>,
    /// Turns true when the process stops: long polls answer at once.
    pub stopping: tokio::sync::watch::Receiver<bool>,
    pub caches: ReadCaches,
}

/// What the token routes keep between calls so that reading a request
/// under load does not read the same rows at each call (docs/decisions.md,
/// "Reading a request under load"). Each is dropped by the change it is
/// about, in every process through coordination.
pub struct ReadCaches {
    pub licence: crate::auth::licence::LicenceCache,
    pub tokens: crate::auth::bearer::TokenCache,
    pub documents: crate::operations::requests::DocumentCache,
}

impl ReadCaches {
    pub fn new(coordination: &Arc<dyn Coordination>) -> ReadCaches {
        ReadCaches {
            licence: crate::auth::licence::licence_cache(coordination.clone()),
            tokens: crate::auth::bearer::token_cache(coordination.clone()),
            documents: crate::operations::requests::document_cache(coordination.clone()),
        }
    }
}

impl Gateway {
    /// A gRPC request acting for `principal`.
    pub fn call<T>(&self, principal: &Principal, message: T) -> tonic::Request<T> {
        self.credential.request(principal, message)
    }
}

pub type AppState = Arc<Gateway>;
