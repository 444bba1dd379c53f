//! The `refusal` check: a translation that is an apology or a refusal
//! instead of a translation ("I'm sorry, but I can't help with that
//! request.").
//!
//! A novel's characters apologise too, so the check fires only when all
//! of these hold, which keeps false positives low:
//! - an apology or inability phrase of [`OPENERS`] (English and a few
//!   major languages) starts a word within the translation's first
//!   [`HEAD_CHARS`] characters;
//! - the phrase is one only an assistant says ([`STRONG`], "As an AI"), or
//!   the translation also speaks of translating, content or requests
//!   ([`META`]);
//! - the translation is not much longer than the sentence holding the
//!   phrase (at most three times), as a refusal is short and a passage
//!   that merely opens with an apology goes on;
//! - the source has none of these phrases itself, in any language.

use super::text::{self, Fit};

/// How far into the translation the phrase must start, in characters.
pub(super) const HEAD_CHARS: usize = 80;

/// Apologies and statements of inability that open a refusal, lower-case
/// with straight apostrophes.
const OPENERS: &[&str] = &[
    // English
    "i'm sorry",
    "i am sorry",
    "sorry, but",
    "i apologize",
    "i apologise",
    "my apologies",
    "i cannot",
    "i can't",
    "i am unable",
    "i'm unable",
    "i won't be able",
    "i'm not able",
    "i am not able",
    // French
    "je suis désolé",
    "désolé, mais",
    "je m'excuse",
    "je ne peux pas",
    "je ne suis pas en mesure",
    // Spanish
    "lo siento",
    "lo lamento",
    "no puedo",
    // German
    "es tut mir leid",
    "ich kann nicht",
    "ich kann leider",
    "leider kann ich",
    "ich bin nicht in der lage",
    // Italian
    "mi dispiace",
    "non posso",
    // Portuguese
    "desculpe",
    "sinto muito",
    "não posso",
    // Russian
    "извините",
    "прошу прощения",
    "я не могу",
    // Chinese, Japanese, Korean
    "抱歉",
    "对不起",
    "我无法",
    "我不能",
    "申し訳",
    "できません",
    "죄송",
];

/// Phrases only an assistant says: a refusal without further evidence.
const STRONG: &[&str] = &[
    "as an ai",
    "as a language model",
    "as an assistant",
    "en tant qu'ia",
    "en tant qu'intelligence artificielle",
    "en tant que modèle de langage",
    "como modelo de lenguaje",
    "como inteligencia artificial",
    "als ki",
    "als sprachmodell",
    "come modello linguistico",
    "come intelligenza artificiale",
    "como modelo de linguagem",
    "как ии",
    "как языковая модель",
    "作为人工智能",
    "作为ai",
    "作为一个ai",
];

/// Words of a refusal's subject: translating, the content, the request.
const META: &[&str] = &[
    "translat",
    "language model",
    "content",
    "request",
    "policy",
    "guidelines",
    "traduire",
    "traduction",
    "contenu",
    "demande",
    "traducir",
    "traducción",
    "contenido",
    "solicitud",
    "übersetz",
    "inhalt",
    "anfrage",
    "tradurre",
    "traduzione",
    "contenuto",
    "richiesta",
    "traduzir",
    "tradução",
    "conteúdo",
    "pedido",
    "перев",
    "запрос",
    "翻译",
    "请求",
    "内容",
    "翻訳",
    "リクエスト",
    "번역",
    "요청",
];

/// `text` lower-cased with typographic apostrophes made straight.
fn folded(text: &str) -> String {
    text.to_lowercase().replace(['’', 'ʼ'], "'")
}

/// The byte offset of the earliest phrase of `phrases` in `text`, sitting
/// as `fit` asks: openers may go on ("désolée"), an assistant's phrase is
/// whole ("as an AI", not "as an aid").
fn find_phrase(text: &str, phrases: &[&str], fit: Fit) -> Option<usize> {
    phrases
        .iter()
        .filter_map(|p| text::find_word(text, p, fit))
        .min()
}

/// Characters that end a sentence.
fn sentence_end(c: char) -> bool {
    matches!(c, '.' | '!' | '?' | '。' | '！' | '？' | '\n')
}

/// The characters of the sentence of `text` holding byte `at`.
fn sentence_chars(text: &str, at: usize) -> usize {
    let start = text[..at]
        .char_indices()
        .rfind(|(_, c)| sentence_end(*c))
        .map_or(0, |(i, c)| i + c.len_utf8());
    let end = text[at..]
        .char_indices()
        .find(|(_, c)| sentence_end(*c))
        .map_or(text.len(), |(i, c)| at + i + c.len_utf8());
    text::chars(&text[start..end])
}

/// Whether any refusal phrase of any language occurs in `text`.
fn has_any_phrase(text: &str) -> bool {
    let text = folded(text);
    find_phrase(&text, OPENERS, Fit::Start).is_some()
        || find_phrase(&text, STRONG, Fit::Whole).is_some()
}

/// The `refusal` finding for plain (placeholder-free) texts: the message
/// when the translation is a refusal.
pub(super) fn check(source: &str, translation: &str) -> Option<String> {
    let trimmed = translation.trim();
    let body = folded(trimmed);
    let head_end = body
        .char_indices()
        .nth(HEAD_CHARS)
        .map_or(body.len(), |(i, _)| i);
    let head = &body[..head_end];
    let strong = find_phrase(head, STRONG, Fit::Whole);
    let at = strong.or_else(|| find_phrase(head, OPENERS, Fit::Start))?;
    let about_it = strong.is_some() || META.iter().any(|m| body.contains(m));
    if !about_it || text::chars(&body) > 3 * sentence_chars(&body, at) || has_any_phrase(source) {
        return None;
    }
    Some(text::clip(&format!(
        "the answer is a refusal, not a translation: \"{trimmed}\""
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOURCE: &str = "The rain had not stopped for three days, and the river was rising.";

    #[test]
    fn refusal_table() {
        let cases = [
            ("I'm sorry, but I can't help with that request.", true),
            ("I’m sorry, but I cannot translate this passage.", true),
            ("As an AI, I do not produce such text.", true),
            (
                "Je suis désolée, mais je ne peux pas traduire ce texte.",
                true,
            ),
            ("Lo siento, no puedo traducir este contenido.", true),
            (
                "Es tut mir leid, aber ich kann diesen Text nicht übersetzen.",
                true,
            ),
            ("抱歉，我无法翻译这段内容。", true),
            // Apologies in a story are not refusals.
            (
                "« Je suis désolé », dit-il. La pluie n'avait pas cessé depuis trois jours.",
                false,
            ),
            ("I'm sorry.", false),
            (
                "La pluie n'avait pas cessé depuis trois jours, et la rivière montait.",
                false,
            ),
            // The phrase too far in, after the passage's own text.
            (
                "La pluie n'avait pas cessé depuis trois jours, et la rivière derrière le moulin montait. Je ne peux pas traduire.",
                false,
            ),
            // A long passage that opens with an apology about a request.
            (
                "I'm sorry, she said. Then she turned to the request he had made that morning, and read it again, slowly, word after word, and she did not answer him for a long while, not until the candle had burnt down.",
                false,
            ),
            ("", false),
        ];
        for (translation, want) in cases {
            assert_eq!(
                check(SOURCE, translation).is_some(),
                want,
                "{translation:?}"
            );
        }
    }

    #[test]
    fn a_source_with_the_phrase_is_not_checked() {
        let source = "\"I'm sorry,\" he said, \"but I cannot grant your request.\"";
        assert_eq!(
            check(source, "I'm sorry, but I can't help with that request."),
            None
        );
        let french = "« Je suis désolé, mais je ne peux pas accepter votre demande. »";
        assert_eq!(
            check(french, "\"I'm sorry, but I cannot accept your request.\""),
            None
        );
    }

    #[test]
    fn the_message_quotes_the_answer_within_bounds() {
        let long = format!("I'm sorry, but I can't translate this. {}", "x".repeat(300));
        let message = check(SOURCE, &format!("{long}.")).map(|m| m.chars().count());
        assert!(message.is_none_or(|n| n <= text::MESSAGE_CHARS));
        let message =
            check(SOURCE, "I'm sorry, but I can't help with that request.").expect("a refusal");
        assert!(message.contains("can't help"), "{message}");
    }
}
