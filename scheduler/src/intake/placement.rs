//! Where a request's chapters go (spec 2.4 `series`, `volume`): its series,
//! by id or by name (created when allowed), and its volume, by external id,
//! then by number or `latest` in that series, else created.
//!
//! A volume external id is unique in the account; it names a volume of the
//! request's series or none. Naming one of another series, or one whose
//! number is not the number the request gives, is a `volume_conflict`:
//! taking it would file chapters under one series and record another. So
//! is a volume found in another language pair than the request's.

use super::{Admitted, Submitted};
use crate::error::{SchedulerError, VolumeClash};
use dragoman_model::entities::{project, series};
use dragoman_model::payload::{LanguagePair, TranslationPayload};
use dragoman_model::tenancy::{self, Acting};
use dragoman_model::vocab::{InputKind, ProjectKind, SeriesKind};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder, Set,
};

/// The series the payload names, if it exists; an unknown or foreign
/// `series.id` is `series_not_found`.
pub async fn find_series(
    db: &impl ConnectionTrait,
    account_id: &str,
    payload: &TranslationPayload,
) -> Result<Option<series::Model>, SchedulerError> {
    if let Some(id) = &payload.series.id {
        return Ok(Some(
            tenancy::series(db, Acting::account(account_id), id).await?,
        ));
    }
    let name = payload.series.name.clone().unwrap_or_default();
    Ok(series::Entity::find()
        .filter(series::Column::AccountId.eq(account_id))
        .filter(series::Column::Name.eq(name))
        .one(db)
        .await?)
}

/// The volume of `series` the request names: by external id, then by
/// number (or `latest`: the last numbered volume, else the continuous
/// container); an EPUB sent with no number finds the volume that holds the
/// same book.
///
/// A volume found in another language pair than the request's is a
/// `volume_conflict`: its chapters, memory and result are in its own pair,
/// and taking the request would translate it into the volume's languages
/// under the request's name.
pub async fn find_volume(
    db: &impl ConnectionTrait,
    account_id: &str,
    series: &series::Model,
    submitted: &Submitted,
) -> Result<Option<project::Model>, SchedulerError> {
    let found = locate_volume(db, account_id, series, submitted).await?;
    if let Some(volume) = &found {
        let payload = &submitted.payload;
        let asked = LanguagePair::new(&payload.source_language, &payload.target_language);
        let held = LanguagePair::new(&volume.source_language, &volume.target_language);
        if !held.matches(&asked) {
            return Err(SchedulerError::VolumeLanguages {
                volume: held,
                request: asked,
            });
        }
    }
    Ok(found)
}

async fn locate_volume(
    db: &impl ConnectionTrait,
    account_id: &str,
    series: &series::Model,
    submitted: &Submitted,
) -> Result<Option<project::Model>, SchedulerError> {
    let payload = &submitted.payload;
    if let Some(external_id) = &payload.volume.external_id {
        let found = project::Entity::find()
            .filter(project::Column::AccountId.eq(account_id))
            .filter(project::Column::ExternalId.eq(external_id.clone()))
            .one(db)
            .await?;
        if let Some(found) = found {
            if found.series_id != series.id {
                return Err(SchedulerError::VolumeConflict(VolumeClash::OtherSeries));
            }
            if let Some(number) = payload.volume.number
                && found.volume_number.map(i64::from) != Some(number)
            {
                return Err(SchedulerError::VolumeConflict(VolumeClash::OtherNumber));
            }
            return Ok(Some(found));
        }
    }
    let in_series =
        || project::Entity::find().filter(project::Column::SeriesId.eq(series.id.clone()));
    if payload.volume.latest {
        let numbered = in_series()
            .filter(project::Column::VolumeNumber.is_not_null())
            .order_by_desc(project::Column::VolumeNumber)
            .one(db)
            .await?;
        if numbered.is_some() {
            return Ok(numbered);
        }
        return Ok(in_series()
            .filter(project::Column::ProjectKind.eq(ProjectKind::Continuous))
            .one(db)
            .await?);
    }
    match (payload.volume.number, &submitted.original) {
        (Some(number), _) => Ok(in_series()
            .filter(project::Column::VolumeNumber.eq(i32::try_from(number).unwrap_or(i32::MAX)))
            .one(db)
            .await?),
        (None, Some(original)) if payload.volume.external_id.is_none() => Ok(in_series()
            .filter(project::Column::OriginalBlob.eq(original.key.clone()))
            .order_by_asc(project::Column::CreatedAt)
            .one(db)
            .await?),
        (None, _) => Ok(None),
    }
}

/// The number of a new EPUB volume given none: the one its file name
/// gives when no volume of the series has it, else the next after the
/// highest.
async fn free_number(
    db: &impl ConnectionTrait,
    series: &series::Model,
    from_name: Option<i32>,
) -> Result<i32, SchedulerError> {
    let numbers: Vec<i32> = project::Entity::find()
        .filter(project::Column::SeriesId.eq(series.id.clone()))
        .all(db)
        .await?
        .into_iter()
        .filter_map(|v| v.volume_number)
        .collect();
    Ok(match from_name {
        Some(n) if !numbers.contains(&n) => n,
        _ => numbers.iter().max().map_or(1, |n| n.saturating_add(1)),
    })
}

/// The request's series, created when missing and `create_if_missing` (a
/// `latest` request starts a continuous series); an archived series takes
/// nothing.
pub async fn resolve_series(
    db: &impl ConnectionTrait,
    admitted: &Admitted,
) -> Result<series::Model, SchedulerError> {
    let payload = &admitted.submitted.payload;
    let series = match find_series(db, &admitted.owner.id, payload).await? {
        Some(series) => series,
        None if payload.series.create_if_missing => {
            let kind = if payload.volume.latest {
                SeriesKind::Continuous
            } else {
                SeriesKind::Numbered
            };
            series::ActiveModel::new_series(
                &admitted.owner.id,
                payload.series.name.as_deref().unwrap_or_default(),
                kind,
                (&payload.source_language, &payload.target_language),
                // Only a provider the request names becomes the new series'
                // default; the installation's stays the installation's.
                payload.provider_id.clone(),
            )
            .insert(db)
            .await?
        }
        None => return Err(SchedulerError::SeriesNotFound),
    };
    if series.archived {
        return Err(SchedulerError::SeriesArchived);
    }
    Ok(series)
}

/// The request's volume in `series`, created when none matches (volume 1
/// when the request gives no number); an archived volume takes nothing.
///
/// A new volume keeps no `threads` of the request: the request's value only
/// lowers the volume's share for that request (spec 2.5), it never sets it.
pub async fn resolve_volume(
    db: &impl ConnectionTrait,
    admitted: &Admitted,
    series: &series::Model,
) -> Result<project::Model, SchedulerError> {
    let submitted = &admitted.submitted;
    let payload = &submitted.payload;
    let volume = match find_volume(db, &admitted.owner.id, series, submitted).await? {
        Some(volume) => volume,
        None => {
            let number = match payload.volume.number.and_then(|n| i32::try_from(n).ok()) {
                Some(number) => number,
                None if submitted.input == InputKind::Epub => {
                    free_number(db, series, submitted.volume_from_name).await?
                }
                None => 1,
            };
            let title = payload
                .volume
                .title
                .clone()
                .unwrap_or_else(|| format!("{} {number}", series.name));
            let mut volume = project::ActiveModel::new_volume(
                series,
                title,
                number,
                admitted.submitted.input,
                (&payload.source_language, &payload.target_language),
            );
            volume.external_id = Set(payload.volume.external_id.clone());
            volume.provider_id = Set(payload.provider_id.clone());
            volume.author = Set(payload.author.clone());
            volume.insert(db).await?
        }
    };
    if volume.archived {
        return Err(SchedulerError::VolumeArchived);
    }
    Ok(volume)
}
