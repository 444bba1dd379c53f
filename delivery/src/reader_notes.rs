//! Where a book's reader notes go in its results (spec 2.6, 4.9): one
//! placement for every format, so the EPUB, the bilingual EPUB, TXT, ZIP
//! and JSON annotate the same passages with the same notes.
//!
//! A note of an accepted glossary term follows the passages whose
//! translation names the term (its translation, matched without regard to
//! case, on word boundaries): the first such passage of the delivered
//! chapters in reading order (`first`), or every one (`each`); `never`
//! keeps the note out of every result. Only passages the results show
//! translated are candidates: a passage kept in source text, and a heading
//! (a footnote mark in a title would also mark the table of contents), are
//! never annotated. Several notes on one passage follow the order in which
//! their terms occur in it.

use crate::error::DeliveryError;
use crate::results::{Loaded, PassageMarkup, usable};
use dragoman_book::ReaderNote;
use dragoman_book::model::PassageRole;
use dragoman_book::placeholder;
use dragoman_model::entities::{reader_note, term};
use dragoman_model::vocab::NotePlacement;
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter};
use std::collections::HashMap;

/// A note of one term, as the book keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TermNote {
    pub term_id: String,
    /// The term's translation: what the translated text names.
    pub term: String,
    pub note: String,
    pub placement: NotePlacement,
}

/// A note placed after one passage of the delivered chapters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlacedNote {
    /// The stored passage.
    pub passage_id: String,
    pub term_id: String,
    pub term: String,
    pub note: String,
}

impl PlacedNote {
    /// What a reader reads: the term, then its note.
    pub fn text(&self) -> String {
        format!("{}: {}", self.term, self.note)
    }
}

/// The placed notes of the delivered chapters, by stored passage id.
#[derive(Debug, Default)]
pub struct BookNotes {
    pub placed: Vec<PlacedNote>,
}

impl BookNotes {
    /// The notes of one stored passage, in their order.
    pub fn of<'a>(&'a self, passage_id: &'a str) -> impl Iterator<Item = &'a PlacedNote> + 'a {
        self.placed
            .iter()
            .filter(move |n| n.passage_id == passage_id)
    }

    /// The notes for the book writers working on stored passage ids (TXT,
    /// ZIP, bilingual EPUB).
    pub fn by_stored_id(&self) -> Vec<ReaderNote> {
        self.placed
            .iter()
            .map(|n| ReaderNote {
                passage_id: n.passage_id.clone(),
                text: n.text(),
            })
            .collect()
    }

    /// The notes for the rebuilt EPUB, keyed by the passage ids of the
    /// original book (`c3.p17`).
    pub(crate) fn by_reference(&self, loaded: &Loaded) -> Vec<ReaderNote> {
        let references: HashMap<&str, String> = loaded
            .passages
            .values()
            .flatten()
            .filter_map(|p| Some((p.id.as_str(), PassageMarkup::of(p).reference?)))
            .collect();
        self.placed
            .iter()
            .filter_map(|n| {
                Some(ReaderNote {
                    passage_id: references.get(n.passage_id.as_str())?.clone(),
                    text: n.text(),
                })
            })
            .collect()
    }
}

/// The book's notes that results show: a note with text, of an accepted
/// term, placed `first` or `each`.
pub async fn shown(
    db: &impl ConnectionTrait,
    project_id: &str,
) -> Result<Vec<TermNote>, DeliveryError> {
    let notes = reader_note::Entity::find()
        .filter(reader_note::Column::ProjectId.eq(project_id))
        .filter(reader_note::Column::Placement.ne(NotePlacement::Never))
        .all(db)
        .await?;
    let notes: Vec<reader_note::Model> = notes
        .into_iter()
        .filter(|n| !n.note.trim().is_empty())
        .collect();
    if notes.is_empty() {
        return Ok(Vec::new());
    }
    let terms: HashMap<String, term::Model> = term::Entity::find()
        .filter(term::Column::Id.is_in(notes.iter().map(|n| n.term_id.clone())))
        .filter(term::Column::Accepted.eq(true))
        .all(db)
        .await?
        .into_iter()
        .map(|t| (t.id.clone(), t))
        .collect();
    let mut shown: Vec<TermNote> = notes
        .into_iter()
        .filter_map(|n| {
            let t = terms.get(&n.term_id)?;
            Some(TermNote {
                term_id: n.term_id,
                term: t.translation.trim().to_owned(),
                note: n.note.trim().to_owned(),
                placement: n.placement,
            })
        })
        .filter(|n| !n.term.is_empty())
        .collect();
    shown.sort_by(|a, b| (&a.term, &a.term_id).cmp(&(&b.term, &b.term_id)));
    Ok(shown)
}

/// The notes of the loaded chapters, placed.
pub(crate) async fn load(
    db: &impl ConnectionTrait,
    loaded: &Loaded,
) -> Result<BookNotes, DeliveryError> {
    let notes = shown(db, &loaded.volume.id).await?;
    if notes.is_empty() {
        return Ok(BookNotes::default());
    }
    let passages = loaded.chapters.iter().flat_map(|c| {
        loaded
            .passages
            .get(&c.id)
            .map(Vec::as_slice)
            .unwrap_or(&[])
            .iter()
            .filter_map(|p| Some((p.id.as_str(), annotatable(p)?)))
    });
    Ok(BookNotes {
        placed: place(&notes, passages),
    })
}

/// The plain text a passage shows translated, when a note may follow it.
fn annotatable(p: &dragoman_model::entities::passage::Model) -> Option<String> {
    let text = usable(p)?;
    if text.trim().is_empty() {
        return None;
    }
    let markup = PassageMarkup::of(p);
    if matches!(markup.role, PassageRole::Heading(_)) {
        return None;
    }
    if p.markup.is_none() {
        return Some(text.to_owned());
    }
    // A translation whose placeholders do not match is written in source
    // text by every writer.
    placeholder::check(text, &markup.tags).ok()?;
    Some(placeholder::to_plain(text, &markup.tags))
}

/// Places `notes` over `passages` (stored id, translated plain text) in
/// reading order.
pub fn place<'a>(
    notes: &[TermNote],
    passages: impl IntoIterator<Item = (&'a str, String)>,
) -> Vec<PlacedNote> {
    let needles: Vec<Vec<char>> = notes.iter().map(|n| folded(&n.term)).collect();
    let mut done = vec![false; notes.len()];
    let mut placed = Vec::new();
    for (passage_id, text) in passages {
        let hay = folded(&text);
        let mut here: Vec<(usize, usize)> = notes
            .iter()
            .enumerate()
            .filter(|(i, n)| !(n.placement == NotePlacement::First && done[*i]))
            .filter(|(i, n)| n.placement != NotePlacement::Never && !needles[*i].is_empty())
            .filter_map(|(i, _)| Some((find_word(&hay, &needles[i])?, i)))
            .collect();
        here.sort();
        for (_, i) in here {
            done[i] = true;
            let n = &notes[i];
            placed.push(PlacedNote {
                passage_id: passage_id.to_owned(),
                term_id: n.term_id.clone(),
                term: n.term.clone(),
                note: n.note.clone(),
            });
        }
    }
    placed
}

/// A text as compared: lower case, each run of white space one space.
fn folded(text: &str) -> Vec<char> {
    let mut out: Vec<char> = Vec::with_capacity(text.len());
    for c in text.trim().chars().flat_map(char::to_lowercase) {
        if c.is_whitespace() {
            if out.last() != Some(&' ') {
                out.push(' ');
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Where `needle` first occurs in `hay` as whole words.
fn find_word(hay: &[char], needle: &[char]) -> Option<usize> {
    if needle.len() > hay.len() {
        return None;
    }
    let word = |c: &char| c.is_alphanumeric();
    (0..=hay.len() - needle.len()).find(|&at| {
        hay[at..at + needle.len()] == *needle
            && (at == 0 || !word(&hay[at - 1]) || !needle.first().is_some_and(word))
            && hay
                .get(at + needle.len())
                .is_none_or(|c| !word(c) || !needle.last().is_some_and(word))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(term: &str, placement: NotePlacement) -> TermNote {
        TermNote {
            term_id: format!("t-{term}"),
            term: term.into(),
            note: format!("about {term}"),
            placement,
        }
    }

    fn placed(notes: &[TermNote], passages: &[(&'static str, &str)]) -> Vec<(String, String)> {
        place(notes, passages.iter().map(|(id, t)| (*id, t.to_string())))
            .into_iter()
            .map(|p| (p.passage_id, p.term))
            .collect()
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn first_takes_the_first_naming_passage_and_each_takes_all() {
        let passages = [
            ("p1", "Nothing here."),
            ("p2", "Le donjon se dressait."),
            ("p3", "Au Donjon, la nuit."),
        ];
        assert_eq!(
            placed(&[note("Donjon", NotePlacement::First)], &passages),
            pairs(&[("p2", "Donjon")])
        );
        assert_eq!(
            placed(&[note("Donjon", NotePlacement::Each)], &passages),
            pairs(&[("p2", "Donjon"), ("p3", "Donjon")])
        );
        assert!(placed(&[note("Donjon", NotePlacement::Never)], &passages).is_empty());
    }

    #[test]
    fn terms_match_whole_words_only() {
        let passages = [
            ("p1", "Les donjons, dit-il."),
            ("p2", "Dark  Lord! cria-t-il."),
            ("p3", "Le (Ki) parle."),
        ];
        assert!(placed(&[note("donjon", NotePlacement::Each)], &passages).is_empty());
        assert_eq!(
            placed(&[note("dark lord", NotePlacement::Each)], &passages),
            pairs(&[("p2", "dark lord")])
        );
        assert_eq!(
            placed(&[note("Ki", NotePlacement::Each)], &passages),
            pairs(&[("p3", "Ki")])
        );
    }

    #[test]
    fn notes_on_one_passage_follow_their_terms_order() {
        let passages = [("p1", "Le Ki du Donjon.")];
        assert_eq!(
            placed(
                &[
                    note("Donjon", NotePlacement::Each),
                    note("Ki", NotePlacement::First)
                ],
                &passages
            ),
            pairs(&[("p1", "Ki"), ("p1", "Donjon")])
        );
    }
}
