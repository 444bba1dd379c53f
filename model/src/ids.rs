//! Identifier generation: every primary key is an application-generated UUID v7 string.

/// Returns a new time-ordered UUID v7 in its canonical 36-character hyphenated form.
pub fn new_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

#[cfg(test)]
mod tests {
    use super::new_id;

    #[test]
    fn ids_are_uuid_v7_strings() {
        let a = new_id();
        let b = new_id();
        assert_eq!(a.len(), 36);
        assert_ne!(a, b);
        let parsed = uuid::Uuid::parse_str(&a).unwrap();
        assert_eq!(parsed.get_version_num(), 7);
    }
}
