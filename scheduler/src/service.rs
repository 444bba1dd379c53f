//! The Scheduler gRPC service: a thin adapter from calls to the domain
//! functions, checking the caller's principal first.

use crate::series;
use dragoman_model::coordination::Coordination;
use dragoman_proto::principal::InternalCredential;
use dragoman_proto::v1::*;
use sea_orm::DatabaseConnection;
use std::sync::Arc;
use tonic::{Request, Response, Status};

pub struct SchedulerService {
    db: DatabaseConnection,
    coordination: Arc<dyn Coordination>,
    credential: InternalCredential,
}

impl SchedulerService {
    pub fn new(
        db: DatabaseConnection,
        coordination: Arc<dyn Coordination>,
        credential: InternalCredential,
    ) -> Self {
        Self {
            db,
            coordination,
            credential,
        }
    }
}

#[tonic::async_trait]
impl dragoman_proto::Scheduler for SchedulerService {
    async fn status(
        &self,
        request: Request<StatusRequest>,
    ) -> Result<Response<RoleStatus>, Status> {
        self.credential.verify(&request)?;
        let db = dragoman_model::db::ping(&self.db).await;
        let coordination = self.coordination.ping().await;
        let detail = match (&db, &coordination) {
            (Ok(()), Ok(())) => String::new(),
            (Err(e), _) => format!("database: {e}"),
            (_, Err(e)) => format!("coordination: {e}"),
        };
        Ok(Response::new(RoleStatus {
            role: "scheduler".into(),
            ok: db.is_ok() && coordination.is_ok(),
            detail,
        }))
    }

    async fn list_series(
        &self,
        request: Request<ListSeriesRequest>,
    ) -> Result<Response<SeriesList>, Status> {
        let who = self.credential.principal(&request)?;
        let series = series::list(&self.db, &who.account_id).await?;
        Ok(Response::new(SeriesList { series }))
    }

    async fn get_series(
        &self,
        request: Request<GetSeriesRequest>,
    ) -> Result<Response<SeriesDetail>, Status> {
        let who = self.credential.principal(&request)?;
        let detail =
            series::detail(&self.db, &who.account_id, &request.get_ref().series_id).await?;
        Ok(Response::new(detail))
    }
}
