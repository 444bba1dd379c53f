//! What people add to a book: where a reader note goes, what a job does,
//! and where a book's publication to the library stands.

use sea_orm::sea_query::StringLen;

vocabulary! {
    /// `note_placement` of a reader note: at the term's first occurrence in
    /// the translated book, at each occurrence, or nowhere (kept, not shown).
    NotePlacement {
        First = "first",
        Each = "each",
        Never = "never",
    }
}

vocabulary! {
    /// `operation` of a job: a translation of the book, or the model pass
    /// that proposes reader notes (`translator_notes`, spec 4.9).
    JobOperation {
        Translate = "translate",
        TranslatorNotes = "translator_notes",
    }
}

vocabulary! {
    /// `status` of a book's publication to the library folder: `none`
    /// before it is asked for, `pending` while it waits for (another)
    /// attempt, then `published` or, its attempts used, `failed`.
    PublicationStatus {
        None = "none",
        Pending = "pending",
        Published = "published",
        Failed = "failed",
    }
}
