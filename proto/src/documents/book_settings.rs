//! A book's budget and edition documents and the installation's export
//! settings, and the messages that carry them between the gateway and the
//! services that own them (the scheduler, delivery).

use crate::documents::required;
use crate::v1;
use crate::wire::WireError;
use dragoman_model::documents::book_settings::{
    BookBudget, BudgetSpending, Edition, EffectiveEdition,
};
use dragoman_model::exports::ExportSettings;

impl From<BookBudget> for v1::BookBudgetView {
    fn from(doc: BookBudget) -> Self {
        v1::BookBudgetView {
            project_id: doc.project_id,
            budget: doc.budget.map(|budget| v1::BudgetSpending {
                amount: budget.amount,
                spent: budget.spent,
            }),
            spent: doc.spent,
        }
    }
}

impl From<v1::BookBudgetView> for BookBudget {
    fn from(m: v1::BookBudgetView) -> Self {
        BookBudget {
            budget: m.budget.map(|budget| BudgetSpending {
                amount: budget.amount,
                spent: budget.spent,
            }),
            project_id: m.project_id,
            spent: m.spent,
        }
    }
}

impl From<Edition> for v1::EditionView {
    fn from(doc: Edition) -> Self {
        v1::EditionView {
            project_id: doc.project_id,
            ai_disclosure: doc.ai_disclosure,
            effective: Some(v1::EffectiveEdition {
                ai_disclosure: doc.effective.ai_disclosure,
            }),
        }
    }
}

impl TryFrom<v1::EditionView> for Edition {
    type Error = WireError;
    fn try_from(m: v1::EditionView) -> Result<Self, WireError> {
        let effective = required(m.effective, "effective")?;
        Ok(Edition {
            ai_disclosure: m.ai_disclosure,
            effective: EffectiveEdition {
                ai_disclosure: effective.ai_disclosure,
            },
            project_id: m.project_id,
        })
    }
}

impl From<ExportSettings> for v1::ExportSettingsView {
    fn from(settings: ExportSettings) -> Self {
        v1::ExportSettingsView {
            ai_disclosure: settings.ai_disclosure,
        }
    }
}

impl From<v1::ExportSettingsView> for ExportSettings {
    fn from(m: v1::ExportSettingsView) -> Self {
        ExportSettings {
            ai_disclosure: m.ai_disclosure,
        }
    }
}

#[cfg(test)]
mod tests;
