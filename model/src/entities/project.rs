//! `projects`: one book (volume, continuous slice or special) inside a series.

use crate::vocab::{AnalysisMode, InputKind, ProjectKind, VolumeStatus};
use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

/// One project. `(account_id, external_id)` is unique when `external_id` is set.
#[derive(Clone, Debug, PartialEq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "projects")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    #[sea_orm(indexed)]
    pub series_id: String,
    #[sea_orm(unique_key = "projects_account_external")]
    pub account_id: String,
    pub title: String,
    pub volume_number: Option<i32>,
    pub volume_label: Option<String>,
    #[sea_orm(unique_key = "projects_account_external")]
    pub external_id: Option<String>,
    pub source_format: Option<InputKind>,
    /// `"volume"`, `"continuous"` or `"special"`.
    pub project_kind: ProjectKind,
    pub status: VolumeStatus,
    pub provider_id: Option<String>,
    pub source_language: String,
    pub target_language: String,
    pub author: Option<String>,
    /// Blob-store key of the uploaded original.
    pub original_blob: Option<String>,
    pub analysis_mode: Option<AnalysisMode>,
    pub threads: Option<i32>,
    /// The volume's default for its requests' `batch` (the provider's
    /// batch mode); `None`: the installation's.
    pub batch: Option<bool>,
    pub archived: bool,
    /// Whether written EPUBs carry the AI-assisted-translation mention;
    /// null follows the installation's setting.
    pub ai_disclosure: Option<bool>,
    /// Whether the book's words are in the licence ledger (books added
    /// before it are counted when a job starts them).
    pub licence_counted: bool,
    /// The book's spending cap over its life, in the currency of provider
    /// prices; none without a cap.
    pub budget_amount: Option<f64>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// `projects.series_id -> series.id`, `projects.account_id -> accounts.id`,
/// `projects.provider_id -> providers.id`; chapters, passages, requests and jobs.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    #[sea_orm(
        belongs_to = "super::series::Entity",
        from = "Column::SeriesId",
        to = "super::series::Column::Id",
        on_delete = "Cascade"
    )]
    Series,
    #[sea_orm(
        belongs_to = "super::account::Entity",
        from = "Column::AccountId",
        to = "super::account::Column::Id",
        on_delete = "Cascade"
    )]
    Account,
    #[sea_orm(
        belongs_to = "super::provider::Entity",
        from = "Column::ProviderId",
        to = "super::provider::Column::Id",
        on_delete = "SetNull"
    )]
    Provider,
    #[sea_orm(has_many = "super::chapter::Entity")]
    Chapter,
    #[sea_orm(has_many = "super::passage::Entity")]
    Passage,
    #[sea_orm(has_many = "super::request::Entity")]
    Request,
    #[sea_orm(has_many = "super::job::Entity")]
    Job,
}

impl Related<super::series::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Series.def()
    }
}

impl Related<super::account::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Account.def()
    }
}

impl Related<super::provider::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Provider.def()
    }
}

impl Related<super::chapter::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Chapter.def()
    }
}

impl Related<super::passage::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Passage.def()
    }
}

impl Related<super::request::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Request.def()
    }
}

impl Related<super::job::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Job.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}

impl ActiveModel {
    /// A new, empty numbered volume of `series` in the series' languages
    /// (`languages` when given); other choices are left unset.
    pub fn new_volume(
        series: &super::series::Model,
        title: String,
        number: i32,
        source_format: InputKind,
        languages: (&str, &str),
    ) -> ActiveModel {
        let now = crate::clock::now();
        ActiveModel {
            id: sea_orm::Set(crate::ids::new_id()),
            series_id: sea_orm::Set(series.id.clone()),
            account_id: sea_orm::Set(series.account_id.clone()),
            title: sea_orm::Set(title),
            volume_number: sea_orm::Set(Some(number)),
            volume_label: sea_orm::Set(None),
            external_id: sea_orm::Set(None),
            source_format: sea_orm::Set(Some(source_format)),
            project_kind: sea_orm::Set(ProjectKind::Volume),
            status: sea_orm::Set(VolumeStatus::Empty),
            provider_id: sea_orm::Set(None),
            source_language: sea_orm::Set(languages.0.to_owned()),
            target_language: sea_orm::Set(languages.1.to_owned()),
            author: sea_orm::Set(None),
            original_blob: sea_orm::Set(None),
            analysis_mode: sea_orm::Set(None),
            threads: sea_orm::Set(None),
            batch: sea_orm::Set(None),
            archived: sea_orm::Set(false),
            ai_disclosure: sea_orm::Set(None),
            // A volume made by this version has its words counted as its
            // chapters are stored.
            licence_counted: sea_orm::Set(true),
            budget_amount: sea_orm::Set(None),
            created_at: sea_orm::Set(now),
            updated_at: sea_orm::Set(now),
        }
    }
}
