//! The Memory gRPC service: checks the caller, converts the wire messages
//! to the memory's types and back, and maps errors once; the work is the
//! backend's.

use crate::backend::{InternalBackend, MemoryBackend, MemorySettings};
use crate::bundle;
use crate::domain::{PassageExtraction, TermInput};
use crate::error::MemoryError;
use crate::external::maintenance::ScopeAction;
use crate::external::{ExternalMemory, MirrorScope, cleanup, outbox};
use crate::library;
use crate::shared_glossary::{self, GlossaryInput, ImportOptions};
use crate::{person_edits, propagate, term_edit};
use dragoman_model::documents::external_memory::{
    ExternalMemoryStatus, LocalMemoryStatus, MemoryScopeStatus, OutboxRetried,
    UnmirroredScopeStatus,
};
use dragoman_model::tenancy;
use dragoman_model::vocab::{
    ContextBackend, CsvDelimiter, ErrorCode, ImportStrategy, Issue, IssueKind,
};
use dragoman_proto::api_status::ServiceError;
use dragoman_proto::principal::{InternalCredential, Principal};
use dragoman_proto::v1;
use dragoman_proto::v1::{RoleStatus, StatusRequest};
use dragoman_proto::wire::{self, WireEnum};
use sea_orm::DatabaseConnection;
use std::sync::Arc;
use tonic::{Request, Response, Status};

mod convert;

use convert::{book, count, glossary, quality, term, wire_field};

pub struct MemoryService {
    backend: Arc<dyn MemoryBackend>,
    /// Shared glossaries and the narrative context bundles are read and
    /// written in the database, the source of truth, whatever backend
    /// serves the translation context.
    db: DatabaseConnection,
    credential: InternalCredential,
    /// The external semantic memory when the installation configures one;
    /// its administrator and owner routes refuse (or report
    /// `configured: false`) without it.
    external: Option<Arc<ExternalMemory>>,
}

impl MemoryService {
    pub fn new(
        backend: Arc<dyn MemoryBackend>,
        db: DatabaseConnection,
        credential: InternalCredential,
    ) -> Self {
        Self {
            backend,
            db,
            credential,
            external: None,
        }
    }

    /// The same service with the installation's external memory.
    pub fn with_external(mut self, external: Arc<ExternalMemory>) -> Self {
        self.external = Some(external);
        self
    }

    /// The service over the memory kept in the database.
    pub fn internal(
        db: DatabaseConnection,
        credential: InternalCredential,
        settings: MemorySettings,
    ) -> Self {
        Self::new(
            Arc::new(InternalBackend::new(db.clone(), settings)),
            db,
            credential,
        )
    }

    /// The account a person's call acts for: the operations on a person's
    /// glossaries and books need one.
    fn person<T>(&self, request: &Request<T>) -> Result<String, Status> {
        self.account(request)?
            .ok_or_else(|| Status::from(ServiceError::new(ErrorCode::Unauthorized, "no principal")))
    }

    /// The account a person's call acts for; none for the installation's
    /// own calls.
    fn account<T>(&self, request: &Request<T>) -> Result<Option<String>, Status> {
        self.credential.verify(request)?;
        Ok(self
            .credential
            .principal(request)
            .ok()
            .map(|p| p.account_id))
    }
}

/// The administrator and owner routes of the external memory (spec 1,
/// 4.9): who may act, on which mirror, and whether there is one.
impl MemoryService {
    /// The administrator a call on the installation's external memory acts
    /// for. The gateway checks the session too; the check is repeated here
    /// because any process holding the credential may call this service.
    fn administrator<T>(&self, request: &Request<T>) -> Result<Principal, Status> {
        let who = self.credential.principal(request)?;
        if who.admin {
            Ok(who)
        } else {
            Err(ServiceError::new(ErrorCode::AdminRequired, "administrator required").into())
        }
    }

    fn external(&self) -> Result<&ExternalMemory, MemoryError> {
        self.external
            .as_deref()
            .ok_or(MemoryError::ExternalNotConfigured)
    }

    /// The mirror a person may look at or act on: a volume or series of
    /// their account, any for an administrator. Another account's object
    /// answers as an absent one, so ids of others' books are not revealed.
    async fn owned_scope<T>(
        &self,
        request: &Request<T>,
        scope: Option<&v1::MemoryScopeRef>,
    ) -> Result<(Principal, MirrorScope), Status> {
        let who = self.credential.principal(request)?;
        let Some(scope) = scope else {
            return Err(MemoryError::InvalidRequest(vec![Issue::at(
                "body",
                "scope",
                IssueKind::Missing,
            )])
            .into());
        };
        let mirror = match v1::MemoryScopeKind::try_from(scope.kind) {
            Ok(v1::MemoryScopeKind::Project) => {
                tenancy::maintained_book(&self.db, who.acting(), &scope.id)
                    .await
                    .map_err(MemoryError::from)?;
                MirrorScope::Project(scope.id.clone())
            }
            Ok(v1::MemoryScopeKind::Series) => {
                tenancy::maintained_series(&self.db, who.acting(), &scope.id)
                    .await
                    .map_err(MemoryError::from)?;
                MirrorScope::Series(scope.id.clone())
            }
            Ok(v1::MemoryScopeKind::Unspecified) | Err(_) => {
                return Err(MemoryError::InvalidRequest(vec![Issue::at(
                    "body",
                    "kind",
                    IssueKind::Enum,
                )])
                .into());
            }
        };
        Ok((who, mirror))
    }
}

/// The status without an external memory. The triggers fill the outbox and
/// the cleanup records whatever the configuration, so an administrator
/// still sees what waits locally for a mirror; the counts are the same
/// functions the configured status uses.
async fn unconfigured_status(db: &DatabaseConnection) -> Result<LocalMemoryStatus, MemoryError> {
    Ok(LocalMemoryStatus {
        cleanups: cleanup::counts(db).await?,
        configured: false,
        outbox: outbox::local_counts(db).await?,
    })
}

#[tonic::async_trait]
impl dragoman_proto::Memory for MemoryService {
    async fn status(
        &self,
        request: Request<StatusRequest>,
    ) -> Result<Response<RoleStatus>, Status> {
        self.credential.verify(&request)?;
        let health = self.backend.health().await;
        Ok(Response::new(RoleStatus {
            role: "memory".into(),
            ok: health.is_ok(),
            detail: health.err().map(|e| e.to_string()).unwrap_or_default(),
        }))
    }

    async fn plan_analysis(
        &self,
        request: Request<v1::PlanAnalysisRequest>,
    ) -> Result<Response<v1::AnalysisPlan>, Status> {
        self.credential.verify(&request)?;
        let ask = request.into_inner();
        let plan = self
            .backend
            .plan_analysis(&ask.project_id, &ask.chapter_ids)
            .await?;
        Ok(Response::new(v1::AnalysisPlan {
            passages: plan
                .passages
                .into_iter()
                .map(|p| v1::PassageText {
                    id: p.id,
                    text: p.text,
                })
                .collect(),
            done: count(plan.done),
            recalled: count(plan.recalled),
            total: count(plan.total),
        }))
    }

    async fn record_analysis(
        &self,
        request: Request<v1::RecordAnalysisRequest>,
    ) -> Result<Response<v1::RecordAnalysisResponse>, Status> {
        self.credential.verify(&request)?;
        let ask = request.into_inner();
        let analyses: Vec<PassageExtraction> = ask
            .analyses
            .into_iter()
            .map(wire::passage_extraction)
            .collect();
        let stored = self
            .backend
            .record_analysis(
                &ask.project_id,
                &analyses,
                ask.reconcile,
                quality(ask.quality),
            )
            .await?;
        Ok(Response::new(v1::RecordAnalysisResponse {
            stored: count(stored),
        }))
    }

    async fn reconcile(
        &self,
        request: Request<v1::ReconcileRequest>,
    ) -> Result<Response<v1::ReconcileResponse>, Status> {
        self.credential.verify(&request)?;
        let ask = request.into_inner();
        let outcome = self
            .backend
            .reconcile(&ask.project_id, quality(ask.quality))
            .await?;
        Ok(Response::new(v1::ReconcileResponse {
            reconciled: count(outcome.reconciled),
            entities: count(outcome.entities),
            terms: count(outcome.terms),
        }))
    }

    async fn prepare_translation(
        &self,
        request: Request<v1::PrepareTranslationRequest>,
    ) -> Result<Response<v1::PreparedTranslation>, Status> {
        self.credential.verify(&request)?;
        let ask = request.into_inner();
        let prepared = self
            .backend
            .prepare_translation(&ask.project_id, &ask.passage_ids)
            .await?;
        Ok(Response::new(v1::PreparedTranslation {
            passages: prepared
                .into_iter()
                .map(|p| v1::PreparedPassage {
                    passage_id: p.passage_id,
                    memory_key: p.memory_key,
                    recalled: p.recalled,
                })
                .collect(),
        }))
    }

    async fn build_contexts(
        &self,
        request: Request<v1::ContextRequest>,
    ) -> Result<Response<v1::BatchContexts>, Status> {
        self.credential.verify(&request)?;
        let ask = request.into_inner();
        let asked = ContextBackend::from_wire_opt(ask.context_backend, "context_backend").map_err(
            |_| {
                MemoryError::InvalidRequest(vec![Issue::at(
                    "body",
                    "context_backend",
                    IssueKind::Enum,
                )])
            },
        )?;
        let job_id = ask.job_id.trim();
        // Unsaid, the job's request decides (workers carry no request data).
        let backend = match asked {
            Some(backend) => backend,
            None if !job_id.is_empty() => crate::backend::job_context_backend(&self.db, job_id)
                .await?
                .unwrap_or_default(),
            None => ContextBackend::Internal,
        };
        let batches: Vec<Vec<String>> = ask.batches.into_iter().map(|b| b.passage_ids).collect();
        let answered = self
            .backend
            .build_contexts_with(&ask.project_id, &batches, backend, self.external.as_deref())
            .await?;
        if !job_id.is_empty() {
            let asked_batches = batches.iter().filter(|b| !b.is_empty()).count();
            // The record feeds the status document only: failing to write
            // it must not stop a translation.
            if let Err(error) = crate::backend::record_retrievals(
                &self.db,
                job_id,
                &ask.project_id,
                &answered,
                asked_batches,
            )
            .await
            {
                tracing::warn!(job = %job_id, %error, "recording which memory answered failed");
            }
        }
        Ok(Response::new(v1::BatchContexts {
            contexts: answered
                .contexts
                .into_iter()
                .map(|context| v1::BatchContext {
                    text: context.text,
                    tokens: count(context.tokens),
                })
                .collect(),
            answered_by: answered.answered_by.to_wire(),
        }))
    }

    async fn close_volume(
        &self,
        request: Request<v1::ProjectRef>,
    ) -> Result<Response<v1::CloseVolumeResponse>, Status> {
        self.credential.verify(&request)?;
        let ask = request.into_inner();
        let outcome = self.backend.close_volume(&ask.project_id).await?;
        Ok(Response::new(v1::CloseVolumeResponse {
            series_entities: count(outcome.series_entities),
            series_terms: count(outcome.series_terms),
        }))
    }

    async fn put_term(
        &self,
        request: Request<v1::PutTermRequest>,
    ) -> Result<Response<v1::Term>, Status> {
        let account = self.account(&request)?;
        let ask = request.into_inner();
        let layer = WireEnum::from_wire(ask.layer, "layer").map_err(|_| {
            MemoryError::InvalidRequest(vec![Issue::at("body", "layer", IssueKind::Enum)])
        })?;
        let input = TermInput {
            layer,
            owner_id: ask.owner_id,
            source: ask.source,
            translation: ask.translation,
            category: ask.category,
            description: ask.description,
            locked: ask.locked,
            accepted: ask.accepted,
        };
        let stored = self.backend.put_term(account.as_deref(), &input).await?;
        Ok(Response::new(term(stored)))
    }

    async fn terms_in_force(
        &self,
        request: Request<v1::ProjectRef>,
    ) -> Result<Response<v1::TermList>, Status> {
        let account = self.account(&request)?;
        let ask = request.into_inner();
        let terms = self
            .backend
            .terms_in_force(account.as_deref(), &ask.project_id)
            .await?;
        Ok(Response::new(v1::TermList {
            terms: terms.into_iter().map(term).collect(),
        }))
    }

    async fn quality_sheet(
        &self,
        request: Request<v1::ProjectRef>,
    ) -> Result<Response<v1::QualitySheetResponse>, Status> {
        self.credential.verify(&request)?;
        let ask = request.into_inner();
        let sheet = self.backend.quality_sheet(&ask.project_id).await?;
        Ok(Response::new(v1::QualitySheetResponse {
            terms: sheet
                .terms
                .into_iter()
                .map(|(source, translation, locked)| v1::SheetTerm {
                    source,
                    translation,
                    locked,
                })
                .collect(),
            names: sheet
                .names
                .into_iter()
                .map(|n| v1::SheetName {
                    name: n.name,
                    aliases: n.aliases,
                    rendering: n.rendering,
                })
                .collect(),
        }))
    }
    async fn list_glossaries(
        &self,
        request: Request<v1::ListGlossariesRequest>,
    ) -> Result<Response<v1::GlossaryList>, Status> {
        let account = self.person(&request)?;
        let listed = shared_glossary::list(&self.db, &account).await?;
        Ok(Response::new(v1::GlossaryList {
            glossaries: listed.into_iter().map(glossary).collect(),
        }))
    }

    async fn create_glossary(
        &self,
        request: Request<v1::CreateGlossaryRequest>,
    ) -> Result<Response<v1::SharedGlossary>, Status> {
        let account = self.person(&request)?;
        let ask = request.into_inner();
        let input = GlossaryInput {
            name: ask.name,
            description: ask.description,
            source_language: ask.source_language,
            target_language: ask.target_language,
        };
        let created = shared_glossary::create(&self.db, &account, input).await?;
        Ok(Response::new(glossary(created)))
    }

    async fn get_glossary(
        &self,
        request: Request<v1::GlossaryRef>,
    ) -> Result<Response<v1::SharedGlossary>, Status> {
        let account = self.person(&request)?;
        let ask = request.into_inner();
        let found = shared_glossary::detail(&self.db, &account, &ask.glossary_id).await?;
        Ok(Response::new(glossary(found)))
    }

    async fn export_glossary(
        &self,
        request: Request<v1::ExportGlossaryRequest>,
    ) -> Result<Response<v1::GlossaryFile>, Status> {
        let account = self.person(&request)?;
        let ask = request.into_inner();
        let format = wire_field(ask.format, "format")?;
        let delimiter =
            CsvDelimiter::from_wire(ask.delimiter, "delimiter").unwrap_or(CsvDelimiter::Comma);
        let file = shared_glossary::export(
            &self.db,
            &account,
            &ask.glossary_id,
            format,
            delimiter,
            ask.bom,
        )
        .await?;
        Ok(Response::new(v1::GlossaryFile {
            content: file.content,
            media_type: file.media_type.to_owned(),
            filename: file.filename,
        }))
    }

    async fn import_glossary(
        &self,
        request: Request<v1::ImportGlossaryRequest>,
    ) -> Result<Response<v1::ImportReport>, Status> {
        let account = self.person(&request)?;
        let ask = request.into_inner();
        let options = ImportOptions {
            strategy: ImportStrategy::from_wire(ask.strategy, "strategy").unwrap_or_default(),
            delimiter: ask
                .delimiter
                .map(|d| wire_field(d, "delimiter"))
                .transpose()?,
            mapping: ask.mapping.into_iter().collect(),
            header: ask.header,
            skip_invalid: ask.skip_invalid,
            dry_run: ask.dry_run,
            filename: ask.filename,
        };
        let report =
            shared_glossary::import(&self.db, &account, &ask.glossary_id, &ask.content, &options)
                .await?;
        Ok(Response::new(report.into()))
    }

    async fn get_series_glossary(
        &self,
        request: Request<v1::SeriesGlossaryRequest>,
    ) -> Result<Response<v1::SeriesGlossary>, Status> {
        let account = self.person(&request)?;
        let ask = request.into_inner();
        let followed = shared_glossary::followed(&self.db, &account, &ask.series_id).await?;
        Ok(Response::new(v1::SeriesGlossary {
            series_id: ask.series_id,
            glossary: followed.map(glossary),
        }))
    }

    async fn attach_glossary(
        &self,
        request: Request<v1::AttachGlossaryRequest>,
    ) -> Result<Response<v1::SeriesGlossary>, Status> {
        let account = self.person(&request)?;
        let ask = request.into_inner();
        let followed = shared_glossary::attach(
            &self.db,
            &account,
            &ask.series_id,
            ask.glossary_id.as_deref(),
        )
        .await?;
        Ok(Response::new(v1::SeriesGlossary {
            series_id: ask.series_id,
            glossary: followed.map(glossary),
        }))
    }

    async fn list_books(
        &self,
        request: Request<v1::ListBooksRequest>,
    ) -> Result<Response<v1::BookList>, Status> {
        let account = self.person(&request)?;
        let books = bundle::books(&self.db, &account).await?;
        Ok(Response::new(v1::BookList {
            books: books.into_iter().map(book).collect(),
        }))
    }

    async fn book_context(
        &self,
        request: Request<v1::BookContextRequest>,
    ) -> Result<Response<v1::BookBundle>, Status> {
        let account = self.person(&request)?;
        let ask = request.into_inner();
        let bundle = bundle::book_bundle(
            &self.db,
            &account,
            &ask.book_id,
            &ask.chapter_ids,
            ask.with_text,
        )
        .await?;
        Ok(Response::new(bundle.into()))
    }

    async fn book_revision(
        &self,
        request: Request<v1::ProjectRef>,
    ) -> Result<Response<v1::BookRevision>, Status> {
        let account = self.person(&request)?;
        let ask = request.into_inner();
        let revision = bundle::book_revision(&self.db, &account, &ask.project_id).await?;
        Ok(Response::new(revision.into()))
    }

    async fn series_context(
        &self,
        request: Request<v1::SeriesGlossaryRequest>,
    ) -> Result<Response<v1::SeriesBundle>, Status> {
        let account = self.person(&request)?;
        let ask = request.into_inner();
        let bundle = bundle::series_bundle(&self.db, &account, &ask.series_id).await?;
        Ok(Response::new(bundle.into()))
    }
    async fn get_book(
        &self,
        request: Request<v1::ProjectRef>,
    ) -> Result<Response<v1::BookDetail>, Status> {
        let account = self.person(&request)?;
        let book = library::book(&self.db, &account, &request.get_ref().project_id).await?;
        Ok(Response::new(book.into()))
    }

    async fn list_chapters(
        &self,
        request: Request<v1::ProjectRef>,
    ) -> Result<Response<v1::ChapterList>, Status> {
        let account = self.person(&request)?;
        let chapters = library::chapters(&self.db, &account, &request.get_ref().project_id).await?;
        Ok(Response::new(chapters.into()))
    }

    async fn book_quality(
        &self,
        request: Request<v1::ProjectRef>,
    ) -> Result<Response<v1::BookQualityReport>, Status> {
        let account = self.person(&request)?;
        let quality =
            library::book_quality(&self.db, &account, &request.get_ref().project_id).await?;
        Ok(Response::new(quality.into()))
    }

    async fn series_consistency(
        &self,
        request: Request<v1::SeriesGlossaryRequest>,
    ) -> Result<Response<v1::ConsistencyReport>, Status> {
        let account = self.person(&request)?;
        let ask = request.into_inner();
        let report = crate::consistency::report(&self.db, &account, &ask.series_id).await?;
        Ok(Response::new(report.into()))
    }

    async fn add_term(
        &self,
        request: Request<v1::PutTermRequest>,
    ) -> Result<Response<v1::Term>, Status> {
        let account = self.person(&request)?;
        let ask = request.into_inner();
        let layer = wire_field(ask.layer, "layer")?;
        let new = term_edit::NewTerm {
            book_id: ask.owner_id.clone(),
            input: TermInput {
                layer,
                owner_id: ask.owner_id,
                source: ask.source,
                translation: ask.translation,
                category: ask.category,
                description: ask.description,
                locked: ask.locked,
                accepted: ask.accepted,
            },
        };
        let stored = term_edit::add(&self.db, &account, new).await?;
        Ok(Response::new(term(stored)))
    }

    async fn edit_term(
        &self,
        request: Request<v1::EditTermRequest>,
    ) -> Result<Response<v1::Term>, Status> {
        let account = self.person(&request)?;
        let ask = request.into_inner();
        let changes = term_edit::TermChanges {
            source: ask.source,
            translation: ask.translation,
            category: ask.category,
            description: ask.description,
            locked: ask.locked,
        };
        let stored = term_edit::edit(&self.db, &account, &ask.term_id, changes).await?;
        Ok(Response::new(term(stored)))
    }

    async fn delete_term(
        &self,
        request: Request<v1::TermRef>,
    ) -> Result<Response<v1::Deleted>, Status> {
        let account = self.person(&request)?;
        let ask = request.into_inner();
        let id = term_edit::delete(&self.db, &account, &ask.term_id).await?;
        Ok(Response::new(v1::Deleted { id }))
    }

    async fn propagate_term(
        &self,
        request: Request<v1::PropagateTermRequest>,
    ) -> Result<Response<v1::PropagationReport>, Status> {
        let account = self.person(&request)?;
        let token_id = self
            .credential
            .principal(&request)
            .ok()
            .and_then(|p| p.token_id);
        let ask = request.into_inner();
        let actor = propagate::Actor {
            account_id: account,
            token_id,
        };
        let propagation = propagate::Propagation {
            book_id: ask.project_id,
            previous: ask.previous,
            replacement: ask.replacement,
            series: ask.series,
            chapter_id: ask.chapter_id,
            include_human: ask.include_human,
        };
        let report = propagate::propagate(
            &self.db,
            &actor,
            propagation,
            ask.write,
            propagate::Limits::default(),
        )
        .await?;
        Ok(Response::new(report.into()))
    }

    async fn list_reader_notes(
        &self,
        request: Request<v1::ListReaderNotesRequest>,
    ) -> Result<Response<v1::ReaderNoteList>, Status> {
        self.credential.verify(&request)?;
        let who = self.credential.principal(&request)?;
        let project_id = request.into_inner().project_id;
        let terms = crate::reader_notes::list(&self.db, who.acting(), &project_id).await?;
        Ok(Response::new(v1::ReaderNoteList {
            project_id,
            terms: terms
                .into_iter()
                .map(crate::reader_notes::to_wire)
                .collect(),
        }))
    }

    async fn set_reader_note(
        &self,
        request: Request<v1::SetReaderNoteRequest>,
    ) -> Result<Response<v1::TermReaderNote>, Status> {
        self.credential.verify(&request)?;
        let who = self.credential.principal(&request)?;
        let ask = request.into_inner();
        let edit = crate::reader_notes::NoteEdit {
            project_id: ask.project_id,
            term_id: ask.term_id,
            note: ask.reader_note,
            previous_note: ask.previous_note.unwrap_or_default(),
            placement: wire_field(ask.note_placement, "note_placement")?,
            previous_placement: ask
                .previous_placement
                .map(|p| wire_field(p, "previous_placement"))
                .transpose()?,
            proposal_job: ask.proposal_job,
        };
        let stored = crate::reader_notes::set(&self.db, who.acting(), edit).await?;
        Ok(Response::new(crate::reader_notes::to_wire(stored)))
    }

    async fn edit_passage(
        &self,
        request: Request<v1::EditPassageRequest>,
    ) -> Result<Response<v1::EditPassageResponse>, Status> {
        let who = self.credential.principal(&request)?;
        let ask = request.into_inner();
        let edit = person_edits::EditAsk {
            project_id: ask.project_id,
            passage_id: ask.passage_id,
            version: ask.version,
            translation: ask.translation,
            validated: ask.validated,
            assessment: ask.assessment.map(person_edits::scored).transpose()?,
        };
        let edited = person_edits::edit(&self.db, who.acting(), edit).await?;
        Ok(Response::new(v1::EditPassageResponse {
            passage_id: edited.passage_id,
            version: edited.version,
            changed: edited
                .changed
                .iter()
                .map(|c| c.as_str().to_owned())
                .collect(),
        }))
    }

    async fn external_memory_status(
        &self,
        request: Request<StatusRequest>,
    ) -> Result<Response<v1::ExternalMemoryStatusView>, Status> {
        self.administrator(&request)?;
        let view = match &self.external {
            Some(external) => ExternalMemoryStatus::Configured(Box::new(external.status().await?)),
            None => ExternalMemoryStatus::Unconfigured(unconfigured_status(&self.db).await?),
        };
        Ok(Response::new(view.into()))
    }

    async fn retry_memory_outbox(
        &self,
        request: Request<StatusRequest>,
    ) -> Result<Response<v1::MemoryOutboxRetried>, Status> {
        let who = self.administrator(&request)?;
        let retried = self.external()?.retry_outbox().await?;
        tracing::info!(account = %who.account_id, retried, "memory outbox retried");
        Ok(Response::new(OutboxRetried { retried }.into()))
    }

    async fn get_memory_cleanup_settings(
        &self,
        request: Request<StatusRequest>,
    ) -> Result<Response<v1::MemoryCleanupSettingsView>, Status> {
        self.administrator(&request)?;
        Ok(Response::new(
            self.external()?.cleanup_settings().await?.into(),
        ))
    }

    async fn update_memory_cleanup_settings(
        &self,
        request: Request<v1::UpdateMemoryCleanupSettingsRequest>,
    ) -> Result<Response<v1::MemoryCleanupSettingsView>, Status> {
        let who = self.administrator(&request)?;
        let ask = request.into_inner();
        let external = self.external()?;
        let view = if ask.reset {
            external.reset_cleanup_settings().await?
        } else {
            let changes = ask.changes.map(Into::into).unwrap_or_default();
            external.put_cleanup_settings(&changes).await?
        };
        tracing::info!(account = %who.account_id, reset = ask.reset, "memory cleanup settings changed");
        Ok(Response::new(view.into()))
    }

    async fn list_memory_cleanups(
        &self,
        request: Request<StatusRequest>,
    ) -> Result<Response<v1::MemoryCleanupList>, Status> {
        self.administrator(&request)?;
        Ok(Response::new(self.external()?.cleanups().await?.into()))
    }

    async fn act_on_memory_cleanup(
        &self,
        request: Request<v1::MemoryCleanupActionRequest>,
    ) -> Result<Response<v1::MemoryCleanupRecord>, Status> {
        let who = self.administrator(&request)?;
        let ask = request.into_inner();
        let action = v1::MemoryCleanupAction::try_from(ask.action)
            .ok()
            .filter(|a| *a != v1::MemoryCleanupAction::Unspecified)
            .ok_or_else(|| {
                MemoryError::InvalidRequest(vec![Issue::at("body", "action", IssueKind::Enum)])
            })?;
        let external = self.external()?;
        let view = match action {
            v1::MemoryCleanupAction::Retire => external.retire_cleanup(&ask.cleanup_id).await?,
            _ => external.retry_cleanup(&ask.cleanup_id).await?,
        };
        tracing::info!(
            account = %who.account_id,
            cleanup = %ask.cleanup_id,
            action = action.as_str_name(),
            "memory cleanup record changed"
        );
        Ok(Response::new(view.into()))
    }

    async fn act_on_memory_orphans(
        &self,
        request: Request<v1::MemoryOrphansRequest>,
    ) -> Result<Response<v1::MemoryOrphanScan>, Status> {
        let who = self.administrator(&request)?;
        let action = v1::MemoryOrphansAction::try_from(request.get_ref().action)
            .ok()
            .filter(|a| *a != v1::MemoryOrphansAction::Unspecified)
            .ok_or_else(|| {
                MemoryError::InvalidRequest(vec![Issue::at("body", "action", IssueKind::Enum)])
            })?;
        let external = self.external()?;
        let view = match action {
            v1::MemoryOrphansAction::Clean => {
                let removed = external.clean_orphans().await?;
                tracing::info!(account = %who.account_id, "memory orphans cleaned");
                removed
            }
            _ => external.scan_orphans().await?,
        };
        Ok(Response::new(view.into()))
    }

    async fn get_memory_orphan_schedule(
        &self,
        request: Request<StatusRequest>,
    ) -> Result<Response<v1::MemoryOrphanScheduleView>, Status> {
        self.administrator(&request)?;
        Ok(Response::new(
            self.external()?.orphan_schedule().await?.into(),
        ))
    }

    async fn update_memory_orphan_schedule(
        &self,
        request: Request<v1::UpdateMemoryOrphanScheduleRequest>,
    ) -> Result<Response<v1::MemoryOrphanScheduleView>, Status> {
        let who = self.administrator(&request)?;
        let external = self.external()?;
        let changes = request
            .into_inner()
            .changes
            .map(Into::into)
            .unwrap_or_default();
        let view = external.put_orphan_schedule(&changes).await?;
        tracing::info!(account = %who.account_id, "memory orphan schedule changed");
        Ok(Response::new(view.into()))
    }

    async fn memory_scope_status(
        &self,
        request: Request<v1::MemoryScopeRef>,
    ) -> Result<Response<v1::MemoryScopeStatusView>, Status> {
        let (_, scope) = self.owned_scope(&request, Some(request.get_ref())).await?;
        let view = match &self.external {
            Some(external) => MemoryScopeStatus::Mirrored(external.scope_status(&scope).await?),
            // The owner learns there is no mirror rather than a refusal:
            // the page that shows a book's memory works on every
            // installation.
            None => MemoryScopeStatus::Unmirrored(UnmirroredScopeStatus {
                configured: false,
                scope: scope.document(),
            }),
        };
        Ok(Response::new(view.into()))
    }

    async fn act_on_memory_scope(
        &self,
        request: Request<v1::MemoryScopeActionRequest>,
    ) -> Result<Response<v1::MemoryScopeOutcome>, Status> {
        let (who, scope) = self
            .owned_scope(&request, request.get_ref().scope.as_ref())
            .await?;
        let action = match v1::MemoryScopeAction::try_from(request.get_ref().action) {
            Ok(v1::MemoryScopeAction::Synchronize) => ScopeAction::Synchronize,
            Ok(v1::MemoryScopeAction::Rebuild) => ScopeAction::Rebuild,
            Ok(v1::MemoryScopeAction::Reindex) => ScopeAction::Reindex,
            Ok(v1::MemoryScopeAction::Check) => ScopeAction::Check,
            Ok(v1::MemoryScopeAction::Unspecified) | Err(_) => {
                return Err(MemoryError::InvalidRequest(vec![Issue::at(
                    "body",
                    "action",
                    IssueKind::Enum,
                )])
                .into());
            }
        };
        let view = self.external()?.scope_action(&scope, action).await?;
        tracing::info!(
            account = %who.account_id,
            scope = scope.kind(),
            id = scope.id(),
            action = ?action,
            "memory scope action"
        );
        Ok(Response::new(view.into()))
    }
}

#[cfg(test)]
mod tests;
