//! The licence status and the `LicenceStatusView` message that carries it
//! from the scheduler to the gateway.

use crate::v1;
use crate::wire::{WireEnum, WireError};
use dragoman_model::documents::licence_status::{AccountAllowance, LicenceStatus};
use dragoman_model::licence::{Features, LicenceSource, Plan};

impl WireEnum for LicenceSource {
    fn to_wire(self) -> i32 {
        match self {
            LicenceSource::Setting => v1::LicenceSource::Setting as i32,
            LicenceSource::File => v1::LicenceSource::File as i32,
            LicenceSource::None => v1::LicenceSource::None as i32,
        }
    }

    fn from_wire(value: i32, field: &'static str) -> Result<Self, WireError> {
        match v1::LicenceSource::try_from(value) {
            Ok(v1::LicenceSource::Setting) => Ok(LicenceSource::Setting),
            Ok(v1::LicenceSource::File) => Ok(LicenceSource::File),
            Ok(v1::LicenceSource::None) => Ok(LicenceSource::None),
            _ => Err(WireError { field }),
        }
    }
}

impl WireEnum for Plan {
    fn to_wire(self) -> i32 {
        match self {
            Plan::Studio => v1::LicencePlan::Studio as i32,
            Plan::Professional => v1::LicencePlan::Professional as i32,
            Plan::Enterprise => v1::LicencePlan::Enterprise as i32,
        }
    }

    fn from_wire(value: i32, field: &'static str) -> Result<Self, WireError> {
        match v1::LicencePlan::try_from(value) {
            Ok(v1::LicencePlan::Studio) => Ok(Plan::Studio),
            Ok(v1::LicencePlan::Professional) => Ok(Plan::Professional),
            Ok(v1::LicencePlan::Enterprise) => Ok(Plan::Enterprise),
            _ => Err(WireError { field }),
        }
    }
}

impl From<LicenceStatus> for v1::LicenceStatusView {
    fn from(s: LicenceStatus) -> Self {
        v1::LicenceStatusView {
            account: Some(v1::AccountAllowance {
                allowance: s.account.allowance,
                cycle_end: s.account.cycle_end,
                cycle_start: s.account.cycle_start,
                left: s.account.left,
                used: s.account.used,
            }),
            carried: s.carried,
            cycle_end: s.cycle_end,
            cycle_start: s.cycle_start,
            features: Some(v1::LicenceFeatures {
                automation_api: s.features.automation_api,
                tool_protocol: s.features.tool_protocol,
            }),
            left: s.left,
            licensed: s.licensed,
            margin: s.margin,
            plan: s.plan.map(WireEnum::to_wire),
            source: s.source.to_wire(),
            summary: s.summary,
            used: s.used,
            word_limit: s.word_limit,
        }
    }
}

impl TryFrom<v1::LicenceStatusView> for LicenceStatus {
    type Error = WireError;
    fn try_from(m: v1::LicenceStatusView) -> Result<Self, WireError> {
        let account = m.account.ok_or(WireError { field: "account" })?;
        let features = m.features.ok_or(WireError { field: "features" })?;
        Ok(LicenceStatus {
            account: AccountAllowance {
                allowance: account.allowance,
                cycle_end: account.cycle_end,
                cycle_start: account.cycle_start,
                left: account.left,
                used: account.used,
            },
            carried: m.carried,
            cycle_end: m.cycle_end,
            cycle_start: m.cycle_start,
            features: Features {
                automation_api: features.automation_api,
                tool_protocol: features.tool_protocol,
            },
            left: m.left,
            licensed: m.licensed,
            margin: m.margin,
            plan: WireEnum::from_wire_opt(m.plan, "plan")?,
            source: WireEnum::from_wire(m.source, "source")?,
            summary: m.summary,
            used: m.used,
            word_limit: m.word_limit,
        })
    }
}

#[cfg(test)]
mod tests;
