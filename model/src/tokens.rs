//! The token estimate every part of the service plans with: batches and
//! context budgets in the pipeline and the memory service, and the usage the
//! provider simulator reports.

/// Estimated tokens of a text: ASCII characters / 3, rounded up, plus one per
/// other character. Real tokenizers give about 4 ASCII characters per token
/// and 1 to 3 other characters (accented, Cyrillic, CJK, the placeholder
/// brackets) per token, so the estimate errs on the high side: a batch
/// planned with it fits the budget for every provider.
pub fn estimate_tokens(text: &str) -> usize {
    let ascii = text.bytes().filter(u8::is_ascii).count();
    let other = text.chars().filter(|c| !c.is_ascii()).count();
    ascii.div_ceil(3) + other
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimate_counts_ascii_by_threes_and_others_by_one() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("abcd"), 2);
        assert_eq!(estimate_tokens("⟦1/⟧"), 3);
        assert_eq!(estimate_tokens("日本"), 2);
    }
}
