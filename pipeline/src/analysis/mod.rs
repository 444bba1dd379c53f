//! The analysis stage's model side: the protocol (what is asked and how the
//! answer is read) and the ladder that analyses one batch. What the answers
//! become (the book's memory) is the memory service's business; the worker
//! carries them there.

mod protocol;
mod run;

pub use protocol::{
    ANALYSIS_SYSTEM_PROMPT, AnalysisAnswer, AnalysisMessage, AnswerAnalysis, TASK,
    analysis_message, parse_analysis_answer,
};
pub use run::{ANSWER_FACTOR, Languages, analyse, max_tokens_for};
