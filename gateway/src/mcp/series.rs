//! Tools on series and their volumes: reading, creating, changing,
//! attaching books, deleting, where volumes disagree, and whole-series job
//! actions.

use super::McpTools;
use super::answer::answer;
use super::arguments::Parameters;
use super::confirm::confirmed;
use super::page::Page;
use crate::error::{ApiError, ApiResult};
use crate::operations;
use crate::operations::series::{NewSeries, SeriesChanges, VolumePlace};
use dragoman_model::vocab::{ErrorCode, Issue, IssueContext, IssueKind, SeriesAction, SeriesKind};
use rmcp::model::CallToolResult;
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, schemars, tool, tool_router};
use serde::Deserialize;

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SeriesRef {
    /// Id of one of your series.
    series_id: String,
}

/// How a series is organised.
#[derive(Debug, Clone, Copy, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Numbered volumes (books).
    Numbered,
    /// One continuous flow of chapters (a webnovel).
    Continuous,
}

impl From<Kind> for SeriesKind {
    fn from(kind: Kind) -> SeriesKind {
        match kind {
            Kind::Numbered => SeriesKind::Numbered,
            Kind::Continuous => SeriesKind::Continuous,
        }
    }
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateSeries {
    /// The series' name, 1 to 500 characters, unique among your series
    /// (requests that name it are filed in it). Example: "The Expanse".
    name: String,
    /// `numbered` (default) or `continuous`.
    #[serde(default)]
    kind: Option<Kind>,
    /// Language of the books' text, a BCP 47 tag such as "en". Books in
    /// another language cannot be attached.
    #[serde(default)]
    source_language: Option<String>,
    /// Language they are translated into, such as "fr".
    #[serde(default)]
    target_language: Option<String>,
    /// Name of the provider that translates the series' books by default
    /// (see `list_providers`).
    #[serde(default)]
    default_provider: Option<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateSeries {
    /// Id of one of your series.
    series_id: String,
    /// New name, 1 to 500 characters, unique among your series.
    #[serde(default)]
    name: Option<String>,
    /// `numbered` or `continuous`.
    #[serde(default)]
    kind: Option<Kind>,
    /// New source language (BCP 47); every volume of the series must have it.
    #[serde(default)]
    source_language: Option<String>,
    /// New target language (BCP 47); every volume of the series must have it.
    #[serde(default)]
    target_language: Option<String>,
    /// Name of the new default provider.
    #[serde(default)]
    default_provider: Option<String>,
    /// true removes the default provider; never with `default_provider`.
    #[serde(default)]
    clear_default_provider: Option<bool>,
    /// true archives the series (it takes no new work nor book), false
    /// takes it back.
    #[serde(default)]
    archived: Option<bool>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AttachVolume {
    /// Id of one of your books (any series); it moves with its requests.
    book_id: String,
    /// Id of one of your series, not archived, to put it in.
    series_id: String,
    /// Its volume number, 1 to 10000, free in that series. Give this or
    /// `volume_label`, never both.
    #[serde(default)]
    volume_number: Option<i32>,
    /// A label instead of a number, 1 to 200 characters, free in that
    /// series; "Vol. 0.5" sorts before volume 1, a label without a
    /// leading number after every numbered volume.
    #[serde(default)]
    volume_label: Option<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeleteSeries {
    /// Id of one of your series; it must hold no volume any more (delete or
    /// attach its books elsewhere first).
    series_id: String,
    /// Must be the JSON boolean true: the series, its terms, characters
    /// and Series Bible are deleted for good.
    #[serde(default)]
    confirm: Option<bool>,
}

/// A whole-series job action.
#[derive(Debug, Clone, Copy, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Start translating every volume with work left, in reading order
    /// (needs `pipeline:start`).
    Start,
    /// Pause every job and suspend the series.
    Pause,
    /// Lift the suspension and resume the paused jobs this token started.
    Resume,
    /// Cancel every request that has not ended.
    Cancel,
}

impl From<Action> for SeriesAction {
    fn from(action: Action) -> SeriesAction {
        match action {
            Action::Start => SeriesAction::Start,
            Action::Pause => SeriesAction::Pause,
            Action::Resume => SeriesAction::Resume,
            Action::Cancel => SeriesAction::Cancel,
        }
    }
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ControlSeries {
    /// Id of one of your series.
    series_id: String,
    /// `start`, `pause`, `resume` or `cancel`.
    action: Action,
    /// With `start` on a suspended series: resume it first instead of
    /// refusing (default false).
    #[serde(default)]
    resume_if_paused: Option<bool>,
}

/// Exactly one of a number and a label: the arguments' shape, located.
fn place(number: Option<i32>, label: Option<String>) -> ApiResult<VolumePlace> {
    let issue = match (number, label) {
        (Some(n), None) => return Ok(VolumePlace::Number(n)),
        (None, Some(l)) => return Ok(VolumePlace::Label(l)),
        (Some(_), Some(_)) => Issue::at("arguments", "volume_label", IssueKind::ValueError)
            .with_ctx(IssueContext::new().conflicts_with("volume_number")),
        (None, None) => Issue::at("arguments", "volume_number", IssueKind::Missing)
            .with_ctx(IssueContext::new().fields("volume_number or volume_label")),
    };
    Err(ApiError::new(ErrorCode::InvalidRequest).with_issues(vec![issue]))
}

#[tool_router(router = series_tools, vis = "pub(super)")]
impl McpTools {
    #[tool(description = "List your series (name order), paginated with the total stated.")]
    async fn list_series(
        &self,
        Parameters(page): Parameters<Page>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let caller = self.caller(&context)?;
        Ok(answer(
            async { page?.cut(operations::series::list(&self.state, &caller).await?) }.await,
        ))
    }

    #[tool(description = "One of your series with its volumes in reading order.")]
    async fn get_series(
        &self,
        Parameters(args): Parameters<SeriesRef>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let caller = self.caller(&context)?;
        Ok(answer(
            async { operations::series::detail(&self.state, &caller, args?.series_id).await }.await,
        ))
    }

    #[tool(
        description = "Where the volumes of one of your series disagree: a source term rendered differently in different volumes, characters whose rendering differs between volumes, and per volume how many translated passages miss a locked term in force. Lists are cut at 200 entries with their totals stated."
    )]
    async fn series_consistency(
        &self,
        Parameters(args): Parameters<SeriesRef>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let caller = self.caller(&context)?;
        Ok(answer(
            async { operations::series::consistency(&self.state, &caller, args?.series_id).await }
                .await,
        ))
    }

    #[tool(
        description = "Create an empty series (no volume yet); answers the series like get_series. Put books in it with attach_volume."
    )]
    async fn create_series(
        &self,
        Parameters(args): Parameters<CreateSeries>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let caller = self.caller(&context)?;
        Ok(answer(
            async {
                let args = args?;
                let new = NewSeries {
                    name: args.name,
                    kind: args.kind.map_or(SeriesKind::Numbered, SeriesKind::from),
                    source_language: args.source_language,
                    target_language: args.target_language,
                    default_provider: args.default_provider,
                };
                operations::series::create(&self.state, &caller, new).await
            }
            .await,
        ))
    }

    #[tool(
        description = "Change one of your series: only the fields given change (name, kind, languages, default provider, archived). Answers the series like get_series."
    )]
    async fn update_series(
        &self,
        Parameters(args): Parameters<UpdateSeries>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let caller = self.caller(&context)?;
        Ok(answer(
            async {
                let args = args?;
                let changes = SeriesChanges {
                    name: args.name,
                    kind: args.kind.map(SeriesKind::from),
                    source_language: args.source_language,
                    target_language: args.target_language,
                    default_provider: args.default_provider,
                    clear_default_provider: args.clear_default_provider.unwrap_or(false),
                    archived: args.archived,
                };
                operations::series::update(&self.state, &caller, args.series_id, changes).await
            }
            .await,
        ))
    }

    #[tool(
        description = "Put one of your books in one of your series at a volume number or a label (never both), moving it from its current series. Refused while the book has a request that has not ended. Answers the target series like get_series."
    )]
    async fn attach_volume(
        &self,
        Parameters(args): Parameters<AttachVolume>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let caller = self.caller(&context)?;
        Ok(answer(
            async {
                let args = args?;
                let place = place(args.volume_number, args.volume_label)?;
                operations::series::attach(
                    &self.state,
                    &caller,
                    args.book_id,
                    args.series_id,
                    place,
                )
                .await
            }
            .await,
        ))
    }

    #[tool(
        description = "Delete one of your series that holds no volume, with its terms, characters and Series Bible. Needs confirm: true. Answers {\"deleted\": series_id}."
    )]
    async fn delete_series(
        &self,
        Parameters(args): Parameters<DeleteSeries>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let caller = self.caller(&context)?;
        Ok(answer(
            async {
                let args = args?;
                confirmed(args.confirm)?;
                operations::series::delete(&self.state, &caller, args.series_id).await
            }
            .await,
        ))
    }

    #[tool(
        description = "Start, pause, resume or cancel the jobs of every volume of one of your series, in reading order. start needs pipeline:start, skips archived volumes and volumes already working, and refuses a suspended series unless resume_if_paused is true. Answers each volume's changed_jobs, done and refusal code (a spec error code), reason (what the code leaves out, e.g. not_own_job behind conflict) and message, with totals done, refused, deferred."
    )]
    async fn control_series(
        &self,
        Parameters(args): Parameters<ControlSeries>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let caller = self.caller(&context)?;
        Ok(answer(
            async {
                let args = args?;
                operations::series::control(
                    &self.state,
                    &caller,
                    args.series_id,
                    args.action.into(),
                    args.resume_if_paused.unwrap_or(false),
                )
                .await
            }
            .await,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_book_goes_at_a_number_or_a_label_never_both() {
        assert!(matches!(place(Some(2), None), Ok(VolumePlace::Number(2))));
        assert!(matches!(
            place(None, Some("Vol. 0".into())),
            Ok(VolumePlace::Label(_))
        ));
        for (number, label, field) in [
            (Some(1), Some("x".to_owned()), "volume_label"),
            (None, None, "volume_number"),
        ] {
            let refused = place(number, label).unwrap_err();
            assert_eq!(refused.code, ErrorCode::InvalidRequest);
            assert_eq!(
                refused.issues[0].loc,
                vec![json!("arguments"), json!(field)]
            );
        }
    }
}
