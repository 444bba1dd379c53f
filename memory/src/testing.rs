//! What the unit tests share: an in-memory database with the real schema,
//! accounts, series, volumes, chapters and passages, and analyses built in
//! a line.

use crate::backend::{InternalBackend, MemorySettings};
use crate::domain::{
    ExtractedEntity, ExtractedTerm, Extraction, PassageExtraction, StyleNote, TermInput,
};
use dragoman_migrations::{Migrator, MigratorTrait};
use dragoman_model::entities::{account, chapter, passage, project, series};
use dragoman_model::vocab::{
    BibleAspect, EntityKind, InputKind, PassageStatus, SeriesKind, TermLayer,
};
use dragoman_model::{clock, ids};
use sea_orm::{ActiveModelTrait, DatabaseConnection, Set};

pub struct Fixture {
    pub db: DatabaseConnection,
    pub backend: InternalBackend,
    /// The account most tests work in.
    pub account: String,
}

impl Fixture {
    pub async fn new() -> Fixture {
        Self::with_settings(MemorySettings::default()).await
    }

    pub async fn with_settings(settings: MemorySettings) -> Fixture {
        let db = dragoman_model::db::connect("sqlite::memory:")
            .await
            .expect("in-memory database");
        Migrator::up(&db, None).await.expect("migrations");
        let backend = InternalBackend::new(db.clone(), settings);
        let mut fixture = Fixture {
            db,
            backend,
            account: String::new(),
        };
        fixture.account = fixture.add_account("reader").await;
        fixture
    }

    pub async fn add_account(&self, name: &str) -> String {
        account::ActiveModel::new_account(name, String::new(), false)
            .insert(&self.db)
            .await
            .expect("account")
            .id
    }

    pub async fn series_of(&self, account_id: &str, name: &str) -> series::Model {
        series::ActiveModel::new_series(account_id, name, SeriesKind::Numbered, ("en", "fr"), None)
            .insert(&self.db)
            .await
            .expect("series")
    }

    /// A series of the fixture's account.
    pub async fn series(&self, name: &str) -> series::Model {
        self.series_of(&self.account, name).await
    }

    pub async fn volume(&self, series: &series::Model, number: i32) -> project::Model {
        project::ActiveModel::new_volume(
            series,
            format!("Volume {number}"),
            number,
            InputKind::Json,
            ("en", "fr"),
        )
        .insert(&self.db)
        .await
        .expect("volume")
    }

    /// A chapter at `position` with one passage per text, in order.
    pub async fn chapter(
        &self,
        volume: &project::Model,
        position: i32,
        texts: &[&str],
    ) -> (chapter::Model, Vec<passage::Model>) {
        let now = clock::now();
        let chapter = chapter::ActiveModel {
            id: Set(ids::new_id()),
            project_id: Set(volume.id.clone()),
            external_id: Set(None),
            number: Set(Some(position)),
            part: Set(None),
            part_count: Set(None),
            kind: Set("chapter".into()),
            label: Set(None),
            title: Set(None),
            translated_title: Set(None),
            position: Set(position),
            source_sha256: Set(String::new()),
            words: Set(0),
            mapping: Set(None),
            created_at: Set(now),
            updated_at: Set(now),
        }
        .insert(&self.db)
        .await
        .expect("chapter");
        let mut passages = Vec::new();
        for (i, text) in texts.iter().enumerate() {
            passages.push(
                passage::ActiveModel {
                    id: Set(ids::new_id()),
                    chapter_id: Set(chapter.id.clone()),
                    project_id: Set(volume.id.clone()),
                    position: Set(i32::try_from(i).expect("few passages")),
                    source: Set((*text).to_owned()),
                    markup: Set(None),
                    translation: Set(None),
                    status: Set(PassageStatus::Pending),
                    last_error: Set(None),
                    human: Set(false),
                    validated: Set(false),
                    attempts: Set(0),
                    memory_key: Set(None),
                    score: Set(None),
                    signals: Set(None),
                    reviewed: Set(false),
                    autopilot_round: Set(0),
                    created_at: Set(now),
                    updated_at: Set(now),
                }
                .insert(&self.db)
                .await
                .expect("passage"),
            );
        }
        (chapter, passages)
    }

    /// Stores a translation of `passage` under `key`.
    pub async fn translate(
        &self,
        passage: &passage::Model,
        text: &str,
        key: &str,
        validated: bool,
        updated_at: i64,
    ) {
        let mut model: passage::ActiveModel = passage.clone().into();
        model.translation = Set(Some(text.to_owned()));
        model.status = Set(PassageStatus::Ok);
        model.memory_key = Set(Some(key.to_owned()));
        model.validated = Set(validated);
        model.updated_at = Set(updated_at);
        model.update(&self.db).await.expect("translation");
    }
}

pub fn entity(
    kind: EntityKind,
    name: &str,
    aliases: &[&str],
    target: Option<&str>,
) -> ExtractedEntity {
    ExtractedEntity {
        kind,
        name: name.into(),
        aliases: aliases.iter().map(|a| (*a).to_owned()).collect(),
        target_name: target.map(str::to_owned),
        gender: None,
        address: None,
        description: String::new(),
        evidence: name.into(),
    }
}

pub fn character(name: &str, aliases: &[&str], target: Option<&str>) -> ExtractedEntity {
    entity(EntityKind::Character, name, aliases, target)
}

pub fn proposal(source: &str, translation: &str) -> ExtractedTerm {
    ExtractedTerm {
        source: source.into(),
        translation: Some(translation.into()),
        category: "thing".into(),
        evidence: source.into(),
    }
}

pub fn note(aspect: BibleAspect, text: &str) -> StyleNote {
    StyleNote {
        aspect,
        text: text.into(),
        evidence: String::new(),
    }
}

pub fn analysis(passage: &passage::Model, extraction: Extraction) -> PassageExtraction {
    PassageExtraction {
        passage_id: passage.id.clone(),
        extraction,
        failed: false,
    }
}

pub fn found(
    entities: Vec<ExtractedEntity>,
    terms: Vec<ExtractedTerm>,
    summary: &str,
) -> Extraction {
    Extraction {
        entities,
        terms,
        style: Vec::new(),
        summary: summary.into(),
        events: Vec::new(),
    }
}

/// A person's accepted, unlocked term without category or description.
pub fn decision(layer: TermLayer, owner: &str, source: &str, translation: &str) -> TermInput {
    TermInput {
        layer,
        owner_id: owner.into(),
        source: source.into(),
        translation: translation.into(),
        category: String::new(),
        description: String::new(),
        locked: false,
        accepted: true,
    }
}
