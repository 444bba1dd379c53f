//! Whether a stored result still says what the book says. A stored result
//! is built when its request ends; what changes the book's results
//! afterwards (a person's reader note or passage edit, the installation's
//! AI-disclosure setting) must reach the result fetched next, so a stored
//! result older than such a change is built and stored again instead of
//! being served.
//!
//! Changes are compared by their second: a change in the second the result
//! was stored counts as newer, so no change is ever missed (at worst a
//! result is built once more). Passages a job wrote are the exception: the
//! job that made the result wrote them up to the second it ended, and
//! counting those would rebuild every result once, so that its bytes no
//! longer match the digest its final webhook announced. Only a person's
//! passages (edited or validated) count from that second on; any other
//! passage counts from the next one (a person's un-validation).

use crate::error::DeliveryError;
use dragoman_model::entities::{passage, reader_note, setting};
use dragoman_model::exports;
use sea_orm::{ColumnTrait, Condition, ConnectionTrait, EntityTrait, PaginatorTrait, QueryFilter};

/// Whether what the results of the book show changed at or after `since`
/// (seconds).
pub async fn changed_since(
    db: &impl ConnectionTrait,
    project_id: &str,
    since: i64,
) -> Result<bool, DeliveryError> {
    let notes = reader_note::Entity::find()
        .filter(reader_note::Column::ProjectId.eq(project_id))
        .filter(reader_note::Column::UpdatedAt.gte(since))
        .count(db)
        .await?;
    if notes > 0 {
        return Ok(true);
    }
    let persons = Condition::any()
        .add(passage::Column::Human.eq(true))
        .add(passage::Column::Validated.eq(true));
    let passages = passage::Entity::find()
        .filter(passage::Column::ProjectId.eq(project_id))
        .filter(
            Condition::any()
                .add(passage::Column::UpdatedAt.gt(since))
                .add(
                    Condition::all()
                        .add(persons)
                        .add(passage::Column::UpdatedAt.gte(since)),
                ),
        )
        .count(db)
        .await?;
    if passages > 0 {
        return Ok(true);
    }
    let exports = setting::Entity::find_by_id(exports::SETTING_KEY.to_owned())
        .filter(setting::Column::UpdatedAt.gte(since))
        .count(db)
        .await?;
    Ok(exports > 0)
}
