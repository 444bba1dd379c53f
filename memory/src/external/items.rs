//! What a scope mirrors: its translated passages, entities, terms and Bible
//! lines as records, each with the hash of what it holds.
//!
//! A volume (`MirrorScope::Project`) mirrors its translated passages (status
//! `ok` or `check` with a translation: what a reader gets), its narrative
//! entities, its accepted book-layer terms and its Book Bible. A series
//! mirrors its canonical entities, its accepted series-layer terms and its
//! Series Bible. Terms of shared glossaries are not mirrored (they belong
//! to no book), nor are proposals not yet accepted (they are not memory
//! until a person or the reconciliation accepts them).
//!
//! Every record's metadata carries `schema_version` 2 (spec 9), `kind`,
//! `project_id` and `series_id` (`""` when none: Chroma metadata holds no
//! null) and `revision`, the SHA-256 of the document and the other metadata.
//! A volume's items carry its series too, so a series-wide query finds the
//! earlier volumes' passages.

use super::MirrorScope;
use crate::error::MemoryResult;
use dragoman_model::entities::{
    bible_line, narrative_entity, passage, project, series, series_entity, term,
};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder, QuerySelect};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// The version of the events written to the external memory (spec 9).
pub const SCHEMA_VERSION: i64 = 2;

/// What joins an entity's names and description in its document and its
/// aliases in its metadata.
const JOIN: &str = " | ";

/// What a mirrored item is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ItemKind {
    Passage,
    Entity,
    SeriesEntity,
    Term,
    BibleLine,
}

impl ItemKind {
    pub const ALL: [ItemKind; 5] = [
        ItemKind::Passage,
        ItemKind::Entity,
        ItemKind::SeriesEntity,
        ItemKind::Term,
        ItemKind::BibleLine,
    ];

    /// The `kind` of the metadata and the prefix of the remote id.
    pub fn as_str(self) -> &'static str {
        match self {
            ItemKind::Passage => "passage",
            ItemKind::Entity => "entity",
            ItemKind::SeriesEntity => "series_entity",
            ItemKind::Term => "term",
            ItemKind::BibleLine => "bible_line",
        }
    }

    pub fn parse(text: &str) -> Option<ItemKind> {
        ItemKind::ALL.into_iter().find(|k| k.as_str() == text)
    }

    /// The remote id of the local row `local_id`.
    pub fn item_id(self, local_id: &str) -> String {
        format!("{}:{local_id}", self.as_str())
    }
}

/// The kind and local id of a remote id, when it is one of Dragoman's.
pub fn parse_item_id(id: &str) -> Option<(ItemKind, &str)> {
    let (kind, local) = id.split_once(':')?;
    Some((ItemKind::parse(kind)?, local)).filter(|(_, local)| !local.is_empty())
}

/// One item of a scope as it is in the database now.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    /// `<kind>:<local id>`, the Chroma id.
    pub id: String,
    pub kind: ItemKind,
    /// The text embedded (the source side).
    pub text: String,
    /// Chroma metadata: `schema_version`, `kind`, `project_id`,
    /// `series_id`, `revision` (the hash) and the item's fields.
    pub metadata: Map<String, Value>,
    /// SHA-256 of what the item holds: equal means unchanged.
    pub hash: String,
}

impl Item {
    /// The item of `local_id` with its `fields`; the common metadata and
    /// the revision are added here, so every kind hashes the same way.
    fn new(
        kind: ItemKind,
        local_id: &str,
        owner: (&str, &str),
        text: String,
        fields: Vec<(&str, Value)>,
    ) -> Item {
        let mut metadata = Map::new();
        metadata.insert("schema_version".into(), SCHEMA_VERSION.into());
        metadata.insert("kind".into(), kind.as_str().into());
        metadata.insert("project_id".into(), owner.0.into());
        metadata.insert("series_id".into(), owner.1.into());
        for (name, value) in fields {
            metadata.insert(name.to_owned(), value);
        }
        let hash = content_hash(&text, &metadata);
        metadata.insert("revision".into(), hash.clone().into());
        Item {
            id: kind.item_id(local_id),
            kind,
            text,
            metadata,
            hash,
        }
    }

    /// The volume the item belongs to (`None` for a series item).
    pub fn project_id(&self) -> Option<&str> {
        self.metadata
            .get("project_id")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty())
    }

    /// The series the item belongs to.
    pub fn series_id(&self) -> Option<&str> {
        self.metadata
            .get("series_id")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty())
    }
}

/// SHA-256 of the document and the metadata, keys sorted, so the hash
/// does not depend on the order the fields were written in.
fn content_hash(text: &str, metadata: &Map<String, Value>) -> String {
    let sorted: BTreeMap<&String, &Value> = metadata.iter().collect();
    let mut hasher = Sha256::new();
    hasher.update(text.as_bytes());
    hasher.update([0]);
    // Serializing a map of strings and scalars cannot fail; an empty
    // string would only make every item look changed once.
    hasher.update(
        serde_json::to_string(&sorted)
            .unwrap_or_default()
            .as_bytes(),
    );
    hex::encode(hasher.finalize())
}

/// The strings of a JSON array of aliases (anything else: none).
fn aliases(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::trim)
                .filter(|a| !a.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// An entity's document and fields: `name | aliases | description`, so a
/// query by any of its names or by what it is finds it.
fn entity_item(
    kind: ItemKind,
    id: &str,
    owner: (&str, &str),
    entity: (&str, &Value, Option<&str>, &str, &str),
) -> Item {
    let (name, alias_list, target_name, entity_kind, description) = entity;
    let alias_list = aliases(alias_list);
    let mut parts = vec![name.to_owned()];
    parts.extend(alias_list.iter().cloned());
    if !description.trim().is_empty() {
        parts.push(description.trim().to_owned());
    }
    Item::new(
        kind,
        id,
        owner,
        parts.join(JOIN),
        vec![
            ("name", name.into()),
            ("target_name", target_name.unwrap_or_default().into()),
            ("aliases", alias_list.join(JOIN).into()),
            ("entity_kind", entity_kind.into()),
            ("description", description.into()),
        ],
    )
}

fn term_item(row: &term::Model, owner: (&str, &str)) -> Item {
    Item::new(
        ItemKind::Term,
        &row.id,
        owner,
        row.source.clone(),
        vec![
            ("source", row.source.as_str().into()),
            ("translation", row.translation.as_str().into()),
            ("layer", row.layer.as_str().into()),
        ],
    )
}

fn bible_item(row: &bible_line::Model, owner: (&str, &str)) -> Item {
    Item::new(
        ItemKind::BibleLine,
        &row.id,
        owner,
        row.text.clone(),
        vec![("aspect", row.aspect.as_str().into())],
    )
}

/// A passage as [`desired`] reads it: only the columns it mirrors.
type PassageRow = (String, String, i32, String, Option<String>, bool, bool);

/// The items of `scope` as they are now (none when its owner is gone).
pub async fn desired(db: &impl ConnectionTrait, scope: &MirrorScope) -> MemoryResult<Vec<Item>> {
    match scope {
        MirrorScope::Project(id) => volume_items(db, id).await,
        MirrorScope::Series(id) => series_items(db, id).await,
    }
}

async fn volume_items(db: &impl ConnectionTrait, project_id: &str) -> MemoryResult<Vec<Item>> {
    let Some(volume) = project::Entity::find_by_id(project_id.to_owned())
        .one(db)
        .await?
    else {
        return Ok(Vec::new());
    };
    let owner = (volume.id.as_str(), volume.series_id.as_str());
    let mut items = Vec::new();

    // Only the mirrored columns: a book's markup and quality signals
    // would be read for nothing every time the scope syncs.
    let passages: Vec<PassageRow> = passage::Entity::find()
        .select_only()
        .columns([
            passage::Column::Id,
            passage::Column::ChapterId,
            passage::Column::Position,
            passage::Column::Source,
            passage::Column::Translation,
            passage::Column::Validated,
            passage::Column::Human,
        ])
        .filter(passage::Column::ProjectId.eq(project_id))
        .filter(passage::translated_condition())
        .order_by_asc(passage::Column::ChapterId)
        .order_by_asc(passage::Column::Position)
        .into_tuple()
        .all(db)
        .await?;
    for (id, chapter_id, position, source, translation, validated, human) in passages {
        items.push(Item::new(
            ItemKind::Passage,
            &id,
            owner,
            source,
            vec![
                ("chapter_id", chapter_id.into()),
                ("position", position.into()),
                ("translation", translation.unwrap_or_default().into()),
                ("validated", validated.into()),
                ("human", human.into()),
            ],
        ));
    }

    let entities = narrative_entity::Entity::find()
        .filter(narrative_entity::Column::ProjectId.eq(project_id))
        .order_by_asc(narrative_entity::Column::Id)
        .all(db)
        .await?;
    for e in &entities {
        items.push(entity_item(
            ItemKind::Entity,
            &e.id,
            owner,
            (
                &e.name,
                &e.aliases,
                e.target_name.as_deref(),
                e.kind.as_str(),
                &e.description,
            ),
        ));
    }

    let terms = term::Entity::find()
        .filter(term::Column::ProjectId.eq(project_id))
        .filter(term::Column::GlossaryId.is_null())
        .filter(term::Column::Accepted.eq(true))
        .order_by_asc(term::Column::Id)
        .all(db)
        .await?;
    items.extend(terms.iter().map(|t| term_item(t, owner)));

    let lines = bible_line::Entity::find()
        .filter(bible_line::Column::ProjectId.eq(project_id))
        .order_by_asc(bible_line::Column::Id)
        .all(db)
        .await?;
    items.extend(lines.iter().map(|l| bible_item(l, owner)));
    Ok(items)
}

async fn series_items(db: &impl ConnectionTrait, series_id: &str) -> MemoryResult<Vec<Item>> {
    if series::Entity::find_by_id(series_id.to_owned())
        .one(db)
        .await?
        .is_none()
    {
        return Ok(Vec::new());
    }
    let owner = ("", series_id);
    let mut items = Vec::new();
    let entities = series_entity::Entity::find()
        .filter(series_entity::Column::SeriesId.eq(series_id))
        .order_by_asc(series_entity::Column::Id)
        .all(db)
        .await?;
    for e in &entities {
        items.push(entity_item(
            ItemKind::SeriesEntity,
            &e.id,
            owner,
            (
                &e.name,
                &e.aliases,
                e.target_name.as_deref(),
                e.kind.as_str(),
                &e.description,
            ),
        ));
    }
    let terms = term::Entity::find()
        .filter(term::Column::SeriesId.eq(series_id))
        .filter(term::Column::ProjectId.is_null())
        .filter(term::Column::GlossaryId.is_null())
        .filter(term::Column::Accepted.eq(true))
        .order_by_asc(term::Column::Id)
        .all(db)
        .await?;
    items.extend(terms.iter().map(|t| term_item(t, owner)));
    let lines = bible_line::Entity::find()
        .filter(bible_line::Column::SeriesId.eq(series_id))
        .filter(bible_line::Column::ProjectId.is_null())
        .order_by_asc(bible_line::Column::Id)
        .all(db)
        .await?;
    items.extend(lines.iter().map(|l| bible_item(l, owner)));
    Ok(items)
}

/// What the external memory's tests share: the real schema on SQLite and,
/// when `TEST_DATABASE_URL` names a server, on a fresh PostgreSQL database;
/// and a small series with one volume whose memory has one item of each
/// kind.
#[cfg(test)]
pub(crate) mod testing {
    use dragoman_migrations::{Migrator, MigratorTrait};
    use dragoman_model::entities::{
        account, bible_line, chapter, glossary, narrative_entity, passage, project, series,
        series_entity, term,
    };
    use dragoman_model::vocab::{
        BibleAspect, EntityKind, InputKind, Origin, PassageStatus, SeriesKind, TermLayer,
    };
    use dragoman_model::{clock, ids};
    use dragoman_testing::TestDatabase;
    use sea_orm::{ActiveModelTrait, DatabaseConnection, IntoActiveModel, Set};
    use serde_json::json;

    /// A database with the schema: SQLite in memory.
    pub async fn sqlite() -> DatabaseConnection {
        let db = dragoman_model::db::connect("sqlite::memory:")
            .await
            .expect("in-memory database");
        Migrator::up(&db, None).await.expect("migrations");
        db
    }

    /// Runs `test` on SQLite, then on a fresh PostgreSQL database when
    /// `TEST_DATABASE_URL` is set; the database is dropped afterwards, even
    /// when the test fails.
    pub async fn on_both<F, Fut>(test: F)
    where
        F: Fn(DatabaseConnection) -> Fut,
        Fut: std::future::Future<Output = ()>,
    {
        test(sqlite().await).await;
        // Dropped with the handle (required under CI, skipped with a note
        // elsewhere), also when the test fails.
        let Some(database) = TestDatabase::fresh("PostgreSQL variant", "dragoman_memory").await
        else {
            return;
        };
        let db = dragoman_model::db::connect(database.url())
            .await
            .expect("test database");
        Migrator::up(&db, None).await.expect("migrations");
        test(db.clone()).await;
        let _ = db.close().await;
    }

    /// A series, its first volume with one chapter of three passages
    /// (untranslated), and one memory item of each kind: an entity, an
    /// accepted and a proposed book term, a Book Bible line, a series
    /// entity, a series term and a shared-glossary term.
    pub struct Books {
        pub series: series::Model,
        pub volume: project::Model,
        pub passages: Vec<passage::Model>,
        pub entity: narrative_entity::Model,
        pub series_entity: series_entity::Model,
        pub series_term: term::Model,
    }

    pub fn term_row(
        layer: TermLayer,
        owner: (Option<&str>, Option<&str>, Option<&str>),
        source: &str,
        accepted: bool,
    ) -> term::ActiveModel {
        let now = clock::now();
        term::ActiveModel {
            id: Set(ids::new_id()),
            layer: Set(layer),
            project_id: Set(owner.0.map(str::to_owned)),
            series_id: Set(owner.1.map(str::to_owned)),
            glossary_id: Set(owner.2.map(str::to_owned)),
            source: Set(source.into()),
            source_key: Set(source.to_lowercase()),
            translation: Set(format!("{source} (fr)")),
            category: Set("thing".into()),
            description: Set(String::new()),
            locked: Set(false),
            accepted: Set(accepted),
            origin: Set(Origin::Human),
            proposed_by: Set(None),
            passage_id: Set(None),
            evidence: Set(None),
            occurrences: Set(0),
            created_at: Set(now),
            updated_at: Set(now),
        }
    }

    pub fn entity_row(
        project_id: &str,
        name: &str,
        aliases: &[&str],
    ) -> narrative_entity::ActiveModel {
        let now = clock::now();
        narrative_entity::ActiveModel {
            id: Set(ids::new_id()),
            project_id: Set(project_id.to_owned()),
            series_entity_id: Set(None),
            kind: Set(EntityKind::Character),
            name: Set(name.into()),
            name_key: Set(name.to_lowercase()),
            aliases: Set(json!(aliases)),
            target_name: Set(None),
            gender: Set(None),
            address: Set(None),
            description: Set("A mathematician.".into()),
            origin: Set(Origin::Analysis),
            passage_id: Set(None),
            evidence: Set(None),
            mentions: Set(1),
            observations: Set(json!([])),
            created_at: Set(now),
            updated_at: Set(now),
        }
    }

    impl Books {
        pub async fn new(db: &DatabaseConnection) -> Books {
            let account = account::ActiveModel::new_account("mira", String::new(), false)
                .insert(db)
                .await
                .expect("account");
            Books::of(db, account).await
        }

        /// Another series with its volume, in the account of `account`.
        pub async fn of(db: &DatabaseConnection, account: account::Model) -> Books {
            let now = clock::now();
            let series = series::ActiveModel::new_series(
                &account.id,
                &format!("Cycle {}", ids::new_id()),
                SeriesKind::Numbered,
                ("en", "fr"),
                None,
            )
            .insert(db)
            .await
            .expect("series");
            let volume = project::ActiveModel::new_volume(
                &series,
                "Volume 1".into(),
                1,
                InputKind::Json,
                ("en", "fr"),
            )
            .insert(db)
            .await
            .expect("volume");
            let chapter = chapter::ActiveModel {
                id: Set(ids::new_id()),
                project_id: Set(volume.id.clone()),
                external_id: Set(None),
                number: Set(Some(1)),
                part: Set(None),
                part_count: Set(None),
                kind: Set("chapter".into()),
                label: Set(None),
                title: Set(None),
                translated_title: Set(None),
                position: Set(0),
                source_sha256: Set(String::new()),
                words: Set(0),
                mapping: Set(None),
                created_at: Set(now),
                updated_at: Set(now),
            }
            .insert(db)
            .await
            .expect("chapter");
            let mut passages = Vec::new();
            for (position, text) in ["Hello.", "Goodbye.", "Again."].into_iter().enumerate() {
                passages.push(
                    passage::ActiveModel {
                        id: Set(ids::new_id()),
                        chapter_id: Set(chapter.id.clone()),
                        project_id: Set(volume.id.clone()),
                        position: Set(i32::try_from(position).expect("three")),
                        source: Set(text.into()),
                        markup: Set(None),
                        translation: Set(None),
                        status: Set(PassageStatus::Pending),
                        last_error: Set(None),
                        human: Set(false),
                        validated: Set(false),
                        attempts: Set(0),
                        memory_key: Set(None),
                        score: Set(None),
                        signals: Set(None),
                        reviewed: Set(false),
                        autopilot_round: Set(0),
                        created_at: Set(now),
                        updated_at: Set(now),
                    }
                    .insert(db)
                    .await
                    .expect("passage"),
                );
            }
            let entity = entity_row(&volume.id, "Ada", &["Lady Ada"])
                .insert(db)
                .await
                .expect("entity");
            term_row(
                TermLayer::Book,
                (Some(&volume.id), None, None),
                "Lamp",
                true,
            )
            .insert(db)
            .await
            .expect("term");
            term_row(
                TermLayer::Book,
                (Some(&volume.id), None, None),
                "Candle",
                false,
            )
            .insert(db)
            .await
            .expect("proposal");
            bible_line::ActiveModel {
                id: Set(ids::new_id()),
                project_id: Set(Some(volume.id.clone())),
                series_id: Set(None),
                aspect: Set(BibleAspect::Tone),
                text: Set("Wry and brisk.".into()),
                origin: Set(Origin::Human),
                passage_id: Set(None),
                evidence: Set(None),
                created_at: Set(now),
            }
            .insert(db)
            .await
            .expect("bible line");
            let series_entity = series_entity::ActiveModel {
                id: Set(ids::new_id()),
                series_id: Set(series.id.clone()),
                kind: Set(EntityKind::Character),
                name: Set("Ada".into()),
                name_key: Set("ada".into()),
                aliases: Set(json!(["Countess"])),
                target_name: Set(Some("Adèle".into())),
                gender: Set(None),
                address: Set(None),
                description: Set(String::new()),
                origin: Set(Origin::Human),
                first_project_id: Set(Some(volume.id.clone())),
                created_at: Set(now),
                updated_at: Set(now),
            }
            .insert(db)
            .await
            .expect("series entity");
            let series_term = term_row(
                TermLayer::Series,
                (None, Some(&series.id), None),
                "Sword",
                true,
            )
            .insert(db)
            .await
            .expect("series term");
            let shared = glossary::ActiveModel {
                id: Set(ids::new_id()),
                account_id: Set(account.id.clone()),
                name: Set(format!("House style {}", ids::new_id())),
                description: Set(String::new()),
                source_language: Set(None),
                target_language: Set(None),
                created_at: Set(now),
                updated_at: Set(now),
            }
            .insert(db)
            .await
            .expect("glossary");
            term_row(
                TermLayer::Shared,
                (None, None, Some(&shared.id)),
                "Tower",
                true,
            )
            .insert(db)
            .await
            .expect("shared term");
            Books {
                series,
                volume,
                passages,
                entity,
                series_entity,
                series_term,
            }
        }

        /// Stores a translation of passage `index`.
        pub async fn translate(
            &self,
            db: &DatabaseConnection,
            index: usize,
            text: &str,
            validated: bool,
        ) {
            let mut model = self.passages[index].clone().into_active_model();
            model.translation = Set(Some(text.to_owned()));
            model.status = Set(PassageStatus::Ok);
            model.validated = Set(validated);
            model.update(db).await.expect("translation");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::external::items::testing::{Books, on_both};
    use serde_json::json;

    #[test]
    fn item_ids_name_their_kind() {
        assert_eq!(ItemKind::Passage.item_id("p1"), "passage:p1");
        assert_eq!(
            parse_item_id("series_entity:e-1"),
            Some((ItemKind::SeriesEntity, "e-1"))
        );
        assert_eq!(parse_item_id("passage:"), None);
        assert_eq!(parse_item_id("chapter:c"), None);
        assert_eq!(parse_item_id("nocolon"), None);
    }

    #[test]
    fn the_hash_follows_the_content_not_the_field_order() {
        let a = Item::new(
            ItemKind::Term,
            "t",
            ("p", "s"),
            "Sword".into(),
            vec![("source", json!("Sword")), ("translation", json!("Épée"))],
        );
        let b = Item::new(
            ItemKind::Term,
            "t",
            ("p", "s"),
            "Sword".into(),
            vec![("translation", json!("Épée")), ("source", json!("Sword"))],
        );
        assert_eq!(a.hash, b.hash);
        let c = Item::new(
            ItemKind::Term,
            "t",
            ("p", "s"),
            "Sword".into(),
            vec![("source", json!("Sword")), ("translation", json!("Glaive"))],
        );
        assert_ne!(a.hash, c.hash);
        assert_eq!(a.metadata["revision"], json!(a.hash));
        assert_eq!(a.metadata["schema_version"], json!(2));
    }

    #[test]
    fn an_entity_is_found_by_its_names_and_description() {
        let item = entity_item(
            ItemKind::Entity,
            "e",
            ("p", "s"),
            (
                "Ada",
                &json!(["Lady Ada", " ", 3]),
                None,
                "character",
                "A mathematician.",
            ),
        );
        assert_eq!(item.text, "Ada | Lady Ada | A mathematician.");
        assert_eq!(item.metadata["aliases"], json!("Lady Ada"));
        assert_eq!(item.metadata["target_name"], json!(""));
        assert_eq!(item.metadata["entity_kind"], json!("character"));
    }

    /// What a volume and its series mirror, on every test database.
    #[tokio::test]
    async fn a_scope_mirrors_its_translated_memory() {
        on_both(|db| async move {
            let books = Books::new(&db).await;
            let volume = MirrorScope::Project(books.volume.id.clone());
            let series = MirrorScope::Series(books.series.id.clone());
            // Nothing translated yet: the volume's entity, accepted term and
            // line only.
            let items = desired(&db, &volume).await.expect("items");
            let kinds: Vec<&str> = items.iter().map(|i| i.kind.as_str()).collect();
            assert_eq!(kinds, ["entity", "term", "bible_line"]);
            books.translate(&db, 0, "Bonjour.", false).await;
            let items = desired(&db, &volume).await.expect("items");
            let passage = &items[0];
            assert_eq!(passage.id, format!("passage:{}", books.passages[0].id));
            assert_eq!(passage.text, "Hello.");
            assert_eq!(passage.metadata["translation"], json!("Bonjour."));
            assert_eq!(passage.metadata["project_id"], json!(books.volume.id));
            assert_eq!(passage.metadata["series_id"], json!(books.series.id));
            assert_eq!(passage.metadata["position"], json!(0));
            assert_eq!(passage.metadata["validated"], json!(false));
            // Reading again gives the same revision; validating changes it.
            let before = passage.hash.clone();
            assert_eq!(desired(&db, &volume).await.expect("items")[0].hash, before);
            books.translate(&db, 0, "Bonjour.", true).await;
            assert_ne!(desired(&db, &volume).await.expect("items")[0].hash, before);

            let items = desired(&db, &series).await.expect("items");
            let kinds: Vec<&str> = items.iter().map(|i| i.kind.as_str()).collect();
            assert_eq!(kinds, ["series_entity", "term"]);
            assert_eq!(items[0].metadata["project_id"], json!(""));
            assert_eq!(items[1].metadata["layer"], json!("series"));

            // A scope whose owner is gone mirrors nothing.
            let gone = MirrorScope::Project("missing".into());
            assert!(desired(&db, &gone).await.expect("items").is_empty());
        })
        .await;
    }
}
