//! The cheaper provider a job moves to near its budget (spec 8, "Token
//! budget rules").
//!
//! A provider's price is `price_input + price_output`, both per million
//! tokens: the sum weighs prompt and completion alike, which is what a
//! translation spends (its answer is about as long as its prompt's
//! passages). A provider without both prices has no known price: it is
//! never "cheaper", and a provider without one has nothing cheaper than it
//! (unknown never passes for free, nor for dear).
//!
//! The choice: the provider's own `fallback_provider_id` when it names a
//! provider that is cheaper; otherwise the cheapest other provider whose
//! price is known and lower (by name on a tie, so the choice is stable);
//! otherwise none.

use crate::entities::provider;
use sea_orm::{ConnectionTrait, DbErr, EntityTrait, QueryOrder};

/// The provider's price per million prompt plus completion tokens; none
/// when either price is unknown.
pub fn price(p: &provider::Model) -> Option<f64> {
    Some(p.price_input? + p.price_output?)
}

/// Whether `candidate` is cheaper than `current`: both prices known and
/// `candidate`'s lower.
pub fn is_cheaper(candidate: &provider::Model, current: &provider::Model) -> bool {
    match (price(candidate), price(current)) {
        (Some(candidate), Some(current)) => candidate < current,
        _ => false,
    }
}

/// The provider a job on `current` moves to near its budget, if any (see
/// the module doc).
pub async fn cheaper_fallback(
    db: &impl ConnectionTrait,
    current: &provider::Model,
) -> Result<Option<provider::Model>, DbErr> {
    if price(current).is_none() {
        return Ok(None);
    }
    if let Some(id) = &current.fallback_provider_id
        && id != &current.id
        && let Some(own) = provider::Entity::find_by_id(id.clone()).one(db).await?
        && is_cheaper(&own, current)
    {
        return Ok(Some(own));
    }
    let providers = provider::Entity::find()
        .order_by_asc(provider::Column::Name)
        .all(db)
        .await?;
    Ok(providers
        .into_iter()
        .filter(|p| p.id != current.id && is_cheaper(p, current))
        .filter_map(|p| price(&p).map(|price| (price, p)))
        .fold(None, |best: Option<(f64, provider::Model)>, (price, p)| {
            match best {
                // Strictly lower only: the first by name keeps a tie.
                Some((best_price, _)) if price >= best_price => best,
                _ => Some((price, p)),
            }
        })
        .map(|(_, p)| p))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::ProviderKind;
    use sea_orm::{ActiveModelTrait, ConnectionTrait, Database, DatabaseConnection, Schema, Set};

    async fn db() -> DatabaseConnection {
        let db = Database::connect("sqlite::memory:").await.expect("sqlite");
        let backend = db.get_database_backend();
        let schema = Schema::new(backend);
        db.execute(&schema.create_table_from_entity(provider::Entity))
            .await
            .expect("providers table");
        db
    }

    async fn add(
        db: &DatabaseConnection,
        name: &str,
        prices: Option<(f64, f64)>,
        fallback: Option<&str>,
    ) -> provider::Model {
        provider::ActiveModel {
            id: Set(format!("id-{name}")),
            name: Set(name.into()),
            kind: Set(ProviderKind::OpenAi),
            model: Set("m".into()),
            base_url: Set("http://127.0.0.1:9".into()),
            api_key_env: Set(String::new()),
            price_input: Set(prices.map(|p| p.0)),
            price_output: Set(prices.map(|p| p.1)),
            price_cached_input: Set(None),
            capacity: Set(1),
            batch_discount: Set(0.5),
            fallback_provider_id: Set(fallback.map(|f| format!("id-{f}"))),
            created_at: Set(0),
            updated_at: Set(0),
        }
        .insert(db)
        .await
        .expect("provider")
    }

    fn name(found: Option<provider::Model>) -> Option<String> {
        found.map(|p| p.name)
    }

    #[tokio::test]
    async fn the_cheapest_known_lower_price_is_chosen() {
        let db = db().await;
        let dear = add(&db, "dear", Some((10.0, 30.0)), None).await;
        add(&db, "mid", Some((5.0, 5.0)), None).await;
        add(&db, "cheap", Some((1.0, 2.0)), None).await;
        add(&db, "also-cheap", Some((2.0, 1.0)), None).await;
        add(&db, "unpriced", None, None).await;
        let found = cheaper_fallback(&db, &dear).await.expect("query");
        // A tie goes to the first by name.
        assert_eq!(name(found), Some("also-cheap".into()));
    }

    #[tokio::test]
    async fn the_own_fallback_wins_when_cheaper() {
        let db = db().await;
        add(&db, "mid", Some((5.0, 5.0)), None).await;
        add(&db, "cheap", Some((1.0, 1.0)), None).await;
        let dear = add(&db, "dear", Some((10.0, 30.0)), Some("mid")).await;
        assert_eq!(
            name(cheaper_fallback(&db, &dear).await.expect("query")),
            Some("mid".into())
        );
        // Named but dearer: the cheapest other takes its place.
        let odd = add(&db, "odd", Some((2.0, 2.0)), Some("mid")).await;
        assert_eq!(
            name(cheaper_fallback(&db, &odd).await.expect("query")),
            Some("cheap".into())
        );
    }

    #[tokio::test]
    async fn unknown_prices_are_never_cheaper() {
        let db = db().await;
        add(&db, "free-looking", None, None).await;
        add(&db, "half", Some((1.0, 1.0)), None).await;
        let unpriced = add(&db, "unpriced", None, Some("half")).await;
        assert_eq!(cheaper_fallback(&db, &unpriced).await.expect("query"), None);
        let cheapest = add(&db, "cheapest", Some((0.1, 0.1)), Some("free-looking")).await;
        assert_eq!(cheaper_fallback(&db, &cheapest).await.expect("query"), None);
        let half_input = add(&db, "half-input", Some((0.0, 0.0)), None).await;
        assert!(is_cheaper(&half_input, &cheapest));
        let mut partial = half_input.clone();
        partial.price_output = None;
        assert!(!is_cheaper(&partial, &cheapest));
        assert_eq!(price(&partial), None);
    }
}
