//! Deterministic pseudo-translation.
//!
//! A passage's "translation" is `[<target>] ` followed by its text with the
//! ASCII vowels accented (`Hello, world` into `fr`:
//! `[fr] Hélló, wórld`). Placeholders are kept exactly where they are, so a
//! faithful answer always passes the placeholder check; the prefix makes
//! every translation differ from its source and depend on the target
//! language. The same input always gives the same output.

use dragoman_book::placeholder::{self, Token};

fn accent(c: char) -> char {
    match c {
        'a' => 'á',
        'e' => 'é',
        'i' => 'í',
        'o' => 'ó',
        'u' => 'ú',
        'y' => 'ý',
        'A' => 'Á',
        'E' => 'É',
        'I' => 'Í',
        'O' => 'Ó',
        'U' => 'Ú',
        'Y' => 'Ý',
        other => other,
    }
}

/// Writes a placeholder token back as text.
pub(crate) fn push_token(out: &mut String, token: &Token<'_>) {
    match *token {
        Token::Text(s) => out.push_str(s),
        Token::Open(n) => out.push_str(&format!("{}{n}{}", placeholder::OPEN, placeholder::CLOSE)),
        Token::Close(n) => {
            out.push_str(&format!("{}/{n}{}", placeholder::OPEN, placeholder::CLOSE))
        }
        Token::Void(n) => out.push_str(&format!("{}{n}/{}", placeholder::OPEN, placeholder::CLOSE)),
    }
}

/// The pseudo-translation of `text` into `target`. Text whose placeholders
/// cannot be read gets only the prefix, so no bracket is ever altered.
pub fn pseudo_translate(text: &str, target: &str) -> String {
    let mut out = format!("[{target}] ");
    match placeholder::tokenize(text) {
        Ok(tokens) => {
            for token in &tokens {
                match token {
                    Token::Text(s) => out.extend(s.chars().map(accent)),
                    other => push_token(&mut out, other),
                }
            }
        }
        Err(_) => out.push_str(text),
    }
    out
}

/// `text` without its first placeholder (both ends of a paired one, the
/// words inside kept); `None` when it has none.
pub fn drop_placeholder(text: &str) -> Option<String> {
    let tokens = placeholder::tokenize(text).ok()?;
    let victim = tokens.iter().find_map(|t| match *t {
        Token::Open(n) | Token::Void(n) => Some(n),
        _ => None,
    })?;
    let mut out = String::with_capacity(text.len());
    for token in &tokens {
        match *token {
            Token::Open(n) | Token::Void(n) | Token::Close(n) if n == victim => {}
            _ => push_token(&mut out, token),
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::translate::check_placeholders;

    #[test]
    fn pseudo_translation_keeps_placeholders_and_depends_on_the_target() {
        let src = "Hello ⟦1⟧dear⟦/1⟧ world⟦2/⟧";
        let fr = pseudo_translate(src, "fr");
        assert_eq!(fr, "[fr] Hélló ⟦1⟧déár⟦/1⟧ wórld⟦2/⟧");
        assert_ne!(fr, pseudo_translate(src, "de"));
        assert_eq!(check_placeholders(src, &fr), Ok(()));
        assert_ne!(pseudo_translate("xyz", "fr"), "xyz");
        assert_eq!(pseudo_translate("⟦1 broken", "fr"), "[fr] ⟦1 broken");
    }

    #[test]
    fn dropping_a_placeholder_breaks_the_check() {
        let src = "a ⟦1⟧b⟦/1⟧ c⟦2/⟧";
        let dropped = drop_placeholder(src).unwrap();
        assert_eq!(dropped, "a b c⟦2/⟧");
        assert!(check_placeholders(src, &dropped).is_err());
        assert_eq!(drop_placeholder("plain"), None);
    }
}
