//! Keeping secrets out of messages: what every backend and the facade use
//! before a URL reaches an error, a log line or `Debug` output.

/// `url` with the password of its user info (if any) replaced by `***`:
/// `redis://app:s3cret@h:6379/0` → `redis://app:***@h:6379/0`. Anything
/// that is not `scheme://user:password@…` comes back as it was.
pub fn redact_url(url: &str) -> String {
    let Some(start) = url.find("://").map(|i| i + 3) else {
        return url.to_owned();
    };
    let end = url[start..]
        .find(['/', '?', '#'])
        .map_or(url.len(), |i| start + i);
    let authority = &url[start..end];
    let Some(at) = authority.rfind('@') else {
        return url.to_owned();
    };
    match authority[..at].find(':') {
        Some(colon) => format!(
            "{}{}:***{}",
            &url[..start],
            &authority[..colon],
            &url[start + at..]
        ),
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::redact_url;

    #[test]
    fn passwords_are_hidden_and_nothing_else_changes() {
        assert_eq!(
            redact_url("redis://app:s3cret@h:6379/0?x=1"),
            "redis://app:***@h:6379/0?x=1"
        );
        assert_eq!(redact_url("redis://:pw@h:1"), "redis://:***@h:1");
        assert_eq!(redact_url("redis://app@h:6379"), "redis://app@h:6379");
        assert_eq!(redact_url("redis://h:1/0"), "redis://h:1/0");
        assert_eq!(redact_url("zk://h:2181/a@b"), "zk://h:2181/a@b");
        assert_eq!(redact_url("nonsense"), "nonsense");
    }
}
