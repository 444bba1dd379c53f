//! The external semantic memory against a real Chroma (docs/benchmarks.md,
//! "External memory"): how far the mirror lags behind a book being
//! translated, how long retrieval takes per batch, and how many context
//! tokens it adds to the database's context.
//!
//! `TEST_DATABASE_URL` selects the database: a `postgres://` URL runs in a
//! fresh database on that server (created, migrated, then dropped);
//! `sqlite:` runs in a fresh SQLite file under the system's temporary
//! directory (deleted after). Chroma is started by the test harness
//! (`dragoman_testing::Chroma`: `DRAGOMAN_TEST_CHROMA`, the path of a `chroma`
//! executable from PyPI `chromadb`), the embeddings come from the
//! in-process provider simulator's `/v1/embeddings`:
//!
//! ```sh
//! TEST_DATABASE_URL=sqlite: DRAGOMAN_TEST_CHROMA=/work/chroma-venv/bin/chroma \
//!   cargo bench -p dragoman-memory --bench external_memory
//! ```
//!
//! The book: volume 1 of a series, 30 chapters, 3,000 passages of about 36
//! words (108,608 words), generated deterministically from a cast of
//! twelve characters with aliases, eight places and eight invented ALL-CAPS
//! terms, one passage in ten a variation of a recurring scene. It is
//! analysed (every passage's entities, terms, style notes and summary
//! recorded through the memory backend, then merged) and given eight
//! people's term decisions before the clock starts, as the analysis stage
//! and a translator would.
//!
//! 1. Sync lag: with the sync loop of the memory role running
//!    (`ExternalMemory::run_sync`, which polls the outbox every second), the
//!    3,000 translations are stored 20 passages per transaction (updating
//!    `passages.translation`, `status`, `attempts` as the pipeline's worker
//!    does, so that the outbox triggers fire), one transaction every 200 ms
//!    (100 passages, about 3,600 words, a second: faster than the translation
//!    stage of `bench/memory.sh`, about 2,800 words a second), with a
//!    person's entity correction every 10 transactions and a term decision
//!    every 15 (book layer; series layer every third one). Reported per
//!    outbox row: the time from its transaction's last statement to the
//!    moment the row reads as synced (a poller reads the outbox every
//!    20 ms, so figures are within 20 ms), p50/p95/p99/max; the time to drain
//!    after the last write; items mirrored; embeddings calls; and the
//!    floor: the embeddings calls × the simulator's latency; then what one
//!    pass over the whole volume costs when nothing changed (every pass
//!    reads and hashes the volume's items).
//! 2. Retrieval per batch: the volume is closed into its series memory,
//!    volume 2 (1,200 passages of the same cast, analysed, untranslated) is
//!    added and mirrored; 300 batches of 8 to 20 consecutive passages of
//!    volume 2 (random starts, fixed seed) are timed: `ExternalMemory::retrieve`
//!    (with the simulator's latency, and again through a second simulator
//!    without latency: Chroma's and the database's own part), the database's
//!    context build (`internal`), and the whole `hybrid` build (both built
//!    at once, as the service does, within its 800 ms deadline).
//! 3. Context tokens: the mean tokens of the `internal` and the `hybrid`
//!    contexts of the same batches (budget 400, the installation default),
//!    and the share of the `hybrid` context that retrieval added; for
//!    volume 2's batches and for the same positions of volume 1 itself (a
//!    volume seeing its own translated passages: a retranslation or the end
//!    of a run).
//!
//! The simulator answers embeddings after `EXTERNAL_MEMORY_LATENCY_MS`
//! (100 by default; an embeddings API answers a small request in about that
//! time), with `EXTERNAL_MEMORY_DIMENSIONS`-long vectors (1,536 by default,
//! the length of `text-embedding-3-small`'s). `EXTERNAL_MEMORY_PASSAGES`
//! (3,000) and `EXTERNAL_MEMORY_BATCHES` (300) shrink a trial run;
//! `EXTERNAL_MEMORY_SHOW=1` prints the two contexts of the first batch.
//!
//! Not measured here: the name consistency of the narrative-memory issue.
//! That issue reported no name-consistency figure (docs/benchmarks.md has
//! none, nor does any bench or test compute one), so there is nothing to
//! compare with, and a translation run would be needed to make one.

use dragoman_memory::backend::Contexts;
use dragoman_memory::context::SIMILAR_CHARS;
use dragoman_memory::domain::{
    ExtractedEntity, ExtractedTerm, Extraction, PassageExtraction, StyleNote, TermInput,
};
use dragoman_memory::external::embeddings::EmbeddingModel;
use dragoman_memory::external::{
    EmbeddingSettings, ExternalMemory, ExternalSettings, MirrorScope, chroma,
};
use dragoman_memory::{InternalBackend, MemoryBackend, MemorySettings};
use dragoman_migrations::{Migrator, MigratorTrait};
use dragoman_model::entities::{
    account, chapter, memory_mirror, memory_outbox, narrative_entity, passage, project, series,
};
use dragoman_model::tokens::estimate_tokens;
use dragoman_model::vocab::{
    BibleAspect, ContextBackend, EntityKind, InputKind, PassageStatus, Quality, SeriesKind,
    TermLayer,
};
use dragoman_model::{clock, ids};
use dragoman_simulator::{RunningSimulator, SimulatorConfig};
use dragoman_testing::TestDatabase;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, DatabaseConnection, EntityTrait, IntoActiveModel,
    PaginatorTrait, QueryFilter, QueryOrder, QuerySelect, Set,
};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// Passages of a chapter.
const CHAPTER_PASSAGES: usize = 100;
/// Passages stored per transaction.
const WRITE_BATCH: usize = 20;
/// One transaction every this long.
const PACE: Duration = Duration::from_millis(200);
/// How often the poller reads which outbox rows are synced.
const POLL: Duration = Duration::from_millis(20);
/// Passages of volume 2.
const VOLUME_2_PASSAGES: usize = 1200;
/// The installation's default context budget.
const BUDGET: usize = 400;
/// Longest wait for the outbox to drain.
const DRAIN_LIMIT: Duration = Duration::from_secs(180);
const MODEL: &str = "text-embedding-3-small";

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

fn main() {
    let Some(url) = dragoman_testing::env::test_database_url() else {
        eprintln!(
            "TEST_DATABASE_URL is not set: the external memory benchmark needs a postgres:// \
             URL or sqlite:"
        );
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(run(&url));
}

// ---------------------------------------------------------------- text

/// A small deterministic generator (SplitMix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a>(&mut self, items: &'a [&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

/// A character: name, aliases, target name, description.
struct Person {
    name: &'static str,
    aliases: &'static [&'static str],
    target: &'static str,
    description: &'static str,
}

const CAST: [Person; 12] = [
    Person {
        name: "Maren Holt",
        aliases: &["Maren", "the Warden"],
        target: "Marène Holt",
        description: "warden of the harbour lights",
    },
    Person {
        name: "Tobias Crane",
        aliases: &["Tobias", "Toby"],
        target: "Tobie Crane",
        description: "a ferryman who owes money",
    },
    Person {
        name: "Ilse Varga",
        aliases: &["Ilse"],
        target: "Ilse Varga",
        description: "a glassmaker from the north",
    },
    Person {
        name: "Captain Oduya",
        aliases: &["Oduya", "the Captain"],
        target: "capitaine Oduya",
        description: "master of the salt barges",
    },
    Person {
        name: "Petra Lind",
        aliases: &["Petra"],
        target: "Pétra Lind",
        description: "the innkeeper's daughter",
    },
    Person {
        name: "Brother Anselm",
        aliases: &["Anselm"],
        target: "frère Anselme",
        description: "an archivist monk",
    },
    Person {
        name: "Jonah Reeve",
        aliases: &["Jonah"],
        target: "Jonas Reeve",
        description: "a surveyor of the marsh",
    },
    Person {
        name: "Old Wendel",
        aliases: &["Wendel"],
        target: "le vieux Wendel",
        description: "a bell-ringer",
    },
    Person {
        name: "Sabine Roux",
        aliases: &["Sabine"],
        target: "Sabine Roux",
        description: "a smuggler",
    },
    Person {
        name: "Kasimir Dorn",
        aliases: &["Kasimir", "Kas"],
        target: "Casimir Dorn",
        description: "a clerk of the Regent",
    },
    Person {
        name: "Nell Ashby",
        aliases: &["Nell"],
        target: "Nell Ashby",
        description: "a child who hears the tide",
    },
    Person {
        name: "Hadrian Vale",
        aliases: &["Hadrian", "the Regent"],
        target: "Hadrien Vale",
        description: "the Regent of Saltmarsh",
    },
];

const PLACES: [(&str, &str); 8] = [
    ("Saltmarsh", "Marais-Salant"),
    ("Grey Harbour", "Port-Gris"),
    ("Harrowgate", "Herseporte"),
    ("Lantern Inn", "auberge de la Lanterne"),
    ("Fenwick Abbey", "abbaye de Fenwick"),
    ("Iron Bridge", "pont de Fer"),
    ("Cold Hollow", "Creux-Froid"),
    ("Queen's Road", "route de la Reine"),
];

const TERMS: [(&str, &str); 8] = [
    ("VESSELGLASS", "VERRENEF"),
    ("EMBERCOIN", "BRAISECU"),
    ("SKYWRIT", "CIELÉCRIT"),
    ("MOORBELL", "CLOCHELANDE"),
    ("TIDEWARD", "GARDEMARÉE"),
    ("GLIMMERSALT", "SELUEUR"),
    ("HOLLOWFIRE", "CREUXFEU"),
    ("STORMKEEP", "GARDORAGE"),
];

const NOUNS: &[&str] = &[
    "door", "lamp", "rope", "letter", "window", "boat", "coat", "ledger", "candle", "key", "bell",
    "river", "road", "table", "stair", "cup", "chain", "wall", "map", "coin", "net", "gull", "fog",
    "rain", "wind", "shadow", "voice", "hand", "face", "promise", "debt", "secret", "song",
    "crate", "barrel", "sail", "mast", "oar", "lantern", "fire", "ash", "salt", "glass", "stone",
    "bridge", "tower", "garden", "orchard", "well", "cart",
];
const ADJECTIVES: &[&str] = &[
    "old", "cold", "narrow", "bright", "broken", "quiet", "heavy", "thin", "wet", "grey",
    "patient", "bitter", "small", "hidden", "careful", "restless", "pale", "crooked", "warm",
    "distant", "sudden", "faint", "rough", "empty",
];
const VERBS: &[&str] = &[
    "watched",
    "carried",
    "opened",
    "closed",
    "mended",
    "counted",
    "followed",
    "answered",
    "remembered",
    "hid",
    "found",
    "lost",
    "crossed",
    "called",
    "waited for",
    "studied",
    "burned",
    "sold",
    "bought",
    "traded",
    "climbed",
    "weighed",
    "folded",
    "signed",
];
const ADVERBS: &[&str] = &[
    "slowly",
    "at last",
    "again",
    "without a word",
    "before dawn",
    "in silence",
    "twice",
    "by the window",
    "with care",
    "too late",
    "as always",
    "for a long while",
];

/// How a passage names a character: its name or one of its aliases.
fn mention(rng: &mut Rng, person: &Person) -> String {
    if person.aliases.is_empty() || rng.below(3) == 0 {
        person.name.to_owned()
    } else {
        person.aliases[rng.below(person.aliases.len())].to_owned()
    }
}

/// One generated passage with what its analysis finds.
struct Generated {
    text: String,
    people: Vec<(usize, String)>,
    places: Vec<usize>,
    terms: Vec<usize>,
}

impl Generated {
    /// A pseudo-translation: names and places in their target forms, the
    /// other words marked, about the source's length.
    fn translation(&self) -> String {
        let mut renderings: Vec<(&str, &str)> = self
            .people
            .iter()
            .map(|(index, said)| (said.as_str(), CAST[*index].target))
            .chain(self.places.iter().map(|&p| PLACES[p]))
            .chain(self.terms.iter().map(|&t| TERMS[t]))
            .collect();
        // Longest first, so that a name is not taken for its alias.
        renderings.sort_by_key(|(source, _)| std::cmp::Reverse(source.len()));
        // Names become markers first, so that the word rule below leaves
        // their renderings alone.
        let mut text = self.text.clone();
        for (k, (source, _)) in renderings.iter().enumerate() {
            text = text.replace(source, &format!("\u{1}{k}\u{1}"));
        }
        let mut text = text
            .split(' ')
            .map(|w| match w {
                "the" => "le".to_owned(),
                "and" => "et".to_owned(),
                "of" => "de".to_owned(),
                "a" => "un".to_owned(),
                "to" => "à".to_owned(),
                "in" => "dans".to_owned(),
                "was" => "était".to_owned(),
                w if w.len() > 3 && w.chars().all(|c| c.is_ascii_lowercase()) => format!("{w}e"),
                w => w.to_owned(),
            })
            .collect::<Vec<_>>()
            .join(" ");
        for (k, (_, target)) in renderings.iter().enumerate() {
            text = text.replace(&format!("\u{1}{k}\u{1}"), target);
        }
        text
    }

    fn summary(&self) -> String {
        let mut who: Vec<&str> = Vec::new();
        for (index, _) in &self.people {
            if !who.contains(&CAST[*index].name) {
                who.push(CAST[*index].name);
            }
        }
        let place = self.places.first().map_or("the town", |&p| PLACES[p].0);
        format!("{} at {place}.", who.join(" and "))
    }
}

/// The `index`-th passage of a volume generated with `seed`.
fn passage_text(seed: u64, index: usize) -> Generated {
    let mut rng = Rng(seed ^ (index as u64).wrapping_mul(0x2545_F491_4F6C_DD1D));
    // Two characters carry each chapter, three more appear in it, the
    // rest of the cast passes through now and then; each chapter has its
    // two places. (So that a batch's database context is about the size
    // measured on real text: `bench/memory.sh`, about 175 tokens.)
    let chapter = index / CHAPTER_PASSAGES;
    let cast: Vec<usize> = (0..5).map(|k| (chapter * 7 + k * 5) % CAST.len()).collect();
    let settings = [chapter % PLACES.len(), (chapter * 3 + 1) % PLACES.len()];
    let mut people = Vec::new();
    let mut places = Vec::new();
    let mut terms = Vec::new();
    let person = |rng: &mut Rng, people: &mut Vec<(usize, String)>| {
        let index = match rng.below(20) {
            0 => rng.below(CAST.len()),
            1..=7 => cast[2 + rng.below(3)],
            _ => cast[rng.below(2)],
        };
        let said = mention(rng, &CAST[index]);
        people.push((index, said.clone()));
        said
    };
    let place = |rng: &mut Rng, places: &mut Vec<usize>| {
        let index = if rng.below(5) == 0 {
            rng.below(PLACES.len())
        } else {
            settings[rng.below(2)]
        };
        places.push(index);
        index
    };
    let mut sentences = Vec::new();
    if rng.below(10) == 0 {
        // The recurring scene: near repeats across the whole book.
        let a = person(&mut rng, &mut people);
        let p = place(&mut rng, &mut places);
        sentences.push(format!(
            "The bell of {} rang {} times, and {a} counted each stroke as if it were a debt \
             owed to the tide, then turned back toward the {} {}.",
            PLACES[p].0,
            ["three", "five", "seven", "nine"][rng.below(4)],
            rng.pick(ADJECTIVES),
            rng.pick(NOUNS)
        ));
    }
    while sentences
        .iter()
        .map(|s: &String| s.split(' ').count())
        .sum::<usize>()
        < 30
    {
        // Weighted: more sentences without a name than with two.
        let form = [0, 0, 1, 2, 3, 3, 3, 4, 5, 5][rng.below(10)];
        let sentence = match form {
            0 => {
                let a = person(&mut rng, &mut people);
                format!(
                    "{a} {} the {} {} {}.",
                    rng.pick(VERBS),
                    rng.pick(ADJECTIVES),
                    rng.pick(NOUNS),
                    rng.pick(ADVERBS)
                )
            }
            1 => {
                let a = person(&mut rng, &mut people);
                let b = person(&mut rng, &mut people);
                let p = place(&mut rng, &mut places);
                format!(
                    "At {} {a} told {b} that the {} had been {} since the {} {}.",
                    PLACES[p].0,
                    rng.pick(NOUNS),
                    rng.pick(VERBS),
                    rng.pick(ADJECTIVES),
                    rng.pick(NOUNS)
                )
            }
            2 => {
                let t = rng.below(TERMS.len());
                terms.push(t);
                let a = person(&mut rng, &mut people);
                format!(
                    "Nobody in the {} {} trusted {} any more, but {a} kept a little of it \
                     in a {} {}.",
                    rng.pick(ADJECTIVES),
                    rng.pick(NOUNS),
                    TERMS[t].0,
                    rng.pick(ADJECTIVES),
                    rng.pick(NOUNS)
                )
            }
            3 => format!(
                "The {} {} and the {} {} were {} {}.",
                rng.pick(ADJECTIVES),
                rng.pick(NOUNS),
                rng.pick(ADJECTIVES),
                rng.pick(NOUNS),
                rng.pick(ADJECTIVES),
                rng.pick(ADVERBS)
            ),
            4 => {
                let p = place(&mut rng, &mut places);
                format!(
                    "Rain came over {} {}, and the {} {} of the {} {}.",
                    PLACES[p].0,
                    rng.pick(ADVERBS),
                    rng.pick(NOUNS),
                    rng.pick(VERBS),
                    rng.pick(ADJECTIVES),
                    rng.pick(NOUNS)
                )
            }
            _ => {
                let a = person(&mut rng, &mut people);
                format!(
                    "\"Leave the {} where it is,\" said {a}, and {} the {} {}.",
                    rng.pick(NOUNS),
                    rng.pick(VERBS),
                    rng.pick(NOUNS),
                    rng.pick(ADVERBS)
                )
            }
        };
        sentences.push(sentence);
    }
    places.sort_unstable();
    places.dedup();
    terms.sort_unstable();
    terms.dedup();
    Generated {
        text: sentences.join(" "),
        people,
        places,
        terms,
    }
}

/// What the analysis of a passage reports.
fn extraction(generated: &Generated, first_of_chapter: bool) -> Extraction {
    let mut entities: Vec<ExtractedEntity> = Vec::new();
    for (index, said) in &generated.people {
        let person = &CAST[*index];
        if entities.iter().any(|e| e.name == person.name) {
            continue;
        }
        entities.push(ExtractedEntity {
            kind: EntityKind::Character,
            name: person.name.to_owned(),
            aliases: person
                .aliases
                .iter()
                .filter(|a| **a == said.as_str())
                .map(|a| (*a).to_owned())
                .collect(),
            target_name: Some(person.target.to_owned()),
            gender: None,
            address: None,
            description: person.description.to_owned(),
            evidence: said.clone(),
        });
    }
    for &p in &generated.places {
        entities.push(ExtractedEntity {
            kind: EntityKind::Place,
            name: PLACES[p].0.to_owned(),
            aliases: Vec::new(),
            target_name: Some(PLACES[p].1.to_owned()),
            gender: None,
            address: None,
            description: String::new(),
            evidence: PLACES[p].0.to_owned(),
        });
    }
    let terms = generated
        .terms
        .iter()
        .map(|&t| ExtractedTerm {
            source: TERMS[t].0.to_owned(),
            translation: Some(TERMS[t].1.to_owned()),
            category: "thing".into(),
            evidence: TERMS[t].0.to_owned(),
        })
        .collect();
    let style = if first_of_chapter {
        vec![
            StyleNote {
                aspect: BibleAspect::Tone,
                text: "Brooding, with a dry humour.".into(),
                evidence: String::new(),
            },
            StyleNote {
                aspect: BibleAspect::Tense,
                text: "Past tense, third person.".into(),
                evidence: String::new(),
            },
        ]
    } else {
        Vec::new()
    };
    Extraction {
        entities,
        terms,
        style,
        summary: generated.summary(),
        events: Vec::new(),
    }
}

// ---------------------------------------------------------------- world

/// Where the database lives, to drop it after.
enum Home {
    /// A throwaway PostgreSQL database, dropped with its handle.
    Postgres(TestDatabase),
    Sqlite(PathBuf),
}

/// A fresh database named after `url`'s server (PostgreSQL) or a fresh
/// file (SQLite).
async fn fresh_database(url: &str) -> (Home, DatabaseConnection) {
    let name = format!("dragoman_bench_{}", ids::new_id().replace('-', ""));
    if url.starts_with("sqlite:") {
        let path = std::env::temp_dir().join(format!("{name}.db"));
        let db = dragoman_model::db::connect(&format!("sqlite://{}", path.display()))
            .await
            .expect("bench database");
        return (Home::Sqlite(path), db);
    }
    let database = TestDatabase::create(url, "dragoman_bench").await;
    let db = dragoman_model::db::connect(database.url())
        .await
        .expect("bench database");
    (Home::Postgres(database), db)
}

async fn drop_database(home: Home, db: DatabaseConnection) {
    let _ = db.close().await;
    match home {
        Home::Postgres(database) => drop(database),
        Home::Sqlite(path) => {
            for suffix in ["", "-wal", "-shm"] {
                let mut file = path.clone().into_os_string();
                file.push(suffix);
                let _ = std::fs::remove_file(file);
            }
        }
    }
}

/// A volume with its passages (and what generated each).
struct Volume {
    model: project::Model,
    passages: Vec<passage::Model>,
    generated: Vec<Generated>,
}

impl Volume {
    /// Volume `number` of `series` with `count` generated passages,
    /// analysed and merged as the analysis stage does.
    async fn create(
        db: &DatabaseConnection,
        backend: &InternalBackend,
        series: &series::Model,
        number: i32,
        count: usize,
    ) -> Volume {
        let now = clock::now();
        let model = project::ActiveModel::new_volume(
            series,
            format!("Volume {number}"),
            number,
            InputKind::Json,
            ("en", "fr"),
        )
        .insert(db)
        .await
        .expect("volume");
        let seed = 0x5EED_0000 + number as u64;
        let generated: Vec<Generated> = (0..count).map(|i| passage_text(seed, i)).collect();
        let mut passages = Vec::with_capacity(count);
        for (c, chunk) in generated.chunks(CHAPTER_PASSAGES).enumerate() {
            let chapter = chapter::ActiveModel {
                id: Set(ids::new_id()),
                project_id: Set(model.id.clone()),
                external_id: Set(None),
                number: Set(Some(c as i32 + 1)),
                part: Set(None),
                part_count: Set(None),
                kind: Set("chapter".into()),
                label: Set(None),
                title: Set(None),
                translated_title: Set(None),
                position: Set(c as i32),
                source_sha256: Set(String::new()),
                words: Set(0),
                mapping: Set(None),
                created_at: Set(now),
                updated_at: Set(now),
            }
            .insert(db)
            .await
            .expect("chapter");
            let rows: Vec<passage::Model> = chunk
                .iter()
                .enumerate()
                .map(|(position, g)| passage::Model {
                    id: ids::new_id(),
                    chapter_id: chapter.id.clone(),
                    project_id: model.id.clone(),
                    position: position as i32,
                    source: g.text.clone(),
                    markup: None,
                    translation: None,
                    status: PassageStatus::Pending,
                    last_error: None,
                    human: false,
                    validated: false,
                    attempts: 0,
                    memory_key: None,
                    score: None,
                    signals: None,
                    reviewed: false,
                    autopilot_round: 0,
                    created_at: now,
                    updated_at: now,
                })
                .collect();
            for part in rows.chunks(50) {
                passage::Entity::insert_many(
                    part.iter().cloned().map(IntoActiveModel::into_active_model),
                )
                .exec(db)
                .await
                .expect("passages");
            }
            passages.extend(rows);
        }
        let analyses: Vec<PassageExtraction> = passages
            .iter()
            .zip(&generated)
            .enumerate()
            .map(|(i, (p, g))| PassageExtraction {
                passage_id: p.id.clone(),
                extraction: extraction(g, i % CHAPTER_PASSAGES == 0),
                failed: false,
            })
            .collect();
        for chunk in analyses.chunks(200) {
            backend
                .record_analysis(&model.id, chunk, false, Quality::Normal)
                .await
                .expect("analyses");
        }
        backend
            .reconcile(&model.id, Quality::Normal)
            .await
            .expect("reconcile");
        Volume {
            model,
            passages,
            generated,
        }
    }

    fn words(&self) -> usize {
        self.passages
            .iter()
            .map(|p| p.source.split_whitespace().count())
            .sum()
    }
}

/// A person's term decision.
fn decision(layer: TermLayer, owner: &str, index: usize, locked: bool) -> TermInput {
    let (source, translation) = TERMS[index % TERMS.len()];
    TermInput {
        layer,
        owner_id: owner.to_owned(),
        source: source.to_owned(),
        translation: if index < TERMS.len() {
            translation.to_owned()
        } else {
            format!("{translation} {}", index / TERMS.len())
        },
        category: "thing".into(),
        description: String::new(),
        locked,
        accepted: true,
    }
}

// ---------------------------------------------------------------- figures

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn summary(times: &mut [Duration]) -> String {
    times.sort();
    format!(
        "p50 {}, p95 {}, p99 {}, max {} (n={})",
        ms(percentile(times, 0.50)),
        ms(percentile(times, 0.95)),
        ms(percentile(times, 0.99)),
        ms(percentile(times, 1.0)),
        times.len()
    )
}

fn mean(values: &[usize]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.iter().sum::<usize>() as f64 / values.len() as f64
}

/// A similar passage's side as the context shows it: on one line, cut to
/// `SIMILAR_CHARS` characters.
fn one_line(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(SIMILAR_CHARS) {
        Some((at, _)) => format!("{}…", flat[..at].trim_end()),
        None => flat,
    }
}

/// Lines of section `title` in a rendered context.
fn section_lines(text: &str, title: &str) -> usize {
    let mut lines = text.lines().skip_while(|l| *l != title);
    if lines.next().is_none() {
        return 0;
    }
    lines.take_while(|l| l.starts_with("- ")).count()
}

async fn unsynced(db: &DatabaseConnection) -> u64 {
    memory_outbox::Entity::find()
        .filter(memory_outbox::Column::SyncedAt.is_null())
        .count(db)
        .await
        .expect("outbox")
}

/// Waits until every outbox row is synced; answers how long it took.
async fn drained(db: &DatabaseConnection) -> Duration {
    let began = Instant::now();
    while unsynced(db).await > 0 {
        assert!(
            began.elapsed() < DRAIN_LIMIT,
            "the outbox did not drain within {DRAIN_LIMIT:?}"
        );
        tokio::time::sleep(POLL).await;
    }
    began.elapsed()
}

/// Outbox rows waiting to be seen synced: id → when it was written.
type Pending = Arc<Mutex<BTreeMap<i64, Instant>>>;

/// Registers the outbox rows above `*last` as written at `at` (a row the
/// loop already synced counts as synced now).
async fn register(
    db: &DatabaseConnection,
    last: &mut i64,
    at: Instant,
    pending: &Pending,
    lags: &Mutex<Vec<Duration>>,
) -> usize {
    let rows: Vec<(i64, Option<i64>)> = memory_outbox::Entity::find()
        .select_only()
        .column(memory_outbox::Column::Id)
        .column(memory_outbox::Column::SyncedAt)
        .filter(memory_outbox::Column::Id.gt(*last))
        .order_by_asc(memory_outbox::Column::Id)
        .into_tuple()
        .all(db)
        .await
        .expect("outbox rows");
    let now = Instant::now();
    let mut waiting = pending.lock().expect("pending");
    for (id, synced) in &rows {
        *last = (*last).max(*id);
        if synced.is_some() {
            lags.lock().expect("lags").push(now - at);
        } else {
            waiting.insert(*id, at);
        }
    }
    rows.len()
}

/// Reads every [`POLL`] which pending rows are synced, until `stop`.
async fn poll_synced(
    db: DatabaseConnection,
    pending: Pending,
    lags: Arc<Mutex<Vec<Duration>>>,
    stop: watch::Receiver<bool>,
) {
    while !*stop.borrow() {
        let first = pending.lock().expect("pending").keys().next().copied();
        if let Some(first) = first {
            let synced: Vec<i64> = memory_outbox::Entity::find()
                .select_only()
                .column(memory_outbox::Column::Id)
                .filter(memory_outbox::Column::SyncedAt.is_not_null())
                .filter(memory_outbox::Column::Id.gte(first))
                .into_tuple()
                .all(&db)
                .await
                .expect("synced rows");
            let now = Instant::now();
            let mut waiting = pending.lock().expect("pending");
            let mut lags = lags.lock().expect("lags");
            for id in synced {
                if let Some(at) = waiting.remove(&id) {
                    lags.push(now - at);
                }
            }
        }
        tokio::time::sleep(POLL).await;
    }
}

fn settings(chroma_url: &str, embeddings_base: &str, dimensions: u32) -> ExternalSettings {
    ExternalSettings {
        url: chroma_url.to_owned(),
        tenant: "default_tenant".into(),
        database: "default_database".into(),
        token: None,
        embeddings: EmbeddingSettings {
            base_url: embeddings_base.to_owned(),
            model: MODEL.into(),
            api_key: Some("sk-bench".into()),
            dimensions: Some(dimensions),
        },
        hybrid_deadline: Duration::from_millis(800),
        external_deadline: Duration::from_secs(5),
        sync_batch: 64,
    }
}

// ---------------------------------------------------------------- run

async fn run(url: &str) {
    let passages = env_number("EXTERNAL_MEMORY_PASSAGES", 3000).max(WRITE_BATCH);
    let batches = env_number("EXTERNAL_MEMORY_BATCHES", 300).max(1);
    let latency = Duration::from_millis(env_number("EXTERNAL_MEMORY_LATENCY_MS", 100) as u64);
    let dimensions = env_number("EXTERNAL_MEMORY_DIMENSIONS", 1536) as u32;
    // `EXTERNAL_MEMORY_SHOW=1` prints the contexts of the first batch.
    let show = env_number("EXTERNAL_MEMORY_SHOW", 0) > 0;
    let Some(chroma_server) =
        dragoman_testing::Chroma::start_or_skip("external_memory bench").await
    else {
        return;
    };
    let simulator = RunningSimulator::start(SimulatorConfig {
        latency,
        ..SimulatorConfig::default()
    })
    .await
    .expect("simulator");
    let quick = RunningSimulator::start(SimulatorConfig::default())
        .await
        .expect("simulator");
    let (home, db) = fresh_database(url).await;
    let backend_name = match db.get_database_backend() {
        sea_orm::DbBackend::Sqlite => "SQLite",
        _ => "PostgreSQL",
    };
    Migrator::up(&db, None).await.expect("migrations");
    let backend = InternalBackend::new(db.clone(), MemorySettings::default());

    // The book, analysed, and a translator's first term decisions.
    let began = Instant::now();
    let owner = account::ActiveModel::new_account("bench", String::new(), false)
        .insert(&db)
        .await
        .expect("account");
    let cycle = series::ActiveModel::new_series(
        &owner.id,
        "The Saltmarsh Cycle",
        SeriesKind::Numbered,
        ("en", "fr"),
        None,
    )
    .insert(&db)
    .await
    .expect("series");
    let volume = Volume::create(&db, &backend, &cycle, 1, passages).await;
    for index in 0..TERMS.len() {
        backend
            .put_term(
                None,
                &decision(TermLayer::Book, &volume.model.id, index, index < 3),
            )
            .await
            .expect("term");
    }
    let entities = narrative_entity::Entity::find()
        .filter(narrative_entity::Column::ProjectId.eq(volume.model.id.as_str()))
        .order_by_asc(narrative_entity::Column::Name)
        .all(&db)
        .await
        .expect("entities");
    println!(
        "== external memory ({backend_name}, Chroma {}, embeddings: simulator at {} ms, {} \
         dimensions, sync batch 64)",
        chroma_server.url(),
        latency.as_millis(),
        dimensions
    );
    println!(
        "volume 1: {} passages, {} words, {} chapters, {} entities after analysis; set up in {:.1} s",
        volume.passages.len(),
        volume.words(),
        volume.passages.len().div_ceil(CHAPTER_PASSAGES),
        entities.len(),
        began.elapsed().as_secs_f64()
    );

    // The sync loop of the memory role, and the first mirror (the
    // analysis' entities, terms and Bible lines).
    let external = Arc::new(
        ExternalMemory::new(
            db.clone(),
            settings(
                &chroma_server.url(),
                &simulator.openai_base_url(),
                dimensions,
            ),
        )
        .expect("external memory"),
    );
    let (stop_sync, stop_rx) = watch::channel(false);
    let sync = tokio::spawn(external.clone().run_sync(stop_rx));
    let first = drained(&db).await;
    let mirrored_before = memory_mirror::Entity::find()
        .count(&db)
        .await
        .expect("mirror");
    println!(
        "first mirror (entities, terms, Bible lines): {mirrored_before} items in {:.1} s",
        first.as_secs_f64()
    );

    // 1. The translations stored while the loop runs.
    let calls_before = simulator.stats().embeddings;
    let pending: Pending = Arc::new(Mutex::new(BTreeMap::new()));
    let lags: Arc<Mutex<Vec<Duration>>> = Arc::new(Mutex::new(Vec::new()));
    let mut last_id: i64 = memory_outbox::Entity::find()
        .select_only()
        .column(memory_outbox::Column::Id)
        .order_by_desc(memory_outbox::Column::Id)
        .into_tuple()
        .one(&db)
        .await
        .expect("outbox")
        .unwrap_or(0);
    let (stop_poll, poll_rx) = watch::channel(false);
    let poller = tokio::spawn(poll_synced(
        db.clone(),
        pending.clone(),
        lags.clone(),
        poll_rx,
    ));
    let mut rows = 0;
    let mut entity_writes = 0;
    let mut term_writes = 0;
    let mut late_ticks = 0;
    let started = tokio::time::Instant::now();
    let mut write_times = Vec::new();
    for (n, chunk) in volume.passages.chunks(WRITE_BATCH).enumerate() {
        let due = started + PACE * n as u32;
        if tokio::time::Instant::now() > due + PACE {
            late_ticks += 1;
        }
        tokio::time::sleep_until(due).await;
        let write = Instant::now();
        let txn = dragoman_model::db::begin_write(&db).await.expect("begin");
        let now = clock::now();
        for (i, p) in chunk.iter().enumerate() {
            let index = n * WRITE_BATCH + i;
            let mut model = p.clone().into_active_model();
            model.translation = Set(Some(volume.generated[index].translation()));
            model.status = Set(PassageStatus::Ok);
            model.last_error = Set(None);
            model.attempts = Set(1);
            model.updated_at = Set(now);
            model.update(&txn).await.expect("translation");
        }
        let written = Instant::now();
        txn.commit().await.expect("commit");
        write_times.push(write.elapsed());
        rows += register(&db, &mut last_id, written, &pending, &lags).await;
        if n % 10 == 9 && !entities.is_empty() {
            // A person corrects a character's rendering.
            let entity = &entities[(n / 10) % entities.len()];
            let mut model = entity.clone().into_active_model();
            let rendering = entity.target_name.clone().unwrap_or_default();
            model.target_name = Set(Some(format!("{rendering} ({})", n / 10)));
            model.updated_at = Set(clock::now());
            model.update(&db).await.expect("entity");
            entity_writes += 1;
            let at = Instant::now();
            rows += register(&db, &mut last_id, at, &pending, &lags).await;
        }
        if n % 15 == 14 {
            let k = n / 15;
            let input = if k % 3 == 2 {
                decision(TermLayer::Series, &cycle.id, TERMS.len() + k, false)
            } else {
                decision(TermLayer::Book, &volume.model.id, TERMS.len() + k, false)
            };
            backend.put_term(None, &input).await.expect("term");
            term_writes += 1;
            let at = Instant::now();
            rows += register(&db, &mut last_id, at, &pending, &lags).await;
        }
    }
    let last_write = Instant::now();
    let writing = started.elapsed();
    while !pending.lock().expect("pending").is_empty() {
        assert!(
            last_write.elapsed() < DRAIN_LIMIT,
            "the outbox did not drain within {DRAIN_LIMIT:?}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let drain = last_write.elapsed();
    let _ = stop_poll.send(true);
    let _ = poller.await;
    let calls = simulator.stats().embeddings - calls_before;
    let mirrored = memory_mirror::Entity::find()
        .count(&db)
        .await
        .expect("mirror");
    let store = chroma::Store::new(external.settings()).expect("store");
    let remote = store
        .existing_collection(&EmbeddingModel {
            name: MODEL.into(),
            dimension: dimensions as usize,
        })
        .await
        .expect("collection")
        .expect("a collection")
        .count()
        .await
        .expect("count");
    let mut lags = std::mem::take(&mut *lags.lock().expect("lags"));
    // The same lags by the table's own clock (whole seconds), what the
    // `dragoman_memory_sync_lag_seconds` gauge sees.
    let table: Vec<(i64, Option<i64>)> = memory_outbox::Entity::find()
        .select_only()
        .column(memory_outbox::Column::CreatedAt)
        .column(memory_outbox::Column::SyncedAt)
        .filter(memory_outbox::Column::Id.gt(last_id - rows as i64))
        .into_tuple()
        .all(&db)
        .await
        .expect("outbox");
    let mut seconds: Vec<i64> = table
        .iter()
        .filter_map(|(created, synced)| synced.map(|s| s - created))
        .collect();
    seconds.sort_unstable();
    let items_written = passages + entity_writes + term_writes;
    let floor_calls = items_written.div_ceil(64);
    println!();
    println!(
        "-- 1. sync lag: {} translations in {} transactions of {WRITE_BATCH}, one every {} ms, \
         + {entity_writes} entity corrections + {term_writes} term decisions",
        passages,
        passages.div_ceil(WRITE_BATCH),
        PACE.as_millis()
    );
    println!(
        "writes: {:.1} s ({:.0} words/s), transaction {}, {late_ticks} transactions late",
        writing.as_secs_f64(),
        volume.words() as f64 / writing.as_secs_f64(),
        summary(&mut write_times)
    );
    println!(
        "outbox rows: {rows}; lag from write to synced (±{} ms): {}",
        POLL.as_millis(),
        summary(&mut lags)
    );
    if !seconds.is_empty() {
        let pick = |p: f64| seconds[((seconds.len() as f64 - 1.0) * p).round() as usize];
        println!(
            "the same by the table's timestamps (whole seconds): p50 {} s, p99 {} s, max {} s",
            pick(0.5),
            pick(0.99),
            pick(1.0)
        );
    }
    println!(
        "drained {:.2} s after the last write; items mirrored {mirrored} (Chroma holds {remote})",
        drain.as_secs_f64()
    );
    println!(
        "embeddings calls: {calls} (× {} ms = {:.1} s of embedding waits); with every change at \
         once: {floor_calls} calls = {:.1} s",
        latency.as_millis(),
        (latency * calls as u32).as_secs_f64(),
        (latency * floor_calls as u32).as_secs_f64()
    );
    println!(
        "floor of a row's lag: one embeddings call ({} ms) + the wait for the loop's next look \
         (polls every {} ms, 0 to {} ms)",
        latency.as_millis(),
        dragoman_memory::external::sync::POLL.as_millis(),
        dragoman_memory::external::sync::POLL.as_millis()
    );

    // What one pass costs with nothing to write: reading and hashing the
    // volume's items and comparing them with the mirror rows.
    let scope = MirrorScope::Project(volume.model.id.clone());
    let mut passes = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let outcome = external.sync_scope(&scope).await.expect("pass");
        passes.push(t.elapsed());
        assert_eq!(outcome.upserted + outcome.deleted, 0, "nothing to write");
    }
    println!(
        "one pass over volume 1 with nothing to write ({} translated passages, its entities, terms \
         and Bible lines): {}",
        volume.passages.len(),
        summary(&mut passes)
    );

    // The series memory, and volume 2 analysed, both mirrored.
    let began = Instant::now();
    backend
        .close_volume(&volume.model.id)
        .await
        .expect("close volume 1");
    let second = Volume::create(&db, &backend, &cycle, 2, VOLUME_2_PASSAGES).await;
    let settle = drained(&db).await;
    println!();
    println!(
        "volume 1 closed into the series memory, volume 2 ({} passages, {} words) analysed and \
         mirrored in {:.1} s (drain {:.1} s); items mirrored {}",
        second.passages.len(),
        second.words(),
        began.elapsed().as_secs_f64(),
        settle.as_secs_f64(),
        memory_mirror::Entity::find()
            .count(&db)
            .await
            .expect("mirror")
    );

    // 2. and 3. Retrieval and contexts per batch.
    let quick_memory = ExternalMemory::new(
        db.clone(),
        settings(&chroma_server.url(), &quick.openai_base_url(), dimensions),
    )
    .expect("external memory");
    let mut rng = Rng(0xBA7C4);
    // Positions that exist in both volumes.
    let span = VOLUME_2_PASSAGES.min(volume.passages.len());
    let shapes: Vec<(usize, usize)> = (0..batches)
        .map(|_| {
            let size = 8 + rng.below(13).min(span.saturating_sub(9));
            (rng.below(span - size + 1), size)
        })
        .collect();
    let of = |v: &Volume, (start, size): (usize, usize)| -> Vec<String> {
        v.passages[start..start + size]
            .iter()
            .map(|p| p.id.clone())
            .collect()
    };
    // Warm the connections and the collection's index.
    for &shape in shapes.iter().take(10) {
        let batch = vec![of(&second, shape)];
        let _ = external.retrieve(&second.model.id, &batch).await;
        let _ = quick_memory.retrieve(&second.model.id, &batch).await;
    }
    let mut retrieve = Vec::new();
    let mut retrieve_quick = Vec::new();
    let mut internal_times = Vec::new();
    let mut hybrid_times = Vec::new();
    let mut retrieved_passages = Vec::new();
    let mut retrieved_entities = Vec::new();
    let mut similar_tokens = Vec::new();
    let mut tokens = TokenCounts::default();
    for &shape in &shapes {
        let batch = vec![of(&second, shape)];
        let t = Instant::now();
        let found = external
            .retrieve(&second.model.id, &batch)
            .await
            .expect("retrieve");
        retrieve.push(t.elapsed());
        retrieved_passages.push(found[0].passages.len());
        similar_tokens.push(
            found[0]
                .passages
                .iter()
                .map(|p| {
                    estimate_tokens(&format!(
                        "- {} => {}",
                        one_line(&p.source),
                        one_line(&p.translation)
                    ))
                })
                .sum(),
        );
        retrieved_entities.push(found[0].entities.len());
        let t = Instant::now();
        quick_memory
            .retrieve(&second.model.id, &batch)
            .await
            .expect("retrieve");
        retrieve_quick.push(t.elapsed());
        let t = Instant::now();
        let internal = backend
            .build_contexts_with(&second.model.id, &batch, ContextBackend::Internal, None)
            .await
            .expect("internal");
        internal_times.push(t.elapsed());
        let t = Instant::now();
        let hybrid = backend
            .build_contexts_with(
                &second.model.id,
                &batch,
                ContextBackend::Hybrid,
                Some(&external),
            )
            .await
            .expect("hybrid");
        hybrid_times.push(t.elapsed());
        if show && hybrid_times.len() == 1 {
            let text = |c: &Contexts| c.contexts.first().map(|c| c.text.clone());
            println!(
                "internal context of the first batch:\n{}",
                text(&internal).unwrap_or_default()
            );
            println!(
                "hybrid context of the first batch:\n{}",
                text(&hybrid).unwrap_or_default()
            );
        }
        tokens.add(&internal, &hybrid);
    }
    println!();
    println!(
        "-- 2. retrieval per batch: {batches} batches of 8-20 consecutive passages of volume 2 \
         (the series' next volume), {} items in the collection",
        remote_count(&store, dimensions).await
    );
    println!(
        "ExternalMemory::retrieve (embeddings at {} ms): {}",
        latency.as_millis(),
        summary(&mut retrieve)
    );
    println!(
        "ExternalMemory::retrieve (embeddings at 0 ms: Chroma + database): {}",
        summary(&mut retrieve_quick)
    );
    println!("internal context build: {}", summary(&mut internal_times));
    println!(
        "hybrid context build (database and retrieval at once, deadline 800 ms): {}",
        summary(&mut hybrid_times)
    );
    println!(
        "retrieved per batch: {:.2} similar passages ({:.1} tokens as context lines before the \
         budget cut), {:.2} entities (mean)",
        mean(&retrieved_passages),
        mean(&similar_tokens),
        mean(&retrieved_entities)
    );
    println!();
    println!("-- 3. context tokens per batch (budget {BUDGET})");
    tokens.print("volume 2 (earlier volume mirrored)");

    // The same positions in volume 1 itself.
    let mut own = TokenCounts::default();
    for &shape in &shapes {
        let batch = vec![of(&volume, shape)];
        let internal = backend
            .build_contexts_with(&volume.model.id, &batch, ContextBackend::Internal, None)
            .await
            .expect("internal");
        let hybrid = backend
            .build_contexts_with(
                &volume.model.id,
                &batch,
                ContextBackend::Hybrid,
                Some(&external),
            )
            .await
            .expect("hybrid");
        own.add(&internal, &hybrid);
    }
    own.print("volume 1 (its own passages mirrored)");

    let _ = stop_sync.send(true);
    let _ = sync.await;
    drop(quick_memory);
    drop(external);
    drop_database(home, db).await;
    drop(chroma_server);
}

async fn remote_count(store: &chroma::Store, dimensions: u32) -> usize {
    match store
        .existing_collection(&EmbeddingModel {
            name: MODEL.into(),
            dimension: dimensions as usize,
        })
        .await
    {
        Ok(Some(collection)) => collection.count().await.unwrap_or(0),
        _ => 0,
    }
}

/// Context tokens of the same batches built `internal` and `hybrid`.
#[derive(Default)]
struct TokenCounts {
    internal: Vec<usize>,
    hybrid: Vec<usize>,
    /// Batches the external memory answered (no fallback).
    answered: usize,
    fallbacks: usize,
    similar_lines: Vec<usize>,
    /// Batches whose hybrid context is within 10 tokens of the budget.
    at_budget: usize,
}

impl TokenCounts {
    fn add(&mut self, internal: &Contexts, hybrid: &Contexts) {
        let internal = internal.contexts.first().cloned().unwrap_or_default();
        self.internal.push(internal.tokens);
        if hybrid.answered_by == ContextBackend::External {
            self.answered += 1;
        }
        if hybrid.fell_back {
            self.fallbacks += 1;
        }
        let context = hybrid.contexts.first().cloned().unwrap_or_default();
        self.hybrid.push(context.tokens);
        self.similar_lines
            .push(section_lines(&context.text, "Similar passages:"));
        if context.tokens + 10 >= BUDGET {
            self.at_budget += 1;
        }
    }

    fn print(&self, label: &str) {
        let internal = mean(&self.internal);
        let hybrid = mean(&self.hybrid);
        let added = hybrid - internal;
        println!(
            "{label}: internal {internal:.1} tokens, hybrid {hybrid:.1} tokens (answered by the \
             external memory {} of {}, {} fallbacks); retrieval adds {added:.1} tokens = {:.1} % \
             of the hybrid context ({:+.1} % over internal); similar passages shown {:.2} per \
             batch; {} hybrid contexts within 10 tokens of the budget",
            self.answered,
            self.hybrid.len(),
            self.fallbacks,
            if hybrid > 0.0 {
                100.0 * added / hybrid
            } else {
                0.0
            },
            if internal > 0.0 {
                100.0 * added / internal
            } else {
                0.0
            },
            mean(&self.similar_lines),
            self.at_budget
        );
    }
}
