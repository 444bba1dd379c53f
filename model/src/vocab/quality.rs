//! The quality vocabulary (spec 2.6, 2.7): the signals that lower a
//! passage's score, the bands of scores, the severity of an issue or a
//! reviewer's flag, and what the autopilot decides and ends with.

use sea_orm::sea_query::StringLen;

vocabulary! {
    /// Something found wrong with a passage's translation. Each signal of a
    /// passage carries a count and the penalty it cost (spec 2.7
    /// `review_first`).
    SignalCode {
        /// The translation's placeholders or markup differ from the source's.
        MarkupMismatch = "markup_mismatch",
        /// The translation is far shorter or longer than the language pair
        /// makes expected.
        LengthRatio = "length_ratio",
        /// The translation is the source text itself.
        Unchanged = "unchanged",
        /// The translation reads as another language than the target.
        WrongLanguage = "wrong_language",
        /// A locked term of the glossary in force is missing or altered.
        LockedTerm = "locked_term",
        /// A term of the glossary in force (not locked) is rendered otherwise.
        GlossaryTerm = "glossary_term",
        /// A character's name differs from the memory's canonical rendering.
        NameDrift = "name_drift",
        /// The answer is a refusal or an apology instead of a translation.
        Refusal = "refusal",
        /// The translation stops before the source does.
        Truncated = "truncated",
        /// The review pass flagged it.
        ReviewerFlag = "reviewer_flag",
        /// The passage has no translation at all.
        Untranslated = "untranslated",
        /// A number, date or time of the source is missing or changed.
        NumberMismatch = "number_mismatch",
        /// A sentence of the source has no counterpart in the translation.
        Omission = "omission",
        /// The translation has a sentence the source does not.
        Addition = "addition",
        /// A sentence of the translation is still in the source language.
        PartialTranslation = "partial_translation",
        /// Two neighbouring sentences of the translation are in each
        /// other's place.
        SentenceOrder = "sentence_order",
        /// A URL or e-mail address of the source is missing or altered.
        UrlMismatch = "url_mismatch",
        /// Quotes or brackets unbalanced, an ellipsis or the final
        /// punctuation lost.
        Punctuation = "punctuation",
        /// A word written twice in a row where the source has no such
        /// repetition.
        RepeatedWord = "repeated_word",
        /// Doubled spaces or a space before punctuation the target
        /// language does not put one before.
        Whitespace = "whitespace",
    }
}

impl SignalCode {
    /// Signals that make a translation unusable: the passage is delivered
    /// in its source text unless a later attempt clears them.
    pub fn is_hard(self) -> bool {
        matches!(
            self,
            SignalCode::MarkupMismatch
                | SignalCode::Unchanged
                | SignalCode::WrongLanguage
                | SignalCode::Refusal
                | SignalCode::Truncated
                | SignalCode::Untranslated
        )
    }

    /// Signals the autopilot acts on whatever the score: the hard ones and
    /// a locked term, which a delivered translation must honour.
    pub fn must_fix(self) -> bool {
        self.is_hard() || self == SignalCode::LockedTerm
    }

    /// How serious an issue the code makes on its own: an unusable
    /// translation is critical; a fault of meaning (a number, a sentence
    /// lost, added or left untranslated, a name, a term, a link) major;
    /// form minor. `None` for the codes whose severity is their penalty's
    /// (a length outside the band, a reviewer's flags).
    pub fn severity(self) -> Option<Severity> {
        use SignalCode::*;
        match self {
            MarkupMismatch | Unchanged | WrongLanguage | Refusal | Truncated | Untranslated => {
                Some(Severity::Critical)
            }
            LockedTerm | GlossaryTerm | NameDrift | NumberMismatch | Omission | Addition
            | PartialTranslation | SentenceOrder | UrlMismatch => Some(Severity::Major),
            Punctuation | RepeatedWord | Whitespace => Some(Severity::Minor),
            LengthRatio | ReviewerFlag => None,
        }
    }
}

vocabulary! {
    /// A score's band (spec 2.7): good from 85, fair from 70, weak from 50,
    /// poor below.
    Band {
        Good = "good",
        Fair = "fair",
        Weak = "weak",
        Poor = "poor",
    }
}

impl Band {
    /// The band of a score from 0 to 100.
    pub fn of(score: i32) -> Band {
        match score {
            s if s >= 85 => Band::Good,
            s if s >= 70 => Band::Fair,
            s if s >= 50 => Band::Weak,
            _ => Band::Poor,
        }
    }
}

vocabulary! {
    /// How serious an issue of a chapter (spec 2.6 `issues[].severity`) or
    /// a reviewer's flag is.
    Severity {
        /// Worth a look; the translation is delivered.
        Minor = "minor",
        /// Likely wrong; the translation is delivered but flagged.
        Major = "major",
        /// The translation cannot be delivered as it is.
        Critical = "critical",
    }
}

vocabulary! {
    /// What the autopilot did with one passage: a logged decision
    /// (spec 2.7 `decisions.autopilot`).
    AutopilotAction {
        /// Translated again on its own, with its batch's context.
        RetranslateAlone = "retranslate_alone",
        /// Translated again with the passages around it in the context.
        RetranslateWithContext = "retranslate_with_context",
        /// Translated again by the stronger provider.
        RetranslateStronger = "retranslate_stronger",
        /// A locked term put back by a repair call.
        RepairTerm = "repair_term",
        /// Kept as translated, with what is left recorded for review.
        Accept = "accept",
        /// Delivered in its source text (a residual), with the reason.
        Retain = "retain",
    }
}

vocabulary! {
    /// How the autopilot ended (spec 2.7 `autopilot.outcome`).
    AutopilotOutcome {
        /// No passage needed it.
        Clean = "clean",
        /// Every passage it took up was fixed.
        Resolved = "resolved",
        /// Some passages are left: retained in source text or accepted
        /// with a check (spec 4.5: the result is then not `complete`).
        Unresolved = "unresolved",
    }
}
