//! The Delivery gRPC service: results on demand (the stored one, built by
//! the results loop when the request ended, while it is kept), the
//! `chapters.translated` batches, the administrator webhook settings, the
//! administrator mail settings, test mail and outbox, and publication to
//! the library folder.

use crate::error::DeliveryError;
use crate::library;
use crate::mail::{self, MailPolicy};
use crate::results::{self, ResultQuery};
use crate::stored::{self, ResultStore};
use crate::webhooks::{admin, events};
use dragoman_model::clock;
use dragoman_model::coordination::Coordination;
use dragoman_model::documents::mail_settings::MailSettingsInput;
use dragoman_model::documents::settings_change::WebhookSettingsChange;
use dragoman_model::entities::{deleted_request, request};
use dragoman_model::vocab::{
    Channel, Issue, IssueContext, IssueKind, Layout, LocPart, MailLanguage, MailState,
    RequestStatus, ResultFormat, ResultScope,
};
use dragoman_model::webhook::WebhookPolicy;
use dragoman_model::{ModelError, tenancy};
use dragoman_proto::principal::InternalCredential;
use dragoman_proto::v1::*;
use dragoman_proto::wire::{WireEnum, WireError};
use object_store::path::Path;
use sea_orm::{ColumnTrait, DatabaseConnection, EntityTrait, QueryFilter};
use std::sync::Arc;
use tonic::{Request, Response, Status};

pub struct DeliveryService {
    db: DatabaseConnection,
    results: ResultStore,
    coordination: Arc<dyn Coordination>,
    credential: InternalCredential,
    webhooks: WebhookPolicy,
    mail: MailPolicy,
}

impl DeliveryService {
    pub fn new(
        db: DatabaseConnection,
        results: ResultStore,
        coordination: Arc<dyn Coordination>,
        credential: InternalCredential,
        webhooks: WebhookPolicy,
    ) -> Self {
        let mail = MailPolicy::new(webhooks.key.clone());
        Self {
            db,
            results,
            coordination,
            credential,
            webhooks,
            mail,
        }
    }

    /// The mail rules of the environment (the defaults otherwise).
    pub fn with_mail_policy(mut self, mail: MailPolicy) -> Self {
        self.mail = mail;
        self
    }

    /// The mail dispatcher is woken the same way: a failed notify only
    /// delays a mail to its next look at the outbox.
    async fn wake_mail(&self) {
        if let Err(e) = self.coordination.notify(&Channel::Mail).await {
            tracing::warn!(error = %e, "coordination notify failed");
        }
    }

    /// Why a request of `account_id` is not there: its volume was deleted
    /// (what is kept of it says so), or it never was the account's.
    async fn absent(&self, account_id: &str, request_id: &str) -> DeliveryError {
        let kept = deleted_request::Entity::find_by_id(request_id.to_owned())
            .filter(deleted_request::Column::AccountId.eq(account_id))
            .one(&self.db)
            .await;
        match kept {
            Ok(Some(_)) => DeliveryError::VolumeNotFound,
            Ok(None) => DeliveryError::RequestNotFound,
            Err(e) => DeliveryError::Db(e),
        }
    }

    /// The library dispatcher is woken the same way: a failed notify only
    /// delays a publication to its next look at the table.
    async fn wake_library(&self) {
        if let Err(e) = self.coordination.notify(&Channel::Library).await {
            tracing::warn!(error = %e, "coordination notify failed");
        }
    }

    /// Wake-ups are hints: the dispatcher looks at the outbox every few
    /// seconds anyway, so a failed notify is only logged.
    async fn wake_dispatcher(&self) {
        if let Err(e) = self.coordination.notify(&Channel::Webhooks).await {
            tracing::warn!(error = %e, "coordination notify failed");
        }
    }
}

/// A query parameter that holds no value of its type.
fn invalid(expected: String) -> impl FnOnce(WireError) -> DeliveryError {
    move |e: WireError| {
        DeliveryError::InvalidRequest(vec![
            Issue::new(
                [LocPart::from("query"), LocPart::from(e.field)],
                IssueKind::Enum,
            )
            .with_ctx(IssueContext::new().expected(expected)),
        ])
    }
}

/// A proto enum field where `UNSPECIFIED` (0, prost's default) means
/// `default`.
fn or_default<T: WireEnum>(
    value: i32,
    field: &'static str,
    default: T,
    expected: String,
) -> Result<T, DeliveryError> {
    if value == 0 {
        return Ok(default);
    }
    T::from_wire(value, field).map_err(invalid(expected))
}

/// What `GetResult` asks for, before the request is known: the format is
/// `None` when the request's own format is wanted.
fn asked(
    m: &GetResultRequest,
) -> Result<(Option<ResultFormat>, ResultScope, Layout), DeliveryError> {
    let format = ResultFormat::from_wire_opt(m.format, "format")
        .map_err(invalid(ResultFormat::expected()))?;
    let scope = or_default(
        m.scope,
        "scope",
        ResultScope::Request,
        ResultScope::expected(),
    )?;
    let layout = or_default(m.layout, "layout", Layout::Interleaved, Layout::expected())?;
    Ok((format, scope, layout))
}

/// Whether the query asks for what the stored result holds.
fn wants_stored(row: &request::Model, query: &ResultQuery) -> bool {
    // An EPUB is stored by the export stage just before its request ends;
    // until it has ended, the request's result is not ready.
    let stored = ResultQuery::stored(row);
    row.status.is_final()
        && (query.format, query.scope, query.layout) == (stored.format, stored.scope, stored.layout)
}

/// The bytes of a stored result's blob; `None` when the blob is gone
/// (the result is then built again).
async fn stored_body(results: &ResultStore, key: &str) -> Result<Option<Vec<u8>>, DeliveryError> {
    let what = || format!("result {key}");
    let found = match results.blobs.get(&Path::from(key)).await {
        Ok(found) => found,
        Err(object_store::Error::NotFound { .. }) => return Ok(None),
        Err(e) => return Err(DeliveryError::blob(what())(e)),
    };
    match found.bytes().await {
        Ok(bytes) => Ok(Some(bytes.to_vec())),
        Err(object_store::Error::NotFound { .. }) => Ok(None),
        Err(e) => Err(DeliveryError::blob(what())(e)),
    }
}

/// The request's result as `query` asks for it, read or built: what
/// `GetResult` answers once the request is known to be the caller's, and
/// what a publication to the library writes.
pub(crate) async fn result_file(
    db: &DatabaseConnection,
    results: &ResultStore,
    coordination: &dyn Coordination,
    account_id: &str,
    row: &request::Model,
    query: &ResultQuery,
) -> Result<ResultFile, DeliveryError> {
    // The stored result is served as it is, while it is kept; one whose
    // blob is gone is built again, but a store that refuses is answered
    // as such (503), not hidden behind a rebuild that reads it too. One
    // older than a person's change to the book is built and stored
    // again, so the next fetch is served the stored one.
    let stored = if wants_stored(row, query) {
        stored::find(db, &row.id).await?
    } else {
        None
    };
    let outdated = match &stored {
        Some(stored) => {
            crate::freshness::changed_since(db, &row.project_id, stored.created_at).await?
        }
        None => false,
    };
    if let Some(stored) = stored.filter(|_| !outdated)
        && stored.format == query.format
        && stored.expires_at.is_none_or(|at| at > clock::now())
        && let Some(body) = stored_body(results, &stored.blob_key).await?
    {
        return Ok(ResultFile {
            body,
            media_type: stored.media_type,
            filename: stored.filename,
            complete: row.status == RequestStatus::Completed,
            status: row.status.to_wire(),
        });
    }
    let built = results::build(db, results, account_id, &row.id, query).await?;
    if outdated {
        let kept = results::BuiltResult {
            body: built.body.clone(),
            media_type: built.media_type,
            filename: built.filename.clone(),
            complete: built.complete,
        };
        results.keep(db, row, query, kept).await?;
        crate::request_changed(coordination, &row.id).await;
    }
    Ok(ResultFile {
        body: built.body,
        media_type: built.media_type.into(),
        filename: built.filename,
        complete: built.complete,
        status: row.status.to_wire(),
    })
}

#[tonic::async_trait]
impl dragoman_proto::Delivery for DeliveryService {
    async fn status(
        &self,
        request: Request<StatusRequest>,
    ) -> Result<Response<RoleStatus>, Status> {
        self.credential.verify(&request)?;
        let db = dragoman_model::db::ping(&self.db).await;
        let blobs = dragoman_model::blob::probe(self.results.blobs.as_ref()).await;
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

    async fn get_result(
        &self,
        request: Request<GetResultRequest>,
    ) -> Result<Response<ResultFile>, Status> {
        let who = self.credential.principal(&request)?;
        let m = request.into_inner();
        let (format, scope, layout) = asked(&m)?;
        let row = match tenancy::request(&self.db, who.acting(), &m.request_id).await {
            Ok(row) => row,
            Err(ModelError::NotFound(_)) => {
                return Err(self.absent(&who.account_id, &m.request_id).await.into());
            }
            Err(e) => return Err(DeliveryError::from(e).into()),
        };
        let query = ResultQuery {
            format: format.unwrap_or_else(|| results::default_format(&row)),
            scope,
            partial: m.partial,
            layout,
        };
        let file = result_file(
            &self.db,
            &self.results,
            self.coordination.as_ref(),
            &who.account_id,
            &row,
            &query,
        )
        .await?;
        Ok(Response::new(file))
    }

    async fn deliver_epub(
        &self,
        request: Request<RequestRef>,
    ) -> Result<Response<EpubDelivery>, Status> {
        self.credential.verify(&request)?;
        let request_id = request.into_inner().request_id;
        let outcome = crate::epub_result::export(&self.db, &self.results, &request_id).await?;
        Ok(Response::new(EpubDelivery {
            delivery: Some(outcome.delivery.into()),
            failed: outcome.failed,
        }))
    }

    async fn announce_chapters(
        &self,
        request: Request<AnnounceChaptersRequest>,
    ) -> Result<Response<AnnounceChaptersResponse>, Status> {
        self.credential.verify(&request)?;
        let request_id = request.into_inner().request_id;
        let queued = events::announce_chapters(&self.db, &request_id).await?;
        if queued.is_some() {
            self.wake_dispatcher().await;
        }
        let (batch, chapters) = queued.unwrap_or((0, 0));
        Ok(Response::new(AnnounceChaptersResponse {
            batch,
            chapters: i32::try_from(chapters).unwrap_or(i32::MAX),
        }))
    }

    async fn get_webhook_settings(
        &self,
        request: Request<StatusRequest>,
    ) -> Result<Response<WebhookSettingsView>, Status> {
        let who = self.credential.principal(&request)?;
        if !who.admin {
            return Err(DeliveryError::AdminRequired.into());
        }
        let view = admin::view(&self.db, &self.webhooks).await?;
        Ok(Response::new(view.into()))
    }

    async fn update_webhook_settings(
        &self,
        request: Request<UpdateWebhookSettingsRequest>,
    ) -> Result<Response<WebhookSettingsView>, Status> {
        let who = self.credential.principal(&request)?;
        if !who.admin {
            return Err(DeliveryError::AdminRequired.into());
        }
        let m = request.into_inner();
        let changes = WebhookSettingsChange::try_from(m.changes.unwrap_or_default())
            .map_err(|e| admin::unreadable(&e))?;
        let view = admin::update(&self.db, &self.webhooks, &changes, m.reset).await?;
        tracing::info!(account = %who.account_id, reset = m.reset, "webhook settings changed");
        // Retries scheduled under the old settings are looked at again now.
        self.wake_dispatcher().await;
        Ok(Response::new(view.into()))
    }

    async fn update_export_settings(
        &self,
        request: Request<ExportSettingsView>,
    ) -> Result<Response<ExportSettingsView>, Status> {
        let who = self.credential.principal(&request)?;
        let settings =
            crate::export_settings::update(&self.db, &who, request.into_inner().into()).await?;
        Ok(Response::new(settings.into()))
    }

    async fn get_mail_settings(
        &self,
        request: Request<StatusRequest>,
    ) -> Result<Response<MailSettingsView>, Status> {
        admin_only(&self.credential, &request)?;
        let view = mail::settings::view(&self.db).await?;
        Ok(Response::new(view.into()))
    }

    async fn update_mail_settings(
        &self,
        request: Request<UpdateMailSettingsRequest>,
    ) -> Result<Response<MailSettingsView>, Status> {
        let who = admin_only(&self.credential, &request)?;
        let input = MailSettingsInput::try_from(request.into_inner()).map_err(|e| {
            DeliveryError::InvalidSettings(vec![Issue::at("body", e.field, IssueKind::Enum)])
        })?;
        let view = mail::settings::update(&self.db, &self.mail, &input).await?;
        tracing::info!(account = %who.account_id, "mail settings changed");
        // Mails waiting for settings may go now.
        self.wake_mail().await;
        Ok(Response::new(view.into()))
    }

    async fn clear_mail_settings(
        &self,
        request: Request<StatusRequest>,
    ) -> Result<Response<MailSettingsView>, Status> {
        let who = admin_only(&self.credential, &request)?;
        let view = mail::settings::clear(&self.db).await?;
        tracing::info!(account = %who.account_id, "mail settings cleared");
        Ok(Response::new(view.into()))
    }

    async fn send_test_mail(
        &self,
        request: Request<SendTestMailRequest>,
    ) -> Result<Response<MailOutboxEntry>, Status> {
        admin_only(&self.credential, &request)?;
        let m = request.into_inner();
        let language = or_default(
            m.language,
            "language",
            MailLanguage::En,
            MailLanguage::expected(),
        )?;
        let entry = mail::admin::send_test(&self.db, m.to.as_deref(), language).await?;
        self.wake_mail().await;
        Ok(Response::new(entry.into()))
    }

    async fn list_mail_outbox(
        &self,
        request: Request<ListMailOutboxRequest>,
    ) -> Result<Response<MailOutboxPage>, Status> {
        admin_only(&self.credential, &request)?;
        let m = request.into_inner();
        let state = MailState::from_wire_opt((m.state != 0).then_some(m.state), "state")
            .map_err(invalid(MailState::expected()))?;
        let page = mail::admin::list(&self.db, state, m.limit, m.offset).await?;
        Ok(Response::new(page.into()))
    }

    async fn retry_mail(
        &self,
        request: Request<MailRef>,
    ) -> Result<Response<MailOutboxEntry>, Status> {
        admin_only(&self.credential, &request)?;
        let entry = mail::outbox::retry(&self.db, &request.get_ref().id).await?;
        self.wake_mail().await;
        Ok(Response::new(entry.into()))
    }

    async fn get_library_settings(
        &self,
        request: Request<StatusRequest>,
    ) -> Result<Response<LibrarySettingsView>, Status> {
        admin_only(&self.credential, &request)?;
        let view = library::settings::view(&self.db).await?;
        Ok(Response::new(view.into()))
    }

    async fn update_library_settings(
        &self,
        request: Request<UpdateLibrarySettingsRequest>,
    ) -> Result<Response<LibrarySettingsView>, Status> {
        let who = admin_only(&self.credential, &request)?;
        let view = library::settings::update(&self.db, request.into_inner().into()).await?;
        tracing::info!(account = %who.account_id, "library folder changed");
        // Publications waiting for a folder may go now.
        self.wake_library().await;
        Ok(Response::new(view.into()))
    }

    async fn clear_library_settings(
        &self,
        request: Request<StatusRequest>,
    ) -> Result<Response<LibrarySettingsView>, Status> {
        let who = admin_only(&self.credential, &request)?;
        let view = library::settings::clear(&self.db).await?;
        tracing::info!(account = %who.account_id, "library folder cleared");
        Ok(Response::new(view.into()))
    }

    async fn publish(
        &self,
        request: Request<ProjectRef>,
    ) -> Result<Response<PublicationView>, Status> {
        let who = self.credential.principal(&request)?;
        let project_id = &request.get_ref().project_id;
        let view = library::publish::publish(&self.db, who.acting(), project_id).await?;
        self.wake_library().await;
        Ok(Response::new(view.into()))
    }

    async fn get_publication(
        &self,
        request: Request<ProjectRef>,
    ) -> Result<Response<PublicationView>, Status> {
        let who = self.credential.principal(&request)?;
        let project_id = &request.get_ref().project_id;
        let view = library::publish::status(&self.db, who.acting(), project_id).await?;
        Ok(Response::new(view.into()))
    }
}

/// The caller when it is an administrator; 403 `admin_required` otherwise.
fn admin_only<T>(
    credential: &InternalCredential,
    request: &Request<T>,
) -> Result<dragoman_proto::principal::Principal, Status> {
    let who = credential.principal(request)?;
    if !who.admin {
        return Err(DeliveryError::AdminRequired.into());
    }
    Ok(who)
}
