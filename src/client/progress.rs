//! How `translate` shows a request's progress: a bar with the stage and
//! percent on a terminal, otherwise a plain `NN% stage` line each time the
//! percent or the stage changes (a log does not fill with repeats).

use dragoman_model::vocab::Stage;
use dragoman_proto::v1::StatusDocument;
use dragoman_proto::wire::WireEnum;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;

/// Where a status document stands: its percent and stage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub percent: i64,
    pub stage: String,
}

impl Step {
    pub fn of(document: &StatusDocument) -> Step {
        Step {
            percent: document
                .progress
                .as_ref()
                .map(|p| p.percent)
                .unwrap_or_default()
                .clamp(0, 100),
            stage: Stage::from_wire(document.stage, "stage")
                .map(Stage::as_str)
                .unwrap_or("unknown")
                .to_owned(),
        }
    }

    /// The plain line: `42% translation`.
    pub fn line(&self) -> String {
        format!("{}% {}", self.percent, self.stage)
    }
}

/// The plain lines of a run: a line only for a step unlike the last one.
#[derive(Debug, Default)]
pub struct Lines {
    last: Option<Step>,
}

impl Lines {
    /// The line to print for `step`, `None` when it repeats the last.
    pub fn next(&mut self, step: Step) -> Option<String> {
        if self.last.as_ref() == Some(&step) {
            return None;
        }
        let line = step.line();
        self.last = Some(step);
        Some(line)
    }
}

/// The progress display of one request.
pub enum Progress {
    /// On a terminal; `None` while hidden (see [`Progress::hide`]).
    Bar {
        bar: Option<ProgressBar>,
        last: Option<Step>,
    },
    /// Anywhere else, on standard error.
    Lines(Lines),
}

impl Progress {
    /// A bar when standard error is a terminal, plain lines otherwise.
    pub fn new() -> Progress {
        if std::io::stderr().is_terminal() {
            Progress::Bar {
                bar: None,
                last: None,
            }
        } else {
            Progress::Lines(Lines::default())
        }
    }

    pub fn show(&mut self, document: &StatusDocument) {
        let step = Step::of(document);
        match self {
            Progress::Bar { bar, last } => {
                let bar = bar.get_or_insert_with(new_bar);
                bar.set_message(step.stage.clone());
                bar.set_position(step.percent.unsigned_abs());
                *last = Some(step);
            }
            Progress::Lines(lines) => {
                if let Some(line) = lines.next(step) {
                    eprintln!("{line}");
                }
            }
        }
    }

    /// Clears the bar so a question can be asked below nothing; the next
    /// [`Progress::show`] or [`Progress::unhide`] draws it again.
    pub fn hide(&mut self) {
        if let Progress::Bar { bar, .. } = self
            && let Some(bar) = bar.take()
        {
            bar.finish_and_clear();
        }
    }

    /// Draws the bar again at its last step after [`Progress::hide`].
    pub fn unhide(&mut self) {
        if let Progress::Bar { bar, last } = self
            && bar.is_none()
            && let Some(step) = last
        {
            let drawn = new_bar();
            drawn.set_message(step.stage.clone());
            drawn.set_position(step.percent.unsigned_abs());
            *bar = Some(drawn);
        }
    }

    /// Leaves the bar's last state on screen.
    pub fn finish(&mut self) {
        if let Progress::Bar { bar: Some(bar), .. } = self {
            bar.abandon();
        }
    }
}

fn new_bar() -> ProgressBar {
    let bar = ProgressBar::new(100);
    // The template is a constant: it always reads.
    if let Ok(style) = ProgressStyle::with_template("[{bar:40}] {pos:>3}% {msg}") {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

#[cfg(test)]
mod tests {
    use super::*;
    use dragoman_proto::v1::RequestProgress;

    fn document(percent: i64, stage: Stage) -> StatusDocument {
        StatusDocument {
            stage: stage.to_wire(),
            progress: Some(RequestProgress {
                percent,
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn a_line_is_printed_only_when_percent_or_stage_changes() {
        let mut lines = Lines::default();
        let printed: Vec<String> = [
            document(0, Stage::Import),
            document(0, Stage::Import),
            document(0, Stage::Translation),
            document(40, Stage::Translation),
            document(40, Stage::Translation),
            document(100, Stage::Export),
        ]
        .iter()
        .filter_map(|d| lines.next(Step::of(d)))
        .collect();
        assert_eq!(
            printed,
            [
                "0% import",
                "0% translation",
                "40% translation",
                "100% export"
            ]
        );
    }

    #[test]
    fn a_document_without_progress_reads_as_zero() {
        let step = Step::of(&StatusDocument::default());
        assert_eq!(step.line(), "0% unknown");
    }
}
