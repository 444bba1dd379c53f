//! `vocabulary!`: declares a closed set of spec strings as an enum that
//! serializes, parses, prints and is stored as those strings.

/// Declares `pub enum $name` whose variants carry their spec string, with
/// serde, database (SeaORM active enum over a text column), OpenAPI schema
/// (a string enum of the spec strings), `Display`,
/// `FromStr`, `as_str` and the list of all values.
macro_rules! vocabulary {
    (
        $(#[$meta:meta])*
        $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $text:tt ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(
            Debug,
            Clone,
            Copy,
            PartialEq,
            Eq,
            Hash,
            PartialOrd,
            Ord,
            serde::Serialize,
            serde::Deserialize,
            utoipa::ToSchema,
            sea_orm::EnumIter,
            sea_orm::DeriveActiveEnum,
        )]
        #[sea_orm(rs_type = "String", db_type = "String(StringLen::None)")]
        pub enum $name {
            $(
                $(#[$vmeta])*
                #[sea_orm(string_value = $text)]
                #[serde(rename = $text)]
                $variant,
            )+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The spec string.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }

            /// The spec strings, comma-separated (for "expected one of").
            pub fn expected() -> String {
                Self::ALL
                    .iter()
                    .map(|v| v.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $name {
            type Err = $crate::vocab::UnknownValue;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Self::ALL
                    .iter()
                    .copied()
                    .find(|v| v.as_str() == s)
                    .ok_or_else(|| $crate::vocab::UnknownValue {
                        value: s.to_owned(),
                        expected: Self::expected(),
                    })
            }
        }
    };
}
