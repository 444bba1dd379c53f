//! A book's own settings through the API (spec 8 "Token budget rules",
//! spec 4.9): its spending cap and its edition choices, set by its owner and
//! answered with the exact bytes clients read; a cap that is not positive is
//! refused, another account's book answers as an absent one, and the
//! installation's export settings are for administrators only.

use dragoman_e2e::translation::chapter;
use dragoman_e2e::{Api, Backend, Session, on_both_backends};
use reqwest::Method;
use serde_json::{Value, json};

on_both_backends!(a_books_cap_and_edition_are_its_owners_to_set);

async fn patch(session: &Session, path: &str, body: &Value) -> dragoman_e2e::Answer {
    dragoman_e2e::send(session.request(Method::PATCH, path).json(body)).await
}

async fn a_books_cap_and_edition_are_its_owners_to_set(backend: Backend) {
    let api = Api::start(backend).await;
    let owner = api.session().await;
    let mut body = api.payload("Shelf", vec![chapter("Shelf", 1, 2)]);
    body["pipeline"] = json!({"start": false});
    let summary = api.submit_ok(&body).await;
    let id = summary["project_id"]
        .as_str()
        .expect("project_id")
        .to_owned();
    let budget = format!("/api/projects/{id}/budget");
    let edition = format!("/api/projects/{id}/edition");

    // The cap: none, set, removed; the bytes are the documented ones.
    let answer = owner.get(&budget).await;
    answer.expect(200);
    assert_eq!(
        answer.text,
        format!(r#"{{"budget":null,"project_id":"{id}","spent":0.0}}"#)
    );
    let answer = owner.put(&budget, &json!({"amount": 12.5})).await;
    answer.expect(200);
    let capped =
        format!(r#"{{"budget":{{"amount":12.5,"spent":0.0}},"project_id":"{id}","spent":0.0}}"#);
    assert_eq!(answer.text, capped);
    assert_eq!(owner.get(&budget).await.text, capped);
    for amount in [json!(0), json!(-2.5)] {
        let detail = owner
            .put(&budget, &json!({"amount": amount}))
            .await
            .expect_error(422, "invalid_payload", "a cap that is not positive");
        assert_eq!(detail["issues"][0]["loc"], json!(["body", "amount"]));
        assert_eq!(detail["issues"][0]["type"], "not_positive");
    }
    assert_eq!(owner.get(&budget).await.text, capped);
    owner
        .put(&budget, &json!({"amount": "12"}))
        .await
        .expect_error(422, "invalid_payload", "a cap that is not a number");
    owner
        .put("/api/projects/missing/budget", &json!({"amount": 5}))
        .await
        .expect_error(404, "volume_not_found", "an absent book's cap");
    let answer = owner.put(&budget, &json!({"amount": null})).await;
    answer.expect(200);
    assert_eq!(
        answer.text,
        format!(r#"{{"budget":null,"project_id":"{id}","spent":0.0}}"#)
    );

    // The edition: the book's own value wins, null follows the installation.
    let answer = patch(&owner, &edition, &json!({"ai_disclosure": false})).await;
    answer.expect(200);
    let own = format!(
        r#"{{"ai_disclosure":false,"effective":{{"ai_disclosure":false}},"project_id":"{id}"}}"#
    );
    assert_eq!(answer.text, own);
    assert_eq!(patch(&owner, &edition, &json!({})).await.text, own);
    let answer = patch(&owner, &edition, &json!({"ai_disclosure": null})).await;
    answer.expect(200);
    assert_eq!(
        answer.text,
        format!(
            r#"{{"ai_disclosure":null,"effective":{{"ai_disclosure":true}},"project_id":"{id}"}}"#
        )
    );
    let answer = owner
        .put("/api/settings/exports", &json!({"ai_disclosure": false}))
        .await;
    answer.expect(200);
    assert_eq!(answer.text, r#"{"ai_disclosure":false}"#);
    assert_eq!(
        owner.get("/api/settings/exports").await.text,
        r#"{"ai_disclosure":false}"#
    );
    assert_eq!(
        patch(&owner, &edition, &json!({})).await.text,
        format!(
            r#"{{"ai_disclosure":null,"effective":{{"ai_disclosure":false}},"project_id":"{id}"}}"#
        )
    );
    patch(&owner, &edition, &json!({"colour": true}))
        .await
        .expect_error(422, "invalid_payload", "an unknown edition field");

    // Another account sees neither the book nor the installation's settings.
    let account = api
        .server
        .installation
        .create_user("neighbour", false)
        .await;
    let neighbour = Session::login(&api.server, &account).await;
    neighbour
        .put(&budget, &json!({"amount": 5}))
        .await
        .expect_error(404, "volume_not_found", "another account's cap");
    neighbour
        .get(&budget)
        .await
        .expect_error(404, "volume_not_found", "another account's cap");
    patch(&neighbour, &edition, &json!({"ai_disclosure": true}))
        .await
        .expect_error(404, "volume_not_found", "another account's edition");
    neighbour
        .put("/api/settings/exports", &json!({"ai_disclosure": true}))
        .await
        .expect_error(403, "admin_required", "the export settings");
    assert_eq!(
        owner.get("/api/settings/exports").await.text,
        r#"{"ai_disclosure":false}"#
    );
    assert_eq!(
        owner.get(&budget).await.text,
        format!(r#"{{"budget":null,"project_id":"{id}","spent":0.0}}"#)
    );
}
