//! A page of `list_jobs` survives the wire, and its JSON is the one
//! clients have always read: keys sorted, absent parts null.

use super::*;

fn item(request_id: &str) -> JobListItem {
    JobListItem {
        book_id: "prj_1".into(),
        book_title: Some("The Book".into()),
        created_at: 1_700_000_000,
        finished_at: Some(1_700_000_500),
        may_resume: true,
        paid: Some(true),
        paused: true,
        priority: Priority::High,
        progress: JobProgress {
            percent: 75,
            segments: 4,
            translated: 3,
        },
        request_id: request_id.into(),
        series_id: "ser_1".into(),
        stage: Stage::Translation,
        started_by: StartedBy {
            this_token: true,
            token_id: Some("tok_1".into()),
            token_name: Some("ci".into()),
        },
        status: RequestStatus::Running,
        status_url: format!("/api/v1/translation-requests/{request_id}"),
        step: "translating".into(),
    }
}

/// Every field given, every optional part present.
fn full_list() -> JobList {
    JobList {
        items: vec![item("req_2"), item("req_1")],
        limit: 2,
        offset: 4,
        total: 9,
    }
}

#[test]
fn a_full_page_survives_the_wire() {
    let list = full_list();
    let back = JobList::try_from(v1::JobList::from(list.clone())).expect("a known page");
    assert_eq!(back, list);
}

#[test]
fn the_page_keeps_its_json() {
    let mut list = full_list();
    list.items.truncate(1);
    list.items[0].book_title = None;
    list.items[0].finished_at = None;
    list.items[0].paid = None;
    list.items[0].started_by.token_id = None;
    list.items[0].started_by.token_name = None;
    let back = JobList::try_from(v1::JobList::from(list.clone())).expect("a known page");
    assert_eq!(back, list);
    assert_eq!(
        serde_json::to_string(&back).expect("json"),
        concat!(
            r#"{"items":[{"book_id":"prj_1","book_title":null,"created_at":1700000000,"#,
            r#""finished_at":null,"may_resume":true,"paid":null,"paused":true,"#,
            r#""priority":"high","progress":{"percent":75,"segments":4,"translated":3},"#,
            r#""request_id":"req_2","series_id":"ser_1","stage":"translation","#,
            r#""started_by":{"this_token":true,"token_id":null,"token_name":null},"#,
            r#""status":"running","status_url":"/api/v1/translation-requests/req_2","#,
            r#""step":"translating"}],"limit":2,"offset":4,"total":9}"#,
        )
    );
}

#[test]
fn an_unknown_status_names_its_field() {
    let mut message = v1::JobList::from(full_list());
    message.items[1].status = 99;
    assert_eq!(
        JobList::try_from(message),
        Err(WireError {
            field: "items.status"
        })
    );
}
