//! Turning what a reader found into finished [`Chapter`]s: ids, label, words, hash.
//!
//! Every reader fills a [`ChapterDraft`]; numbering passages and computing the
//! statistics in one place keeps ids and hashes identical across formats.

use crate::labels;
use crate::model::{Chapter, ChapterKind, Mapping, Passage, PassageRole, Tag};
use crate::text;

/// A chapter before ids and statistics are assigned.
#[derive(Debug, Clone)]
pub(crate) struct ChapterDraft {
    pub kind: ChapterKind,
    pub number: Option<u32>,
    pub part: Option<u32>,
    pub part_count: Option<u32>,
    pub title: Option<String>,
    pub title_is_label: bool,
    pub mapping: Mapping,
    pub source: String,
    pub passages: Vec<(PassageRole, String, Vec<Tag>)>,
}

impl ChapterDraft {
    pub fn new(source: &str) -> Self {
        ChapterDraft {
            kind: ChapterKind::Chapter,
            number: None,
            part: None,
            part_count: None,
            title: None,
            title_is_label: false,
            mapping: Mapping {
                confidence: 0.0,
                reason: "placed by position".into(),
                detected: false,
            },
            source: source.to_string(),
            passages: Vec::new(),
        }
    }

    /// Finishes the chapter at 1-based `position`.
    pub fn finish(self, position: u32) -> Chapter {
        let passages: Vec<Passage> = self
            .passages
            .into_iter()
            .enumerate()
            .map(|(i, (role, text, tags))| Passage {
                id: passage_id(position, i + 1),
                role,
                text,
                tags,
            })
            .collect();
        let (words, source_sha256) = text::chapter_stats(&passages);
        let number = if self.kind.is_special() {
            None
        } else {
            self.number
        };
        Chapter {
            position,
            kind: self.kind,
            number,
            part: self.part,
            part_count: self.part_count,
            title: self.title,
            title_is_label: self.title_is_label,
            label: labels::label(self.kind, number, self.part),
            mapping: self.mapping,
            source: self.source,
            passages,
            words,
            source_sha256,
        }
    }
}

/// The id of passage `index` (1-based) of the chapter at `position`.
pub fn passage_id(position: u32, index: usize) -> String {
    format!("c{position}.p{index}")
}
