//! The Delivery gRPC service.

use dragoman_proto::principal::InternalCredential;
use dragoman_proto::v1::{RoleStatus, StatusRequest};
use object_store::ObjectStore;
use sea_orm::DatabaseConnection;
use std::sync::Arc;
use tonic::{Request, Response, Status};

pub struct DeliveryService {
    db: DatabaseConnection,
    blobs: Arc<dyn ObjectStore>,
    credential: InternalCredential,
}

impl DeliveryService {
    pub fn new(
        db: DatabaseConnection,
        blobs: Arc<dyn ObjectStore>,
        credential: InternalCredential,
    ) -> Self {
        Self {
            db,
            blobs,
            credential,
        }
    }
}

#[tonic::async_trait]
impl dragoman_proto::Delivery for DeliveryService {
    async fn status(
        &self,
        request: Request<StatusRequest>,
    ) -> Result<Response<RoleStatus>, Status> {
        self.credential.verify(&request)?;
        let db = dragoman_model::db::ping(&self.db).await;
        let blobs = dragoman_model::blob::probe(self.blobs.as_ref()).await;
        let detail = match (&db, &blobs) {
            (Ok(()), Ok(())) => String::new(),
            (Err(e), _) => format!("database: {e}"),
            (_, Err(e)) => format!("blob store: {e}"),
        };
        Ok(Response::new(RoleStatus {
            role: "delivery".into(),
            ok: db.is_ok() && blobs.is_ok(),
            detail,
        }))
    }
}
