//! Tests of URL parsing (`url.rs`): every backend's URLs, what is refused
//! and why, and that no password reaches an error or `Debug`.

use super::*;

fn reason(url: &str) -> String {
    match parse(url) {
        Ok(_) => panic!("{url} was accepted"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn mem_urls() {
    for url in ["mem://", "mem:///", "MEM://", "mem://?session_timeout=2s"] {
        let p = parse(url).unwrap_or_else(|e| panic!("{url}: {e}"));
        assert_eq!(p.backend, Backend::Mem);
    }
    let p = parse("mem://?session_timeout=1m").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(p.session_timeout, Some(Duration::from_secs(60)));
    assert!(reason("mem://host").contains("no host or path"));
    assert!(reason("mem:///x").contains("no host or path"));
}

#[test]
fn malformed_urls_say_what_is_wrong() {
    assert!(reason("").contains("expected <scheme>://"));
    assert!(reason("127.0.0.1:2181").contains("expected <scheme>://"));
    assert!(reason("://x").contains("scheme is missing"));
    assert!(reason("mem://#x").contains("fragment"));
    assert!(reason("mem://?ttl=3s").contains("unknown query parameter \"ttl\""));
    assert!(reason("mem://?session_timeout").contains("has no value"));
    assert!(reason("mem://?session_timeout=").contains("empty value"));
    assert!(reason("mem://?session_timeout=3").contains("unit"));
    assert!(reason("mem://?session_timeout=0s").contains("positive"));
    assert!(reason("mem://?session_timeout=25h").contains("maximum of 1d"));
    assert!(reason("mem://?session_timeout=106751991167301d").contains("maximum of 1d"));
    assert!(reason("mem://?session_timeout=99999999999999999999d").contains("out of range"));
    assert!(parse("mem://?session_timeout=1d").is_ok());
    assert!(reason("mem://?session_timeout=1s&session_timeout=2s").contains("twice"));
}

#[test]
fn unsupported_schemes() {
    assert!(matches!(
        parse("zks://h:2181"),
        Err(ConnectError::UnsupportedScheme { .. })
    ));
    assert!(reason("zks://u:secret@h:2181").contains("tls=true"));
    assert!(!reason("etcds://u:secret@h:2379").contains("secret"));
    assert!(reason("http://h:2379").contains("etcd://"));
    assert!(reason("https://h:2379").contains("tls=true"));
    assert!(reason("foo://h").contains("supported schemes"));
    assert!(reason("pg://u:secret@h/db").contains("postgres://"));
    assert!(!reason("pg://u:secret@h/db").contains("secret"));
}

#[test]
fn backends_not_compiled_name_their_feature() {
    for (url, backend) in [
        ("zk://h:2181", Backend::Zk),
        ("etcd://h:2379", Backend::Etcd),
        ("redis://h:6379", Backend::Redis),
        ("postgres://u@h/db", Backend::Postgres),
        ("postgresql://u@h/db", Backend::Postgres),
    ] {
        if backend.is_compiled() {
            continue;
        }
        match parse(url) {
            Err(ConnectError::BackendNotCompiled { feature, .. }) => {
                assert_eq!(Some(feature), backend.feature());
                assert!(reason(url).contains(&format!("\"{feature}\"")));
            }
            other => panic!("{url}: {other:?}"),
        }
    }
}

#[test]
fn host_lists() {
    assert_eq!(
        host_list("a:1,b,[::1]:3,[::2]", 2181).as_deref(),
        Ok("a:1,b:2181,[::1]:3,[::2]:2181")
    );
    for bad in ["", "a,,b", "a:x", "a:", ":1", "[::1", "a:0", "a:70000"] {
        assert!(host_list(bad, 2181).is_err(), "{bad:?} was accepted");
    }
}

#[test]
fn percent_decoding() {
    assert_eq!(percent_decode("p%40ss%3Aw").as_deref(), Ok("p@ss:w"));
    assert!(percent_decode("%4").is_err());
    assert!(percent_decode("%zz").is_err());
    assert!(percent_decode("ab%").is_err());
    assert!(percent_decode("%ff").is_err());
    assert_eq!(percent_decode("%C3%A9%25").as_deref(), Ok("\u{e9}%"));
    assert_eq!(percent_decode("plain").as_deref(), Ok("plain"));
    // The reasons never quote the secret.
    for bad in ["s3cret%4", "s3cret%zz", "s3cret%ff"] {
        let e = percent_decode(bad).err().unwrap_or_default();
        assert!(!e.is_empty() && !e.contains("s3cret"), "{e}");
    }
}

#[cfg(feature = "zk")]
#[test]
fn zk_urls() {
    let p = parse("zk://h1:2181,h2/app/x?session_timeout=5s").unwrap_or_else(|e| panic!("{e}"));
    let Target::Zk(o) = p.target else {
        panic!("not zk")
    };
    assert_eq!(o.hosts(), "h1:2181,h2:2181");
    assert_eq!(o.chroot(), Some("/app/x"));
    assert_eq!(p.session_timeout, Some(Duration::from_secs(5)));
    assert!(reason("zk://").contains("no host"));
    assert!(reason("zk://h:x").contains("port"));
    assert!(reason("zk://h:1/a//b").contains("chroot"));
    assert!(reason("zk://h:1?namespace=x").contains("unknown query parameter"));
}

/// `zk://user:password@…` is digest auth (or SASL with `auth=sasl`);
/// `acl=` chooses the ACL of the nodes coord creates.
#[cfg(feature = "zk")]
#[test]
fn zk_credentials_and_acls() {
    use coord_zk::ZkAcl;
    for (url, want) in [
        ("zk://app:pw@h:1/c", ZkAcl::CreatorAllWorldRead),
        ("zk://app:pw@h:1/c?acl=creator", ZkAcl::CreatorAllWorldRead),
        ("zk://app:pw@h:1/c?acl=creator_only", ZkAcl::CreatorAll),
        ("zk://app:pw@h:1/c?acl=open&auth=sasl", ZkAcl::Open),
        ("zk://h:1/c", ZkAcl::Open),
        ("zk://h:1/c?acl=open", ZkAcl::Open),
    ] {
        let p = parse(url).unwrap_or_else(|e| panic!("{url}: {e}"));
        let Target::Zk(o) = p.target else {
            panic!("not zk")
        };
        assert_eq!(o.acl(), want, "{url}");
        assert!(!format!("{o:?}").contains("pw@") && !format!("{o:?}").contains("\"pw\""));
    }
    assert!(reason("zk://nopassword@h:1").contains("user:password"));
    assert!(reason("zk://:pw@h:1").contains("user name is empty"));
    assert!(reason("zk://u:p@h:1?auth=kerberos").contains("digest or sasl"));
    assert!(reason("zk://h:1?auth=sasl").contains("needs credentials"));
    assert!(reason("zk://h:1?acl=creator").contains("need credentials"));
    assert!(reason("zk://u:p@h:1?acl=world").contains("creator, creator_only or open"));
}

/// The TLS parameters mean the same on every server backend.
#[cfg(all(feature = "zk", feature = "etcd", feature = "redis"))]
#[test]
fn tls_parameters() {
    fn tls_of(url: &str) -> Option<coord_core::TlsOptions> {
        match parse(url).unwrap_or_else(|e| panic!("{url}: {e}")).target {
            Target::Zk(o) => o.tls().cloned(),
            Target::Etcd(o) => o.tls().cloned(),
            Target::Redis(o) => o.tls().cloned(),
            #[cfg(feature = "pg")]
            Target::Pg(_) => panic!("pg: see pg_urls"),
            Target::Mem => panic!("mem"),
        }
    }
    let full = coord_core::TlsOptions::new()
        .with_ca("/etc/ca dir/ca.pem")
        .with_identity("/c/client.pem", "/c/client-key.pem")
        .with_server_name("coord.example");
    for scheme in ["zk", "etcd", "redis"] {
        assert_eq!(tls_of(&format!("{scheme}://h:1")), None, "{scheme}");
        assert_eq!(
            tls_of(&format!("{scheme}://h:1?tls=false")),
            None,
            "{scheme}"
        );
        assert_eq!(
            tls_of(&format!("{scheme}://h:1?tls=true")),
            Some(coord_core::TlsOptions::new()),
            "{scheme}"
        );
        let url = format!(
            "{scheme}://h:1?ca=/etc/ca%20dir/ca.pem&cert=/c/client.pem&key=/c/client-key.pem\
             &server_name=coord.example"
        );
        assert_eq!(tls_of(&url), Some(full.clone()), "{url}");
        assert!(reason(&format!("{scheme}://h:1?tls=yes")).contains("true or false"));
        assert!(reason(&format!("{scheme}://h:1?tls=false&ca=/x")).contains("tls=false"));
        assert!(reason(&format!("{scheme}://h:1?cert=/c.pem")).contains("private key"));
        assert!(reason(&format!("{scheme}://h:1?key=/k.pem")).contains("certificate"));
        assert!(reason(&format!("{scheme}://h:1?server_name=a..b")).contains("server_name"));
    }
    assert_eq!(tls_of("rediss://h:1"), Some(coord_core::TlsOptions::new()));
    assert_eq!(
        tls_of("rediss://u:p@h:1/2?ca=/x.pem"),
        Some(coord_core::TlsOptions::new().with_ca("/x.pem"))
    );
    assert!(reason("rediss://h:1?tls=false").contains("contradicts"));
    assert!(reason("mem://?tls=true").contains("unknown query parameter"));
}

#[cfg(feature = "etcd")]
#[test]
fn etcd_urls() {
    let p = parse("etcd://u:p%40w@h1:2379,h2/ns").unwrap_or_else(|e| panic!("{e}"));
    let Target::Etcd(o) = p.target else {
        panic!("not etcd")
    };
    assert_eq!(o.endpoints(), ["http://h1:2379", "http://h2:2379"]);
    assert_eq!(o.namespace(), "/ns");
    assert!(reason("etcd://").contains("no host"));
    assert!(reason("etcd://h:port").contains("port"));
    assert!(reason("etcd://nopassword@h").contains("user:password"));
}

#[cfg(feature = "redis")]
#[test]
fn redis_urls() {
    let p = parse("redis://app:pw@h/3?namespace=billing&session_timeout=5s")
        .unwrap_or_else(|e| panic!("{e}"));
    let Target::Redis(o) = p.target else {
        panic!("not redis")
    };
    assert_eq!(o.url(), "redis://app:pw@h:6379/3");
    assert_eq!(o.key_prefix(), "{billing}:");
    assert!(reason("redis://h/x").contains("database number"));
    assert!(reason("redis://a,b").contains("one Redis host"));
    assert!(reason("redis://h?namespace=a:b").contains("namespace"));
    assert!(reason("redis://h?session_timeout=100ms").contains("minimum"));
    assert!(reason("redis://").contains("no host"));
    for (mode, want) in [
        ("enable", coord_redis::KeyspaceEvents::Enable),
        ("require", coord_redis::KeyspaceEvents::Require),
        ("assume", coord_redis::KeyspaceEvents::Assume),
    ] {
        let p =
            parse(&format!("redis://h?keyspace_events={mode}")).unwrap_or_else(|e| panic!("{e}"));
        let Target::Redis(o) = p.target else {
            panic!("not redis")
        };
        assert!(format!("{o:?}").contains(&format!("{want:?}")), "{o:?}");
    }
    assert!(reason("redis://h?keyspace_events=on").contains("enable, require or assume"));
}

/// A password with reserved characters, raw: everything before the
/// last '@' is the user info, decoded, and the redis client gets it
/// encoded in full.
#[cfg(feature = "redis")]
#[test]
fn raw_reserved_characters_in_a_redis_password() {
    let p = parse("redis://app:pa/ss@h:1/2").unwrap_or_else(|e| panic!("{e}"));
    let Target::Redis(o) = p.target else {
        panic!("not redis")
    };
    assert_eq!(o.url(), "redis://app:pa%2Fss@h:1/2");
    assert_eq!(p.shown, "redis://app:***@h:1/2");
    let p = parse("redis://app:p@s:s?#x@h").unwrap_or_else(|e| panic!("{e}"));
    let Target::Redis(o) = p.target else {
        panic!("not redis")
    };
    assert_eq!(o.url(), "redis://app:p%40s%3As%3F%23x@h:6379");
    let p = parse("redis://app:p%2Fw@h").unwrap_or_else(|e| panic!("{e}"));
    let Target::Redis(o) = p.target else {
        panic!("not redis")
    };
    assert_eq!(o.url(), "redis://app:p%2Fw@h:6379");
}

#[cfg(feature = "pg")]
fn pg_options(url: &str) -> coord_pg::PgOptions {
    match parse(url).unwrap_or_else(|e| panic!("{url}: {e}")).target {
        Target::Pg(o) => o,
        other => panic!("{url}: not postgres: {other:?}"),
    }
}

/// What a postgres:// URL gives `PgOptions`: the host with its default
/// port, the user info and database encoded again in full, `sslmode`
/// and nothing else of the query, the schema, the session timeout.
#[cfg(feature = "pg")]
#[test]
fn pg_urls() {
    for scheme in ["postgres", "postgresql", "POSTGRES"] {
        let url = format!("{scheme}://app:pw@db.example/coord?session_timeout=5s");
        let p = parse(&url).unwrap_or_else(|e| panic!("{url}: {e}"));
        assert_eq!(p.backend, Backend::Postgres);
        assert_eq!(p.session_timeout, Some(Duration::from_secs(5)));
        assert_eq!(
            p.shown,
            format!("{scheme}://app:***@db.example/coord?session_timeout=5s")
        );
        let o = pg_options(&url);
        assert_eq!(o.url(), "postgres://app:pw@db.example:5432/coord");
        assert_eq!(o.schema(), "coord");
        assert!(!o.uses_tls());
    }
    let o = pg_options("postgres://app@[::1]:6543?schema=billing_2");
    assert_eq!(o.url(), "postgres://app@[::1]:6543");
    assert_eq!(o.schema(), "billing_2");
    // A password with reserved characters, raw or escaped; a database
    // name with a space.
    let o = pg_options("postgres://app:p@s:s?#x@h/my%20db");
    assert_eq!(o.url(), "postgres://app:p%40s%3As%3F%23x@h:5432/my%20db");
    let o = pg_options("postgres://a%2Fb:p%2Fw@h/db");
    assert_eq!(o.url(), "postgres://a%2Fb:p%2Fw@h:5432/db");
    // sslmode goes through; TLS is on with it or with the TLS parameters.
    let o = pg_options("postgres://app@h/db?sslmode=disable");
    assert_eq!(o.url(), "postgres://app@h:5432/db?sslmode=disable");
    assert!(!o.uses_tls());
    for url in [
        "postgres://app@h/db?sslmode=require",
        "postgres://app@h/db?sslmode=verify-full&ca=/etc/ca.pem",
        "postgres://app@h/db?tls=true",
        "postgres://app@h/db?ca=/etc/ca.pem",
        "postgres://app@h/db?cert=/c.pem&key=/k.pem&server_name=db.internal",
    ] {
        assert!(pg_options(url).uses_tls(), "{url}");
    }
    assert!(!pg_options("postgres://app@h/db?tls=false").uses_tls());
}

#[cfg(feature = "pg")]
#[test]
fn pg_urls_refused_say_why() {
    assert!(reason("postgres://h/db").contains("needs a user"));
    assert!(reason("postgres://:pw@h/db").contains("user name is empty"));
    assert!(reason("postgres://u@").contains("no host"));
    assert!(reason("postgres://u@h:x/db").contains("port"));
    assert!(reason("postgres://u@a,b/db").contains("one PostgreSQL host"));
    assert!(reason("postgres://u@h/db/x").contains("database name"));
    assert!(reason("postgres://u@h/d%zz").contains("database name"));
    assert!(reason("postgres://u@h/db?namespace=x").contains("unknown query parameter"));
    assert!(reason("postgres://u@h/db?application_name=x").contains("unknown query parameter"));
    for mode in ["verify-ca", "prefer", "allow"] {
        let r = reason(&format!("postgres://u@h/db?sslmode={mode}"));
        assert!(
            r.contains("not supported") && r.contains("verify-full"),
            "{r}"
        );
    }
    assert!(reason("postgres://u@h/db?sslmode=on").contains("disable, require or verify-full"));
    assert!(reason("postgres://u@h/db?sslmode=disable&tls=true").contains("sslmode=disable"));
    assert!(reason("postgres://u@h/db?sslmode=disable&ca=/x.pem").contains("sslmode=disable"));
    assert!(reason("postgres://u@h/db?sslmode=require&tls=false").contains("contradicts"));
    assert!(reason("postgres://u@h/db?tls=false&ca=/x.pem").contains("tls=false"));
    assert!(reason("postgres://u@h/db?cert=/c.pem").contains("private key"));
    for schema in ["Coord", "1x", "a-b", "x%20y", &"a".repeat(64)] {
        let r = reason(&format!("postgres://u@h/db?schema={schema}"));
        assert!(r.contains("schema"), "{schema}: {r}");
    }
    assert!(reason("postgres://u@h/db?session_timeout=0s").contains("positive"));
    assert!(reason("postgres://u@h/db?session_timeout=100ms").contains("minimum"));
    assert!(parse("postgres://u@h/db?session_timeout=300ms").is_ok());
}

/// Every reserved character (and space), raw and percent-encoded, in
/// the password of every scheme, with URLs both good and bad after the
/// user info: the secret's pieces appear in no error message and no
/// `Debug` of the parsed options.
#[test]
fn no_password_reaches_an_error_or_debug() {
    let reserved = [
        '/', '#', '?', '@', ':', '%', '[', ']', '!', '$', '&', '\'', '(', ')', '*', '+', ',', ';',
        '=', ' ',
    ];
    let schemes = [
        "zk",
        "etcd",
        "redis",
        "rediss",
        "postgres",
        "postgresql",
        "mem",
        "foo",
    ];
    let tails = [
        "h:2181",
        "h:2181/0",
        "h:x",
        "h:1,h2:x",
        "",
        "h:1/a//b",
        "h:1?session_timeout=0s",
        "h:1?nope=1",
        "h:1/ns?namespace=bad:ns",
        "[::1",
        "h:1#frag",
        "h:1/db?sslmode=prefer",
        "h:1/db?sslmode=disable&tls=true",
        "h:1/db?schema=Bad-Name",
        "h:1/db/x",
        "h:1/db?sslmode=require",
        "h:1/d%zz",
    ];
    let mut checked = 0;
    for c in reserved {
        let encoded = format!("%{:02X}", c as u32);
        for piece in [c.to_string(), encoded] {
            let password = format!("Xq7{piece}Zk9");
            for scheme in schemes {
                for tail in tails {
                    for url in [
                        format!("{scheme}://app:{password}@{tail}"),
                        format!("{scheme}://:{password}@{tail}"),
                        format!("{scheme}:/app:{password}@{tail}"),
                    ] {
                        let shown = match parse(&url) {
                            Ok(p) => format!("{p:?} {}", p.shown),
                            Err(e) => format!("{e} {e:?}"),
                        };
                        assert!(
                            !shown.contains("Xq7") && !shown.contains("Zk9"),
                            "{url:?} shows its password: {shown}"
                        );
                        checked += 1;
                    }
                }
            }
        }
    }
    assert_eq!(
        checked,
        reserved.len() * 2 * schemes.len() * tails.len() * 3
    );
}
