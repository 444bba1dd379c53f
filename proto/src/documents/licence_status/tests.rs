//! The licence status crosses the wire and comes back equal, and
//! serialises as the JSON the scheduler wrote before it was typed.

use super::*;

#[test]
fn the_licence_status_crosses() {
    let doc = LicenceStatus {
        account: AccountAllowance {
            allowance: Some(10_000),
            cycle_end: "2026-12-14".into(),
            cycle_start: "2026-11-14".into(),
            left: Some(-5),
            used: 10_005,
        },
        carried: 20,
        cycle_end: "2026-12-14".into(),
        cycle_start: "2026-11-14".into(),
        features: Features {
            automation_api: true,
            tool_protocol: false,
        },
        left: Some(480_000),
        licensed: true,
        margin: 1000,
        plan: Some(Plan::Professional),
        source: LicenceSource::Setting,
        summary: "A licence is in force.".into(),
        used: 19_980,
        word_limit: Some(500_000),
    };
    let message = v1::LicenceStatusView::from(doc.clone());
    assert_eq!(LicenceStatus::try_from(message.clone()), Ok(doc.clone()));
    assert_eq!(
        serde_json::to_string(&doc).expect("serialises"),
        r#"{"account":{"allowance":10000,"cycle_end":"2026-12-14","cycle_start":"2026-11-14","left":-5,"used":10005},"carried":20,"cycle_end":"2026-12-14","cycle_start":"2026-11-14","features":{"automation_api":true,"tool_protocol":false},"left":480000,"licensed":true,"margin":1000,"plan":"professional","source":"setting","summary":"A licence is in force.","used":19980,"word_limit":500000}"#
    );
    let unknown = v1::LicenceStatusView {
        source: 0,
        ..message
    };
    assert_eq!(
        LicenceStatus::try_from(unknown),
        Err(WireError { field: "source" })
    );
}
