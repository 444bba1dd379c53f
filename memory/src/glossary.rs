//! The glossary in force for a volume (spec 2.9): which of the book's,
//! the series' and the shared glossary's terms apply, one per source key.
//!
//! Precedence is book > series > shared, with two exceptions the spec
//! names: a locked shared term is enforced and beats an unlocked term an
//! earlier volume proposed, and a person's series decision or a volume's
//! deliberate override always wins. Ranks, lower wins:
//!
//! | rank | term |
//! |---|---|
//! | 0 | book term decided by a person (the volume's override) |
//! | 1 | series term decided by a person |
//! | 2, 3, 4 | locked book, series, shared term |
//! | 5 | book term from this volume's analysis |
//! | 6 | series term proposed by an earlier volume |
//! | 7 | unlocked shared term |
//!
//! Only accepted terms apply; ties go to the oldest (then smallest id).

use crate::error::MemoryResult;
use crate::normalize::Haystack;
use dragoman_model::entities::{glossary, project, series, term};
use dragoman_model::vocab::{Origin, TermLayer};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter};
use std::collections::HashMap;

/// The rank of a candidate, lower wins; `None` when it never applies.
pub fn rank(term: &term::Model) -> Option<u8> {
    if !term.accepted {
        return None;
    }
    let human = term.origin == Origin::Human;
    Some(match (term.layer, human, term.locked) {
        (TermLayer::Book, true, _) => 0,
        (TermLayer::Series, true, _) => 1,
        (TermLayer::Book, false, true) => 2,
        (TermLayer::Series, false, true) => 3,
        (TermLayer::Shared, _, true) => 4,
        (TermLayer::Book, false, false) => 5,
        (TermLayer::Series, false, false) => 6,
        (TermLayer::Shared, _, false) => 7,
    })
}

/// The winner of each source key among `candidates`, sorted by source
/// (then source key).
pub fn in_force(candidates: &[term::Model]) -> Vec<term::Model> {
    let mut best: HashMap<&str, (u8, &term::Model)> = HashMap::new();
    for candidate in candidates {
        let Some(r) = rank(candidate) else { continue };
        let key = candidate.source_key.as_str();
        let better = match best.get(key) {
            None => true,
            Some((held_rank, held)) => {
                (r, candidate.created_at, &candidate.id) < (*held_rank, held.created_at, &held.id)
            }
        };
        if better {
            best.insert(key, (r, candidate));
        }
    }
    let mut winners: Vec<term::Model> = best.into_values().map(|(_, t)| t.clone()).collect();
    winners.sort_by(|a, b| (&a.source, &a.source_key).cmp(&(&b.source, &b.source_key)));
    winners
}

/// Whether a shared glossary applies to a volume: a language it names must
/// be the volume's.
pub fn glossary_applies(glossary: &glossary::Model, volume: &project::Model) -> bool {
    glossary
        .source_language
        .as_deref()
        .is_none_or(|l| l == volume.source_language)
        && glossary
            .target_language
            .as_deref()
            .is_none_or(|l| l == volume.target_language)
}

/// Every term that may apply to the volume: its own, its series', and its
/// series' shared glossary's when that glossary applies to its languages.
pub async fn candidates(
    db: &impl ConnectionTrait,
    volume: &project::Model,
    series: &series::Model,
) -> MemoryResult<Vec<term::Model>> {
    let mut terms = term::Entity::find()
        .filter(term::Column::Layer.eq(TermLayer::Book))
        .filter(term::Column::ProjectId.eq(volume.id.as_str()))
        .all(db)
        .await?;
    terms.extend(
        term::Entity::find()
            .filter(term::Column::Layer.eq(TermLayer::Series))
            .filter(term::Column::SeriesId.eq(series.id.as_str()))
            .all(db)
            .await?,
    );
    if let Some(glossary_id) = &series.shared_glossary_id
        && let Some(glossary) = glossary::Entity::find_by_id(glossary_id.clone())
            .one(db)
            .await?
        && glossary_applies(&glossary, volume)
    {
        terms.extend(
            term::Entity::find()
                .filter(term::Column::Layer.eq(TermLayer::Shared))
                .filter(term::Column::GlossaryId.eq(glossary.id.as_str()))
                .all(db)
                .await?,
        );
    }
    Ok(terms)
}

/// The terms in force for the volume, sorted by source.
pub async fn load_in_force(
    db: &impl ConnectionTrait,
    volume: &project::Model,
    series: &series::Model,
) -> MemoryResult<Vec<term::Model>> {
    Ok(in_force(&candidates(db, volume, series).await?))
}

/// The terms among `terms` whose source occurs in the text
/// (case-insensitively, on word boundaries); `text` is a case-insensitive
/// haystack, so the terms' `source_key` is searched as it is.
pub fn occurring<'a>(terms: &'a [term::Model], text: &Haystack) -> Vec<&'a term::Model> {
    terms
        .iter()
        .filter(|t| text.contains_normalized(&t.source_key))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::normalize::match_key;

    struct Case {
        rule: &'static str,
        terms: Vec<term::Model>,
        /// The translation that must win; `None` when no term applies.
        winner: Option<&'static str>,
    }

    fn term(layer: TermLayer, origin: Origin, locked: bool, translation: &str) -> term::Model {
        term_at(layer, origin, locked, true, translation, 0)
    }

    fn term_at(
        layer: TermLayer,
        origin: Origin,
        locked: bool,
        accepted: bool,
        translation: &str,
        created_at: i64,
    ) -> term::Model {
        term::Model {
            id: format!("{layer}-{origin}-{locked}-{translation}"),
            layer,
            project_id: (layer == TermLayer::Book).then(|| "v".into()),
            series_id: (layer == TermLayer::Series).then(|| "s".into()),
            glossary_id: (layer == TermLayer::Shared).then(|| "g".into()),
            source: "Dark Lord".into(),
            source_key: match_key("Dark Lord"),
            translation: translation.into(),
            category: String::new(),
            description: String::new(),
            locked,
            accepted,
            origin,
            proposed_by: None,
            passage_id: None,
            evidence: None,
            occurrences: 1,
            created_at,
            updated_at: created_at,
        }
    }

    use Origin::{Analysis, Human};
    use TermLayer::{Book, Series, Shared};

    #[test]
    fn precedence_follows_spec_2_9_case_by_case() {
        let cases = vec![
            Case {
                rule: "book beats series beats shared (unlocked, analysis)",
                terms: vec![
                    term(Shared, Analysis, false, "shared"),
                    term(Series, Analysis, false, "series"),
                    term(Book, Analysis, false, "book"),
                ],
                winner: Some("book"),
            },
            Case {
                rule: "series beats shared (unlocked)",
                terms: vec![
                    term(Shared, Human, false, "shared"),
                    term(Series, Analysis, false, "series"),
                ],
                winner: Some("series"),
            },
            Case {
                rule: "a shared term applies when nothing else does",
                terms: vec![term(Shared, Human, false, "shared")],
                winner: Some("shared"),
            },
            Case {
                rule: "a locked shared term beats an unlocked term of an earlier volume",
                terms: vec![
                    term(Series, Analysis, false, "earlier volume"),
                    term(Shared, Human, true, "locked shared"),
                ],
                winner: Some("locked shared"),
            },
            Case {
                rule: "a locked shared term beats this volume's own analysis proposal",
                terms: vec![
                    term(Book, Analysis, false, "proposal"),
                    term(Shared, Human, true, "locked shared"),
                ],
                winner: Some("locked shared"),
            },
            Case {
                rule: "a person's series decision beats a locked shared term",
                terms: vec![
                    term(Shared, Human, true, "locked shared"),
                    term(Series, Human, false, "series decision"),
                ],
                winner: Some("series decision"),
            },
            Case {
                rule: "a volume's override beats a locked shared term",
                terms: vec![
                    term(Shared, Human, true, "locked shared"),
                    term(Book, Human, false, "override"),
                ],
                winner: Some("override"),
            },
            Case {
                rule: "a volume's override beats a person's series decision",
                terms: vec![
                    term(Series, Human, true, "series decision"),
                    term(Book, Human, false, "override"),
                ],
                winner: Some("override"),
            },
            Case {
                rule: "locked book beats locked series beats locked shared",
                terms: vec![
                    term(Shared, Human, true, "shared"),
                    term(Series, Analysis, true, "series"),
                    term(Book, Analysis, true, "book"),
                ],
                winner: Some("book"),
            },
            Case {
                rule: "an unaccepted term never applies, even locked and human",
                terms: vec![
                    term_at(Book, Human, true, false, "unaccepted", 0),
                    term(Shared, Analysis, false, "shared"),
                ],
                winner: Some("shared"),
            },
            Case {
                rule: "unaccepted terms alone give nothing",
                terms: vec![
                    term_at(Book, Human, true, false, "a", 0),
                    term_at(Series, Human, true, false, "b", 0),
                ],
                winner: None,
            },
            Case {
                rule: "equal rank: the oldest wins",
                terms: vec![
                    term_at(Book, Analysis, false, true, "newer", 20),
                    term_at(Book, Analysis, false, true, "older", 10),
                ],
                winner: Some("older"),
            },
        ];
        for case in cases {
            let winners = in_force(&case.terms);
            let got = winners.first().map(|t| t.translation.as_str());
            assert_eq!(got, case.winner, "{}", case.rule);
            assert!(winners.len() <= 1, "{}: one winner per key", case.rule);
        }
    }

    #[test]
    fn each_source_key_has_its_own_winner_sorted_by_source() {
        let mut sword = term(Series, Analysis, false, "épée");
        sword.source = "Sword".into();
        sword.source_key = match_key("Sword");
        let mut lord = term(Book, Analysis, false, "Seigneur");
        lord.source = "  dark   LORD".into();
        let winners = in_force(&[sword, lord, term(Shared, Human, false, "x")]);
        let got: Vec<&str> = winners.iter().map(|t| t.translation.as_str()).collect();
        assert_eq!(got, vec!["Seigneur", "épée"]);
    }

    #[test]
    fn occurring_terms_match_on_word_boundaries() {
        let terms = vec![term(Book, Human, false, "Seigneur")];
        assert_eq!(
            occurring(&terms, &Haystack::new("Then the DARK lord spoke.", false)).len(),
            1
        );
        assert!(occurring(&terms, &Haystack::new("The darklord", false)).is_empty());
    }
}

#[cfg(test)]
mod loader_tests {
    use crate::backend::MemoryBackend;
    use crate::domain::TermInput;
    use crate::testing::Fixture;
    use dragoman_model::entities::{glossary, series};
    use dragoman_model::vocab::TermLayer;
    use sea_orm::{ActiveModelTrait, Set};

    async fn shared_glossary(fx: &Fixture, name: &str, pair: Option<(&str, &str)>) -> String {
        glossary::ActiveModel {
            id: Set(name.into()),
            account_id: Set(fx.account.clone()),
            name: Set(name.into()),
            description: Set(String::new()),
            source_language: Set(pair.map(|p| p.0.to_owned())),
            target_language: Set(pair.map(|p| p.1.to_owned())),
            created_at: Set(0),
            updated_at: Set(0),
        }
        .insert(&fx.db)
        .await
        .expect("glossary")
        .id
    }

    async fn follow(fx: &Fixture, series: &series::Model, glossary: &str) {
        let mut model: series::ActiveModel = series.clone().into();
        model.shared_glossary_id = Set(Some(glossary.to_owned()));
        model.update(&fx.db).await.expect("follow");
    }

    #[tokio::test]
    async fn a_shared_glossary_applies_only_to_its_language_pair() {
        let fx = Fixture::new().await;
        let mut translations = Vec::new();
        for (name, pair) in [
            ("any", None),
            ("en-fr", Some(("en", "fr"))),
            ("en-de", Some(("en", "de"))),
        ] {
            let glossary = shared_glossary(&fx, name, pair).await;
            let series = fx.series(name).await;
            follow(&fx, &series, &glossary).await;
            let volume = fx.volume(&series, 1).await;
            fx.backend
                .put_term(
                    None,
                    &TermInput {
                        layer: TermLayer::Shared,
                        owner_id: glossary,
                        source: "mana".into(),
                        translation: format!("mana ({name})"),
                        category: String::new(),
                        description: String::new(),
                        locked: true,
                        accepted: true,
                    },
                )
                .await
                .expect("shared term");
            let terms = fx
                .backend
                .terms_in_force(None, &volume.id)
                .await
                .expect("terms");
            translations.push(terms.into_iter().map(|t| t.translation).collect::<Vec<_>>());
        }
        assert_eq!(
            translations,
            vec![
                vec!["mana (any)".to_owned()],
                vec!["mana (en-fr)".to_owned()],
                Vec::new(),
            ]
        );
    }
}
