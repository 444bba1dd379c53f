//! How the translation stage packs passages into provider calls. The
//! pipeline plans its calls with these functions and the estimate
//! ([`crate::estimate`]) counts calls with the same ones, so a job is
//! estimated to make the calls the pipeline makes for the same passages.
//!
//! A translation call is the system prompt, the languages, the batch's
//! context and its passages, each wrapped in the JSON of the user message.
//! The context has a budget of its own; the passages get what is left of
//! the call's budget once the fixed part is taken ([`passage_room`]). They
//! are packed in order, greedily: a batch closes when the next passage would
//! take it over the room, and a passage larger than the room goes alone
//! ([`pack`]).

use crate::tokens::estimate_tokens;
use std::ops::Range;

/// The translator's instructions; constant so that providers can cache it.
/// Kept beside the batching because the fixed part of every translation call
/// is sized from it, by the pipeline that sends it and by the estimate.
pub const TRANSLATION_SYSTEM_PROMPT: &str = "You are a professional literary translator working on a book. \
The user message is JSON: {\"source_language\", \"target_language\", \"context\", \"passages\": [{\"id\", \"text\"}]}. \
Translate the text of every passage from source_language into target_language, faithfully and naturally, \
keeping tone, register and names consistent with the context. \
The context (glossary, characters, earlier passages) is reference only: never translate it or repeat it. \
Inline markup appears as numbered placeholders: \u{27E6}n\u{27E7}\u{2026}\u{27E6}/n\u{27E7} around words and \u{27E6}n/\u{27E7} alone. \
Keep every placeholder exactly as written and exactly once: never add, drop, renumber, translate or merge one. \
A paired placeholder must surround the words that translate the words it surrounds in the source, properly nested; \
you may move placeholders to follow the word order of the target language. \
Answer with ONLY this JSON, without commentary or code fence: \
{\"translations\":[{\"id\":\"\u{2026}\",\"text\":\"\u{2026}\"}]}, one entry per passage, same ids, same order.";

/// Tokens of the JSON wrapping of one passage in the user message
/// (`{"id":"","text":""},` is 20 characters).
pub const PASSAGE_OVERHEAD_TOKENS: usize = 8;

/// Tokens of the user message's own JSON: its keys, quotes and braces.
const MESSAGE_OVERHEAD_TOKENS: usize = 24;

/// Room passages get in a call at least, however large its fixed part.
pub const MIN_PASSAGE_ROOM: usize = 64;

/// Estimated prompt tokens of one passage in a batch: its id, its text and
/// its wrapping.
pub fn passage_tokens(id: &str, text: &str) -> usize {
    estimate_tokens(id) + estimate_tokens(text) + PASSAGE_OVERHEAD_TOKENS
}

/// Estimated prompt tokens of a translation call apart from its passages:
/// the system prompt, the languages and the context.
pub fn call_overhead_tokens(
    source_language: &str,
    target_language: &str,
    context: Option<&str>,
) -> usize {
    estimate_tokens(TRANSLATION_SYSTEM_PROMPT)
        + estimate_tokens(source_language)
        + estimate_tokens(target_language)
        + context.map_or(0, estimate_tokens)
        + MESSAGE_OVERHEAD_TOKENS
}

/// Room for passages in a translation call of at most `batch_tokens` prompt
/// tokens between these languages, the context apart (it has its own budget).
pub fn passage_room(batch_tokens: usize, source_language: &str, target_language: &str) -> usize {
    batch_tokens
        .saturating_sub(call_overhead_tokens(source_language, target_language, None))
        .max(MIN_PASSAGE_ROOM)
}

/// Packs passages of `tokens` estimated tokens each ([`passage_tokens`]),
/// in order, into batches of at most `room` tokens; a passage larger than
/// `room` goes alone. Each batch is the range of its passages' indexes.
pub fn pack(tokens: &[usize], room: usize) -> Vec<Range<usize>> {
    let mut batches = Vec::new();
    let mut start = 0;
    let mut used = 0;
    for (i, &t) in tokens.iter().enumerate() {
        if i > start && used + t > room {
            batches.push(start..i);
            start = i;
            used = 0;
        }
        used += t;
    }
    if start < tokens.len() {
        batches.push(start..tokens.len());
    }
    batches
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_close_when_the_next_passage_does_not_fit() {
        assert!(pack(&[], 100).is_empty());
        assert_eq!(pack(&[60, 60, 60], 100), [0..1, 1..2, 2..3]);
        assert_eq!(pack(&[40, 40, 40], 100), [0..2, 2..3]);
        assert_eq!(pack(&[50, 50, 50], 100), [0..2, 2..3], "filled exactly");
        // A passage larger than the room goes alone, between its neighbours.
        assert_eq!(pack(&[10, 500, 10], 100), [0..1, 1..2, 2..3]);
        assert_eq!(pack(&[500, 10], 100), [0..1, 1..2]);
    }

    #[test]
    fn every_passage_is_in_one_batch_in_order() {
        let tokens: Vec<usize> = (0..300).map(|i| (i * 37) % 90 + 1).collect();
        for room in [1, 50, 120, 400, 5000] {
            let batches = pack(&tokens, room);
            let flat: Vec<usize> = batches.iter().flat_map(Clone::clone).collect();
            assert_eq!(flat, (0..tokens.len()).collect::<Vec<_>>(), "room {room}");
            for b in &batches {
                let total: usize = tokens[b.clone()].iter().sum();
                assert!(total <= room || b.len() == 1, "room {room}: {total}");
            }
        }
    }

    #[test]
    fn the_room_is_the_budget_less_the_fixed_part_of_the_call() {
        let fixed = call_overhead_tokens("en", "fr", None);
        assert!(fixed > estimate_tokens(TRANSLATION_SYSTEM_PROMPT));
        assert_eq!(passage_room(fixed + 500, "en", "fr"), 500);
        assert_eq!(passage_room(10, "en", "fr"), MIN_PASSAGE_ROOM);
        assert_eq!(
            call_overhead_tokens("en", "fr", Some("glossary")),
            fixed + estimate_tokens("glossary")
        );
        // "a" → 1, "abcdef" → 2, plus the JSON wrapping.
        assert_eq!(passage_tokens("a", "abcdef"), 3 + PASSAGE_OVERHEAD_TOKENS);
    }
}
