//! The Pipeline gRPC service: a thin adapter from calls to the domain
//! functions, checking the caller's principal first.

use crate::error::PipelineError;
use crate::providers;
use dragoman_proto::principal::InternalCredential;
use dragoman_proto::v1::*;
use sea_orm::DatabaseConnection;
use tonic::{Request, Response, Status};

pub struct PipelineService {
    db: DatabaseConnection,
    credential: InternalCredential,
}

impl PipelineService {
    pub fn new(db: DatabaseConnection, credential: InternalCredential) -> Self {
        Self { db, credential }
    }
}

#[tonic::async_trait]
impl dragoman_proto::Pipeline for PipelineService {
    async fn status(
        &self,
        request: Request<StatusRequest>,
    ) -> Result<Response<RoleStatus>, Status> {
        self.credential.verify(&request)?;
        let db = dragoman_model::db::ping(&self.db).await;
        Ok(Response::new(RoleStatus {
            role: "pipeline".into(),
            ok: db.is_ok(),
            detail: db
                .err()
                .map(|e| format!("database: {e}"))
                .unwrap_or_default(),
        }))
    }

    async fn list_providers(
        &self,
        request: Request<ListProvidersRequest>,
    ) -> Result<Response<ProviderList>, Status> {
        let who = self.credential.principal(&request)?;
        let providers = providers::list_public(&self.db, &who.account_id).await?;
        Ok(Response::new(ProviderList { providers }))
    }

    async fn list_providers_admin(
        &self,
        request: Request<ListProvidersRequest>,
    ) -> Result<Response<ListProvidersAdminResponse>, Status> {
        let who = self.credential.principal(&request)?;
        if !who.admin {
            return Err(PipelineError::AdminRequired.into());
        }
        let providers = providers::list_admin(&self.db).await?;
        Ok(Response::new(ListProvidersAdminResponse { providers }))
    }

    async fn add_provider(
        &self,
        request: Request<AddProviderRequest>,
    ) -> Result<Response<ProviderAdmin>, Status> {
        let who = self.credential.principal(&request)?;
        if !who.admin {
            return Err(PipelineError::AdminRequired.into());
        }
        let input = providers::from_message(request.into_inner())?;
        let added = providers::add(&self.db, input).await?;
        Ok(Response::new(added))
    }

    async fn update_provider(
        &self,
        request: Request<UpdateProviderRequest>,
    ) -> Result<Response<ProviderAdmin>, Status> {
        let who = self.credential.principal(&request)?;
        if !who.admin {
            return Err(PipelineError::AdminRequired.into());
        }
        let (id, changes) = dragoman_proto::wire::provider_changes(request.into_inner());
        let updated = providers::update(&self.db, &id, changes).await?;
        tracing::info!(account = %who.account_id, provider = %id, "provider updated");
        Ok(Response::new(updated))
    }

    async fn set_default_provider(
        &self,
        request: Request<SetDefaultProviderRequest>,
    ) -> Result<Response<ListProvidersAdminResponse>, Status> {
        let who = self.credential.principal(&request)?;
        if !who.admin {
            return Err(PipelineError::AdminRequired.into());
        }
        let chosen = request.into_inner().provider_id;
        providers::set_default(&self.db, chosen.as_deref()).await?;
        tracing::info!(account = %who.account_id, provider = ?chosen, "default provider set");
        let providers = providers::list_admin(&self.db).await?;
        Ok(Response::new(ListProvidersAdminResponse { providers }))
    }

    async fn assess_edit(
        &self,
        request: Request<AssessEditRequest>,
    ) -> Result<Response<EditAssessment>, Status> {
        self.credential.principal(&request)?;
        let assessment = crate::person_edit::assess_edit(request.into_inner())
            .await
            .map_err(|e| PipelineError::Assessment(e.to_string()))?;
        Ok(Response::new(assessment))
    }

    async fn reconcile_batch(
        &self,
        request: Request<ReconcileBatchRequest>,
    ) -> Result<Response<ReconcileBatchResponse>, Status> {
        let who = self.credential.principal(&request)?;
        let m = request.into_inner();
        let ask = crate::batch_mode::reconcile::Ask {
            account_id: &who.account_id,
            job_id: &m.job_id,
            submission_key: &m.submission_key,
            remote_id: &m.remote_id,
        };
        let row = crate::batch_mode::reconcile::reconcile(&self.db, &ask).await?;
        Ok(Response::new(ReconcileBatchResponse { batch_id: row.id }))
    }
}
