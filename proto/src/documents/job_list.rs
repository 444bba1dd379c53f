//! A page of the caller's requests (`ListJobs`) between [`JobList`] and
//! its message.

use super::required;
use crate::v1;
use crate::wire::{WireEnum, WireError};
use dragoman_model::documents::job_list::{JobList, JobListItem, JobProgress, StartedBy};
use dragoman_model::vocab::{Priority, RequestStatus, Stage};

impl From<JobList> for v1::JobList {
    fn from(l: JobList) -> Self {
        Self {
            items: l.items.into_iter().map(Into::into).collect(),
            limit: l.limit,
            offset: l.offset,
            total: l.total,
        }
    }
}

impl TryFrom<v1::JobList> for JobList {
    type Error = WireError;

    fn try_from(m: v1::JobList) -> Result<Self, WireError> {
        Ok(Self {
            items: m
                .items
                .into_iter()
                .map(TryInto::try_into)
                .collect::<Result<_, _>>()?,
            limit: m.limit,
            offset: m.offset,
            total: m.total,
        })
    }
}

impl From<JobListItem> for v1::JobListItem {
    fn from(i: JobListItem) -> Self {
        Self {
            book_id: i.book_id,
            book_title: i.book_title,
            created_at: i.created_at,
            finished_at: i.finished_at,
            may_resume: i.may_resume,
            paid: i.paid,
            paused: i.paused,
            priority: i.priority.to_wire(),
            progress: Some(i.progress.into()),
            request_id: i.request_id,
            series_id: i.series_id,
            stage: i.stage.to_wire(),
            started_by: Some(i.started_by.into()),
            status: i.status.to_wire(),
            status_url: i.status_url,
            step: i.step,
        }
    }
}

impl TryFrom<v1::JobListItem> for JobListItem {
    type Error = WireError;

    fn try_from(m: v1::JobListItem) -> Result<Self, WireError> {
        Ok(Self {
            book_id: m.book_id,
            book_title: m.book_title,
            created_at: m.created_at,
            finished_at: m.finished_at,
            may_resume: m.may_resume,
            paid: m.paid,
            paused: m.paused,
            priority: Priority::from_wire(m.priority, "items.priority")?,
            progress: required(m.progress, "items.progress")?.into(),
            request_id: m.request_id,
            series_id: m.series_id,
            stage: Stage::from_wire(m.stage, "items.stage")?,
            started_by: required(m.started_by, "items.started_by")?.into(),
            status: RequestStatus::from_wire(m.status, "items.status")?,
            status_url: m.status_url,
            step: m.step,
        })
    }
}

impl From<JobProgress> for v1::JobProgress {
    fn from(p: JobProgress) -> Self {
        Self {
            percent: p.percent,
            segments: p.segments,
            translated: p.translated,
        }
    }
}

impl From<v1::JobProgress> for JobProgress {
    fn from(m: v1::JobProgress) -> Self {
        Self {
            percent: m.percent,
            segments: m.segments,
            translated: m.translated,
        }
    }
}

impl From<StartedBy> for v1::JobStartedBy {
    fn from(s: StartedBy) -> Self {
        Self {
            this_token: s.this_token,
            token_id: s.token_id,
            token_name: s.token_name,
        }
    }
}

impl From<v1::JobStartedBy> for StartedBy {
    fn from(m: v1::JobStartedBy) -> Self {
        Self {
            this_token: m.this_token,
            token_id: m.token_id,
            token_name: m.token_name,
        }
    }
}

#[cfg(test)]
#[path = "job_list_tests.rs"]
mod tests;
