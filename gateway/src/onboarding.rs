//! The administrator's first-run checklist: which steps of setting up an
//! installation are done, read from its state at each call (so an item is
//! done however it was reached: the web interface, the CLI, the
//! environment), and which the administrator chose to hide, kept in the
//! `settings` table under [`SETTING_KEY`].

use crate::error::ApiResult;
use crate::state::AppState;
use dragoman_model::entities::{api_token, project, provider, request, setting};
use dragoman_model::provider_default;
use dragoman_model::serde_fields::value_if_present;
use dragoman_model::vocab::OnboardingItem;
use dragoman_proto::principal::Principal;
use dragoman_proto::v1::StatusRequest;
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QuerySelect, Select};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// The `settings` row holding the administrator's [`Choices`].
pub const SETTING_KEY: &str = "onboarding";

/// What the administrator hid: the whole checklist, or some of its items.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Choices {
    pub dismissed: bool,
    /// Each item once, in the checklist's order.
    pub dismissed_items: Vec<OnboardingItem>,
}

/// The stored form, read leniently: an item this build does not know (a
/// row written by a newer version) is skipped rather than making the whole
/// checklist unreadable.
#[derive(Deserialize, Default)]
struct Stored {
    #[serde(default)]
    dismissed: bool,
    #[serde(default)]
    dismissed_items: Vec<String>,
}

/// `PUT /api/onboarding`: each field given replaces the stored one.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChoicesChange {
    #[serde(default, deserialize_with = "value_if_present")]
    pub dismissed: Option<bool>,
    #[serde(default, deserialize_with = "value_if_present")]
    pub dismissed_items: Option<Vec<OnboardingItem>>,
}

impl Choices {
    /// The choices after `change`; a repeated item counts once.
    pub fn changed(&self, change: &ChoicesChange) -> Choices {
        let items = match &change.dismissed_items {
            Some(items) => items.iter().copied().collect::<BTreeSet<_>>(),
            None => self.dismissed_items.iter().copied().collect(),
        };
        Choices {
            dismissed: change.dismissed.unwrap_or(self.dismissed),
            dismissed_items: items.into_iter().collect(),
        }
    }
}

/// One item of the checklist.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ItemView {
    pub key: OnboardingItem,
    pub done: bool,
    pub dismissed: bool,
}

/// The answer of `GET` and `PUT /api/onboarding`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Checklist {
    pub items: Vec<ItemView>,
    /// Every item is done or dismissed.
    pub complete: bool,
    /// The administrator hid the whole checklist.
    pub dismissed: bool,
}

impl Checklist {
    /// The checklist for the items `done`, with the administrator's choices.
    pub fn of(done: &BTreeSet<OnboardingItem>, choices: &Choices) -> Checklist {
        let items: Vec<ItemView> = OnboardingItem::ALL
            .iter()
            .map(|&key| ItemView {
                key,
                done: done.contains(&key),
                dismissed: choices.dismissed_items.contains(&key),
            })
            .collect();
        Checklist {
            complete: items.iter().all(|item| item.done || item.dismissed),
            items,
            dismissed: choices.dismissed,
        }
    }
}

/// The stored choices; none stored (or unreadable) hides nothing.
pub async fn choices(db: &impl ConnectionTrait) -> Result<Choices, DbErr> {
    let stored = setting::Entity::find_by_id(SETTING_KEY.to_owned())
        .one(db)
        .await?
        .and_then(|row| serde_json::from_value::<Stored>(row.value).ok())
        .unwrap_or_default();
    let items: BTreeSet<OnboardingItem> = stored
        .dismissed_items
        .iter()
        .filter_map(|text| text.parse().ok())
        .collect();
    Ok(Choices {
        dismissed: stored.dismissed,
        dismissed_items: items.into_iter().collect(),
    })
}

/// Saves the choices, replacing the stored ones.
pub async fn save(db: &impl ConnectionTrait, choices: &Choices) -> Result<(), DbErr> {
    setting::save(db, SETTING_KEY, choices).await.map(|_| ())
}

/// Whether `select` finds at least one row (reads one constant, not rows).
async fn any<E: EntityTrait>(db: &impl ConnectionTrait, select: Select<E>) -> Result<bool, DbErr> {
    let found = select
        .select_only()
        .expr(Expr::value(1))
        .limit(1)
        .into_tuple::<i32>()
        .one(db)
        .await?;
    Ok(found.is_some())
}

/// The items the installation's state shows done. The webhook settings
/// are the delivery role's (the environment's values under the
/// administrator's), so they are asked of it as `/api/settings/webhooks`
/// does.
pub async fn done_items(
    state: &AppState,
    principal: &Principal,
) -> ApiResult<BTreeSet<OnboardingItem>> {
    let db = &state.db;
    let mut done = BTreeSet::new();
    let mut mark = |item, is_done: bool| {
        if is_done {
            done.insert(item);
        }
    };
    mark(
        OnboardingItem::Provider,
        any(db, provider::Entity::find()).await?,
    );
    mark(
        OnboardingItem::DefaultProvider,
        provider_default::in_force(db).await?.is_some(),
    );
    mark(
        OnboardingItem::Mail,
        any(
            db,
            setting::Entity::find()
                .filter(setting::Column::Key.eq(dragoman_model::mail::SETTINGS_KEY)),
        )
        .await?,
    );
    let webhooks = state
        .delivery
        .handle
        .get_webhook_settings(state.call(principal, StatusRequest {}))
        .await?
        .into_inner();
    mark(
        OnboardingItem::Webhooks,
        webhooks.secret_set && !webhooks.hosts.is_empty(),
    );
    mark(
        OnboardingItem::FirstToken,
        any(
            db,
            api_token::Entity::find().filter(api_token::Column::RevokedAt.is_null()),
        )
        .await?,
    );
    let first_book =
        any(db, project::Entity::find()).await? || any(db, request::Entity::find()).await?;
    mark(OnboardingItem::FirstBook, first_book);
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(json: &str) -> ChoicesChange {
        serde_json::from_str(json).expect("change")
    }

    #[test]
    fn complete_needs_every_item_done_or_dismissed() {
        let mut done: BTreeSet<_> = OnboardingItem::ALL.iter().copied().collect();
        done.remove(&OnboardingItem::Mail);
        let nothing_hidden = Choices::default();
        let list = Checklist::of(&done, &nothing_hidden);
        assert!(!list.complete);
        assert_eq!(list.items.len(), OnboardingItem::ALL.len());
        let mail = list
            .items
            .iter()
            .find(|item| item.key == OnboardingItem::Mail)
            .expect("mail item");
        assert_eq!((mail.done, mail.dismissed), (false, false));

        let mail_hidden = nothing_hidden.changed(&change(r#"{"dismissed_items":["mail"]}"#));
        assert!(Checklist::of(&done, &mail_hidden).complete);
        // Hiding the whole checklist does not make it complete.
        let all_hidden = nothing_hidden.changed(&change(r#"{"dismissed":true}"#));
        let list = Checklist::of(&BTreeSet::new(), &all_hidden);
        assert!(list.dismissed);
        assert!(!list.complete);
    }

    #[test]
    fn a_change_replaces_only_the_fields_given() {
        let before = Choices {
            dismissed: true,
            dismissed_items: vec![OnboardingItem::Webhooks],
        };
        let after = before.changed(&change(r#"{"dismissed_items":["mail","provider","mail"]}"#));
        assert!(after.dismissed);
        assert_eq!(
            after.dismissed_items,
            vec![OnboardingItem::Provider, OnboardingItem::Mail]
        );
        let after = after.changed(&change(r#"{"dismissed":false}"#));
        assert!(!after.dismissed);
        assert_eq!(after.dismissed_items.len(), 2);
        assert_eq!(after.changed(&change("{}")), after);
    }

    #[test]
    fn a_null_is_refused_rather_than_read_as_keep() {
        for body in [r#"{"dismissed":null}"#, r#"{"dismissed_items":null}"#] {
            assert!(
                serde_json::from_str::<ChoicesChange>(body).is_err(),
                "{body}"
            );
        }
    }
}
