//! The Memory gRPC service.

use dragoman_proto::principal::InternalCredential;
use dragoman_proto::v1::{RoleStatus, StatusRequest};
use sea_orm::DatabaseConnection;
use tonic::{Request, Response, Status};

pub struct MemoryService {
    db: DatabaseConnection,
    credential: InternalCredential,
}

impl MemoryService {
    pub fn new(db: DatabaseConnection, credential: InternalCredential) -> Self {
        Self { db, credential }
    }
}

#[tonic::async_trait]
impl dragoman_proto::Memory for MemoryService {
    async fn status(
        &self,
        request: Request<StatusRequest>,
    ) -> Result<Response<RoleStatus>, Status> {
        self.credential.verify(&request)?;
        let db = dragoman_model::db::ping(&self.db).await;
        Ok(Response::new(RoleStatus {
            role: "memory".into(),
            ok: db.is_ok(),
            detail: db
                .err()
                .map(|e| format!("database: {e}"))
                .unwrap_or_default(),
        }))
    }
}
