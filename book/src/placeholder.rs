//! Inline markup as numbered placeholders.
//!
//! Format (documented for the pipeline and the prompts):
//! - `⟦n⟧…⟦/n⟧` a paired inline element (em, strong, a, span, ruby, …);
//! - `⟦n/⟧` a void one (br, img, an anchor without text, inline math, a comment).
//!
//! Numbers start at 1 in order of appearance in the source passage. A translation
//! must use each number exactly once, with the same void/paired shape, properly
//! nested; it may move them. The brackets are U+27E6 and U+27E7, which almost never
//! occur in books; when a source does contain one, the reader turns the literal
//! bracket into a void placeholder of its own so the text stays unambiguous.

use crate::model::Tag;

pub const OPEN: char = '\u{27E6}';
pub const CLOSE: char = '\u{27E7}';

/// A piece of placeholder text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Token<'a> {
    Text(&'a str),
    Open(usize),
    Close(usize),
    Void(usize),
}

/// Why a translation's placeholders cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Mismatch {
    #[error("malformed placeholder at byte {0}")]
    Syntax(usize),
    #[error("placeholder {0} does not exist in the source")]
    Unknown(usize),
    #[error("placeholder {0} used more than once")]
    Repeated(usize),
    #[error("placeholder {0} missing")]
    Missing(usize),
    #[error("placeholder {0} has the wrong shape (void or paired)")]
    Shape(usize),
    #[error("placeholder {0} is not properly nested")]
    Nesting(usize),
}

/// Splits text into text and placeholder tokens (syntax only).
pub fn tokenize(text: &str) -> Result<Vec<Token<'_>>, Mismatch> {
    let mut out = Vec::new();
    let mut rest = text;
    let mut offset = 0;
    while let Some(i) = rest.find(OPEN) {
        if i > 0 {
            out.push(Token::Text(&rest[..i]));
        }
        let after = &rest[i + OPEN.len_utf8()..];
        let end = after.find(CLOSE).ok_or(Mismatch::Syntax(offset + i))?;
        let inner = &after[..end];
        let token = if let Some(n) = inner.strip_prefix('/') {
            Token::Close(parse_index(n).ok_or(Mismatch::Syntax(offset + i))?)
        } else if let Some(n) = inner.strip_suffix('/') {
            Token::Void(parse_index(n).ok_or(Mismatch::Syntax(offset + i))?)
        } else {
            Token::Open(parse_index(inner).ok_or(Mismatch::Syntax(offset + i))?)
        };
        out.push(token);
        let consumed = i + OPEN.len_utf8() + end + CLOSE.len_utf8();
        offset += consumed;
        rest = &rest[consumed..];
    }
    if !rest.is_empty() {
        out.push(Token::Text(rest));
    }
    Ok(out)
}

fn parse_index(s: &str) -> Option<usize> {
    if s.is_empty() || s.len() > 6 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok().filter(|n| *n > 0)
}

/// Checks that `text` uses exactly the placeholders of `tags`, properly nested.
pub fn check<'a>(text: &'a str, tags: &[Tag]) -> Result<Vec<Token<'a>>, Mismatch> {
    let tokens = tokenize(text)?;
    let mut opened = vec![false; tags.len()];
    let mut closed = vec![false; tags.len()];
    let mut stack: Vec<usize> = Vec::new();
    for t in &tokens {
        match *t {
            Token::Text(_) => {}
            Token::Open(n) | Token::Void(n) | Token::Close(n) if n > tags.len() => {
                return Err(Mismatch::Unknown(n));
            }
            Token::Void(n) => {
                if !tags[n - 1].is_void() {
                    return Err(Mismatch::Shape(n));
                }
                if opened[n - 1] {
                    return Err(Mismatch::Repeated(n));
                }
                opened[n - 1] = true;
                closed[n - 1] = true;
            }
            Token::Open(n) => {
                if tags[n - 1].is_void() {
                    return Err(Mismatch::Shape(n));
                }
                if opened[n - 1] {
                    return Err(Mismatch::Repeated(n));
                }
                opened[n - 1] = true;
                stack.push(n);
            }
            Token::Close(n) => {
                if tags[n - 1].is_void() {
                    return Err(Mismatch::Shape(n));
                }
                if stack.pop() != Some(n) {
                    return Err(Mismatch::Nesting(n));
                }
                closed[n - 1] = true;
            }
        }
    }
    if let Some(n) = stack.pop() {
        return Err(Mismatch::Nesting(n));
    }
    if let Some(i) = closed.iter().position(|c| !c) {
        return Err(Mismatch::Missing(i + 1));
    }
    Ok(tokens)
}

/// Renders checked tokens: text through `escape`, placeholders as their raw markup.
pub fn render(tokens: &[Token<'_>], tags: &[Tag], escape: impl Fn(&str, &mut String)) -> String {
    let mut out = String::new();
    for t in tokens {
        match *t {
            Token::Text(s) => escape(s, &mut out),
            Token::Open(n) | Token::Void(n) => {
                if let Some(tag) = tags.get(n - 1) {
                    out.push_str(&tag.open);
                }
            }
            Token::Close(n) => {
                if let Some(close) = tags.get(n - 1).and_then(|t| t.close.as_deref()) {
                    out.push_str(close);
                }
            }
        }
    }
    out
}

/// Plain text: placeholders removed, void ones replaced by their `plain` text.
/// Malformed placeholder syntax is kept literally.
pub fn to_plain(text: &str, tags: &[Tag]) -> String {
    match tokenize(text) {
        Ok(tokens) => {
            let mut out = String::with_capacity(text.len());
            for t in tokens {
                match t {
                    Token::Text(s) => out.push_str(s),
                    Token::Void(n) => {
                        if let Some(tag) = tags.get(n - 1) {
                            out.push_str(&tag.plain);
                        }
                    }
                    Token::Open(_) | Token::Close(_) => {}
                }
            }
            out
        }
        Err(_) => text.to_string(),
    }
}

/// Builds a passage's placeholder text and tags while a reader walks its markup.
#[derive(Debug, Default)]
pub(crate) struct Builder {
    pub text: String,
    pub tags: Vec<Tag>,
}

impl Builder {
    /// Appends text; a literal bracket becomes a void placeholder of its own.
    /// `raw_bracket` gives the raw markup to restore for a bracket.
    pub fn push_text(&mut self, s: &str) {
        let mut rest = s;
        while let Some(i) = rest.find([OPEN, CLOSE]) {
            self.text.push_str(&rest[..i]);
            let c = rest[i..].chars().next().unwrap_or(OPEN);
            self.void(c.to_string(), c.to_string());
            rest = &rest[i + c.len_utf8()..];
        }
        self.text.push_str(rest);
    }

    /// Opens a paired placeholder and returns its number.
    pub fn open(&mut self, raw: String) -> usize {
        self.tags.push(Tag {
            open: raw,
            close: Some(String::new()),
            plain: String::new(),
        });
        let n = self.tags.len();
        self.text.push(OPEN);
        self.text.push_str(&n.to_string());
        self.text.push(CLOSE);
        n
    }

    /// Closes placeholder `n` with its raw closing markup.
    pub fn close(&mut self, n: usize, raw: String) {
        if let Some(tag) = self.tags.get_mut(n - 1) {
            tag.close = Some(raw);
        }
        self.text.push(OPEN);
        self.text.push('/');
        self.text.push_str(&n.to_string());
        self.text.push(CLOSE);
    }

    /// Adds a void placeholder.
    pub fn void(&mut self, raw: String, plain: String) {
        self.tags.push(Tag {
            open: raw,
            close: None,
            plain,
        });
        let n = self.tags.len();
        self.text.push(OPEN);
        self.text.push_str(&n.to_string());
        self.text.push('/');
        self.text.push(CLOSE);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tags() -> Vec<Tag> {
        let mut b = Builder::default();
        b.push_text("a ");
        let n = b.open("<em>".into());
        b.push_text("b");
        b.close(n, "</em>".into());
        b.void("<br/>".into(), "\n".into());
        b.tags
    }

    #[test]
    fn builder_writes_numbered_placeholders() {
        let mut b = Builder::default();
        b.push_text("a ");
        let n = b.open("<em>".into());
        b.push_text("b");
        b.close(n, "</em>".into());
        b.void("<br/>".into(), "\n".into());
        assert_eq!(b.text, "a ⟦1⟧b⟦/1⟧⟦2/⟧");
        assert_eq!(to_plain(&b.text, &b.tags), "a b\n");
    }

    #[test]
    fn moved_placeholders_are_accepted_and_rendered() {
        let t = tags();
        let tokens = check("⟦2/⟧X ⟦1⟧y⟦/1⟧", &t).unwrap();
        let out = render(&tokens, &t, |s, o| o.push_str(s));
        assert_eq!(out, "<br/>X <em>y</em>");
    }

    #[test]
    fn mismatches_are_refused() {
        let t = tags();
        assert_eq!(check("x ⟦1⟧y⟦/1⟧", &t), Err(Mismatch::Missing(2)));
        assert_eq!(check("⟦1⟧y⟦/1⟧⟦2/⟧⟦3/⟧", &t), Err(Mismatch::Unknown(3)));
        assert_eq!(check("⟦1⟧y⟦2/⟧", &t), Err(Mismatch::Nesting(1)));
        assert_eq!(check("⟦1/⟧⟦2/⟧", &t), Err(Mismatch::Shape(1)));
        assert_eq!(
            check("⟦1⟧a⟦/1⟧⟦1⟧b⟦/1⟧⟦2/⟧", &t),
            Err(Mismatch::Repeated(1))
        );
        assert!(matches!(check("⟦1 y", &t), Err(Mismatch::Syntax(_))));
    }

    #[test]
    fn literal_brackets_become_void_placeholders() {
        let mut b = Builder::default();
        b.push_text("x ⟦1⟧ y");
        assert_eq!(b.text, "x ⟦1/⟧1⟦2/⟧ y");
        assert_eq!(to_plain(&b.text, &b.tags), "x ⟦1⟧ y");
    }
}
