//! The request bodies of the Chroma HTTP API v2 calls the store makes, and
//! the `where` filters they carry. Field names and shapes follow Chroma's
//! own (`chroma-api-types`); fields are declared in the order the body has
//! always been written (keys sorted), so what reaches Chroma is unchanged.

use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

/// A Chroma `where` filter over record metadata: one condition per object,
/// several joined by `$and`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Where {
    /// `{"$and": [...]}`: every condition holds.
    And {
        #[serde(rename = "$and")]
        all: Vec<Where>,
    },
    /// `{"kind": …}`: the item kind equals one, or is one of several.
    Kind { kind: KindIs },
    /// `{"project_id": id}`: the items of one book (`""` for series-wide
    /// items).
    Project { project_id: String },
    /// `{"series_id": id}`: the items naming one series.
    Series { series_id: String },
}

/// The condition on an item's `kind`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum KindIs {
    /// `"passage"`.
    Equal(&'static str),
    /// `{"$in": ["entity", …]}`.
    In {
        #[serde(rename = "$in")]
        kinds: Vec<&'static str>,
    },
}

impl Where {
    pub fn project(id: impl Into<String>) -> Where {
        Where::Project {
            project_id: id.into(),
        }
    }

    pub fn series(id: impl Into<String>) -> Where {
        Where::Series {
            series_id: id.into(),
        }
    }

    pub fn kind(kind: &'static str) -> Where {
        Where::Kind {
            kind: KindIs::Equal(kind),
        }
    }

    pub fn kind_in(kinds: Vec<&'static str>) -> Where {
        Where::Kind {
            kind: KindIs::In { kinds },
        }
    }

    pub fn and(all: Vec<Where>) -> Where {
        Where::And { all }
    }
}

/// What a get or query answers besides the ids.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum Include {
    Distances,
    Documents,
    Metadatas,
}

/// `POST …/collections`: create the collection, or answer it when it
/// exists.
#[derive(Serialize)]
pub(super) struct CreateCollection<'a> {
    pub configuration: CollectionConfiguration,
    pub get_or_create: bool,
    pub metadata: CollectionMetadata<'a>,
    pub name: String,
}

#[derive(Serialize)]
pub(super) struct CollectionConfiguration {
    pub hnsw: HnswConfiguration,
}

#[derive(Serialize)]
pub(super) struct HnswConfiguration {
    pub space: Space,
}

/// The distance of an index.
#[derive(Serialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum Space {
    Cosine,
}

/// The metadata a Dragoman collection is created with.
#[derive(Serialize)]
pub(super) struct CollectionMetadata<'a> {
    pub dimension: usize,
    pub embedding_model: &'a str,
    pub owner: &'static str,
    pub schema_version: i64,
}

/// `POST …/upsert`: one entry per record in each list, in the same order.
#[derive(Serialize)]
pub(super) struct Upsert {
    pub documents: Vec<String>,
    #[serde(serialize_with = "widened")]
    pub embeddings: Vec<Vec<f32>>,
    pub ids: Vec<String>,
    pub metadatas: Vec<Map<String, Value>>,
}

/// `POST …/delete`: by ids or by filter.
#[derive(Serialize)]
pub(super) struct Delete<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ids: Option<Vec<String>>,
    #[serde(rename = "where", skip_serializing_if = "Option::is_none")]
    pub filter: Option<&'a Where>,
}

/// `POST …/get`: by ids, or a page of what a filter (or nothing) matches.
#[derive(Serialize)]
pub(super) struct Get<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ids: Option<Vec<String>>,
    pub include: [Include; 1],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<usize>,
    #[serde(rename = "where", skip_serializing_if = "Option::is_none")]
    pub filter: Option<&'a Where>,
}

/// `POST …/query`: the nearest records to each embedding.
#[derive(Serialize)]
pub(super) struct Query<'a> {
    pub include: [Include; 3],
    pub n_results: usize,
    #[serde(serialize_with = "widened")]
    pub query_embeddings: Vec<Vec<f32>>,
    #[serde(rename = "where", skip_serializing_if = "Option::is_none")]
    pub filter: Option<&'a Where>,
}

/// One vector written with each component as the `f64` it widens to:
/// the digits Chroma has always been sent (`0.10000000149011612`, not
/// `0.1`), which parse back to the same `f32`.
struct Wide<'a>(&'a [f32]);

impl Serialize for Wide<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(|&x| f64::from(x)))
    }
}

/// The vectors, each component written as [`Wide`] writes it.
fn widened<S: Serializer>(vectors: &[Vec<f32>], serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_seq(vectors.iter().map(|v| Wide(v)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn filters_are_written_as_chroma_reads_them() {
        let filter = Where::and(vec![
            Where::series("s"),
            Where::kind_in(vec!["entity", "series_entity"]),
        ]);
        assert_eq!(
            serde_json::to_value(&filter).expect("json"),
            json!({"$and": [{"series_id": "s"}, {"kind": {"$in": ["entity", "series_entity"]}}]})
        );
        assert_eq!(
            serde_json::to_value(Where::kind("passage")).expect("json"),
            json!({"kind": "passage"})
        );
    }

    #[test]
    fn vectors_are_sent_with_the_digits_of_their_f64() {
        let body = Query {
            include: [Include::Documents, Include::Metadatas, Include::Distances],
            n_results: 2,
            query_embeddings: vec![vec![0.1, 1.0]],
            filter: None,
        };
        let embeddings: Vec<Vec<f32>> = vec![vec![0.1, 1.0]];
        let before = serde_json::json!({
            "query_embeddings": embeddings,
            "n_results": 2,
            "include": ["documents", "metadatas", "distances"],
        });
        assert_eq!(
            serde_json::to_string(&body).expect("json"),
            before.to_string()
        );
    }

    #[test]
    fn a_page_without_a_filter_names_no_where() {
        let body = Get {
            ids: None,
            include: [Include::Metadatas],
            limit: Some(10),
            offset: Some(0),
            filter: None,
        };
        assert_eq!(
            serde_json::to_string(&body).expect("json"),
            r#"{"include":["metadatas"],"limit":10,"offset":0}"#
        );
    }
}
