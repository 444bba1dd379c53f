//! The reading order of a volume's chapters (spec 2.4 `chapters`): numbered
//! chapters by number and part, a special chapter right after the chapter
//! it follows in the request. Positions are rewritten only where they moved.

use crate::error::SchedulerError;
use dragoman_model::entities::chapter;
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter};
use std::collections::HashMap;

/// One chapter of the volume in reading order: its id and, when numbered,
/// its number and part.
#[derive(Debug, Clone, PartialEq)]
pub struct Slot {
    pub id: String,
    pub number: Option<(i32, i32)>,
}

impl Slot {
    pub fn of(chapter: &chapter::Model) -> Slot {
        Slot {
            id: chapter.id.clone(),
            number: chapter.number.map(|n| (n, chapter.part.unwrap_or(1))),
        }
    }
}

/// Places a new chapter into the existing order. A numbered chapter goes
/// before the first chapter with a higher number and part; a special goes
/// right after the chapter that precedes it in the request (`anchor`), or
/// first when it opens the request.
pub fn place(order: &mut Vec<Slot>, slot: Slot, anchor: Option<&str>) {
    let index = match slot.number {
        Some(key) => order
            .iter()
            .position(|s| s.number.is_some_and(|other| other > key))
            .unwrap_or(order.len()),
        None => anchor
            .and_then(|a| order.iter().position(|s| s.id == a))
            .map(|i| i + 1)
            .unwrap_or(0),
    };
    order.insert(index, slot);
}

/// Writes positions 1, 2, … along `order`; only chapters whose position
/// changed from `before` (new ones included) are written.
pub async fn renumber(
    db: &impl ConnectionTrait,
    before: &[chapter::Model],
    order: &[Slot],
) -> Result<(), SchedulerError> {
    let old_positions: HashMap<&str, i32> =
        before.iter().map(|c| (c.id.as_str(), c.position)).collect();
    for (index, slot) in order.iter().enumerate() {
        let position = i32::try_from(index + 1).unwrap_or(i32::MAX);
        let moved = old_positions
            .get(slot.id.as_str())
            .is_none_or(|p| *p != position);
        if moved {
            chapter::Entity::update_many()
                .col_expr(chapter::Column::Position, Expr::value(position))
                .filter(chapter::Column::Id.eq(slot.id.clone()))
                .exec(db)
                .await?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot(id: &str, number: Option<i32>) -> Slot {
        Slot {
            id: id.into(),
            number: number.map(|n| (n, 1)),
        }
    }

    #[test]
    fn numbered_chapters_by_number_specials_after_their_anchor() {
        let mut order = vec![slot("c1", Some(1)), slot("c3", Some(3))];
        place(&mut order, slot("c2", Some(2)), None);
        place(&mut order, slot("interlude", None), Some("c2"));
        place(&mut order, slot("prologue", None), None);
        place(&mut order, slot("c9", Some(9)), Some("c3"));
        let ids: Vec<&str> = order.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["prologue", "c1", "c2", "interlude", "c3", "c9"]);
    }

    #[test]
    fn parts_follow_their_chapter() {
        let mut order = vec![slot("c12", Some(12)), slot("c13", Some(13))];
        place(
            &mut order,
            Slot {
                id: "c12p2".into(),
                number: Some((12, 2)),
            },
            None,
        );
        let ids: Vec<&str> = order.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["c12", "c12p2", "c13"]);
    }
}
