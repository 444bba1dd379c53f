//! The context of one translation batch: what the memory knows that the
//! batch's passages need, as text cut to the context token budget.
//!
//! The text has this exact form (the provider simulator reads it; keep it
//! stable). Sections appear only when they have lines; lines are joined by
//! `\n`, with no trailing newline; empty when nothing applies.
//!
//! ```text
//! Glossary:
//! - <source> => <translation> (locked)
//! - <source> => <translation>
//! Characters:
//! - <name> => <target_name>; aliases: <a>, <b>; <gender>; address: <address>
//! Places and things:
//! - <name> => <target_name>
//! Style:
//! - <aspect>: <text>
//! Similar passages:
//! - <source> => <translation>
//! Before: <summaries>
//! ```
//!
//! * Glossary: the terms in force that occur in the batch (case-insensitive,
//!   word boundaries), locked ones first, then by source.
//! * Characters: the book's characters whose name or an alias occurs in the
//!   batch (case-sensitive, word boundaries), and the series' characters
//!   that occur and this volume has not met yet. A character linked to its
//!   series identity shows the series' target name (the canonical one).
//!   Empty parts are left out (` => ` too when there is no target name).
//!   Most mentioned first, then by name.
//! * Places and things: the other kinds, the same way.
//! * Style: the volume's Bible lines, and the series' for an aspect the
//!   volume has none of; a person's lines first, then by aspect.
//! * Before: the summaries of the (up to) two passages right before the
//!   batch in reading order.
//!
//! With an external memory that answered (`external` and `hybrid`
//! requests, see `crate::backend`), what it retrieved is added after what
//! the database gives, never instead of it (the glossary in force and the
//! book's characters are always the database's: they are enforced):
//!
//! * Characters and Places and things end with the retrieved entities
//!   whose name and aliases the database's lines do not show already.
//! * Similar passages: earlier passages of the series like the batch's,
//!   with their translations, nearest first, each side on one line and cut
//!   to [`SIMILAR_CHARS`] characters.
//!
//! Over budget, whole lines go (never half a line), last ones first, in
//! this order: similar passages, retrieved places and things, retrieved
//! characters, Before, places and things, style, unlocked terms,
//! characters, locked terms. A section whose lines all went loses its
//! heading too. So what the external memory adds only ever takes the room
//! the database's context leaves.

use crate::domain::{BatchContext, QualitySheet, SheetName};
use crate::entities::union_aliases;
use crate::error::MemoryResult;
use crate::external::retrieval::Retrieved;
use crate::glossary;
use crate::normalize::{Haystack, match_key, normalize_text};
use crate::store;
use dragoman_model::entities::named::NamedThing;
use dragoman_model::entities::{
    bible_line, chapter, narrative_entity, passage, project, series, series_entity, term,
};
use dragoman_model::tokens::estimate_tokens;
use dragoman_model::vocab::{BibleAspect, EntityKind, Origin};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter};
use std::collections::{HashMap, HashSet};

/// Characters of each side of a similar passage shown at most.
pub const SIMILAR_CHARS: usize = 300;

/// The lines of a context, by section, before rendering.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContextParts {
    pub locked_terms: Vec<String>,
    pub terms: Vec<String>,
    pub characters: Vec<String>,
    pub places: Vec<String>,
    pub style: Vec<String>,
    /// The summaries, joined.
    pub before: Option<String>,
    /// Entities the external memory retrieved, shown after the database's.
    pub recalled_characters: Vec<String>,
    pub recalled_places: Vec<String>,
    /// Similar earlier passages, `source => translation`.
    pub similar: Vec<String>,
    /// The names and aliases the database's lines show (their
    /// [`match_key`]s), so a retrieved entity is not shown twice.
    pub shown_names: Vec<String>,
}

impl ContextParts {
    pub fn render(&self) -> String {
        let mut out: Vec<String> = Vec::new();
        let mut section = |title: &str, lines: &[&String]| {
            if !lines.is_empty() {
                out.push(format!("{title}:"));
                out.extend(lines.iter().map(|l| format!("- {l}")));
            }
        };
        let glossary: Vec<&String> = self.locked_terms.iter().chain(&self.terms).collect();
        section("Glossary", &glossary);
        let characters: Vec<&String> = self
            .characters
            .iter()
            .chain(&self.recalled_characters)
            .collect();
        section("Characters", &characters);
        let places: Vec<&String> = self.places.iter().chain(&self.recalled_places).collect();
        section("Places and things", &places);
        section("Style", &self.style.iter().collect::<Vec<_>>());
        section("Similar passages", &self.similar.iter().collect::<Vec<_>>());
        if let Some(before) = &self.before {
            out.push(format!("Before: {before}"));
        }
        out.join("\n")
    }

    /// Drops one line, the least needed one; `false` when none is left.
    fn drop_one(&mut self) -> bool {
        for lines in [
            &mut self.similar,
            &mut self.recalled_places,
            &mut self.recalled_characters,
        ] {
            if lines.pop().is_some() {
                return true;
            }
        }
        if self.before.take().is_some() {
            return true;
        }
        for lines in [
            &mut self.places,
            &mut self.style,
            &mut self.terms,
            &mut self.characters,
            &mut self.locked_terms,
        ] {
            if lines.pop().is_some() {
                return true;
            }
        }
        false
    }

    /// Adds what the external memory retrieved for this batch: the
    /// entities the database's lines do not show, and the similar
    /// passages. They are dropped first when over budget.
    pub fn add_retrieved(&mut self, retrieved: &Retrieved) {
        let mut shown: std::collections::HashSet<String> =
            self.shown_names.iter().cloned().collect();
        for entity in &retrieved.entities {
            let keys: Vec<String> = std::iter::once(&entity.name)
                .chain(&entity.aliases)
                .map(|n| match_key(n))
                .collect();
            if keys.iter().any(|k| shown.contains(k)) {
                continue;
            }
            shown.extend(keys);
            let sheet = Sheet {
                kind: entity.kind,
                name: entity.name.clone(),
                target_name: entity.target_name.clone(),
                aliases: entity.aliases.clone(),
                ..Sheet::default()
            };
            if entity.kind == Some(EntityKind::Character) {
                self.recalled_characters.push(sheet.character_line());
            } else {
                self.recalled_places.push(sheet.thing_line());
            }
        }
        for passage in &retrieved.passages {
            self.similar.push(format!(
                "{} => {}",
                one_line(&passage.source, SIMILAR_CHARS),
                one_line(&passage.translation, SIMILAR_CHARS)
            ));
        }
    }

    /// The text within `budget` estimated tokens.
    pub fn cut(mut self, budget: usize) -> BatchContext {
        loop {
            let text = self.render();
            let tokens = estimate_tokens(&text);
            if tokens <= budget {
                return BatchContext { text, tokens };
            }
            if !self.drop_one() {
                return BatchContext::default();
            }
        }
    }
}

/// `text` on one line (its whitespace runs made one space), cut to at
/// most `max` characters with `…` where cut.
fn one_line(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", flat[..at].trim_end()),
        None => flat,
    }
}

/// A term's glossary line.
pub fn term_line(term: &term::Model) -> String {
    if term.locked {
        format!("{} => {} (locked)", term.source, term.translation)
    } else {
        format!("{} => {}", term.source, term.translation)
    }
}

/// What a character or thing shows, whichever memory it comes from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sheet {
    pub kind: Option<EntityKind>,
    pub name: String,
    pub target_name: Option<String>,
    pub aliases: Vec<String>,
    pub gender: Option<String>,
    pub address: Option<String>,
    pub mentions: i32,
}

fn present(text: &Option<String>) -> Option<&str> {
    text.as_deref().map(str::trim).filter(|t| !t.is_empty())
}

impl Sheet {
    fn head(&self) -> String {
        match present(&self.target_name) {
            Some(target) => format!("{} => {target}", self.name),
            None => self.name.clone(),
        }
    }

    pub fn character_line(&self) -> String {
        let mut parts = vec![self.head()];
        if !self.aliases.is_empty() {
            parts.push(format!("aliases: {}", self.aliases.join(", ")));
        }
        if let Some(gender) = present(&self.gender) {
            parts.push(gender.to_owned());
        }
        if let Some(address) = present(&self.address) {
            parts.push(format!("address: {address}"));
        }
        parts.join("; ")
    }

    pub fn thing_line(&self) -> String {
        self.head()
    }
}

/// A book entity's sheet, completed by its series identity when linked.
fn book_sheet(entity: &narrative_entity::Model, identity: Option<&series_entity::Model>) -> Sheet {
    let mut sheet = sheet(entity, entity.mentions);
    if let Some(identity) = identity {
        let series_aliases = identity.aliases();
        union_aliases(
            &entity.name_key,
            &mut sheet.aliases,
            std::iter::once(&identity.name).chain(&series_aliases),
        );
        if present(&identity.target_name).is_some() {
            sheet.target_name = identity.target_name.clone();
        }
        crate::entities::fill(&mut sheet.gender, identity.gender.as_deref());
        crate::entities::fill(&mut sheet.address, identity.address.as_deref());
    }
    sheet
}

/// The sheet of a named thing as it describes itself.
fn sheet(thing: &impl NamedThing, mentions: i32) -> Sheet {
    Sheet {
        kind: Some(thing.kind()),
        name: thing.name().to_owned(),
        target_name: thing.target_name().map(str::to_owned),
        aliases: thing.aliases(),
        gender: thing.gender().map(str::to_owned),
        address: thing.address().map(str::to_owned),
        mentions,
    }
}

/// The style lines: the volume's, and the series' for aspects the volume
/// has none of; a person's first, then by aspect.
pub fn style_lines(volume: &[bible_line::Model], series: &[bible_line::Model]) -> Vec<String> {
    let mut lines: Vec<&bible_line::Model> = volume.iter().collect();
    let covered: HashSet<BibleAspect> = volume.iter().map(|l| l.aspect).collect();
    lines.extend(series.iter().filter(|l| !covered.contains(&l.aspect)));
    lines.sort_by_key(|l| {
        (
            l.origin != Origin::Human,
            BibleAspect::ALL.iter().position(|a| *a == l.aspect),
            l.created_at,
            l.id.clone(),
        )
    });
    lines
        .into_iter()
        .filter(|l| !l.text.trim().is_empty())
        .map(|l| format!("{}: {}", l.aspect, l.text.trim()))
        .collect()
}

/// What the contexts of a volume's batches are made of, loaded once for
/// all of them: the memory does not change while a volume is translated.
pub struct Snapshot {
    in_force: Vec<term::Model>,
    /// Every sheet, with the names it is found by in its text's form.
    sheets: Vec<(Sheet, Vec<String>)>,
    style: Vec<String>,
}

impl Snapshot {
    pub async fn load(
        db: &impl ConnectionTrait,
        volume: &project::Model,
        series: &series::Model,
    ) -> MemoryResult<Snapshot> {
        let in_force = glossary::load_in_force(db, volume, series).await?;
        let entities = narrative_entity::Entity::find()
            .filter(narrative_entity::Column::ProjectId.eq(volume.id.as_str()))
            .all(db)
            .await?;
        let identities = series_entity::Entity::find()
            .filter(series_entity::Column::SeriesId.eq(series.id.as_str()))
            .all(db)
            .await?;
        let linked: HashSet<&str> = entities
            .iter()
            .filter_map(|e| e.series_entity_id.as_deref())
            .collect();
        let mut sheets: Vec<Sheet> = entities
            .iter()
            .map(|e| {
                let identity = e
                    .series_entity_id
                    .as_deref()
                    .and_then(|id| identities.iter().find(|s| s.id == id));
                book_sheet(e, identity)
            })
            .chain(
                identities
                    .iter()
                    .filter(|s| !linked.contains(s.id.as_str()))
                    .map(|identity| sheet(identity, 0)),
            )
            .collect();
        sheets.sort_by(|a, b| {
            (b.mentions, match_key(&a.name), &a.name).cmp(&(
                a.mentions,
                match_key(&b.name),
                &b.name,
            ))
        });
        let sheets = sheets
            .into_iter()
            .map(|sheet| {
                let names = std::iter::once(&sheet.name)
                    .chain(&sheet.aliases)
                    .map(|n| normalize_text(n))
                    .collect();
                (sheet, names)
            })
            .collect();
        let volume_lines = bible_line::Entity::find()
            .filter(bible_line::Column::ProjectId.eq(volume.id.as_str()))
            .all(db)
            .await?;
        let series_lines = bible_line::Entity::find()
            .filter(bible_line::Column::SeriesId.eq(series.id.as_str()))
            .all(db)
            .await?;
        Ok(Snapshot {
            in_force,
            sheets,
            style: style_lines(&volume_lines, &series_lines),
        })
    }

    /// The glossary in force and the canonical renderings of the
    /// characters, which the quality checks and the review hold every
    /// translation of the volume to.
    pub fn quality_sheet(&self) -> QualitySheet {
        let mut terms: Vec<(String, String, bool)> = self
            .in_force
            .iter()
            .filter(|t| !t.translation.trim().is_empty())
            .map(|t| (t.source.clone(), t.translation.clone(), t.locked))
            .collect();
        terms.sort();
        let names = self
            .sheets
            .iter()
            .map(|(sheet, _)| sheet)
            .filter(|sheet| sheet.kind == Some(EntityKind::Character))
            .filter_map(|sheet| {
                let rendering = present(&sheet.target_name)?;
                Some(SheetName {
                    name: sheet.name.clone(),
                    aliases: sheet.aliases.clone(),
                    rendering: rendering.to_owned(),
                })
            })
            .collect();
        QualitySheet { terms, names }
    }

    /// The contexts of `batches` (each a list of the volume's passage ids
    /// in reading order), each within `budget` tokens. The volume's
    /// passages and the summaries the batches recall are read once for all
    /// of them.
    pub async fn build_all(
        &self,
        db: &impl ConnectionTrait,
        volume: &project::Model,
        batches: &[Vec<String>],
        budget: usize,
    ) -> MemoryResult<Vec<BatchContext>> {
        Ok(self
            .parts_all(db, volume, batches)
            .await?
            .into_iter()
            .map(|parts| cut_to(parts, budget))
            .collect())
    }

    /// The lines of the contexts of `batches`, before any cut; `None` for
    /// a batch with none of the volume's passages (its context is empty
    /// whatever is retrieved).
    pub async fn parts_all(
        &self,
        db: &impl ConnectionTrait,
        volume: &project::Model,
        batches: &[Vec<String>],
    ) -> MemoryResult<Vec<Option<ContextParts>>> {
        let reading = Reading::load(db, volume).await?;
        let firsts: Vec<Option<usize>> = batches
            .iter()
            .map(|ids| {
                ids.iter()
                    .filter_map(|id| reading.at.get(id).copied())
                    .min()
            })
            .collect();
        let recalled: Vec<String> = firsts
            .iter()
            .flatten()
            .flat_map(|&first| reading.before(first))
            .map(|p| p.id.clone())
            .collect::<HashSet<String>>()
            .into_iter()
            .collect();
        let rows = store::analyses_of_passages(db, &recalled).await?;
        let summaries: HashMap<&str, String> = rows
            .iter()
            .map(|(id, row)| {
                (
                    id.as_str(),
                    store::extraction_of(row).summary.trim().to_owned(),
                )
            })
            .filter(|(_, summary)| !summary.is_empty())
            .collect();
        Ok(batches
            .iter()
            .zip(firsts)
            .map(|(ids, first)| self.parts(&reading, ids, first, &summaries))
            .collect())
    }

    /// The lines of the context of the passages `passage_ids`, whose first
    /// in reading order is at `first`.
    fn parts(
        &self,
        reading: &Reading,
        passage_ids: &[String],
        first: Option<usize>,
        summaries: &HashMap<&str, String>,
    ) -> Option<ContextParts> {
        let batch: Vec<&passage::Model> = passage_ids
            .iter()
            .filter_map(|id| reading.at.get(id).map(|&i| &reading.passages[i]))
            .collect();
        let first = first?;
        if batch.is_empty() {
            return None;
        }
        // The batch searched as one text, each name or term in its form.
        let folded = Haystack::of_all(batch.iter().map(|p| p.source.as_str()), false);
        let exact = Haystack::of_all(batch.iter().map(|p| p.source.as_str()), true);

        let mut parts = ContextParts::default();
        let mut used: Vec<&term::Model> = glossary::occurring(&self.in_force, &folded);
        used.sort_by(|a, b| (!a.locked, &a.source).cmp(&(!b.locked, &b.source)));
        for term in used {
            let line = term_line(term);
            if term.locked {
                parts.locked_terms.push(line);
            } else {
                parts.terms.push(line);
            }
        }
        for (sheet, names) in &self.sheets {
            if !names.iter().any(|n| exact.contains_normalized(n)) {
                continue;
            }
            if sheet.kind == Some(EntityKind::Character) {
                parts.characters.push(sheet.character_line());
            } else {
                parts.places.push(sheet.thing_line());
            }
            parts.shown_names.extend(
                std::iter::once(&sheet.name)
                    .chain(&sheet.aliases)
                    .map(|n| match_key(n)),
            );
        }
        parts.style = self.style.clone();
        let before: Vec<&str> = reading
            .before(first)
            .iter()
            .filter_map(|p| summaries.get(p.id.as_str()).map(String::as_str))
            .collect();
        parts.before = (!before.is_empty()).then(|| before.join(" "));
        Some(parts)
    }
}

/// A batch's context within `budget` (empty without lines or budget).
pub fn cut_to(parts: Option<ContextParts>, budget: usize) -> BatchContext {
    match parts {
        Some(parts) if budget > 0 => parts.cut(budget),
        _ => BatchContext::default(),
    }
}

/// The volume's passages in reading order (chapter position, then passage
/// position, ids breaking ties), with where each one is.
struct Reading {
    passages: Vec<passage::Model>,
    at: HashMap<String, usize>,
}

impl Reading {
    /// Passages before a batch whose summaries its context recalls.
    const RECALLED: usize = 2;

    async fn load(db: &impl ConnectionTrait, volume: &project::Model) -> MemoryResult<Reading> {
        let chapters = chapter::Entity::find()
            .filter(chapter::Column::ProjectId.eq(volume.id.as_str()))
            .all(db)
            .await?;
        let rank: HashMap<&str, (i32, &str)> = chapters
            .iter()
            .map(|c| (c.id.as_str(), (c.position, c.id.as_str())))
            .collect();
        let mut passages = passage::Entity::find()
            .filter(passage::Column::ProjectId.eq(volume.id.as_str()))
            .all(db)
            .await?;
        // A passage of no listed chapter cannot be placed: it is left out.
        passages.retain(|p| rank.contains_key(p.chapter_id.as_str()));
        passages.sort_by(|a, b| {
            (rank.get(a.chapter_id.as_str()), a.position, &a.id).cmp(&(
                rank.get(b.chapter_id.as_str()),
                b.position,
                &b.id,
            ))
        });
        let at = passages
            .iter()
            .enumerate()
            .map(|(i, p)| (p.id.clone(), i))
            .collect();
        Ok(Reading { passages, at })
    }

    /// The (up to) two passages right before the one at `first`.
    fn before(&self, first: usize) -> &[passage::Model] {
        &self.passages[first.saturating_sub(Self::RECALLED)..first]
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod build_tests;
