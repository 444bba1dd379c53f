//! A book's cap and edition choices on a real database: the owner sets and
//! removes them, out-of-range values are refused before the book is looked
//! up, and another account's book answers as an absent one and keeps its
//! values.

use super::*;
use crate::testing::{Fixture, chapter, on_both};
use dragoman_model::exports::ExportSettings;
use dragoman_model::ids;
use serde_json::json;

/// Imports volume 1 of series "Saga" and answers its id.
async fn book(f: &Fixture) -> String {
    let mut body = f.body("Saga", 1, json!([chapter(1, "One.\n\nTwo.")]));
    body["pipeline"] = json!({"start": false});
    f.accepted(&body).await.project_id
}

fn stranger() -> Principal {
    Principal {
        account_id: ids::new_id(),
        token_id: None,
        admin: false,
    }
}

fn budget(project_id: &str, amount: Option<f64>) -> SetBookBudgetRequest {
    SetBookBudgetRequest {
        project_id: project_id.to_owned(),
        amount,
    }
}

fn edition(project_id: &str, ai_disclosure: Option<bool>, clear: bool) -> SetEditionRequest {
    SetEditionRequest {
        project_id: project_id.to_owned(),
        ai_disclosure,
        clear_ai_disclosure: clear,
    }
}

fn refused_at(error: SchedulerError, field: &str, kind: IssueKind) {
    match error {
        SchedulerError::InvalidPayload(issues) => {
            assert_eq!(issues.len(), 1, "{issues:?}");
            let expected = Issue::at("body", field, kind);
            assert_eq!(
                (&issues[0].loc, issues[0].kind),
                (&expected.loc, expected.kind)
            );
        }
        other => panic!("expected invalid_payload, got {other:?}"),
    }
}

#[tokio::test]
async fn the_owner_sets_and_removes_a_cap() {
    on_both(|f| async move {
        let id = book(&f).await;
        let who = f.principal();
        let capped = set_budget(&f.db, &who, budget(&id, Some(12.5)))
            .await
            .expect("capped");
        assert_eq!(capped, BookBudget::new(id.clone(), Some(12.5), 0.0));
        assert_eq!(f.volume(&id).await.budget_amount, Some(12.5));

        let removed = set_budget(&f.db, &who, budget(&id, None))
            .await
            .expect("removed");
        assert_eq!(removed.budget, None);
        assert_eq!(f.volume(&id).await.budget_amount, None);
    })
    .await;
}

#[tokio::test]
async fn a_cap_that_is_not_positive_is_refused_even_on_an_absent_book() {
    on_both(|f| async move {
        let id = book(&f).await;
        for amount in [0.0, -3.0, f64::NAN, f64::INFINITY] {
            let error = set_budget(&f.db, &f.principal(), budget(&id, Some(amount)))
                .await
                .expect_err("refused");
            refused_at(error, "amount", IssueKind::NotPositive);
        }
        let error = set_budget(&f.db, &f.principal(), budget("missing", Some(-1.0)))
            .await
            .expect_err("refused");
        refused_at(error, "amount", IssueKind::NotPositive);
        assert_eq!(f.volume(&id).await.budget_amount, None);
    })
    .await;
}

#[tokio::test]
async fn another_accounts_book_answers_as_an_absent_one() {
    on_both(|f| async move {
        let id = book(&f).await;
        let error = set_budget(&f.db, &stranger(), budget(&id, Some(5.0)))
            .await
            .expect_err("refused");
        assert!(matches!(error, SchedulerError::VolumeNotFound), "{error:?}");
        let error = set_edition(&f.db, &stranger(), edition(&id, Some(false), false))
            .await
            .expect_err("refused");
        assert!(matches!(error, SchedulerError::VolumeNotFound), "{error:?}");
        let volume = f.volume(&id).await;
        assert_eq!((volume.budget_amount, volume.ai_disclosure), (None, None));
    })
    .await;
}

#[tokio::test]
async fn a_book_follows_the_installation_until_it_has_its_own_value() {
    on_both(|f| async move {
        let id = book(&f).await;
        let who = f.principal();
        exports::save(
            &f.db,
            ExportSettings {
                ai_disclosure: false,
            },
        )
        .await
        .expect("saved");

        let unchanged = set_edition(&f.db, &who, edition(&id, None, false))
            .await
            .expect("answered");
        assert_eq!(unchanged.ai_disclosure, None);
        assert!(!unchanged.effective.ai_disclosure);

        let own = set_edition(&f.db, &who, edition(&id, Some(true), false))
            .await
            .expect("set");
        assert_eq!(
            own,
            Edition {
                ai_disclosure: Some(true),
                effective: EffectiveEdition {
                    ai_disclosure: true
                },
                project_id: id.clone(),
            }
        );
        assert_eq!(f.volume(&id).await.ai_disclosure, Some(true));

        let following = set_edition(&f.db, &who, edition(&id, None, true))
            .await
            .expect("cleared");
        assert_eq!(following.ai_disclosure, None);
        assert!(!following.effective.ai_disclosure);
        assert_eq!(f.volume(&id).await.ai_disclosure, None);

        let error = set_edition(&f.db, &who, edition(&id, Some(false), true))
            .await
            .expect_err("refused");
        refused_at(error, "clear_ai_disclosure", IssueKind::ValueError);
    })
    .await;
}
