//! A book's budget and edition and the export settings cross the wire and
//! come back equal, and serialise as the JSON the gateway wrote before they
//! were typed.

use super::*;

#[test]
fn a_capped_budget_crosses() {
    let doc = BookBudget {
        budget: Some(BudgetSpending {
            amount: 12.5,
            spent: 3.25,
        }),
        project_id: "p1".into(),
        spent: 3.25,
    };
    let message = v1::BookBudgetView::from(doc.clone());
    assert_eq!(BookBudget::from(message), doc);
    assert_eq!(
        serde_json::to_string(&doc).expect("serialises"),
        r#"{"budget":{"amount":12.5,"spent":3.25},"project_id":"p1","spent":3.25}"#
    );
}

#[test]
fn an_uncapped_budget_crosses_with_a_null_budget() {
    let doc = BookBudget::new("p1".into(), None, 0.0);
    let message = v1::BookBudgetView::from(doc.clone());
    assert_eq!(BookBudget::from(message), doc);
    assert_eq!(
        serde_json::to_string(&doc).expect("serialises"),
        r#"{"budget":null,"project_id":"p1","spent":0.0}"#
    );
}

#[test]
fn an_edition_crosses() {
    let doc = Edition {
        ai_disclosure: Some(false),
        effective: EffectiveEdition {
            ai_disclosure: false,
        },
        project_id: "p1".into(),
    };
    let message = v1::EditionView::from(doc.clone());
    assert_eq!(Edition::try_from(message.clone()), Ok(doc.clone()));
    assert_eq!(
        serde_json::to_string(&doc).expect("serialises"),
        r#"{"ai_disclosure":false,"effective":{"ai_disclosure":false},"project_id":"p1"}"#
    );
    let following = Edition {
        ai_disclosure: None,
        ..doc
    };
    assert_eq!(
        serde_json::to_string(&following).expect("serialises"),
        r#"{"ai_disclosure":null,"effective":{"ai_disclosure":false},"project_id":"p1"}"#
    );
    let missing = v1::EditionView {
        effective: None,
        ..message
    };
    assert_eq!(
        Edition::try_from(missing),
        Err(WireError { field: "effective" })
    );
}

#[test]
fn the_export_settings_cross() {
    let settings = ExportSettings {
        ai_disclosure: false,
    };
    let message = v1::ExportSettingsView::from(settings);
    assert_eq!(ExportSettings::from(message), settings);
}
