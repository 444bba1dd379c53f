//! The words the book pages show for the service's values: a request's
//! status, a stage, a result format, a quality, a quality band; and the
//! dates they print. Each comes from one function over its typed value.

use crate::console::text::texts;
use crate::messages::Lang;
use dragoman_model::vocab::{Band, Quality, RequestStatus, ResultFormat, Stage, UsageStage};

/// What a request's status is called on the pages. `paused`: its job is
/// paused (the request itself still waits to go on).
pub fn status(lang: Lang, status: RequestStatus, paused: bool) -> &'static str {
    let t = StatusText::of(lang);
    if paused && !status.is_final() {
        return t.paused;
    }
    match status {
        RequestStatus::Pending | RequestStatus::Queued => t.waiting,
        RequestStatus::Running => t.running,
        RequestStatus::Completed => t.completed,
        RequestStatus::CompletedWithResiduals => t.completed_with_residuals,
        RequestStatus::Failed => t.failed,
        RequestStatus::Cancelled => t.cancelled,
        RequestStatus::Imported => t.imported,
    }
}

/// Whether a request's job is paused, as its status document tells it:
/// a request neither ended nor waiting for its volume, whose step says so.
pub fn paused(status: RequestStatus, step: &str) -> bool {
    !status.is_final() && status != RequestStatus::Queued && step == dragoman_model::steps::PAUSED
}

/// The name of a stage of the pipeline.
pub fn stage(lang: Lang, stage: Stage) -> &'static str {
    let t = StageText::of(lang);
    match stage {
        Stage::Import => t.import,
        Stage::Analysis => t.analysis,
        Stage::Translation => t.translation,
        Stage::Review => t.review,
        Stage::Export => t.export,
    }
}

/// The name of a stage the report counts provider calls for.
pub fn usage_stage(lang: Lang, stage: UsageStage) -> &'static str {
    let t = StageText::of(lang);
    match stage {
        UsageStage::Analysis => t.analysis,
        UsageStage::Translation => t.translation,
        UsageStage::Review => t.review,
        UsageStage::Autopilot => t.autopilot,
    }
}

/// The name of a result format, as its download link says it.
pub fn format(lang: Lang, format: ResultFormat) -> &'static str {
    let t = FormatText::of(lang);
    match format {
        ResultFormat::Epub => t.epub,
        ResultFormat::EpubBilingual => t.epub_bilingual,
        ResultFormat::Txt => t.txt,
        ResultFormat::TxtZip => t.txt_zip,
        ResultFormat::Json => t.json,
    }
}

/// The name of a quality level.
pub fn quality(lang: Lang, quality: Quality) -> &'static str {
    let t = QualityText::of(lang);
    match quality {
        Quality::Fast => t.fast,
        Quality::Normal => t.normal,
        Quality::High => t.high,
        Quality::Maximum => t.maximum,
    }
}

/// The name of a quality band, with the scores it covers.
pub fn band(lang: Lang, band: Band) -> &'static str {
    let t = BandText::of(lang);
    match band {
        Band::Good => t.good,
        Band::Fair => t.fair,
        Band::Weak => t.weak,
        Band::Poor => t.poor,
    }
}

/// An amount of money the report states, or a dash when none is known.
pub fn cost(amount: Option<f64>) -> String {
    amount.map_or_else(|| "—".to_owned(), |a| format!("{a:.4}"))
}

texts! {
    /// The names of a request's statuses.
    StatusText {
        waiting: "Waiting" / "En attente",
        running: "Running" / "En cours",
        paused: "Paused" / "En pause",
        completed: "Completed" / "Terminé",
        completed_with_residuals: "Completed with residuals" / "Terminé avec des restes",
        failed: "Failed" / "Échoué",
        cancelled: "Cancelled" / "Annulé",
        imported: "Imported" / "Importé",
    }
}

texts! {
    /// The names of the pipeline's stages.
    StageText {
        import: "Import" / "Import",
        analysis: "Analysis" / "Analyse",
        translation: "Translation" / "Traduction",
        review: "Review" / "Relecture",
        export: "Export" / "Export",
        autopilot: "Autopilot" / "Pilote automatique",
    }
}

texts! {
    /// The names of the result formats.
    FormatText {
        epub: "EPUB" / "EPUB",
        epub_bilingual: "Bilingual EPUB" / "EPUB bilingue",
        txt: "Text" / "Texte",
        txt_zip: "ZIP" / "ZIP",
        json: "JSON" / "JSON",
    }
}

texts! {
    /// The names of the quality levels.
    QualityText {
        fast: "Fast" / "Rapide",
        normal: "Normal" / "Normale",
        high: "High" / "Haute",
        maximum: "Maximum" / "Maximale",
    }
}

texts! {
    /// The names of the quality bands.
    BandText {
        good: "Good (85 and more)" / "Bonne (85 et plus)",
        fair: "Fair (70 to 84)" / "Correcte (70 à 84)",
        weak: "Weak (50 to 69)" / "Faible (50 à 69)",
        poor: "Poor (below 50)" / "Mauvaise (moins de 50)",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_has_its_words_and_a_paused_job_says_so() {
        for lang in [Lang::En, Lang::Fr] {
            for value in RequestStatus::ALL {
                assert!(!status(lang, *value, false).is_empty());
            }
        }
        assert_eq!(status(Lang::En, RequestStatus::Queued, false), "Waiting");
        assert_eq!(status(Lang::En, RequestStatus::Pending, true), "Paused");
        assert_eq!(status(Lang::Fr, RequestStatus::Pending, true), "En pause");
        // An ended request is never shown paused.
        assert_eq!(
            status(Lang::En, RequestStatus::Cancelled, true),
            "Cancelled"
        );
        assert_eq!(
            status(Lang::En, RequestStatus::CompletedWithResiduals, false),
            "Completed with residuals"
        );
    }

    #[test]
    fn only_a_request_going_on_is_paused() {
        let step = dragoman_model::steps::PAUSED;
        assert!(paused(RequestStatus::Pending, step));
        assert!(!paused(RequestStatus::Queued, step));
        assert!(!paused(RequestStatus::Cancelled, step));
        assert!(!paused(
            RequestStatus::Running,
            dragoman_model::steps::TRANSLATING
        ));
    }

    #[test]
    fn moments_and_costs_print_plainly() {
        assert_eq!(
            crate::console::page::moment(1_795_867_200),
            "2026-11-28 12:00 UTC"
        );
        assert_eq!(cost(None), "—");
        assert_eq!(cost(Some(0.5)), "0.5000");
    }
}
