//! Keeping secrets out of messages: what every backend and the facade use
//! before a URL reaches an error, a log line or `Debug` output.

/// `url` with the password of its user info (if any) replaced by `***`:
/// `redis://app:s3cret@h:6379/0` → `redis://app:***@h:6379/0`. The user
/// info is everything before the last `@`, raw reserved characters and
/// all; without a `:` in it, all of it is masked (`***@h`). A URL without
/// `@` comes back as it was.
pub fn redact_url(url: &str) -> String {
    let (head, rest) = match url.find("://") {
        Some(i) => url.split_at(i + 3),
        None => ("", url),
    };
    // The user info ends at the LAST '@': a password may hold '/', '?',
    // '#', ':' and '@' unescaped, so nothing before that '@' is kept but a
    // user name (up to the first ':').
    let Some(at) = rest.rfind('@') else {
        return url.to_owned();
    };
    let shown = match rest[..at].split_once(':') {
        Some((user, _)) if !user.contains(['/', '?', '#']) => format!("{user}:***"),
        _ => "***".to_owned(),
    };
    format!("{head}{shown}{}", &rest[at..])
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
        assert_eq!(redact_url("redis://app@h:6379"), "redis://***@h:6379");
        assert_eq!(redact_url("redis://h:1/0"), "redis://h:1/0");
        // Everything before the last '@' is user info (a chroot or query
        // cannot hold a raw '@'), so this is masked too.
        assert_eq!(redact_url("zk://h:2181/a@b"), "zk://h:***@b");
        for pw in [
            "pa/ss", "pa#ss", "pa?ss", "pa@ss", "pa:ss", "pa ss", "pa%2Fss",
        ] {
            let shown = redact_url(&format!("redis://app:{pw}@h:1/0"));
            assert_eq!(shown, "redis://app:***@h:1/0", "{pw}");
            let shown = redact_url(&format!("app:{pw}@h:1"));
            assert!(!shown.contains("pa") && !shown.contains("ss"), "{shown}");
        }
        assert_eq!(redact_url("nonsense"), "nonsense");
    }
}
