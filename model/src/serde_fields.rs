//! How a partial change tells "left out" from "given": serde field
//! deserializers shared by the documents and bodies that need them.

use serde::{Deserialize, Deserializer};

/// A field that is there, null or not: `Some(None)` for a null, while a
/// missing field stays `None` (with `#[serde(default)]`).
pub fn null_or_value<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer).map(Some)
}

/// A field that, when present, must hold a value of its type: `null` is a
/// type error rather than "keep", so a client never believes it cleared a
/// setting that has no empty value.
pub fn value_if_present<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(deserializer).map(Some)
}
