//! The narrative memory's vocabulary (spec 2.9, 2.11): glossary layers,
//! provenance, kinds of things a book names, and aspects of a Bible.

use sea_orm::sea_query::StringLen;

vocabulary! {
    /// Which glossary a term belongs to. Precedence (spec 2.9): book >
    /// series > shared, with the exceptions the memory service applies.
    TermLayer {
        /// The volume's own terms.
        Book = "book",
        /// Terms of the series, proposed by its volumes or decided by a person.
        Series = "series",
        /// A shared glossary the series follows.
        Shared = "shared",
    }
}

vocabulary! {
    /// Provenance of a memory item (spec 2.11 `origin`).
    Origin {
        /// Written by the model during analysis.
        Analysis = "analysis",
        /// Written or validated by a person.
        Human = "human",
    }
}

vocabulary! {
    /// What a named thing of a book is (spec 2.11 character sheets and `world`).
    EntityKind {
        Character = "character",
        Place = "place",
        Organisation = "organisation",
        Object = "object",
    }
}

vocabulary! {
    /// One aspect of a Book or Series Bible.
    BibleAspect {
        /// Literary, familiar, formal…
        Register = "register",
        Tone = "tone",
        /// The narration's tense.
        Tense = "tense",
        /// Forms of address between characters.
        Address = "address",
        /// A recurring style choice.
        Style = "style",
    }
}

vocabulary! {
    /// Why a passage's translation was changed outside a translation job
    /// (a row of `passage_versions`).
    VersionReason {
        /// A rendering replaced by `propagate_term`.
        PropagateTerm = "propagate_term",
        /// A person's edit of the passage.
        PersonEdit = "person_edit",
    }
}
