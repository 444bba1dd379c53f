//! Reading the `context` of a translation request: the renderings the
//! memory service asks the model to keep.
//!
//! The context is text in sections, each optional, in this order:
//!
//! ```text
//! Glossary:
//! - <source> => <translation> (locked)
//! Characters:
//! - <name> => <target_name>; aliases: <a>, <b>; <gender>; address: <address>
//! Places and things:
//! - <name> => <target_name>
//! Style:
//! - <aspect>: <text>
//! Before: <text>
//! ```
//!
//! The rendering after `=>` ends at the first `;` or ` (locked)`. A
//! character's aliases map to its rendering too. Style notes are not
//! renderings, nor are the lines under any other heading (`Similar
//! passages:`, earlier passages with their translations), and nothing
//! after `Before:` is read, since the earlier text may hold lines that look
//! like entries. A source given twice keeps its first rendering.

/// Which section an entry comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Glossary,
    Character,
    Place,
}

/// One source phrase and how it must be rendered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Entry {
    pub source: String,
    pub rendering: String,
    pub kind: Kind,
}

/// The renderings of a context, in the order given.
pub(super) fn parse(context: &str) -> Vec<Entry> {
    let mut entries: Vec<Entry> = Vec::new();
    let mut section = None;
    for line in context.lines() {
        let line = line.trim_end();
        if line.starts_with("Before:") {
            break;
        }
        match line {
            "Glossary:" => section = Some(Kind::Glossary),
            "Characters:" => section = Some(Kind::Character),
            "Places and things:" => section = Some(Kind::Place),
            "Style:" => section = None,
            // Any other heading (`Similar passages:` of the external
            // memory) holds no renderings: its `source => translation`
            // lines are whole passages, not names to keep.
            heading if !heading.starts_with("- ") && heading.ends_with(':') => section = None,
            _ => {
                let (Some(kind), Some(item)) = (section, line.strip_prefix("- ")) else {
                    continue;
                };
                for (source, rendering) in item_renderings(kind, item) {
                    if !entries.iter().any(|e| e.source == source) {
                        entries.push(Entry {
                            source,
                            rendering,
                            kind,
                        });
                    }
                }
            }
        }
    }
    entries
}

/// The (source, rendering) pairs of one entry line: its source, and for a
/// character its aliases too. None without a rendering.
fn item_renderings(kind: Kind, item: &str) -> Vec<(String, String)> {
    let Some((source, rest)) = item.split_once("=>") else {
        return Vec::new();
    };
    let source = source.trim();
    let end = [rest.find(';'), rest.find(" (locked)")]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(rest.len());
    let rendering = rest[..end].trim();
    if source.is_empty() || rendering.is_empty() {
        return Vec::new();
    }
    let mut pairs = vec![(source.to_owned(), rendering.to_owned())];
    if kind == Kind::Character {
        let aliases = rest[end..]
            .split(';')
            .filter_map(|part| part.trim().strip_prefix("aliases:"))
            .flat_map(|list| list.split(','))
            .map(str::trim)
            .filter(|a| !a.is_empty() && *a != source);
        pairs.extend(aliases.map(|a| (a.to_owned(), rendering.to_owned())));
    }
    pairs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(context: &str) -> Vec<(String, String, Kind)> {
        parse(context)
            .into_iter()
            .map(|e| (e.source, e.rendering, e.kind))
            .collect()
    }

    #[test]
    fn every_section_is_read_up_to_the_earlier_text() {
        let context = "Glossary:\n\
            - warp core => cœur de distorsion (locked)\n\
            - shuttle => navette\n\
            Characters:\n\
            - Alice Liddell => Alicia; aliases: Ally, Al; female; address: tu\n\
            - Bob => Robert\n\
            - Nobody\n\
            Places and things:\n\
            - Wonderland => Pays des merveilles\n\
            Style:\n\
            - tense: past => not a rendering\n\
            Before: - Zed => Zorro\n\
            - Late => Tard";
        let p = pairs(context);
        let expected = [
            ("warp core", "cœur de distorsion", Kind::Glossary),
            ("shuttle", "navette", Kind::Glossary),
            ("Alice Liddell", "Alicia", Kind::Character),
            ("Ally", "Alicia", Kind::Character),
            ("Al", "Alicia", Kind::Character),
            ("Bob", "Robert", Kind::Character),
            ("Wonderland", "Pays des merveilles", Kind::Place),
        ];
        assert_eq!(p.len(), expected.len(), "{p:?}");
        for (got, (s, r, k)) in p.iter().zip(expected) {
            assert_eq!((got.0.as_str(), got.1.as_str(), got.2), (s, r, k));
        }
    }

    #[test]
    fn the_first_rendering_of_a_source_wins_and_garbage_is_skipped() {
        let p = pairs("Glossary:\n- a => b\n- a => c\n- => x\n- y =>  (locked)\nnoise");
        assert_eq!(p, vec![("a".into(), "b".into(), Kind::Glossary)]);
        assert!(parse("- a => b").is_empty(), "an entry outside a section");
    }

    #[test]
    fn similar_passages_are_not_renderings() {
        let context = "Places and things:\n\
            - Castle => Château\n\
            Similar passages:\n\
            - The Castle stood. => Le Château se dressait.\n\
            Before: Alice arrives.";
        assert_eq!(
            pairs(context),
            vec![("Castle".into(), "Château".into(), Kind::Place)]
        );
    }
}
