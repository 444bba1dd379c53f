//! Deterministic pseudo-translation.
//!
//! A passage's "translation" is `[<target>] ` followed by its text with the
//! ASCII vowels accented (`Hello, world` into `fr`:
//! `[fr] Hélló, wórld`). Placeholders are kept exactly where they are, so a
//! faithful answer always passes the placeholder check; the prefix makes
//! every translation differ from its source and depend on the target
//! language. The same input always gives the same output.
//!
//! The codes in [`PLAIN`] keep their vowels unaccented, so that an answer in
//! the wrong language ([`other_language`]) differs from the right one in
//! every word and not only in its prefix.
//!
//! Fixed renderings ([`pseudo_translate_with`]): source phrases that must
//! come out as given (a glossary, the names of a book), matched as whole
//! words, case-sensitive, longest first, never across a placeholder, and
//! written verbatim; everything else is pseudo-translated as above.

use dragoman_book::placeholder::{self, Token};

/// Target codes rendered without accents.
pub const PLAIN: [&str; 2] = ["xx", "yy"];

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

fn keep(c: char) -> char {
    c
}

/// The per-character mapping of `target`.
fn accent_for(target: &str) -> fn(char) -> char {
    if PLAIN.contains(&target) {
        keep
    } else {
        accent
    }
}

/// The language a wrong-language answer comes in: `xx`, or `yy` when the
/// target is `xx` itself.
pub fn other_language(target: &str) -> &'static str {
    if target == PLAIN[0] {
        PLAIN[1]
    } else {
        PLAIN[0]
    }
}

/// How `text` reads in `target`, without the prefix and without reading
/// placeholders: the rendering of a name or a term.
pub fn render(text: &str, target: &str) -> String {
    text.chars().map(accent_for(target)).collect()
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
    pseudo_translate_with(text, target, &[])
}

/// The pseudo-translation of `text` into `target` where every occurrence of
/// a `fixed` source (the pairs are source, rendering) is written as its
/// rendering. Without a match it equals [`pseudo_translate`]; text whose
/// placeholders cannot be read gets only the prefix, as there.
pub fn pseudo_translate_with(text: &str, target: &str, fixed: &[(&str, &str)]) -> String {
    let order = by_length(fixed);
    let accent = accent_for(target);
    let mut out = format!("[{target}] ");
    match placeholder::tokenize(text) {
        Ok(tokens) => {
            for token in &tokens {
                match token {
                    Token::Text(s) => walk(s, &order, fixed, |piece| match piece {
                        Piece::Plain(c) => out.push(accent(c)),
                        Piece::Fixed(k) => out.push_str(fixed[k].1),
                    }),
                    other => push_token(&mut out, other),
                }
            }
        }
        Err(_) => out.push_str(text),
    }
    out
}

/// `text` with every `fixed` source that [`pseudo_translate_with`] would
/// replace written as `write(k)` (`k` its index into `fixed`), and
/// everything else, placeholders included, as it is; `None` when its
/// placeholders cannot be read.
pub(crate) fn replace_fixed(
    text: &str,
    fixed: &[(&str, &str)],
    mut write: impl FnMut(usize) -> String,
) -> Option<String> {
    let order = by_length(fixed);
    let tokens = placeholder::tokenize(text).ok()?;
    let mut out = String::with_capacity(text.len());
    for token in &tokens {
        match token {
            Token::Text(s) => walk(s, &order, fixed, |piece| match piece {
                Piece::Plain(c) => out.push(c),
                Piece::Fixed(k) => out.push_str(&write(k)),
            }),
            other => push_token(&mut out, other),
        }
    }
    Some(out)
}

/// The indices into `fixed` of the sources [`pseudo_translate_with`] would
/// replace in `text`, in text order (repeats included).
pub fn fixed_matches(text: &str, fixed: &[(&str, &str)]) -> Vec<usize> {
    let order = by_length(fixed);
    let mut found = Vec::new();
    if let Ok(tokens) = placeholder::tokenize(text) {
        for token in &tokens {
            if let Token::Text(s) = token {
                walk(s, &order, fixed, |piece| {
                    if let Piece::Fixed(k) = piece {
                        found.push(k);
                    }
                });
            }
        }
    }
    found
}

/// What [`walk`] finds at a position.
enum Piece {
    Plain(char),
    Fixed(usize),
}

/// Indices of `fixed`, longest source first (ties keep their order), empty
/// sources left out: an empty source would match everywhere.
fn by_length(fixed: &[(&str, &str)]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..fixed.len())
        .filter(|&k| !fixed[k].0.is_empty())
        .collect();
    order.sort_by_key(|&k| std::cmp::Reverse(fixed[k].0.chars().count()));
    order
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric()
}

/// False when a word character of the source touches a word character of
/// the text around it: the source would then be part of a longer word.
fn boundary(outside: Option<char>, edge: Option<char>) -> bool {
    !(outside.is_some_and(is_word) && edge.is_some_and(is_word))
}

/// The fixed source (its index) that starts at byte `i` of `s` as a whole
/// word, longest first.
fn fixed_at(s: &str, i: usize, order: &[usize], fixed: &[(&str, &str)]) -> Option<usize> {
    if order.is_empty() {
        return None;
    }
    let before = s[..i].chars().next_back();
    let rest = &s[i..];
    order.iter().copied().find(|&k| {
        let source = fixed[k].0;
        rest.starts_with(source)
            && boundary(before, source.chars().next())
            && boundary(
                rest[source.len()..].chars().next(),
                source.chars().next_back(),
            )
    })
}

/// Calls `f` on every character of `s`, or on a fixed source in its place.
fn walk(s: &str, order: &[usize], fixed: &[(&str, &str)], mut f: impl FnMut(Piece)) {
    let mut i = 0;
    while i < s.len() {
        if let Some(k) = fixed_at(s, i, order, fixed) {
            f(Piece::Fixed(k));
            i += fixed[k].0.len();
        } else {
            let Some(c) = s[i..].chars().next() else {
                break;
            };
            f(Piece::Plain(c));
            i += c.len_utf8();
        }
    }
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
    use dragoman_pipeline::translate::check_placeholders;

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
    fn plain_languages_keep_their_vowels() {
        assert_eq!(pseudo_translate("Hello ⟦1/⟧", "xx"), "[xx] Hello ⟦1/⟧");
        assert_eq!(other_language("fr"), "xx");
        assert_eq!(other_language("xx"), "yy");
        assert_eq!(render("Alice", "fr"), "Álícé");
        assert_eq!(render("Alice", "xx"), "Alice");
    }

    #[test]
    fn fixed_renderings_are_verbatim_whole_words_longest_first() {
        let fixed = [
            ("Alice", "Alicia"),
            ("warp core", "cœur de distorsion"),
            ("warp", "distorsion"),
        ];
        assert_eq!(
            pseudo_translate_with("Alice saw the warp core, Alicey's warp.", "fr", &fixed),
            "[fr] Alicia sáw thé cœur de distorsion, Álícéý's distorsion."
        );
        // Never across a placeholder, and the placeholders stay.
        assert_eq!(
            pseudo_translate_with("warp⟦1/⟧ core ⟦2⟧Alice⟦/2⟧", "fr", &fixed),
            "[fr] distorsion⟦1/⟧ córé ⟦2⟧Alicia⟦/2⟧"
        );
        // Case-sensitive.
        assert_eq!(
            pseudo_translate_with("alice", "fr", &fixed),
            pseudo_translate("alice", "fr")
        );
        assert_eq!(
            fixed_matches("Alice and warp core, Alice", &fixed),
            vec![0, 1, 0]
        );
        assert_eq!(
            pseudo_translate_with("no match here", "fr", &fixed),
            pseudo_translate("no match here", "fr")
        );
        assert_eq!(pseudo_translate_with("x", "fr", &[("", "boom")]), "[fr] x");
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
