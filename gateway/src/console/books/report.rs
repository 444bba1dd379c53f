//! The completion report (spec 2.7) as a request's page shows it: usage
//! and cost by stage, the passages left in their source text, the quality
//! bands as bars, the weakest chapters and the passages to review first.

use super::words;
use crate::console::text::texts;
use crate::messages::Lang;
use dragoman_model::documents::report::{CompletionReport, StageUsage};
use dragoman_model::documents::request::ChapterItem;
use dragoman_model::vocab::{Band, UsageStage};

texts! {
    /// The words of the report.
    ReportText {
        outcome: "Outcome" / "Issue",
        reason: "Reason" / "Raison",
        passages: "Passages" / "Passages",
        translated: "Translated" / "Traduits",
        validated: "Validated by a person" / "Validés par une personne",
        flagged: "Flagged" / "Signalés",
        residual_total: "Left in the source text" / "Laissés dans le texte source",
        usage: "Usage and cost by stage" / "Consommation et coût par étape",
        stage: "Stage" / "Étape",
        calls: "Calls" / "Appels",
        cached_calls: "From memory" / "Depuis la mémoire",
        prompt_tokens: "Prompt tokens" / "Jetons envoyés",
        completion_tokens: "Completion tokens" / "Jetons reçus",
        cost: "Cost" / "Coût",
        all_stages: "All stages" / "Toutes les étapes",
        estimated: "Estimated cost" / "Coût estimé",
        actual: "Cost" / "Coût",
        book_spent: "Spent on the book so far" / "Dépensé pour le livre à ce jour",
        book_budget: "The book's cap" / "Plafond du livre",
        switches: "Moves to a cheaper provider" / "Passages à un fournisseur moins cher",
        budget: "Budget" / "Budget",
        paused_for_budget: "Paused at its spending cap" / "Mis en pause à son plafond de dépenses",
        provider_switched: "Moved to a cheaper provider near its cap" / "Passé à un fournisseur moins cher près de son plafond",
        budget_reached: "Its spending cap was reached" / "Son plafond de dépenses a été atteint",
        residuals: "Residuals" / "Restes",
        no_residuals: "Every passage was translated." / "Tous les passages ont été traduits.",
        chapter: "Chapter" / "Chapitre",
        position: "Passage" / "Passage",
        why: "Why" / "Pourquoi",
        truncated: "Only the first residuals are listed." / "Seuls les premiers restes sont listés.",
        quality: "Quality" / "Qualité",
        average: "Average score" / "Score moyen",
        minimum: "Lowest score" / "Score le plus bas",
        scored: "Passages scored" / "Passages notés",
        to_review: "To review" / "À relire",
        bands: "Passages by quality band" / "Passages par niveau de qualité",
        band: "Band" / "Niveau",
        count: "Passages" / "Passages",
        share: "Share" / "Part",
        weakest: "Weakest chapters" / "Chapitres les plus faibles",
        review_first: "Review first" / "À relire en premier",
        score: "Score" / "Score",
        signals: "Signals" / "Signaux",
        none: "None" / "Aucun",
    }
}

/// One stage's provider calls.
pub struct UsageRow {
    pub stage: &'static str,
    pub calls: u64,
    pub cached_calls: u64,
    pub prompt_tokens: i64,
    pub completion_tokens: i64,
    pub cost: String,
}

impl UsageRow {
    fn of(stage: &'static str, usage: &StageUsage) -> UsageRow {
        UsageRow {
            stage,
            calls: usage.calls,
            cached_calls: usage.cached_calls,
            prompt_tokens: usage.prompt_tokens,
            completion_tokens: usage.completion_tokens,
            cost: words::cost(usage.cost),
        }
    }
}

/// A passage left in its source text.
pub struct ResidualRow {
    pub chapter_id: String,
    pub chapter: String,
    pub position: i64,
    pub reason: String,
}

/// One quality band and how many passages fall in it.
pub struct BandRow {
    pub id: &'static str,
    pub label: &'static str,
    pub count: u64,
}

/// A chapter among the weakest.
pub struct WeakRow {
    pub chapter_id: String,
    pub chapter: String,
    pub average: String,
    pub minimum: String,
    pub to_review: u64,
}

/// What a budget did, as the report's `cost.warning` names it, in words;
/// a name this page does not know is shown as it is.
fn budget_warning(t: &ReportText, warning: &str) -> String {
    match warning {
        "paused_for_budget" => t.paused_for_budget.to_owned(),
        "provider_switched" => t.provider_switched.to_owned(),
        "budget_reached" => t.budget_reached.to_owned(),
        other => other.to_owned(),
    }
}

/// A passage to review first.
pub struct FirstRow {
    pub chapter_id: String,
    pub chapter: String,
    pub position: i64,
    pub score: i64,
    pub signals: String,
}

/// The report's quality part.
pub struct QualityView {
    pub average: String,
    pub minimum: String,
    pub scored: u64,
    /// The bars' maximum: the passages scored, at least 1.
    pub scale: u64,
    pub to_review: u64,
    pub bands: Vec<BandRow>,
    pub weakest: Vec<WeakRow>,
    pub review_first: Vec<FirstRow>,
}

/// The report as the page shows it.
pub struct ReportView {
    pub outcome: &'static str,
    pub reason: Option<String>,
    pub total: u64,
    pub translated: u64,
    pub validated: u64,
    pub flagged: u64,
    pub residual_total: u64,
    pub usage: Vec<UsageRow>,
    pub usage_total: UsageRow,
    pub batch_note: Option<String>,
    pub estimated: String,
    /// What the calls cost (`usage.cost`).
    pub actual: String,
    pub book_spent: String,
    pub book_budget: Option<String>,
    pub switches: i64,
    /// What a budget did, in words.
    pub budget_warning: Option<String>,
    pub residuals: Vec<ResidualRow>,
    pub residuals_truncated: bool,
    pub quality: Option<QualityView>,
}

/// How a chapter is named in the report: its label and title in the
/// request, else its id.
fn chapter_name(chapters: &[ChapterItem], chapter_id: &str, title: Option<&str>) -> String {
    match chapters.iter().find(|c| c.chapter_id == chapter_id) {
        Some(c) => match c.title.as_deref().or(title) {
            Some(title) if !title.is_empty() => format!("{} — {title}", c.display_label),
            _ => c.display_label.clone(),
        },
        None => title.map_or_else(|| chapter_id.to_owned(), str::to_owned),
    }
}

fn score(value: Option<f64>) -> String {
    value.map_or_else(|| "—".to_owned(), |v| format!("{v:.1}"))
}

/// The report of a request whose chapters are `chapters`.
pub fn view(lang: Lang, report: &CompletionReport, chapters: &[ChapterItem]) -> ReportView {
    let usage = report
        .usage
        .by_stage
        .as_ref()
        .map(|by| {
            [
                (UsageStage::Analysis, &by.analysis),
                (UsageStage::Translation, &by.translation),
                (UsageStage::Review, &by.review),
                (UsageStage::Autopilot, &by.autopilot),
            ]
            .into_iter()
            .map(|(stage, usage)| UsageRow::of(words::usage_stage(lang, stage), usage))
            .collect()
        })
        .unwrap_or_default();
    let total = &report.usage;
    let quality = report.quality.as_ref().map(|q| QualityView {
        average: score(q.average),
        minimum: score(q.minimum.map(|m| m as f64)),
        scored: q.scored,
        scale: q.scored.max(1),
        to_review: q.to_review,
        bands: [
            (Band::Good, q.bands.good),
            (Band::Fair, q.bands.fair),
            (Band::Weak, q.bands.weak),
            (Band::Poor, q.bands.poor),
        ]
        .into_iter()
        .map(|(band, count)| BandRow {
            id: band.as_str(),
            label: words::band(lang, band),
            count,
        })
        .collect(),
        weakest: q
            .weakest_chapters
            .iter()
            .map(|w| WeakRow {
                chapter_id: w.chapter_id.clone(),
                chapter: chapter_name(chapters, &w.chapter_id, w.title.as_deref()),
                average: score(w.average),
                minimum: score(w.minimum.map(|m| m as f64)),
                to_review: w.to_review,
            })
            .collect(),
        review_first: q
            .review_first
            .iter()
            .map(|p| FirstRow {
                chapter_id: p.chapter_id.clone(),
                chapter: chapter_name(chapters, &p.chapter_id, None),
                position: p.position,
                score: p.score,
                signals: p
                    .signals
                    .iter()
                    .map(|s| {
                        if s.message.is_empty() {
                            s.code.as_str().to_owned()
                        } else {
                            format!("{}: {}", s.code.as_str(), s.message)
                        }
                    })
                    .collect::<Vec<_>>()
                    .join("; "),
            })
            .collect(),
    });
    ReportView {
        outcome: words::status(lang, report.outcome, false),
        reason: report.reason.clone().filter(|r| !r.is_empty()),
        total: report.passages.total,
        translated: report.passages.translated,
        validated: report.passages.validated,
        flagged: report.passages.flagged,
        residual_total: report.residual_total,
        usage,
        usage_total: UsageRow {
            stage: ReportText::of(lang).all_stages,
            calls: total.calls,
            cached_calls: total.cached_calls,
            prompt_tokens: total.prompt_tokens,
            completion_tokens: total.completion_tokens,
            cost: words::cost(total.cost),
        },
        batch_note: total.batch_note.clone().filter(|n| !n.is_empty()),
        estimated: words::cost(report.cost.estimated),
        actual: words::cost(report.cost.actual),
        book_spent: words::cost(Some(report.cost.book_spent)),
        book_budget: report.cost.book_budget.map(|cap| words::cost(Some(cap))),
        switches: report.cost.provider_switches,
        budget_warning: report
            .cost
            .warning
            .as_deref()
            .map(|warning| budget_warning(ReportText::of(lang), warning)),
        residuals: report
            .residuals
            .iter()
            .map(|r| ResidualRow {
                chapter_id: r.chapter_id.clone(),
                chapter: chapter_name(chapters, &r.chapter_id, r.chapter_title.as_deref()),
                position: r.position,
                reason: r.reason.clone(),
            })
            .collect(),
        residuals_truncated: report.residuals_truncated,
        quality,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_warning_is_said_in_words_and_an_unknown_one_as_it_is() {
        let t = ReportText::of(Lang::En);
        assert_eq!(budget_warning(t, "paused_for_budget"), t.paused_for_budget);
        assert_eq!(budget_warning(t, "budget_reached"), t.budget_reached);
        assert_eq!(budget_warning(t, "provider_switched"), t.provider_switched);
        assert_eq!(budget_warning(t, "something_new"), "something_new");
    }
}
