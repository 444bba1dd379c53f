//! Reading the model's answer: the protocol JSON, then each requested
//! passage's translation or why it is not usable.

use std::collections::HashMap;

use serde::Deserialize;

use super::job::PassageIn;
use super::outcome::{Failure, reason};
use super::placeholders::check_placeholders;

#[derive(Deserialize)]
struct Answer {
    translations: Vec<AnswerItem>,
}

#[derive(Deserialize)]
struct AnswerItem {
    /// A string as asked; a number is tolerated.
    id: serde_json::Value,
    text: String,
}

/// A model's answer without the code fence it may be wrapped in.
pub(crate) fn json_body(text: &str) -> &str {
    let mut body = text.trim();
    if let Some(rest) = body.strip_prefix("```") {
        // Drop the fence line (```json) and the closing fence.
        body = rest.split_once('\n').map_or("", |(_, r)| r);
        body = body.trim_end().strip_suffix("```").unwrap_or(body).trim();
    }
    body
}

/// Reads the model's answer into (id, text) pairs. Tolerates a code fence and
/// text around the JSON object.
pub fn parse_answer(text: &str) -> Result<Vec<(String, String)>, String> {
    let body = json_body(text);
    let parsed = serde_json::from_str::<Answer>(body).or_else(|first| {
        match (body.find('{'), body.rfind('}')) {
            (Some(a), Some(b)) if a < b => serde_json::from_str::<Answer>(&body[a..=b]),
            _ => Err(first),
        }
    });
    let answer = parsed.map_err(|e| format!("answer is not the expected JSON: {e}"))?;
    Ok(answer
        .translations
        .into_iter()
        .map(|item| {
            let id = match item.id {
                serde_json::Value::String(s) => s,
                other => other.to_string(),
            };
            (id, item.text)
        })
        .collect())
}

/// Pairs an answer's translations with the requested passages (`passages`,
/// at `indices` in the job) and checks each: one result per passage, with
/// its index, in the order asked.
pub(super) fn match_answer(
    passages: &[&PassageIn],
    indices: &[usize],
    items: Vec<(String, String)>,
) -> Vec<(usize, Result<String, Failure>)> {
    // A single passage's answer is taken whatever id the model wrote.
    let lone = if passages.len() == 1 && items.len() == 1 {
        items.first().map(|(_, t)| t.clone())
    } else {
        None
    };
    let mut by_id: HashMap<String, String> = HashMap::new();
    for (id, text) in items {
        by_id.entry(id).or_insert(text);
    }
    passages
        .iter()
        .zip(indices)
        .map(|(p, &i)| {
            let text = lone.clone().or_else(|| by_id.get(&p.id).cloned());
            let result = match text {
                Some(t) if !t.trim().is_empty() || p.text.trim().is_empty() => {
                    check_placeholders(&p.text, &t)
                        .map(|()| t)
                        .map_err(|e| Failure {
                            reason: reason::MARKUP_MISMATCH,
                            error: e,
                        })
                }
                _ => Err(Failure {
                    reason: reason::UNTRANSLATED,
                    error: "missing from the answer".into(),
                }),
            };
            (i, result)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(id: &str, text: &str) -> PassageIn {
        PassageIn {
            id: id.into(),
            text: text.into(),
        }
    }

    fn items(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(id, text)| (id.to_string(), text.to_string()))
            .collect()
    }

    fn reasons(results: &[(usize, Result<String, Failure>)]) -> Vec<(usize, &str)> {
        results
            .iter()
            .map(|(i, r)| (*i, r.as_ref().map_or_else(|f| f.reason, |_| "ok")))
            .collect()
    }

    #[test]
    fn answers_are_read_with_or_without_fence() {
        let plain = r#"{"translations":[{"id":"a","text":"x"},{"id":2,"text":"y"}]}"#;
        let want = vec![("a".to_string(), "x".to_string()), ("2".into(), "y".into())];
        assert_eq!(parse_answer(plain).unwrap(), want);
        assert_eq!(
            parse_answer(&format!("```json\n{plain}\n```")).unwrap(),
            want
        );
        assert_eq!(
            parse_answer(&format!("Here:\n{plain}\nDone.")).unwrap(),
            want
        );
        assert!(parse_answer(r#"{"translations":[{"id":"a","te"#).is_err());
        assert!(parse_answer("Bonjour").is_err());
    }

    #[test]
    fn an_unclosed_fence_is_read_but_not_a_cut_answer_inside_it() {
        let plain = r#"{"translations":[{"id":"a","text":"x"}]}"#;
        assert_eq!(
            parse_answer(&format!("```json\n{plain}")).unwrap(),
            items(&[("a", "x")])
        );
        assert!(parse_answer("```json\n{\"translations\":[{\"id\":\"a\",\"text\":\"x").is_err());
    }

    #[test]
    fn answers_off_the_protocol_are_malformed() {
        for bad in [
            r#"{"translations":"x"}"#,
            r#"{"translations":[{"id":"a"}]}"#,
            r#"{"translations":[{"id":"a","text":3}]}"#,
            r#"{"result":[{"id":"a","text":"x"}]}"#,
            r#"[{"id":"a","text":"x"}]"#,
            "",
        ] {
            let err = parse_answer(bad).expect_err(bad);
            assert!(err.starts_with("answer is not the expected JSON"), "{err}");
        }
        assert_eq!(parse_answer(r#"{"translations":[]}"#), Ok(vec![]));
    }

    #[test]
    fn each_requested_passage_gets_its_translation_or_a_reason() {
        let a = p("a", "x ⟦1/⟧");
        let b = p("b", "y ⟦1/⟧");
        let c = p("c", "z");
        let answer = items(&[("c", "zz"), ("a", "xx ⟦1/⟧"), ("b", "yy"), ("extra", "?")]);
        let results = match_answer(&[&a, &b, &c], &[4, 7, 9], answer);
        assert_eq!(
            reasons(&results),
            [(4, "ok"), (7, reason::MARKUP_MISMATCH), (9, "ok")]
        );
        assert_eq!(results[0].1, Ok("xx ⟦1/⟧".to_string()));
        assert_eq!(results[2].1, Ok("zz".to_string()));
    }

    #[test]
    fn missing_or_blank_translations_are_untranslated() {
        let a = p("a", "one");
        let b = p("b", "two");
        let blank = p("blank", "  ");
        let results = match_answer(
            &[&a, &b, &blank],
            &[0, 1, 2],
            items(&[("a", " \n"), ("blank", "")]),
        );
        assert_eq!(
            reasons(&results),
            [
                (0, reason::UNTRANSLATED),
                (1, reason::UNTRANSLATED),
                (2, "ok")
            ]
        );
        assert_eq!(
            results[1].1.as_ref().unwrap_err().error,
            "missing from the answer"
        );
    }

    #[test]
    fn a_lone_passage_takes_the_single_answer_whatever_its_id() {
        let a = p("c1.p1", "one");
        let results = match_answer(&[&a], &[3], items(&[("1", "un")]));
        assert_eq!(results, [(3, Ok("un".to_string()))]);
        // With two answers the ids must match.
        let results = match_answer(&[&a], &[3], items(&[("1", "un"), ("2", "deux")]));
        assert_eq!(reasons(&results), [(3, reason::UNTRANSLATED)]);
        // Two passages never borrow each other's answer.
        let b = p("c1.p2", "two");
        let results = match_answer(&[&a, &b], &[0, 1], items(&[("c1.p2", "deux")]));
        assert_eq!(reasons(&results), [(0, reason::UNTRANSLATED), (1, "ok")]);
    }

    #[test]
    fn the_first_answer_for_a_repeated_id_wins() {
        let a = p("a", "one");
        let b = p("b", "two");
        let results = match_answer(
            &[&a, &b],
            &[0, 1],
            items(&[("a", "un"), ("a", "autre"), ("b", "deux")]),
        );
        assert_eq!(results[0].1, Ok("un".to_string()));
    }
}
