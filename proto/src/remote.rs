//! Remote adapters: each wraps a tonic client and implements the service's
//! generated trait by forwarding the call, so a caller holds
//! `Arc<dyn Scheduler>` (or another service) without knowing whether the role
//! runs in this process or in another one.

use crate::v1::{
    delivery_client::DeliveryClient, memory_client::MemoryClient, pipeline_client::PipelineClient,
    scheduler_client::SchedulerClient, *,
};
use std::time::Duration;
use tonic::transport::{Channel, Endpoint};
use tonic::{Request, Response, Status};
use tracing::Instrument;

/// What every call between two processes is held to. The servers of the
/// roles use the same message limit, so whatever one side may send the
/// other accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallLimits {
    /// Largest encoded message sent or received, in bytes.
    pub max_message_bytes: usize,
    /// Deadline of one call, from its start to its answer.
    pub timeout: Duration,
}

/// Opens a lazily connected channel whose every call has the deadline of
/// `limits`: the remote process may start after this one, and each call
/// reconnects as needed.
pub fn channel(url: &str, limits: CallLimits) -> Result<Channel, tonic::transport::Error> {
    Ok(Endpoint::from_shared(url.to_owned())?
        .connect_timeout(Duration::from_secs(5).min(limits.timeout))
        .timeout(limits.timeout)
        .connect_lazy())
}

macro_rules! remote_service {
    ($name:ident, $client:ident, $service:path, $grpc_name:path, { $($method:ident($req:ty) -> $resp:ty;)* }) => {
        /// Forwards every call of the service to a remote process.
        #[derive(Clone)]
        pub struct $name($client<Channel>, Duration);

        impl $name {
            /// A client of `channel` (see [`channel`]) that sends and
            /// accepts messages up to the limit of `limits`.
            pub fn new(channel: Channel, limits: CallLimits) -> Self {
                Self(
                    $client::new(channel)
                        .max_decoding_message_size(limits.max_message_bytes)
                        .max_encoding_message_size(limits.max_message_bytes),
                    limits.timeout,
                )
            }
        }

        #[tonic::async_trait]
        impl $service for $name {
            $(
                async fn $method(&self, mut request: Request<$req>) -> Result<Response<$resp>, Status> {
                    // Sent as `grpc-timeout`, so the serving process gives
                    // up too instead of finishing work nobody waits for.
                    request.set_timeout(self.1);
                    let span = crate::remote_trace::client_span($grpc_name, stringify!($method));
                    crate::remote_trace::inject(&span, request.metadata_mut());
                    self.0.clone().$method(request).instrument(span).await
                }
            )*
        }
    };
}

remote_service!(RemoteScheduler, SchedulerClient, crate::Scheduler, crate::v1::scheduler_server::SERVICE_NAME, {
    status(StatusRequest) -> RoleStatus;
    list_series(ListSeriesRequest) -> SeriesList;
    get_series(GetSeriesRequest) -> SeriesDetail;
    control_series(SeriesControlRequest) -> SeriesControlReport;
    submit(SubmitRequest) -> SubmitResponse;
    get_request(RequestRef) -> RequestDocument;
    control(ControlRequest) -> RequestDocument;
    lease_job(LeaseJobRequest) -> LeaseJobResponse;
    heartbeat(HeartbeatRequest) -> HeartbeatResponse;
    finish_job(FinishJobRequest) -> RequestDocument;
    release_job(ReleaseJobRequest) -> ReleaseJobResponse;
    switch_provider(SwitchProviderRequest) -> SwitchProviderResponse;
    pause_for_budget(PauseForBudgetRequest) -> RequestDocument;
    get_queue_settings(StatusRequest) -> QueueSettingsView;
    update_queue_settings(UpdateQueueSettingsRequest) -> QueueSettingsView;
    create_series(CreateSeriesRequest) -> SeriesDetail;
    update_series(UpdateSeriesRequest) -> SeriesDetail;
    delete_series(GetSeriesRequest) -> Deleted;
    configure_book(ConfigureBookRequest) -> ProjectRef;
    shelve_book(ShelveBookRequest) -> ProjectRef;
    attach_volume(AttachVolumeRequest) -> SeriesDetail;
    delete_book(ProjectRef) -> Deleted;
    start_job(StartJobRequest) -> RequestDocument;
    list_jobs(ListJobsRequest) -> JobList;
    estimate_job(EstimateJobRequest) -> JobEstimate;
    licence_status(StatusRequest) -> crate::v1::LicenceStatusView;
    set_book_budget(SetBookBudgetRequest) -> BookBudgetView;
    set_edition(SetEditionRequest) -> EditionView;
});

remote_service!(RemotePipeline, PipelineClient, crate::Pipeline, crate::v1::pipeline_server::SERVICE_NAME, {
    status(StatusRequest) -> RoleStatus;
    list_providers(ListProvidersRequest) -> ProviderList;
    list_providers_admin(ListProvidersRequest) -> ListProvidersAdminResponse;
    add_provider(AddProviderRequest) -> ProviderAdmin;
    update_provider(UpdateProviderRequest) -> ProviderAdmin;
    set_default_provider(SetDefaultProviderRequest) -> ListProvidersAdminResponse;
    assess_edit(AssessEditRequest) -> EditAssessment;
    reconcile_batch(ReconcileBatchRequest) -> ReconcileBatchResponse;
});

remote_service!(RemoteDelivery, DeliveryClient, crate::Delivery, crate::v1::delivery_server::SERVICE_NAME, {
    status(StatusRequest) -> RoleStatus;
    get_result(GetResultRequest) -> ResultFile;
    announce_chapters(AnnounceChaptersRequest) -> AnnounceChaptersResponse;
    get_webhook_settings(StatusRequest) -> WebhookSettingsView;
    update_webhook_settings(UpdateWebhookSettingsRequest) -> WebhookSettingsView;
    deliver_epub(RequestRef) -> EpubDelivery;
    update_export_settings(ExportSettingsView) -> ExportSettingsView;
    get_mail_settings(StatusRequest) -> MailSettingsView;
    update_mail_settings(UpdateMailSettingsRequest) -> MailSettingsView;
    clear_mail_settings(StatusRequest) -> MailSettingsView;
    send_test_mail(SendTestMailRequest) -> MailOutboxEntry;
    list_mail_outbox(ListMailOutboxRequest) -> MailOutboxPage;
    retry_mail(MailRef) -> MailOutboxEntry;
    get_library_settings(StatusRequest) -> LibrarySettingsView;
    update_library_settings(UpdateLibrarySettingsRequest) -> LibrarySettingsView;
    clear_library_settings(StatusRequest) -> LibrarySettingsView;
    publish(ProjectRef) -> PublicationView;
    get_publication(ProjectRef) -> PublicationView;
});

remote_service!(RemoteMemory, MemoryClient, crate::Memory, crate::v1::memory_server::SERVICE_NAME, {
    status(StatusRequest) -> RoleStatus;
    plan_analysis(PlanAnalysisRequest) -> AnalysisPlan;
    record_analysis(RecordAnalysisRequest) -> RecordAnalysisResponse;
    reconcile(ReconcileRequest) -> ReconcileResponse;
    prepare_translation(PrepareTranslationRequest) -> PreparedTranslation;
    build_contexts(ContextRequest) -> BatchContexts;
    close_volume(ProjectRef) -> CloseVolumeResponse;
    put_term(PutTermRequest) -> Term;
    terms_in_force(ProjectRef) -> TermList;
    quality_sheet(ProjectRef) -> QualitySheetResponse;
    list_glossaries(ListGlossariesRequest) -> GlossaryList;
    create_glossary(CreateGlossaryRequest) -> SharedGlossary;
    get_glossary(GlossaryRef) -> SharedGlossary;
    export_glossary(ExportGlossaryRequest) -> GlossaryFile;
    import_glossary(ImportGlossaryRequest) -> ImportReport;
    get_series_glossary(SeriesGlossaryRequest) -> SeriesGlossary;
    attach_glossary(AttachGlossaryRequest) -> SeriesGlossary;
    list_books(ListBooksRequest) -> BookList;
    book_context(BookContextRequest) -> BookBundle;
    book_revision(ProjectRef) -> BookRevision;
    series_context(SeriesGlossaryRequest) -> SeriesBundle;
    get_book(ProjectRef) -> BookDetail;
    list_chapters(ProjectRef) -> ChapterList;
    book_quality(ProjectRef) -> BookQualityReport;
    series_consistency(SeriesGlossaryRequest) -> ConsistencyReport;
    add_term(PutTermRequest) -> Term;
    edit_term(EditTermRequest) -> Term;
    delete_term(TermRef) -> Deleted;
    propagate_term(PropagateTermRequest) -> PropagationReport;
    edit_passage(EditPassageRequest) -> EditPassageResponse;
    list_reader_notes(crate::v1::ListReaderNotesRequest) -> crate::v1::ReaderNoteList;
    set_reader_note(crate::v1::SetReaderNoteRequest) -> crate::v1::TermReaderNote;
    external_memory_status(StatusRequest) -> crate::v1::ExternalMemoryStatusView;
    retry_memory_outbox(StatusRequest) -> crate::v1::MemoryOutboxRetried;
    get_memory_cleanup_settings(StatusRequest) -> crate::v1::MemoryCleanupSettingsView;
    update_memory_cleanup_settings(UpdateMemoryCleanupSettingsRequest) -> crate::v1::MemoryCleanupSettingsView;
    list_memory_cleanups(StatusRequest) -> crate::v1::MemoryCleanupList;
    act_on_memory_cleanup(MemoryCleanupActionRequest) -> crate::v1::MemoryCleanupRecord;
    act_on_memory_orphans(MemoryOrphansRequest) -> crate::v1::MemoryOrphanScan;
    get_memory_orphan_schedule(StatusRequest) -> crate::v1::MemoryOrphanScheduleView;
    update_memory_orphan_schedule(UpdateMemoryOrphanScheduleRequest) -> crate::v1::MemoryOrphanScheduleView;
    memory_scope_status(MemoryScopeRef) -> crate::v1::MemoryScopeStatusView;
    act_on_memory_scope(MemoryScopeActionRequest) -> crate::v1::MemoryScopeOutcome;
});

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api_status::ServiceError;
    use crate::v1;
    use crate::v1::{delivery_server::DeliveryServer, memory_server::MemoryServer};
    use dragoman_model::vocab::ErrorCode;
    use std::net::SocketAddr;
    use tokio::net::TcpListener;
    use tokio_stream::wrappers::TcpListenerStream;
    use tonic::Code;

    const MIB: usize = 1024 * 1024;

    fn limits(max_message_bytes: usize, timeout: Duration) -> CallLimits {
        CallLimits {
            max_message_bytes,
            timeout,
        }
    }

    /// Serves `router` on a free local port until the test ends.
    async fn serve(router: tonic::transport::server::Router) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let address = listener.local_addr().expect("address");
        tokio::spawn(router.serve_with_incoming(TcpListenerStream::new(listener)));
        address
    }

    fn url(address: SocketAddr) -> String {
        format!("http://{address}")
    }

    /// A memory role that fails with a French error, or answers late.
    struct FakeMemory {
        delay: Duration,
    }

    #[tonic::async_trait]
    impl crate::Memory for FakeMemory {
        async fn status(&self, _: Request<StatusRequest>) -> Result<Response<RoleStatus>, Status> {
            if self.delay.is_zero() {
                return Err(ServiceError::new(
                    ErrorCode::Conflict,
                    "Le glossaire « Été » est verrouillé.",
                )
                .with("raison", "déjà ouvert par Zoé — réessayez")
                .into());
            }
            tokio::time::sleep(self.delay).await;
            Ok(Response::new(RoleStatus::default()))
        }

        async fn plan_analysis(
            &self,
            _: Request<PlanAnalysisRequest>,
        ) -> Result<Response<AnalysisPlan>, Status> {
            Err(Status::unimplemented("fake"))
        }

        async fn record_analysis(
            &self,
            _: Request<RecordAnalysisRequest>,
        ) -> Result<Response<RecordAnalysisResponse>, Status> {
            Err(Status::unimplemented("fake"))
        }

        async fn reconcile(
            &self,
            _: Request<ReconcileRequest>,
        ) -> Result<Response<ReconcileResponse>, Status> {
            Err(Status::unimplemented("fake"))
        }

        async fn prepare_translation(
            &self,
            _: Request<PrepareTranslationRequest>,
        ) -> Result<Response<PreparedTranslation>, Status> {
            Err(Status::unimplemented("fake"))
        }

        async fn build_contexts(
            &self,
            _: Request<ContextRequest>,
        ) -> Result<Response<BatchContexts>, Status> {
            Err(Status::unimplemented("fake"))
        }

        async fn close_volume(
            &self,
            _: Request<ProjectRef>,
        ) -> Result<Response<CloseVolumeResponse>, Status> {
            Err(Status::unimplemented("fake"))
        }

        async fn put_term(&self, _: Request<PutTermRequest>) -> Result<Response<Term>, Status> {
            Err(Status::unimplemented("fake"))
        }

        async fn terms_in_force(
            &self,
            _: Request<ProjectRef>,
        ) -> Result<Response<TermList>, Status> {
            Err(Status::unimplemented("fake"))
        }

        async fn quality_sheet(
            &self,
            _: Request<ProjectRef>,
        ) -> Result<Response<QualitySheetResponse>, Status> {
            Err(Status::unimplemented("fake"))
        }

        async fn list_glossaries(
            &self,
            _: Request<v1::ListGlossariesRequest>,
        ) -> Result<Response<v1::GlossaryList>, Status> {
            Err(Status::unimplemented("fake"))
        }

        async fn create_glossary(
            &self,
            _: Request<v1::CreateGlossaryRequest>,
        ) -> Result<Response<v1::SharedGlossary>, Status> {
            Err(Status::unimplemented("fake"))
        }

        async fn get_glossary(
            &self,
            _: Request<v1::GlossaryRef>,
        ) -> Result<Response<v1::SharedGlossary>, Status> {
            Err(Status::unimplemented("fake"))
        }

        async fn export_glossary(
            &self,
            _: Request<v1::ExportGlossaryRequest>,
        ) -> Result<Response<v1::GlossaryFile>, Status> {
            Err(Status::unimplemented("fake"))
        }

        async fn import_glossary(
            &self,
            _: Request<v1::ImportGlossaryRequest>,
        ) -> Result<Response<v1::ImportReport>, Status> {
            Err(Status::unimplemented("fake"))
        }

        async fn get_series_glossary(
            &self,
            _: Request<v1::SeriesGlossaryRequest>,
        ) -> Result<Response<v1::SeriesGlossary>, Status> {
            Err(Status::unimplemented("fake"))
        }

        async fn attach_glossary(
            &self,
            _: Request<v1::AttachGlossaryRequest>,
        ) -> Result<Response<v1::SeriesGlossary>, Status> {
            Err(Status::unimplemented("fake"))
        }

        async fn list_books(
            &self,
            _: Request<v1::ListBooksRequest>,
        ) -> Result<Response<v1::BookList>, Status> {
            Err(Status::unimplemented("fake"))
        }

        async fn book_context(
            &self,
            _: Request<v1::BookContextRequest>,
        ) -> Result<Response<v1::BookBundle>, Status> {
            Err(Status::unimplemented("fake"))
        }

        async fn book_revision(
            &self,
            _: Request<v1::ProjectRef>,
        ) -> Result<Response<v1::BookRevision>, Status> {
            Err(Status::unimplemented("fake"))
        }

        async fn series_context(
            &self,
            _: Request<v1::SeriesGlossaryRequest>,
        ) -> Result<Response<v1::SeriesBundle>, Status> {
            Err(Status::unimplemented("fake"))
        }
        async fn get_book(
            &self,
            _: Request<ProjectRef>,
        ) -> Result<Response<v1::BookDetail>, Status> {
            Err(Status::unimplemented("get_book"))
        }

        async fn list_chapters(
            &self,
            _: Request<ProjectRef>,
        ) -> Result<Response<v1::ChapterList>, Status> {
            Err(Status::unimplemented("list_chapters"))
        }

        async fn book_quality(
            &self,
            _: Request<ProjectRef>,
        ) -> Result<Response<v1::BookQualityReport>, Status> {
            Err(Status::unimplemented("book_quality"))
        }

        async fn series_consistency(
            &self,
            _: Request<SeriesGlossaryRequest>,
        ) -> Result<Response<v1::ConsistencyReport>, Status> {
            Err(Status::unimplemented("series_consistency"))
        }

        async fn add_term(&self, _: Request<PutTermRequest>) -> Result<Response<Term>, Status> {
            Err(Status::unimplemented("add_term"))
        }

        async fn edit_term(&self, _: Request<EditTermRequest>) -> Result<Response<Term>, Status> {
            Err(Status::unimplemented("edit_term"))
        }

        async fn delete_term(&self, _: Request<TermRef>) -> Result<Response<Deleted>, Status> {
            Err(Status::unimplemented("delete_term"))
        }

        async fn propagate_term(
            &self,
            _: Request<PropagateTermRequest>,
        ) -> Result<Response<v1::PropagationReport>, Status> {
            Err(Status::unimplemented("propagate_term"))
        }

        async fn edit_passage(
            &self,
            _: Request<v1::EditPassageRequest>,
        ) -> Result<Response<v1::EditPassageResponse>, Status> {
            Err(Status::unimplemented("edit_passage"))
        }

        async fn list_reader_notes(
            &self,
            _: Request<v1::ListReaderNotesRequest>,
        ) -> Result<Response<v1::ReaderNoteList>, Status> {
            Err(Status::unimplemented("list_reader_notes"))
        }

        async fn set_reader_note(
            &self,
            _: Request<v1::SetReaderNoteRequest>,
        ) -> Result<Response<v1::TermReaderNote>, Status> {
            Err(Status::unimplemented("set_reader_note"))
        }

        async fn external_memory_status(
            &self,
            _: Request<StatusRequest>,
        ) -> Result<Response<v1::ExternalMemoryStatusView>, Status> {
            Err(Status::unimplemented("external_memory_status"))
        }

        async fn retry_memory_outbox(
            &self,
            _: Request<StatusRequest>,
        ) -> Result<Response<v1::MemoryOutboxRetried>, Status> {
            Err(Status::unimplemented("retry_memory_outbox"))
        }

        async fn get_memory_cleanup_settings(
            &self,
            _: Request<StatusRequest>,
        ) -> Result<Response<v1::MemoryCleanupSettingsView>, Status> {
            Err(Status::unimplemented("get_memory_cleanup_settings"))
        }

        async fn update_memory_cleanup_settings(
            &self,
            _: Request<UpdateMemoryCleanupSettingsRequest>,
        ) -> Result<Response<v1::MemoryCleanupSettingsView>, Status> {
            Err(Status::unimplemented("update_memory_cleanup_settings"))
        }

        async fn list_memory_cleanups(
            &self,
            _: Request<StatusRequest>,
        ) -> Result<Response<v1::MemoryCleanupList>, Status> {
            Err(Status::unimplemented("list_memory_cleanups"))
        }

        async fn act_on_memory_cleanup(
            &self,
            _: Request<MemoryCleanupActionRequest>,
        ) -> Result<Response<v1::MemoryCleanupRecord>, Status> {
            Err(Status::unimplemented("act_on_memory_cleanup"))
        }

        async fn act_on_memory_orphans(
            &self,
            _: Request<MemoryOrphansRequest>,
        ) -> Result<Response<v1::MemoryOrphanScan>, Status> {
            Err(Status::unimplemented("act_on_memory_orphans"))
        }

        async fn get_memory_orphan_schedule(
            &self,
            _: Request<StatusRequest>,
        ) -> Result<Response<v1::MemoryOrphanScheduleView>, Status> {
            Err(Status::unimplemented("get_memory_orphan_schedule"))
        }

        async fn update_memory_orphan_schedule(
            &self,
            _: Request<UpdateMemoryOrphanScheduleRequest>,
        ) -> Result<Response<v1::MemoryOrphanScheduleView>, Status> {
            Err(Status::unimplemented("update_memory_orphan_schedule"))
        }

        async fn memory_scope_status(
            &self,
            _: Request<MemoryScopeRef>,
        ) -> Result<Response<v1::MemoryScopeStatusView>, Status> {
            Err(Status::unimplemented("memory_scope_status"))
        }

        async fn act_on_memory_scope(
            &self,
            _: Request<MemoryScopeActionRequest>,
        ) -> Result<Response<v1::MemoryScopeOutcome>, Status> {
            Err(Status::unimplemented("act_on_memory_scope"))
        }
    }

    /// A delivery role whose results are `size` bytes long.
    struct FakeDelivery {
        size: usize,
    }

    #[tonic::async_trait]
    impl crate::Delivery for FakeDelivery {
        async fn status(&self, _: Request<StatusRequest>) -> Result<Response<RoleStatus>, Status> {
            Err(Status::unimplemented("status"))
        }
        async fn get_result(
            &self,
            _: Request<GetResultRequest>,
        ) -> Result<Response<ResultFile>, Status> {
            Ok(Response::new(ResultFile {
                body: vec![b'x'; self.size],
                ..ResultFile::default()
            }))
        }
        async fn announce_chapters(
            &self,
            _: Request<AnnounceChaptersRequest>,
        ) -> Result<Response<AnnounceChaptersResponse>, Status> {
            Err(Status::unimplemented("announce_chapters"))
        }
        async fn get_webhook_settings(
            &self,
            _: Request<StatusRequest>,
        ) -> Result<Response<WebhookSettingsView>, Status> {
            Err(Status::unimplemented("get_webhook_settings"))
        }
        async fn update_webhook_settings(
            &self,
            _: Request<UpdateWebhookSettingsRequest>,
        ) -> Result<Response<WebhookSettingsView>, Status> {
            Err(Status::unimplemented("update_webhook_settings"))
        }
        async fn deliver_epub(
            &self,
            _: Request<RequestRef>,
        ) -> Result<Response<EpubDelivery>, Status> {
            Err(Status::unimplemented("deliver_epub"))
        }
        async fn update_export_settings(
            &self,
            _: Request<ExportSettingsView>,
        ) -> Result<Response<ExportSettingsView>, Status> {
            Err(Status::unimplemented("update_export_settings"))
        }
        async fn get_mail_settings(
            &self,
            _: Request<StatusRequest>,
        ) -> Result<Response<MailSettingsView>, Status> {
            Err(Status::unimplemented("get_mail_settings"))
        }
        async fn update_mail_settings(
            &self,
            _: Request<UpdateMailSettingsRequest>,
        ) -> Result<Response<MailSettingsView>, Status> {
            Err(Status::unimplemented("update_mail_settings"))
        }
        async fn clear_mail_settings(
            &self,
            _: Request<StatusRequest>,
        ) -> Result<Response<MailSettingsView>, Status> {
            Err(Status::unimplemented("clear_mail_settings"))
        }
        async fn send_test_mail(
            &self,
            _: Request<SendTestMailRequest>,
        ) -> Result<Response<MailOutboxEntry>, Status> {
            Err(Status::unimplemented("send_test_mail"))
        }
        async fn list_mail_outbox(
            &self,
            _: Request<ListMailOutboxRequest>,
        ) -> Result<Response<MailOutboxPage>, Status> {
            Err(Status::unimplemented("list_mail_outbox"))
        }
        async fn retry_mail(
            &self,
            _: Request<MailRef>,
        ) -> Result<Response<MailOutboxEntry>, Status> {
            Err(Status::unimplemented("retry_mail"))
        }
        async fn get_library_settings(
            &self,
            _: Request<StatusRequest>,
        ) -> Result<Response<LibrarySettingsView>, Status> {
            Err(Status::unimplemented("get_library_settings"))
        }
        async fn update_library_settings(
            &self,
            _: Request<UpdateLibrarySettingsRequest>,
        ) -> Result<Response<LibrarySettingsView>, Status> {
            Err(Status::unimplemented("update_library_settings"))
        }
        async fn clear_library_settings(
            &self,
            _: Request<StatusRequest>,
        ) -> Result<Response<LibrarySettingsView>, Status> {
            Err(Status::unimplemented("clear_library_settings"))
        }
        async fn publish(
            &self,
            _: Request<ProjectRef>,
        ) -> Result<Response<PublicationView>, Status> {
            Err(Status::unimplemented("publish"))
        }
        async fn get_publication(
            &self,
            _: Request<ProjectRef>,
        ) -> Result<Response<PublicationView>, Status> {
            Err(Status::unimplemented("get_publication"))
        }
    }

    #[tokio::test]
    async fn a_french_error_crosses_the_wire_intact() {
        let address = serve(
            tonic::transport::Server::builder().add_service(MemoryServer::new(FakeMemory {
                delay: Duration::ZERO,
            })),
        )
        .await;
        let limits = limits(4 * MIB, Duration::from_secs(10));
        let memory = RemoteMemory::new(channel(&url(address), limits).expect("channel"), limits);
        let status = crate::Memory::status(&memory, Request::new(StatusRequest {}))
            .await
            .expect_err("the fake fails");
        assert_eq!(status.code(), Code::FailedPrecondition);
        assert_eq!(status.message(), "Le glossaire « Été » est verrouillé.");
        let refusal = ServiceError::from_status(&status).expect("a refusal");
        assert_eq!(refusal.code, ErrorCode::Conflict);
        assert_eq!(refusal.extra["raison"], "déjà ouvert par Zoé — réessayez");
    }

    #[tokio::test]
    async fn a_call_past_its_deadline_ends() {
        let address = serve(
            tonic::transport::Server::builder().add_service(MemoryServer::new(FakeMemory {
                delay: Duration::from_secs(30),
            })),
        )
        .await;
        let limits = limits(4 * MIB, Duration::from_millis(300));
        let memory = RemoteMemory::new(channel(&url(address), limits).expect("channel"), limits);
        let started = std::time::Instant::now();
        let status = crate::Memory::status(&memory, Request::new(StatusRequest {}))
            .await
            .expect_err("the call outlives its deadline");
        assert_eq!(status.code(), Code::Cancelled, "{status}");
        assert!(started.elapsed() < Duration::from_secs(5), "{status}");
    }

    #[tokio::test]
    async fn messages_up_to_the_limit_pass_and_larger_ones_are_refused() {
        let size = 6 * MIB;
        let address = serve(
            tonic::transport::Server::builder()
                .add_service(DeliveryServer::new(FakeDelivery { size })),
        )
        .await;
        let wide = limits(8 * MIB, Duration::from_secs(30));
        let delivery = RemoteDelivery::new(channel(&url(address), wide).expect("channel"), wide);
        let file =
            crate::Delivery::get_result(&delivery, Request::new(GetResultRequest::default()))
                .await
                .expect("a 6 MiB result under an 8 MiB limit");
        assert_eq!(file.get_ref().body.len(), size);

        let narrow = limits(4 * MIB, Duration::from_secs(30));
        let delivery =
            RemoteDelivery::new(channel(&url(address), narrow).expect("channel"), narrow);
        let status =
            crate::Delivery::get_result(&delivery, Request::new(GetResultRequest::default()))
                .await
                .expect_err("a 6 MiB result over a 4 MiB limit");
        assert!(status.message().contains("too large"), "{status}");
    }
}
