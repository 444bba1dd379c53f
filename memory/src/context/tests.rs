//! Unit tests of the context a batch is translated with.

use super::*;

fn parts() -> ContextParts {
    ContextParts {
        locked_terms: vec!["Dark Lord => Seigneur des Ténèbres (locked)".into()],
        terms: vec!["mana => mana".into()],
        characters: vec!["Rin => Rine; aliases: Lady R; female; address: vous".into()],
        places: vec!["Castle => Château".into()],
        style: vec!["register: literary".into()],
        before: Some("Rin arrived. She slept.".into()),
        ..ContextParts::default()
    }
}

#[test]
fn the_format_is_stable() {
    assert_eq!(
        parts().render(),
        "Glossary:\n\
         - Dark Lord => Seigneur des Ténèbres (locked)\n\
         - mana => mana\n\
         Characters:\n\
         - Rin => Rine; aliases: Lady R; female; address: vous\n\
         Places and things:\n\
         - Castle => Château\n\
         Style:\n\
         - register: literary\n\
         Before: Rin arrived. She slept."
    );
    assert_eq!(ContextParts::default().render(), "");
}

#[test]
fn character_lines_leave_out_empty_parts() {
    let sheet = Sheet {
        kind: Some(EntityKind::Character),
        name: "Rin".into(),
        ..Sheet::default()
    };
    assert_eq!(sheet.character_line(), "Rin");
    let sheet = Sheet {
        target_name: Some("Rine".into()),
        address: Some("tu".into()),
        ..sheet
    };
    assert_eq!(sheet.character_line(), "Rin => Rine; address: tu");
}

#[test]
fn the_cut_keeps_the_budget_and_drops_by_priority() {
    let full = parts().cut(10_000);
    assert_eq!(full.text, parts().render());
    assert_eq!(full.tokens, estimate_tokens(&full.text));

    let mut budgets: Vec<usize> = (0..=full.tokens).collect();
    budgets.reverse();
    let mut last_lines = usize::MAX;
    for budget in budgets {
        let cut = parts().cut(budget);
        assert!(cut.tokens <= budget, "budget {budget}");
        assert_eq!(cut.tokens, estimate_tokens(&cut.text));
        // Only whole lines of the full text remain.
        for line in cut.text.lines() {
            assert!(full.text.lines().any(|l| l == line), "{line}");
        }
        let lines = cut.text.lines().count();
        assert!(lines <= last_lines);
        last_lines = lines;
    }

    // Just under the full size: the summaries go first.
    let cut = parts().cut(full.tokens - 1);
    assert!(!cut.text.contains("Before:"));
    assert!(cut.text.contains("Castle"));

    // With room for the locked term alone, that is what remains.
    let locked = "Glossary:\n- Dark Lord => Seigneur des Ténèbres (locked)";
    let cut = parts().cut(estimate_tokens(locked));
    assert_eq!(cut.text, locked);

    // Characters outlast unlocked terms, style and places.
    let keep = "Glossary:\n- Dark Lord => Seigneur des Ténèbres (locked)\n\
                Characters:\n- Rin => Rine; aliases: Lady R; female; address: vous";
    let cut = parts().cut(estimate_tokens(keep));
    assert_eq!(cut.text, keep);

    assert_eq!(parts().cut(0), BatchContext::default());
}

fn retrieved() -> Retrieved {
    use crate::external::retrieval::{EntityHit, SimilarPassage};
    let entity = |name: &str, aliases: &[&str], target: Option<&str>, kind| EntityHit {
        name: name.into(),
        target_name: target.map(str::to_owned),
        aliases: aliases.iter().map(|a| (*a).to_owned()).collect(),
        description: String::new(),
        distance: 0.1,
        kind: Some(kind),
    };
    Retrieved {
        passages: vec![SimilarPassage {
            source: "Rin slept\nat the Castle.".into(),
            translation: "Rine dormait au Château.".into(),
            validated: true,
            distance: 0.1,
        }],
        entities: vec![
            // Shown by the database already (by its alias): left out.
            entity("Rinna", &["Lady R"], Some("Rinna"), EntityKind::Character),
            entity("Sora", &["Captain"], Some("Sora"), EntityKind::Character),
            entity("Tower", &[], Some("Tour"), EntityKind::Place),
        ],
    }
}

#[test]
fn retrieved_lines_follow_the_databases_and_go_first() {
    let mut parts = parts();
    parts.shown_names = vec![match_key("Rin"), match_key("Lady R"), match_key("Castle")];
    let database = parts.clone().cut(10_000).text;
    parts.add_retrieved(&retrieved());
    let full = parts.clone().cut(10_000);
    assert_eq!(
        full.text,
        "Glossary:\n\
         - Dark Lord => Seigneur des Ténèbres (locked)\n\
         - mana => mana\n\
         Characters:\n\
         - Rin => Rine; aliases: Lady R; female; address: vous\n\
         - Sora => Sora; aliases: Captain\n\
         Places and things:\n\
         - Castle => Château\n\
         - Tower => Tour\n\
         Style:\n\
         - register: literary\n\
         Similar passages:\n\
         - Rin slept at the Castle. => Rine dormait au Château.\n\
         Before: Rin arrived. She slept."
    );
    // With room for the database's context alone, that is what stays:
    // retrieval only takes the room left.
    let cut = parts.clone().cut(estimate_tokens(&database));
    assert_eq!(cut.text, database);
    // A little more room: the retrieved entities come before the
    // similar passage.
    let without_similar = full.text.replace(
        "Similar passages:\n- Rin slept at the Castle. => Rine dormait au Château.\n",
        "",
    );
    let cut = parts.cut(estimate_tokens(&without_similar));
    assert_eq!(cut.text, without_similar);
}

#[test]
fn long_passages_are_shown_on_one_line_and_cut() {
    assert_eq!(one_line("a\n  b\tc ", 10), "a b c");
    let long = "word ".repeat(100);
    let shown = one_line(&long, SIMILAR_CHARS);
    assert_eq!(shown.chars().count(), SIMILAR_CHARS);
    assert!(shown.ends_with("word…"), "{shown}");
}

#[test]
fn style_falls_back_to_the_series_per_aspect_people_first() {
    let line = |aspect, origin, text: &str, project: bool| bible_line::Model {
        id: text.into(),
        project_id: project.then(|| "v".into()),
        series_id: (!project).then(|| "s".into()),
        aspect,
        text: text.into(),
        origin,
        passage_id: None,
        evidence: None,
        created_at: 0,
    };
    let volume = vec![
        line(BibleAspect::Tense, Origin::Analysis, "past", true),
        line(BibleAspect::Tone, Origin::Human, "dry", true),
    ];
    let series = vec![
        line(BibleAspect::Tense, Origin::Human, "present", false),
        line(BibleAspect::Register, Origin::Analysis, "literary", false),
    ];
    assert_eq!(
        style_lines(&volume, &series),
        vec!["tone: dry", "register: literary", "tense: past"]
    );
}
