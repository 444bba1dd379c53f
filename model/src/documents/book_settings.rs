//! A book's own settings as its owner sees them: its spending cap with what
//! the book has cost so far (`/api/projects/{pid}/budget`, spec 8) and its
//! edition choices (`PATCH /api/projects/{pid}/edition`, spec 4.9).
//!
//! Fields are declared in the order of their names: these documents were
//! first written as JSON maps, which sort their keys, and a client sees the
//! same bytes as before.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// A book's cap and its spending, in the provider prices' currency.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct BudgetSpending {
    pub amount: f64,
    pub spent: f64,
}

/// A book's spending cap (`GET`/`PUT /api/projects/{pid}/budget`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct BookBudget {
    /// Null: the book has no cap of its own.
    pub budget: Option<BudgetSpending>,
    pub project_id: String,
    /// What every request of the book has cost so far.
    pub spent: f64,
}

impl BookBudget {
    /// The document of book `project_id`, capped at `amount` when it has a
    /// cap, having cost `spent`.
    pub fn new(project_id: String, amount: Option<f64>, spent: f64) -> BookBudget {
        BookBudget {
            budget: amount.map(|amount| BudgetSpending { amount, spent }),
            project_id,
            spent,
        }
    }

    /// The cap, if any.
    pub fn amount(&self) -> Option<f64> {
        self.budget.map(|budget| budget.amount)
    }
}

/// A change of a book's cap (the body of `PUT /api/projects/{pid}/budget`,
/// and what the audit log records of it): null removes the cap.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BudgetChange {
    pub amount: Option<f64>,
}

/// The values an EPUB of the book follows once the installation's settings
/// are taken into account.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct EffectiveEdition {
    pub ai_disclosure: bool,
}

/// A book's edition choices (`PATCH /api/projects/{pid}/edition`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Edition {
    /// The book's own value; null follows the installation.
    pub ai_disclosure: Option<bool>,
    pub effective: EffectiveEdition,
    pub project_id: String,
}
