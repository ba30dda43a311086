//! What a model that tries to approve its own call would do with a tool result: find every
//! approval token (`ap1.<expiry>.<nonce>.<mac>`, or a gateway's passed-on
//! `ap1p.<expiry>.<mac>.<token>`) in the text it reads.

/// Every `ap1.` or `ap1p.` word of `text` (the prefix and the letters, digits, dots and
/// underscores after it), in order: the tokens a model would send back if the text showed any.
pub fn tokens_in(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = text;
    let next = |rest: &str| [rest.find("ap1."), rest.find("ap1p.")].into_iter().flatten().min();
    while let Some(start) = next(rest) {
        let word: String =
            rest[start..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '.' || *c == '_').collect();
        rest = &rest[start + word.len()..];
        found.push(word);
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_token_in_a_text_is_found_in_order() {
        assert_eq!(
            tokens_in("send `ap1.17.ab.cd` or ap1p.19.ef.ap1.1.2.3, ap1.18.ef_x, not ap2.1"),
            ["ap1.17.ab.cd", "ap1p.19.ef.ap1.1.2.3", "ap1.18.ef_x"]
        );
    }

    #[test]
    fn a_text_without_a_token_has_none() {
        assert_eq!(tokens_in("it needs the user's approval"), Vec::<String>::new());
    }
}
