//! Who may see or change a thing: one rule for every kind of thing.
//!
//! Each function takes the acting principal ([`Acting`]: an account, and
//! whether it is an administrator) and the thing's id, and answers the row,
//! or [`ModelError::NotFound`] of the thing's [`Kind`]. An absent thing and
//! another account's are refused alike, so ids of others' things are never
//! revealed (spec 4.10: "an inaccessible object and an absent object give
//! the same refusal"; spec 5: a token "sees only the owner's series and
//! requests").
//!
//! Who owns what:
//!
//! * a series, a request, a shared glossary and an API token: the account in
//!   their own `account_id`;
//! * a book (volume): the account that owns its **series**. The book's own
//!   `account_id` is a copy kept for the per-account uniqueness of its
//!   `external_id`; the spec makes the series the unit of visibility ("only
//!   series owned by the token's owner are visible; volumes shared with them
//!   are not", spec 2.8), and a book moves only between series of one
//!   account, so the series' account is the one that decides;
//! * a term: the owner of the book, series or shared glossary it belongs to
//!   (by its layer);
//! * a provider: the installation's, usable by every account (changing the
//!   list of providers is an administrator route, checked by role, not by
//!   id).
//!
//! Administrators: the spec gives them no reach into another account's
//! books, series, requests, glossaries, terms or tokens: a token acts for
//! its owner, and the session routes of tokens and book budgets answer the
//! caller's own. The one exception is the external memory's maintenance
//! (spec 4.9: administrator management of the external memory, and the
//! memory maintenance routes of series and books), which reaches any
//! account's series and books: [`maintained_series`] and [`maintained_book`].
//! The others reach any book through [`administered_book`]: publication
//! to the library folder (the folder is the installation's, chosen by an
//! administrator, who may publish any book into it), and a person's work
//! on a book, its passage edits and validations and its reader notes (an
//! administrator reviews the translations of the installation's
//! translators).

use crate::ModelError;
use crate::entities::{api_token, glossary, project, provider, request, series, term};
use crate::vocab::{ErrorCode, TermLayer};
use sea_orm::{ConnectionTrait, EntityTrait, QuerySelect};

#[cfg(test)]
mod tests;

/// Who acts: an account, and whether it is an administrator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Acting<'a> {
    pub account_id: &'a str,
    pub administrator: bool,
}

impl<'a> Acting<'a> {
    pub fn new(account_id: &'a str, administrator: bool) -> Self {
        Self {
            account_id,
            administrator,
        }
    }

    /// An account acting without administrator rights.
    pub fn account(account_id: &'a str) -> Self {
        Self::new(account_id, false)
    }

    fn owns(&self, owner: &str) -> bool {
        self.account_id == owner
    }
}

/// The kinds of things the rule covers; each is refused with its own code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Series,
    Book,
    Request,
    Glossary,
    Term,
    Token,
    Provider,
}

impl Kind {
    /// The code an absent or foreign thing of this kind is refused with.
    pub fn not_found(self) -> ErrorCode {
        match self {
            Kind::Series => ErrorCode::SeriesNotFound,
            Kind::Book => ErrorCode::VolumeNotFound,
            Kind::Request => ErrorCode::RequestNotFound,
            Kind::Glossary => ErrorCode::GlossaryNotFound,
            Kind::Term => ErrorCode::TermNotFound,
            Kind::Token => ErrorCode::TokenNotFound,
            // A provider is named in a request body, hence 422, not 404.
            Kind::Provider => ErrorCode::UnknownProvider,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Series => "series",
            Kind::Book => "volume",
            Kind::Request => "request",
            Kind::Glossary => "glossary",
            Kind::Term => "term",
            Kind::Token => "token",
            Kind::Provider => "provider",
        }
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the rule answers.
pub type Tenancy<T> = Result<T, ModelError>;

fn refused(kind: Kind) -> ModelError {
    ModelError::NotFound(kind)
}

/// A series the acting account owns.
pub async fn series(
    db: &impl ConnectionTrait,
    who: Acting<'_>,
    id: &str,
) -> Tenancy<series::Model> {
    series::Entity::find_by_id(id.to_owned())
        .one(db)
        .await?
        .filter(|s| who.owns(&s.account_id))
        .ok_or(refused(Kind::Series))
}

/// [`series`], its row locked for the rest of the transaction (on
/// PostgreSQL; a SQLite write transaction holds the whole database).
pub async fn series_locked(
    db: &impl ConnectionTrait,
    who: Acting<'_>,
    id: &str,
) -> Tenancy<series::Model> {
    series::Entity::find_by_id(id.to_owned())
        .lock_exclusive()
        .one(db)
        .await?
        .filter(|s| who.owns(&s.account_id))
        .ok_or(refused(Kind::Series))
}

/// A book of a series the acting account owns, with that series.
pub async fn book_in_series(
    db: &impl ConnectionTrait,
    who: Acting<'_>,
    id: &str,
) -> Tenancy<(project::Model, series::Model)> {
    reach_book(db, id, |s| who.owns(&s.account_id)).await
}

/// A book of a series the acting account owns.
pub async fn book(db: &impl ConnectionTrait, who: Acting<'_>, id: &str) -> Tenancy<project::Model> {
    Ok(book_in_series(db, who, id).await?.0)
}

/// A series whose external memory the acting principal may look at or
/// maintain: its own, or any for an administrator.
pub async fn maintained_series(
    db: &impl ConnectionTrait,
    who: Acting<'_>,
    id: &str,
) -> Tenancy<series::Model> {
    series::Entity::find_by_id(id.to_owned())
        .one(db)
        .await?
        .filter(|s| who.administrator || who.owns(&s.account_id))
        .ok_or(refused(Kind::Series))
}

/// A book whose external memory the acting principal may look at or
/// maintain: one of its own series, or any for an administrator.
pub async fn maintained_book(
    db: &impl ConnectionTrait,
    who: Acting<'_>,
    id: &str,
) -> Tenancy<project::Model> {
    Ok(administered_book(db, who, id).await?.0)
}

/// A book of the acting principal's own series, or any book for an
/// administrator, with its series: the reach of the administrator's
/// exceptions listed in the module doc.
pub async fn administered_book(
    db: &impl ConnectionTrait,
    who: Acting<'_>,
    id: &str,
) -> Tenancy<(project::Model, series::Model)> {
    reach_book(db, id, |s| who.administrator || who.owns(&s.account_id)).await
}

async fn reach_book(
    db: &impl ConnectionTrait,
    id: &str,
    allowed: impl Fn(&series::Model) -> bool,
) -> Tenancy<(project::Model, series::Model)> {
    let book = project::Entity::find_by_id(id.to_owned())
        .one(db)
        .await?
        .ok_or(refused(Kind::Book))?;
    let series = series::Entity::find_by_id(book.series_id.clone())
        .one(db)
        .await?
        .filter(|s| allowed(s))
        .ok_or(refused(Kind::Book))?;
    Ok((book, series))
}

/// A request the acting account made.
pub async fn request(
    db: &impl ConnectionTrait,
    who: Acting<'_>,
    id: &str,
) -> Tenancy<request::Model> {
    request_row(db, who, id, false).await
}

/// [`request`], its row locked for the rest of the transaction.
pub async fn request_locked(
    db: &impl ConnectionTrait,
    who: Acting<'_>,
    id: &str,
) -> Tenancy<request::Model> {
    request_row(db, who, id, true).await
}

async fn request_row(
    db: &impl ConnectionTrait,
    who: Acting<'_>,
    id: &str,
    lock: bool,
) -> Tenancy<request::Model> {
    let mut find = request::Entity::find_by_id(id.to_owned());
    if lock {
        find = find.lock_exclusive();
    }
    find.one(db)
        .await?
        .filter(|r| who.owns(&r.account_id))
        .ok_or(refused(Kind::Request))
}

/// A shared glossary the acting account keeps.
pub async fn glossary(
    db: &impl ConnectionTrait,
    who: Acting<'_>,
    id: &str,
) -> Tenancy<glossary::Model> {
    glossary::Entity::find_by_id(id.to_owned())
        .one(db)
        .await?
        .filter(|g| who.owns(&g.account_id))
        .ok_or(refused(Kind::Glossary))
}

/// An API token of the acting account.
pub async fn token(
    db: &impl ConnectionTrait,
    who: Acting<'_>,
    id: &str,
) -> Tenancy<api_token::Model> {
    api_token::Entity::find_by_id(id.to_owned())
        .one(db)
        .await?
        .filter(|t| who.owns(&t.account_id))
        .ok_or(refused(Kind::Token))
}

/// A provider of the installation: every account may name one.
pub async fn provider(
    db: &impl ConnectionTrait,
    _who: Acting<'_>,
    id: &str,
) -> Tenancy<provider::Model> {
    provider::Entity::find_by_id(id.to_owned())
        .one(db)
        .await?
        .ok_or(refused(Kind::Provider))
}

/// Where a term belongs: a book, a series or a shared glossary, by id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TermHome<'a> {
    pub layer: TermLayer,
    pub id: &'a str,
}

/// Checks that the book, series or shared glossary a term belongs to (or
/// would belong to) is the acting account's; refused with the code of that
/// owner's kind.
pub async fn term_home(
    db: &impl ConnectionTrait,
    who: Acting<'_>,
    home: TermHome<'_>,
) -> Tenancy<()> {
    match home.layer {
        TermLayer::Book => book(db, who, home.id).await.map(drop),
        TermLayer::Series => series(db, who, home.id).await.map(drop),
        TermLayer::Shared => glossary(db, who, home.id).await.map(drop),
    }
}

/// A term of a book, series or shared glossary of the acting account.
pub async fn term(db: &impl ConnectionTrait, who: Acting<'_>, id: &str) -> Tenancy<term::Model> {
    let held = term::Entity::find_by_id(id.to_owned())
        .one(db)
        .await?
        .ok_or(refused(Kind::Term))?;
    let home = match held.layer {
        TermLayer::Book => held.project_id.as_deref(),
        TermLayer::Series => held.series_id.as_deref(),
        TermLayer::Shared => held.glossary_id.as_deref(),
    };
    let Some(home_id) = home else {
        return Err(refused(Kind::Term));
    };
    let home = TermHome {
        layer: held.layer,
        id: home_id,
    };
    match term_home(db, who, home).await {
        Ok(()) => Ok(held),
        Err(ModelError::NotFound(_)) => Err(refused(Kind::Term)),
        Err(e) => Err(e),
    }
}
