//! The usage vocabulary (spec 2.7 `usage`): the stage of the pipeline a
//! provider call was made for, by which the report splits its usage.

use sea_orm::sea_query::StringLen;

vocabulary! {
    /// What a recorded provider call was for. A passage or title served
    /// from the translation memory stands for its translation call, so its
    /// record is of the `translation` stage.
    UsageStage {
        /// Reading the text for the narrative memory: characters, terms,
        /// the Bible.
        Analysis = "analysis",
        /// Translating the passages and the chapter titles.
        Translation = "translation",
        /// The final review of the translations.
        Review = "review",
        /// The autopilot's retranslations of weak passages.
        Autopilot = "autopilot",
    }
}
