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
mod tests {
    use super::*;

    fn parts() -> ContextParts {
        ContextParts {
            locked_terms: vec!["Dark Lord => Seigneur des Ténèbres (locked)".into()],
            terms: vec!["mana => mana".into()],
            characters: vec!["Rin => Rine; aliases: Lady R; female; address: vous".into()],
            places: vec!["Castle => Château".into()],
            style: vec!["register: literary".into()],
            before: Some("Rin arrived. She slept.".into()),
            ..ContextParts::default()
        }
    }

    #[test]
    fn the_format_is_stable() {
        assert_eq!(
            parts().render(),
            "Glossary:\n\
             - Dark Lord => Seigneur des Ténèbres (locked)\n\
             - mana => mana\n\
             Characters:\n\
             - Rin => Rine; aliases: Lady R; female; address: vous\n\
             Places and things:\n\
             - Castle => Château\n\
             Style:\n\
             - register: literary\n\
             Before: Rin arrived. She slept."
        );
        assert_eq!(ContextParts::default().render(), "");
    }

    #[test]
    fn character_lines_leave_out_empty_parts() {
        let sheet = Sheet {
            kind: Some(EntityKind::Character),
            name: "Rin".into(),
            ..Sheet::default()
        };
        assert_eq!(sheet.character_line(), "Rin");
        let sheet = Sheet {
            target_name: Some("Rine".into()),
            address: Some("tu".into()),
            ..sheet
        };
        assert_eq!(sheet.character_line(), "Rin => Rine; address: tu");
    }

    #[test]
    fn the_cut_keeps_the_budget_and_drops_by_priority() {
        let full = parts().cut(10_000);
        assert_eq!(full.text, parts().render());
        assert_eq!(full.tokens, estimate_tokens(&full.text));

        let mut budgets: Vec<usize> = (0..=full.tokens).collect();
        budgets.reverse();
        let mut last_lines = usize::MAX;
        for budget in budgets {
            let cut = parts().cut(budget);
            assert!(cut.tokens <= budget, "budget {budget}");
            assert_eq!(cut.tokens, estimate_tokens(&cut.text));
            // Only whole lines of the full text remain.
            for line in cut.text.lines() {
                assert!(full.text.lines().any(|l| l == line), "{line}");
            }
            let lines = cut.text.lines().count();
            assert!(lines <= last_lines);
            last_lines = lines;
        }

        // Just under the full size: the summaries go first.
        let cut = parts().cut(full.tokens - 1);
        assert!(!cut.text.contains("Before:"));
        assert!(cut.text.contains("Castle"));

        // With room for the locked term alone, that is what remains.
        let locked = "Glossary:\n- Dark Lord => Seigneur des Ténèbres (locked)";
        let cut = parts().cut(estimate_tokens(locked));
        assert_eq!(cut.text, locked);

        // Characters outlast unlocked terms, style and places.
        let keep = "Glossary:\n- Dark Lord => Seigneur des Ténèbres (locked)\n\
                    Characters:\n- Rin => Rine; aliases: Lady R; female; address: vous";
        let cut = parts().cut(estimate_tokens(keep));
        assert_eq!(cut.text, keep);

        assert_eq!(parts().cut(0), BatchContext::default());
    }

    fn retrieved() -> Retrieved {
        use crate::external::retrieval::{EntityHit, SimilarPassage};
        let entity = |name: &str, aliases: &[&str], target: Option<&str>, kind| EntityHit {
            name: name.into(),
            target_name: target.map(str::to_owned),
            aliases: aliases.iter().map(|a| (*a).to_owned()).collect(),
            description: String::new(),
            distance: 0.1,
            kind: Some(kind),
        };
        Retrieved {
            passages: vec![SimilarPassage {
                source: "Rin slept\nat the Castle.".into(),
                translation: "Rine dormait au Château.".into(),
                validated: true,
                distance: 0.1,
            }],
            entities: vec![
                // Shown by the database already (by its alias): left out.
                entity("Rinna", &["Lady R"], Some("Rinna"), EntityKind::Character),
                entity("Sora", &["Captain"], Some("Sora"), EntityKind::Character),
                entity("Tower", &[], Some("Tour"), EntityKind::Place),
            ],
        }
    }

    #[test]
    fn retrieved_lines_follow_the_databases_and_go_first() {
        let mut parts = parts();
        parts.shown_names = vec![match_key("Rin"), match_key("Lady R"), match_key("Castle")];
        let database = parts.clone().cut(10_000).text;
        parts.add_retrieved(&retrieved());
        let full = parts.clone().cut(10_000);
        assert_eq!(
            full.text,
            "Glossary:\n\
             - Dark Lord => Seigneur des Ténèbres (locked)\n\
             - mana => mana\n\
             Characters:\n\
             - Rin => Rine; aliases: Lady R; female; address: vous\n\
             - Sora => Sora; aliases: Captain\n\
             Places and things:\n\
             - Castle => Château\n\
             - Tower => Tour\n\
             Style:\n\
             - register: literary\n\
             Similar passages:\n\
             - Rin slept at the Castle. => Rine dormait au Château.\n\
             Before: Rin arrived. She slept."
        );
        // With room for the database's context alone, that is what stays:
        // retrieval only takes the room left.
        let cut = parts.clone().cut(estimate_tokens(&database));
        assert_eq!(cut.text, database);
        // A little more room: the retrieved entities come before the
        // similar passage.
        let without_similar = full.text.replace(
            "Similar passages:\n- Rin slept at the Castle. => Rine dormait au Château.\n",
            "",
        );
        let cut = parts.cut(estimate_tokens(&without_similar));
        assert_eq!(cut.text, without_similar);
    }

    #[test]
    fn long_passages_are_shown_on_one_line_and_cut() {
        assert_eq!(one_line("a\n  b\tc ", 10), "a b c");
        let long = "word ".repeat(100);
        let shown = one_line(&long, SIMILAR_CHARS);
        assert_eq!(shown.chars().count(), SIMILAR_CHARS);
        assert!(shown.ends_with("word…"), "{shown}");
    }

    #[test]
    fn style_falls_back_to_the_series_per_aspect_people_first() {
        let line = |aspect, origin, text: &str, project: bool| bible_line::Model {
            id: text.into(),
            project_id: project.then(|| "v".into()),
            series_id: (!project).then(|| "s".into()),
            aspect,
            text: text.into(),
            origin,
            passage_id: None,
            evidence: None,
            created_at: 0,
        };
        let volume = vec![
            line(BibleAspect::Tense, Origin::Analysis, "past", true),
            line(BibleAspect::Tone, Origin::Human, "dry", true),
        ];
        let series = vec![
            line(BibleAspect::Tense, Origin::Human, "present", false),
            line(BibleAspect::Register, Origin::Analysis, "literary", false),
        ];
        assert_eq!(
            style_lines(&volume, &series),
            vec!["tone: dry", "register: literary", "tense: past"]
        );
    }
}

#[cfg(test)]
mod build_tests {
    use crate::backend::{InternalBackend, MemoryBackend, MemorySettings};
    use crate::domain::{Extraction, TermInput};
    use crate::testing::{Fixture, analysis, character, entity, found, note, proposal};
    use dragoman_model::entities::passage;
    use dragoman_model::tokens::estimate_tokens;
    use dragoman_model::vocab::{BibleAspect, EntityKind, Quality, TermLayer};

    const TEXTS: [&str; 4] = [
        "Alice (Ally) arrived at the Castle.",
        "Ally met Bob near the Tower.",
        "The Dark Lord waited; an ally came.",
        "Nobody came.",
    ];

    async fn story(fx: &Fixture) -> (String, Vec<passage::Model>) {
        let series = fx.series("Saga").await;
        let volume = fx.volume(&series, 1).await;
        let (_, passages) = fx.chapter(&volume, 1, &TEXTS).await;
        let mut alice = character("Alice", &["Ally"], Some("Alicia"));
        alice.gender = Some("female".into());
        alice.address = Some("vous".into());
        let analyses = vec![
            analysis(
                &passages[0],
                Extraction {
                    style: vec![note(BibleAspect::Tense, "past")],
                    ..found(
                        vec![
                            alice,
                            entity(EntityKind::Place, "Castle", &[], Some("Château")),
                        ],
                        vec![proposal("Castle", "château")],
                        "Alice arrives.",
                    )
                },
            ),
            analysis(
                &passages[1],
                found(
                    vec![
                        character("Bob", &[], None),
                        entity(EntityKind::Place, "Tower", &[], Some("Tour")),
                    ],
                    vec![],
                    "Ally meets Bob.",
                ),
            ),
            analysis(&passages[2], found(vec![], vec![], "A lord waits.")),
            analysis(&passages[3], found(vec![], vec![], "")),
        ];
        fx.backend
            .record_analysis(&volume.id, &analyses, true, Quality::Normal)
            .await
            .expect("record");
        for (source, translation, locked) in [
            ("Dark Lord", "Seigneur des Ténèbres", true),
            ("Tower", "Tour", false),
            ("harbour", "port", true),
        ] {
            fx.backend
                .put_term(
                    None,
                    &TermInput {
                        layer: TermLayer::Series,
                        owner_id: series.id.clone(),
                        source: source.into(),
                        translation: translation.into(),
                        category: String::new(),
                        description: String::new(),
                        locked,
                        accepted: true,
                    },
                )
                .await
                .expect("term");
        }
        (volume.id, passages)
    }

    fn ids(passages: &[passage::Model]) -> Vec<String> {
        passages.iter().map(|p| p.id.clone()).collect()
    }

    #[tokio::test]
    async fn a_context_holds_what_occurs_in_the_batch() {
        let fx = Fixture::with_settings(MemorySettings {
            context_tokens: 10_000,
        })
        .await;
        let (volume, passages) = story(&fx).await;
        let context = fx
            .backend
            .build_context(&volume, &ids(&passages[1..3]))
            .await
            .expect("context");
        assert_eq!(
            context.text,
            "Glossary:\n\
             - Dark Lord => Seigneur des Ténèbres (locked)\n\
             - Tower => Tour\n\
             Characters:\n\
             - Alice => Alicia; aliases: Ally; female; address: vous\n\
             - Bob\n\
             Places and things:\n\
             - Tower => Tour\n\
             Style:\n\
             - tense: past\n\
             Before: Alice arrives."
        );
        assert_eq!(context.tokens, estimate_tokens(&context.text));

        // "an ally" is not Ally: names match with their case.
        let context = fx
            .backend
            .build_context(&volume, &ids(&passages[2..3]))
            .await
            .expect("context");
        assert!(!context.text.contains("Characters:"), "{}", context.text);
        assert!(
            context
                .text
                .ends_with("Before: Alice arrives. Ally meets Bob.")
        );

        // Nothing applies: only the style and what came before.
        let context = fx
            .backend
            .build_context(&volume, &ids(&passages[3..]))
            .await
            .expect("context");
        assert_eq!(
            context.text,
            "Style:\n- tense: past\nBefore: Ally meets Bob. A lord waits."
        );
    }

    #[tokio::test]
    async fn the_quality_sheet_holds_the_terms_in_force_and_the_rendered_characters() {
        let fx = Fixture::new().await;
        let (volume, _) = story(&fx).await;
        let sheet = fx.backend.quality_sheet(&volume).await.expect("sheet");
        let terms: Vec<(&str, &str, bool)> = sheet
            .terms
            .iter()
            .map(|(s, t, l)| (s.as_str(), t.as_str(), *l))
            .collect();
        assert!(
            terms.contains(&("Dark Lord", "Seigneur des Ténèbres", true)),
            "{terms:?}"
        );
        assert!(terms.contains(&("harbour", "port", true)), "{terms:?}");
        assert!(terms.contains(&("Tower", "Tour", false)), "{terms:?}");
        let mut sorted = terms.clone();
        sorted.sort();
        assert_eq!(terms, sorted);
        // Alice has a rendering; Bob has none, and places are not names.
        assert_eq!(
            sheet.names,
            vec![crate::domain::SheetName {
                name: "Alice".into(),
                aliases: vec!["Ally".into()],
                rendering: "Alicia".into(),
            }]
        );
    }

    #[tokio::test]
    async fn before_reaches_back_into_the_previous_chapter() {
        let fx = Fixture::new().await;
        let volume = fx.volume(&fx.series("Saga").await, 1).await;
        // Inserted out of reading order: positions decide.
        let (_, second) = fx.chapter(&volume, 2, &["Dawn came.", "Noon came."]).await;
        let (_, first) = fx.chapter(&volume, 1, &["One.", "Two.", "Three."]).await;
        let analyses: Vec<_> = first
            .iter()
            .chain(&second)
            .zip(["S1.", "S2.", "S3.", "S4.", "S5."])
            .map(|(p, summary)| analysis(p, found(vec![], vec![], summary)))
            .collect();
        fx.backend
            .record_analysis(&volume.id, &analyses, true, Quality::Normal)
            .await
            .expect("record");
        let context = fx
            .backend
            .build_context(&volume.id, &ids(&second))
            .await
            .expect("context");
        assert_eq!(context.text, "Before: S2. S3.");
        let context = fx
            .backend
            .build_context(&volume.id, &ids(&second[1..]))
            .await
            .expect("context");
        assert_eq!(context.text, "Before: S3. S4.");
        let context = fx
            .backend
            .build_context(&volume.id, &ids(&first[..1]))
            .await
            .expect("context");
        assert_eq!(context.text, "");
    }

    #[tokio::test]
    async fn a_context_is_cut_to_its_budget_keeping_locked_terms_last() {
        let fx = Fixture::new().await;
        let (volume, passages) = story(&fx).await;
        let locked = "Glossary:\n- Dark Lord => Seigneur des Ténèbres (locked)";
        let small = InternalBackend::new(
            fx.db.clone(),
            MemorySettings {
                context_tokens: estimate_tokens(locked) + 5,
            },
        );
        let context = small
            .build_context(&volume, &ids(&passages[1..3]))
            .await
            .expect("context");
        assert_eq!(context.text, locked);
        assert!(context.tokens <= estimate_tokens(locked) + 5);

        let none = InternalBackend::new(fx.db.clone(), MemorySettings { context_tokens: 3 });
        let context = none
            .build_context(&volume, &ids(&passages[1..3]))
            .await
            .expect("context");
        assert_eq!((context.text.as_str(), context.tokens), ("", 0));
    }
}
