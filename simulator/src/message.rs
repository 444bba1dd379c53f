//! A request's user message, told apart by the protocol it is written in:
//! translation, analysis, review, reader notes, or anything else.

use dragoman_model::llm_protocol::{
    ANALYSIS_TASK, AnalysisMessage, NOTES_TASK, NotesMessage, REVIEW_TASK, ReviewMessage,
};

use crate::translation::Job;

/// A user message, read in the protocol it is in.
pub(crate) enum Message {
    Translation(Job),
    Analysis(AnalysisMessage),
    Review(ReviewMessage),
    Notes(NotesMessage),
    Other,
}

impl Message {
    pub(crate) fn read(user: &str) -> Message {
        if let Ok(m) = serde_json::from_str::<AnalysisMessage>(user)
            && m.task == ANALYSIS_TASK
        {
            return Message::Analysis(m);
        }
        if let Ok(m) = serde_json::from_str::<ReviewMessage>(user)
            && m.task == REVIEW_TASK
        {
            return Message::Review(m);
        }
        if let Ok(m) = serde_json::from_str::<NotesMessage>(user)
            && m.task == NOTES_TASK
        {
            return Message::Notes(m);
        }
        match serde_json::from_str::<Job>(user) {
            Ok(job) => Message::Translation(job),
            Err(_) => Message::Other,
        }
    }

    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Message::Translation(_) => "translation",
            Message::Analysis(_) => "analysis",
            Message::Review(_) => "review",
            Message::Notes(_) => "notes",
            Message::Other => "other",
        }
    }
}
