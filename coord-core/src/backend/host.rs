//! Splitting addresses into host and port, one way for every backend:
//! `host`, `host:port`, `[v6]`, `[v6]:port` and a bare IPv6 address
//! (`::1`, which has no port: its colons are the address's own).

/// An address split into its host and its port, if it has one.
///
/// The host is as written, without the brackets of an IPv6 address: the
/// name a server's certificate is checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostPort<'a> {
    /// The DNS name or IP address (an IPv6 one without brackets).
    pub host: &'a str,
    /// The port, when the address has one.
    pub port: Option<u16>,
}

impl HostPort<'_> {
    /// `host:port`, with `default_port` when the address had none, and an
    /// IPv6 host in brackets (`[::1]:2181`).
    pub fn with_default_port(&self, default_port: u16) -> String {
        let port = self.port.unwrap_or(default_port);
        if self.host.contains(':') {
            format!("[{}]:{port}", self.host)
        } else {
            format!("{}:{port}", self.host)
        }
    }
}

/// The host and the port, as text, without checking either.
fn split(addr: &str) -> std::result::Result<(&str, Option<&str>), String> {
    if let Some(v6) = addr.strip_prefix('[') {
        let (host, after) = v6
            .split_once(']')
            .ok_or("an IPv6 host without its closing ']'")?;
        return match after {
            "" => Ok((host, None)),
            _ => match after.strip_prefix(':') {
                Some(port) => Ok((host, Some(port))),
                None => Err(format!("{after:?} after the IPv6 host [{host}]")),
            },
        };
    }
    Ok(match addr.split_once(':') {
        // More than one colon without brackets: a bare IPv6 address, whose
        // colons are its own (it cannot carry a port).
        Some((_, rest)) if rest.contains(':') => (addr, None),
        Some((host, port)) => (host, Some(port)),
        None => (addr, None),
    })
}

/// Split `addr` (`host`, `host:port`, `[v6]`, `[v6]:port`, or a bare IPv6
/// address) into its host and port.
///
/// # Errors
/// Why `addr` is not an address, as a phrase the caller puts in its own
/// error: an empty host, an IPv6 host without its `]`, or a port that is
/// not a number from 1 to 65535.
pub fn parse(addr: &str) -> std::result::Result<HostPort<'_>, String> {
    let (host, port) = split(addr)?;
    if host.is_empty() {
        return Err(format!("host {addr:?} has no name"));
    }
    let port = match port {
        None => None,
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n > 0 => Some(n),
            _ => return Err(format!("port {p:?} of host {host:?} is not a port number")),
        },
    };
    Ok(HostPort { host, port })
}

/// The host of `addr`, leniently (no checks; the whole of `addr` when it
/// cannot be split): for naming the host in a TLS handshake or a message.
pub fn host_of(addr: &str) -> &str {
    match split(addr) {
        Ok((host, _)) => host,
        Err(_) => addr,
    }
}

/// Check a comma-separated host list (`h1:2181,[::1]:2182,h3`) and give
/// each host as `host:port`, with `default_port` where it has none.
///
/// # Errors
/// Why the list is not one, as a phrase the caller puts in its own error:
/// no host, an empty host in the list, or a host [`parse`] refuses.
pub fn host_list(list: &str, default_port: u16) -> std::result::Result<Vec<String>, String> {
    if list.is_empty() {
        return Err("no host".into());
    }
    list.split(',')
        .map(|addr| {
            if addr.is_empty() {
                return Err("an empty host in the list".to_owned());
            }
            parse(addr).map(|hp| hp.with_default_port(default_port))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hp(host: &str, port: Option<u16>) -> HostPort<'_> {
        HostPort { host, port }
    }

    #[test]
    fn hosts_and_ports() {
        assert_eq!(parse("127.0.0.1:2181"), Ok(hp("127.0.0.1", Some(2181))));
        assert_eq!(parse("zk-0.zk:2181"), Ok(hp("zk-0.zk", Some(2181))));
        assert_eq!(parse("zk"), Ok(hp("zk", None)));
    }

    #[test]
    fn ipv6_in_brackets_and_bare() {
        assert_eq!(parse("[::1]:2181"), Ok(hp("::1", Some(2181))));
        assert_eq!(parse("[::1]"), Ok(hp("::1", None)));
        assert_eq!(parse("::1"), Ok(hp("::1", None)));
        assert_eq!(parse("fe80::1:2:3"), Ok(hp("fe80::1:2:3", None)));
        assert_eq!(host_of("::1"), "::1");
        assert_eq!(host_of("[::1]:2379"), "::1");
        assert_eq!(host_of("2001:db8::7"), "2001:db8::7");
        assert_eq!(
            parse("::1").map(|h| h.with_default_port(2379)).as_deref(),
            Ok("[::1]:2379")
        );
        assert_eq!(
            parse("[::1]:5")
                .map(|h| h.with_default_port(2379))
                .as_deref(),
            Ok("[::1]:5")
        );
    }

    #[test]
    fn host_of_is_lenient() {
        assert_eq!(host_of("127.0.0.1:2181"), "127.0.0.1");
        assert_eq!(host_of("zk-0.zk:2181"), "zk-0.zk");
        assert_eq!(host_of("zk"), "zk");
        assert_eq!(host_of("h:port"), "h");
        assert_eq!(host_of("[::1"), "[::1");
    }

    #[test]
    fn bad_addresses_are_refused() {
        for bad in [
            "", ":1", "a:x", "a:", "a:0", "a:70000", "[::1", "[::1]x", "[]:1",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} was accepted");
        }
        assert!(matches!(parse("h:port"), Err(why) if why.contains("is not a port number")));
    }

    #[test]
    fn host_lists() {
        assert_eq!(
            host_list("a:1,b,[::1]:3,[::2],::3", 2181),
            Ok(vec![
                "a:1".to_owned(),
                "b:2181".into(),
                "[::1]:3".into(),
                "[::2]:2181".into(),
                "[::3]:2181".into(),
            ])
        );
        for bad in ["", "a,,b", "a:x", "a:", ":1", "[::1", "a:0", "a:70000"] {
            assert!(host_list(bad, 2181).is_err(), "{bad:?} was accepted");
        }
        assert_eq!(host_list("", 1), Err("no host".into()));
        assert_eq!(host_list("a,", 1), Err("an empty host in the list".into()));
    }
}
