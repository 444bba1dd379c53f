//! Chapter labels: the canonical English `label` and the `display_label` in the
//! target language (spec 2.6), used as heading when a title gives only a number
//! or a kind. Languages without a table fall back to English.

use crate::model::ChapterKind;

fn lang_key(lang: &str) -> &'static str {
    let primary = lang
        .split(['-', '_'])
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    match primary.as_str() {
        "fr" => "fr",
        "de" => "de",
        "es" => "es",
        _ => "en",
    }
}

fn kind_name(kind: ChapterKind, lang: &str) -> &'static str {
    use ChapterKind::*;
    match (lang, kind) {
        ("fr", Chapter) => "Chapitre",
        ("fr", Cover) => "Couverture",
        ("fr", TitlePage) => "Page de titre",
        ("fr", Copyright) => "Droits d'auteur",
        ("fr", Toc) => "Table des matières",
        ("fr", Dedication) => "Dédicace",
        ("fr", Foreword) => "Avant-propos",
        ("fr", Preface) => "Préface",
        ("fr", Introduction) => "Introduction",
        ("fr", Prologue) => "Prologue",
        ("fr", Interlude) => "Interlude",
        ("fr", Epilogue) => "Épilogue",
        ("fr", Afterword) => "Postface",
        ("fr", Appendix) => "Annexe",
        ("fr", Notes) => "Notes",
        ("fr", Acknowledgements) => "Remerciements",
        ("fr", Glossary) => "Glossaire",
        ("fr", Bibliography) => "Bibliographie",
        ("fr", Index) => "Index",
        ("fr", Colophon) => "Colophon",
        ("fr", FrontMatter) => "Pages liminaires",
        ("fr", BackMatter) => "Pages finales",
        ("de", Chapter) => "Kapitel",
        ("de", Cover) => "Umschlag",
        ("de", TitlePage) => "Titelseite",
        ("de", Copyright) => "Impressum",
        ("de", Toc) => "Inhalt",
        ("de", Dedication) => "Widmung",
        ("de", Foreword) => "Geleitwort",
        ("de", Preface) => "Vorwort",
        ("de", Introduction) => "Einleitung",
        ("de", Prologue) => "Prolog",
        ("de", Interlude) => "Zwischenspiel",
        ("de", Epilogue) => "Epilog",
        ("de", Afterword) => "Nachwort",
        ("de", Appendix) => "Anhang",
        ("de", Notes) => "Anmerkungen",
        ("de", Acknowledgements) => "Danksagung",
        ("de", Glossary) => "Glossar",
        ("de", Bibliography) => "Literaturverzeichnis",
        ("de", Index) => "Register",
        ("de", Colophon) => "Kolophon",
        ("de", FrontMatter) => "Titelei",
        ("de", BackMatter) => "Anhang",
        ("es", Chapter) => "Capítulo",
        ("es", Cover) => "Cubierta",
        ("es", TitlePage) => "Portada",
        ("es", Copyright) => "Créditos",
        ("es", Toc) => "Índice",
        ("es", Dedication) => "Dedicatoria",
        ("es", Foreword) => "Presentación",
        ("es", Preface) => "Prefacio",
        ("es", Introduction) => "Introducción",
        ("es", Prologue) => "Prólogo",
        ("es", Interlude) => "Interludio",
        ("es", Epilogue) => "Epílogo",
        ("es", Afterword) => "Posfacio",
        ("es", Appendix) => "Apéndice",
        ("es", Notes) => "Notas",
        ("es", Acknowledgements) => "Agradecimientos",
        ("es", Glossary) => "Glosario",
        ("es", Bibliography) => "Bibliografía",
        ("es", Index) => "Índice analítico",
        ("es", Colophon) => "Colofón",
        ("es", FrontMatter) => "Preliminares",
        ("es", BackMatter) => "Apéndices",
        (_, Chapter) => "Chapter",
        (_, Cover) => "Cover",
        (_, TitlePage) => "Title page",
        (_, Copyright) => "Copyright",
        (_, Toc) => "Contents",
        (_, Dedication) => "Dedication",
        (_, Foreword) => "Foreword",
        (_, Preface) => "Preface",
        (_, Introduction) => "Introduction",
        (_, Prologue) => "Prologue",
        (_, Interlude) => "Interlude",
        (_, Epilogue) => "Epilogue",
        (_, Afterword) => "Afterword",
        (_, Appendix) => "Appendix",
        (_, Notes) => "Notes",
        (_, Acknowledgements) => "Acknowledgements",
        (_, Glossary) => "Glossary",
        (_, Bibliography) => "Bibliography",
        (_, Index) => "Index",
        (_, Colophon) => "Colophon",
        (_, FrontMatter) => "Front matter",
        (_, BackMatter) => "Back matter",
    }
}

fn part_word(lang: &str) -> &'static str {
    match lang {
        "fr" => "partie",
        "de" => "Teil",
        "es" => "parte",
        _ => "Part",
    }
}

fn of_word(lang: &str) -> &'static str {
    match lang {
        "fr" => "sur",
        "de" => "von",
        "es" => "de",
        _ => "of",
    }
}

/// The label of a chapter in `lang`: `Chapitre 12 (partie 2)`, `Épilogue`, …
pub fn display_label(
    kind: ChapterKind,
    number: Option<u32>,
    part: Option<u32>,
    part_count: Option<u32>,
    lang: &str,
) -> String {
    let l = lang_key(lang);
    let mut s = kind_name(kind, l).to_string();
    if kind == ChapterKind::Chapter
        && let Some(n) = number
    {
        s.push_str(&format!(" {n}"));
    }
    if let Some(p) = part {
        s.push_str(&format!(" ({} {p}", part_word(l)));
        if let Some(c) = part_count {
            s.push_str(&format!(" {} {c}", of_word(l)));
        }
        s.push(')');
    }
    s
}

/// The canonical English label stored as `label`.
pub fn label(kind: ChapterKind, number: Option<u32>, part: Option<u32>) -> String {
    display_label(kind, number, part, None, "en")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_follow_the_target_language() {
        assert_eq!(
            display_label(ChapterKind::Chapter, Some(12), Some(2), Some(3), "fr-CA"),
            "Chapitre 12 (partie 2 sur 3)"
        );
        assert_eq!(
            display_label(ChapterKind::Epilogue, None, None, None, "fr"),
            "Épilogue"
        );
        assert_eq!(
            display_label(ChapterKind::Prologue, None, None, None, "ja"),
            "Prologue"
        );
        assert_eq!(label(ChapterKind::Chapter, Some(3), None), "Chapter 3");
    }
}
