//! Checking that a translation keeps its source's placeholders.

use dragoman_book::Tag;
use dragoman_book::placeholder::{self, Token};

/// The placeholder shapes of a source text as the tags
/// [`placeholder::check`] compares against; `None` when the source's
/// placeholders are not numbered 1..n each once (not produced by our
/// readers, but passages may come from elsewhere).
fn source_tags(source: &str) -> Option<Vec<Tag>> {
    let tokens = placeholder::tokenize(source).ok()?;
    let mut tags: Vec<Option<Tag>> = Vec::new();
    for token in &tokens {
        let (n, void) = match *token {
            Token::Open(n) => (n, false),
            Token::Void(n) => (n, true),
            Token::Close(_) | Token::Text(_) => continue,
        };
        if tags.len() < n {
            tags.resize(n, None);
        }
        let slot = &mut tags[n - 1];
        if slot.is_some() {
            return None;
        }
        *slot = Some(Tag {
            open: String::new(),
            close: if void { None } else { Some(String::new()) },
            plain: String::new(),
        });
    }
    let tags: Vec<Tag> = tags.into_iter().collect::<Option<_>>()?;
    placeholder::check(source, &tags).ok()?;
    Some(tags)
}

/// Checks that a translation carries exactly the source's placeholders,
/// properly nested (with [`placeholder::check`]). For a source whose own
/// placeholders are irregular, the translation must carry the same
/// placeholder tokens, in any order.
pub fn check_placeholders(source: &str, translation: &str) -> Result<(), String> {
    if let Some(tags) = source_tags(source) {
        return placeholder::check(translation, &tags)
            .map(|_| ())
            .map_err(|m| m.to_string());
    }
    let marks = |text: &str| -> Result<Vec<String>, String> {
        let mut marks: Vec<String> = placeholder::tokenize(text)
            .map_err(|m| m.to_string())?
            .into_iter()
            .filter(|t| !matches!(t, Token::Text(_)))
            .map(|t| format!("{t:?}"))
            .collect();
        marks.sort();
        Ok(marks)
    };
    match (marks(source), marks(translation)?) {
        (Ok(a), b) if a == b => Ok(()),
        (Ok(_), _) => Err("placeholders differ from the source's".into()),
        // A source that cannot even be tokenized: only an identical set of
        // brackets would be safe, which the comparison above cannot tell.
        (Err(e), _) => Err(format!("source placeholders unreadable: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_checked_against_the_source() {
        let src = "a ⟦1⟧b⟦/1⟧ c⟦2/⟧";
        assert_eq!(check_placeholders(src, "⟦2/⟧x ⟦1⟧y⟦/1⟧"), Ok(()));
        assert!(check_placeholders(src, "x ⟦1⟧y⟦/1⟧").is_err());
        assert!(check_placeholders(src, "x ⟦1⟧y⟦2/⟧⟦/1⟧ ⟦2/⟧").is_err());
        assert!(check_placeholders("plain", "⟦1/⟧").is_err());
        assert_eq!(check_placeholders("plain", "simple"), Ok(()));
        // Irregular numbering in the source: same tokens in any order.
        assert_eq!(check_placeholders("⟦3/⟧ x ⟦5/⟧", "⟦5/⟧ y ⟦3/⟧"), Ok(()));
        assert!(check_placeholders("⟦3/⟧ x ⟦5/⟧", "⟦5/⟧ y").is_err());
    }

    #[test]
    fn source_tags_are_read_only_from_regular_numbering() {
        let tags = source_tags("a ⟦1⟧b⟦/1⟧ c⟦2/⟧").unwrap();
        assert_eq!(tags.len(), 2);
        assert!(tags[0].close.is_some(), "1 is paired");
        assert!(tags[1].close.is_none(), "2 is void");
        assert!(source_tags("⟦2/⟧").is_none(), "1 is missing");
        assert!(source_tags("⟦1/⟧ ⟦1/⟧").is_none(), "1 twice");
        assert_eq!(source_tags("plain"), Some(vec![]));
    }
}
