//! Choices a request, a token or an administrator makes: input kinds,
//! priorities, pipeline options, actions, stages, events, provider kinds,
//! series and volume kinds, budget periods.

use sea_orm::sea_query::StringLen;

vocabulary! {
    /// What a request sent (spec 2.1 `input`).
    InputKind {
        Epub = "epub",
        Txt = "txt",
        Docx = "docx",
        Json = "json",
    }
}

vocabulary! {
    /// Queue priority of a request, and the ceilings of tokens and accounts
    /// (spec 8). Ordered: low < normal < high.
    #[derive(Default)]
    Priority {
        Low = "low",
        #[default]
        Normal = "normal",
        High = "high",
    }
}

vocabulary! {
    /// `quality` (spec 2.4, 2.5).
    #[derive(Default)]
    Quality {
        Fast = "fast",
        #[default]
        Normal = "normal",
        High = "high",
        Maximum = "maximum",
    }
}

vocabulary! {
    /// `context_backend` (spec 1, 2.4, 2.5).
    #[derive(Default)]
    ContextBackend {
        #[default]
        Internal = "internal",
        External = "external",
        Hybrid = "hybrid",
    }
}

vocabulary! {
    /// `analysis_mode` (spec 2.5).
    AnalysisMode {
        Parallel = "parallel",
        Strict = "strict",
    }
}

vocabulary! {
    /// How a TXT or DOCX upload is cut into chapters (spec 2.5 `split`).
    #[derive(Default)]
    Split {
        /// The whole file is one chapter, numbered from its name.
        #[default]
        None = "none",
        /// The file is cut at its chapter headings.
        Headings = "headings",
    }
}

vocabulary! {
    /// What a client may do to a running request (spec 4.4).
    ControlAction {
        Pause = "pause",
        Resume = "resume",
        Cancel = "cancel",
    }
}

vocabulary! {
    /// Actions on a whole series (spec 4.7): `start` launches its volumes'
    /// translation; `pause` also suspends the series until `resume`.
    SeriesAction {
        Start = "start",
        Pause = "pause",
        Resume = "resume",
        Cancel = "cancel",
    }
}

vocabulary! {
    /// Stages of a request (spec 2.2), in the order they run.
    Stage {
        Import = "import",
        Analysis = "analysis",
        Translation = "translation",
        Review = "review",
        Export = "export",
    }
}

vocabulary! {
    /// Webhook events (spec 6), the `X-Service-Event` header.
    CallbackEvent {
        Finished = "translation_request.finished",
        ChaptersTranslated = "chapters.translated",
    }
}

impl CallbackEvent {
    /// Events a request may ask for in `callback_events` (the final one is
    /// always sent).
    pub const REQUESTABLE: [CallbackEvent; 1] = [CallbackEvent::ChaptersTranslated];
}

vocabulary! {
    /// Provider kinds (spec 2.10).
    ProviderKind {
        /// Chat completions, any compatible server.
        OpenAi = "openai",
        OpenAiDirect = "openai_direct",
        OpenAiResponses = "openai_responses",
        Anthropic = "anthropic",
        CodexChatgpt = "codex_chatgpt",
    }
}

vocabulary! {
    /// How a series is organised (spec 2.8 leaves the values to us).
    SeriesKind {
        /// Numbered volumes.
        Numbered = "numbered",
        /// A webnovel's continuous flow of chapters.
        Continuous = "continuous",
    }
}

vocabulary! {
    /// What a project of a series is (spec 2.8 `project_kind`).
    ProjectKind {
        Volume = "volume",
        /// The continuous chapter container of a webnovel.
        Continuous = "continuous",
    }
}

vocabulary! {
    /// The window of a token's spending cap (spec 8).
    BudgetPeriod {
        /// Calendar month in UTC.
        Month = "month",
        /// The token's whole life.
        Total = "total",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priorities_are_ordered() {
        assert!(Priority::Low < Priority::Normal && Priority::Normal < Priority::High);
        assert_eq!(Priority::default(), Priority::Normal);
    }

    #[test]
    fn provider_kinds_are_the_specs() {
        assert_eq!(
            ProviderKind::expected(),
            "openai, openai_direct, openai_responses, anthropic, codex_chatgpt"
        );
    }
}
