//! Series and volume listings for their owner.

use crate::error::SchedulerError;
use dragoman_model::entities::{chapter, project, series};
use dragoman_model::reading_order;
use dragoman_model::tenancy::{self, Acting};
use dragoman_proto::v1::{SeriesDetail, SeriesSummary, VolumeEntry};
use dragoman_proto::wire::WireEnum;
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder};

async fn summary(
    db: &impl ConnectionTrait,
    s: series::Model,
) -> Result<SeriesSummary, SchedulerError> {
    let volumes = project::Entity::find()
        .filter(project::Column::SeriesId.eq(s.id.as_str()))
        .count(db)
        .await?;
    Ok(SeriesSummary {
        id: s.id,
        name: s.name,
        kind: s.kind.to_wire(),
        source_language: s.source_language,
        target_language: s.target_language,
        archived: s.archived,
        volumes: volumes as i64,
        created_at: s.created_at,
        updated_at: s.updated_at,
    })
}

/// The account's series, sorted by name.
pub async fn list(
    db: &impl ConnectionTrait,
    account_id: &str,
) -> Result<Vec<SeriesSummary>, SchedulerError> {
    let rows = series::Entity::find()
        .filter(series::Column::AccountId.eq(account_id))
        .order_by_asc(series::Column::Name)
        .all(db)
        .await?;
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        out.push(summary(db, row).await?);
    }
    Ok(out)
}

/// One series of the account with its volumes in reading order; another
/// account's series is reported as absent.
pub async fn detail(
    db: &impl ConnectionTrait,
    account_id: &str,
    series_id: &str,
) -> Result<SeriesDetail, SchedulerError> {
    let row = tenancy::series(db, Acting::account(account_id), series_id).await?;
    let mut projects = project::Entity::find()
        .filter(project::Column::SeriesId.eq(row.id.as_str()))
        .order_by_asc(project::Column::CreatedAt)
        .all(db)
        .await?;
    projects.sort_by(|a, b| {
        reading_order::compare(
            &reading_order::key(a.volume_number, a.volume_label.as_deref()),
            &reading_order::key(b.volume_number, b.volume_label.as_deref()),
        )
    });
    let mut volume_list = Vec::with_capacity(projects.len());
    for p in projects {
        let chapters = chapter::Entity::find()
            .filter(chapter::Column::ProjectId.eq(p.id.as_str()))
            .count(db)
            .await?;
        volume_list.push(VolumeEntry {
            project_id: p.id,
            title: p.title,
            volume_number: p.volume_number,
            volume_label: p.volume_label,
            external_id: p.external_id,
            source_format: p.source_format.map(WireEnum::to_wire),
            project_kind: p.project_kind.to_wire(),
            status: p.status.to_wire(),
            chapters: chapters as i64,
        });
    }
    Ok(SeriesDetail {
        summary: Some(summary(db, row).await?),
        volume_list,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Fixture, chapter};
    use dragoman_model::vocab::{InputKind, ProjectKind, SeriesKind, VolumeStatus};
    use serde_json::json;

    #[tokio::test]
    async fn listings_carry_typed_kinds_and_statuses() {
        let f = Fixture::new().await;
        let row = f
            .accepted(&f.body("Saga", 2, json!([chapter(1, "a"), chapter(2, "b")])))
            .await;
        f.accepted(&f.body("Saga", 1, json!([chapter(1, "c")])))
            .await;
        let listed = list(&f.db, &f.account.id).await.expect("list");
        assert_eq!(listed.len(), 1);
        assert_eq!(
            SeriesKind::from_wire(listed[0].kind, "kind"),
            Ok(SeriesKind::Numbered)
        );
        assert_eq!(listed[0].volumes, 2);
        let shown = detail(&f.db, &f.account.id, &row.series_id)
            .await
            .expect("detail");
        let numbers: Vec<Option<i32>> = shown.volume_list.iter().map(|v| v.volume_number).collect();
        assert_eq!(numbers, [Some(1), Some(2)], "reading order");
        let second = &shown.volume_list[1];
        assert_eq!(second.chapters, 2);
        assert_eq!(
            InputKind::from_wire_opt(second.source_format, "source_format"),
            Ok(Some(InputKind::Json))
        );
        assert_eq!(
            ProjectKind::from_wire(second.project_kind, "project_kind"),
            Ok(ProjectKind::Volume)
        );
        assert_eq!(
            VolumeStatus::from_wire(second.status, "status"),
            Ok(VolumeStatus::Translating)
        );
        assert!(matches!(
            detail(&f.db, "another-account", &row.series_id).await,
            Err(SchedulerError::SeriesNotFound)
        ));
    }
}
