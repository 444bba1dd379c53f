//! The console's words in English and French: each page keeps its own
//! table next to its code, declared with [`texts!`] so that a text missing
//! in one language does not compile.

use crate::messages::Lang;

/// Declares a struct of texts with its English and French tables, each
/// text given as `field: "English" / "Français",`.
macro_rules! texts {
    ($(#[$meta:meta])* $name:ident { $($field:ident: $en:literal / $fr:literal,)* }) => {
        $(#[$meta])*
        #[derive(Debug)]
        pub struct $name {
            $(pub $field: &'static str,)*
        }

        impl $name {
            pub const EN: $name = $name { $($field: $en,)* };
            pub const FR: $name = $name { $($field: $fr,)* };

            /// The table of `lang`.
            pub fn of(lang: $crate::messages::Lang) -> &'static $name {
                match lang {
                    $crate::messages::Lang::En => &Self::EN,
                    $crate::messages::Lang::Fr => &Self::FR,
                }
            }
        }
    };
}
pub(crate) use texts;

texts! {
    /// The words of every page's frame: navigation, sign-out, language.
    ChromeText {
        product: "Dragoman" / "Dragoman",
        skip: "Skip to content" / "Aller au contenu",
        nav_label: "Main" / "Principal",
        books: "Books" / "Livres",
        send: "Send a book" / "Envoyer un livre",
        series: "Series" / "Séries",
        glossaries: "Glossaries" / "Glossaires",
        tokens: "API tokens" / "Jetons d'API",
        account: "Account" / "Compte",
        admin: "Administration" / "Administration",
        sign_out: "Sign out" / "Se déconnecter",
        signed_in_as: "Signed in as" / "Connecté en tant que",
        language: "Language" / "Langue",
        english: "English" / "English",
        french: "Français" / "Français",
    }
}

/// `lang` as the `lang` attribute of a page.
pub fn code(lang: Lang) -> &'static str {
    match lang {
        Lang::En => "en",
        Lang::Fr => "fr",
    }
}
