//! The one place etcd's errors become [`coord_core::Error`].

use std::time::Duration;

use coord_core::Error;

/// The backend's short name.
pub(crate) const BACKEND: &str = "etcd";

// gRPC status codes (tonic's `Code` as i32), named here so the mapping below
// reads like the table it is without a direct dependency on tonic.
const CANCELLED: i32 = 1;
const UNKNOWN: i32 = 2;
const DEADLINE_EXCEEDED: i32 = 4;
const INVALID_ARGUMENT: i32 = 3;
const NOT_FOUND: i32 = 5;
const OUT_OF_RANGE: i32 = 11;
const PERMISSION_DENIED: i32 = 7;
const FAILED_PRECONDITION: i32 = 9;
const UNAUTHENTICATED: i32 = 16;
const UNAVAILABLE: i32 = 14;

/// Map an etcd client error.
///
/// - the lease is gone (`requested lease not found`, a keep-alive answering
///   TTL 0) → [`Error::SessionExpired`]: the server ended the session;
/// - the connection is down or the request was cut off (transport and I/O
///   errors, `Unavailable`, `DeadlineExceeded`, `Cancelled`, a broken
///   stream) → [`Error::ConnectionLost`], retryable;
/// - wrong, missing or unwanted credentials → [`Error::Unauthenticated`]
///   (see [`auth_error`]); a role refusing the request →
///   [`Error::PermissionDenied`];
/// - anything else → [`Error::Backend`] with the client's error as source.
pub(crate) fn map(e: etcd_client::Error) -> Error {
    use etcd_client::Error as E;
    match &e {
        E::GRpcStatus(status) => {
            let code = i32::from(status.code());
            let msg = status.message();
            if let Some(mapped) = auth_error(code, msg) {
                mapped
            } else if code == NOT_FOUND && msg.contains("lease not found") {
                Error::SessionExpired
            } else if matches!(code, CANCELLED | DEADLINE_EXCEEDED | UNAVAILABLE)
                // hyper/h2 failures under a live request surface as Unknown.
                || (code == UNKNOWN && is_transport_message(msg))
                // A status made from a transport failure (an h2 GOAWAY, say
                // `too_many_internal_resets`, which tonic reports as
                // ResourceExhausted), not an answer of the server's.
                || is_transport_source(status)
            {
                Error::ConnectionLost(e.to_string())
            } else {
                Error::backend(BACKEND, e)
            }
        }
        E::LeaseKeepAliveError(msg) if msg.contains("lease not found") => Error::SessionExpired,
        E::TransportError(_) | E::IoError(_) | E::WatchError(_) | E::LeaseKeepAliveError(_) => {
            Error::ConnectionLost(e.to_string())
        }
        _ => Error::backend(BACKEND, e),
    }
}

/// Map an error of [`crate::connect`](fn@crate::connect) (`None`: no
/// answer within `limit`), within `budget`: a TLS refusal or a protocol
/// mismatch says what to fix. When the client's error is only a closed
/// connection, one probe ([`crate::probe`]) asks the server why: under
/// TLS, whether it refused our client certificate; in plaintext, whether
/// it speaks TLS. A connection lost otherwise (refused, timed out, cut)
/// gets coord-core's sniff of what listens there (nothing, a server of
/// another kind, …). Anything else as [`map`].
pub(crate) async fn map_connect(
    e: Option<etcd_client::Error>,
    endpoints: &[String],
    tls: Option<&coord_core::backend::TlsMaterial>,
    limit: Duration,
    budget: Duration,
) -> Error {
    if let Some(typed) = e.as_ref().and_then(|e| tls_error(e, tls.is_some())) {
        return typed;
    }
    #[cfg(feature = "tls")]
    if e.as_ref().is_some_and(closed_early) {
        let each = budget / 2;
        let probes = async {
            for endpoint in endpoints {
                match tls {
                    Some(material) => {
                        let alert = crate::probe::server_alert(endpoint, material, each).await;
                        let typed =
                            alert.and_then(|a| tls_error_text(&a.to_ascii_lowercase(), true, &a));
                        if typed.is_some() {
                            return typed;
                        }
                    }
                    None => {
                        if crate::probe::speaks_tls(endpoint, each).await {
                            return Some(plaintext_to_tls());
                        }
                    }
                }
            }
            None
        };
        if let Ok(Some(typed)) = tokio::time::timeout(each, probes).await {
            return typed;
        }
    }
    let mapped = match e {
        Some(e) => map(e),
        None => timed_out(limit),
    };
    #[cfg(feature = "tls")]
    if let Error::ConnectionLost(_) = mapped {
        if let Some(hint) = crate::probe::sniffed(endpoints, tls.is_some(), budget / 2).await {
            return Error::ConnectionLost(hint.text);
        }
    }
    #[cfg(not(feature = "tls"))]
    let _ = (endpoints, budget);
    mapped
}

/// Whether the connection was closed under the first request (what a TLS
/// server's refusal looks like to tonic), rather than refused or timed out.
#[cfg_attr(not(feature = "tls"), allow(dead_code))]
fn closed_early(e: &etcd_client::Error) -> bool {
    closed_early_text(&format!("{e:?}"))
}

/// [`closed_early`] on an error's `Debug` text, where an I/O error shows
/// as its kind (`Kind(ConnectionReset)`), not as its message.
#[cfg_attr(not(feature = "tls"), allow(dead_code))]
fn closed_early_text(debug: &str) -> bool {
    let text = debug.to_ascii_lowercase();
    [
        "connection closed",
        "broken pipe",
        "brokenpipe",
        "connection reset",
        "connectionreset",
        "operation was canceled",
        "unexpectedeof",
    ]
    .iter()
    .any(|s| text.contains(s))
}

/// A plaintext client's connection dropped by a TLS server.
fn plaintext_to_tls() -> Error {
    Error::ConnectionLost(
        "the server dropped the connection and answers in TLS: it requires TLS on this port \
         (use ?tls=true, an https:// endpoint, or EtcdOptions::with_tls)"
            .to_owned(),
    )
}

/// A connection that failed for TLS reasons, or because one side speaks
/// TLS and the other does not, or `None`. `tls` says whether this client
/// asked for TLS. Read from the error's whole text (tonic wraps the rustls
/// and hyper errors that tell why a connection failed):
///
/// - the server's certificate is not trusted (rustls `InvalidCertificate`:
///   `UnknownIssuer`, `BadSignature`, expired, …) →
///   [`Error::Unauthenticated`] naming `ca=`;
/// - it does not carry the name checked (`NotValidForName`) →
///   [`Error::Unauthenticated`] naming `server_name=`;
/// - the server refused our client certificate or its absence (its fatal
///   alerts `CertificateRequired`, `BadCertificate`, `UnknownCA`, …, as
///   [`crate::probe::server_alert`] reads them) → [`Error::Unauthenticated`]
///   naming `cert=`/`key=`;
/// - a TLS client answered with something not TLS, or the connection
///   closed during the handshake → [`Error::ConnectionLost`] saying the
///   server may not speak TLS;
/// - a plaintext client answered with what HTTP/2 cannot parse (`invalid
///   HTTP version`, `frame with invalid size`) → [`Error::ConnectionLost`]
///   saying the server may require TLS (`?tls=true`).
pub(crate) fn tls_error(e: &etcd_client::Error, tls: bool) -> Option<Error> {
    let shown = match e {
        // The status's message, then what its sources say (tonic keeps
        // the rustls error, a received alert say, only there).
        etcd_client::Error::GRpcStatus(status) => {
            let mut parts = vec![status.message().to_owned()];
            let mut source = std::error::Error::source(status);
            while let Some(s) = source {
                let part = s.to_string();
                if !parts.iter().any(|p| p.contains(&part)) {
                    parts.push(part);
                }
                source = s.source();
            }
            parts.join(": ")
        }
        other => other.to_string(),
    };
    tls_error_text(&format!("{e:?}").to_ascii_lowercase(), tls, &shown)
}

/// [`tls_error`] on the error's text (lower case); `shown` is what the
/// message quotes.
fn tls_error_text(text: &str, tls: bool, shown: &str) -> Option<Error> {
    let unauthenticated = |hint: String| {
        Some(Error::Unauthenticated {
            backend: BACKEND,
            hint,
        })
    };
    let cause = || shown.to_owned();
    if tls {
        if text.contains("notvalidforname") || text.contains("not valid for name") {
            return unauthenticated(format!(
                "the server's TLS certificate is not valid for the name checked: \
                 set server_name= to a name the certificate carries (or connect by that name) \
                 (TLS said: {})",
                cause()
            ));
        }
        if text.contains("invalid peer certificate") || text.contains("invalidcertificate") {
            return unauthenticated(format!(
                "the server's TLS certificate is not trusted: set ca= to the PEM file of \
                 the authority that signed it (without ca=, only the public web roots are \
                 trusted) (TLS said: {})",
                cause()
            ));
        }
        let refused_client = [
            "certificaterequired",
            "badcertificate",
            "unknownca",
            "unsupportedcertificate",
            "certificaterevoked",
            "certificateexpired",
            "certificateunknown",
            "accessdenied",
        ];
        if text.contains("received fatal alert") && refused_client.iter().any(|a| text.contains(a))
        {
            return unauthenticated(format!(
                "the server refused this client's TLS certificate, or its absence: it \
                 requires mutual TLS, so set cert= and key= to a client certificate \
                 and key signed by an authority the server trusts (TLS said: {})",
                cause()
            ));
        }
        if text.contains("corrupt message")
            || text.contains("invalidcontenttype")
            || text.contains("invalid content type")
            || text.contains("received corrupt")
        {
            return Some(Error::ConnectionLost(format!(
                "the TLS handshake failed: the server answered with something that is not \
                 TLS; it may not speak TLS on this port (drop ?tls=true / use http://) \
                 (TLS said: {})",
                cause()
            )));
        }
        if text.contains("tls handshake eof") {
            return Some(Error::ConnectionLost(format!(
                "the server closed the connection during the TLS handshake: it may not speak \
                 TLS on this port (drop ?tls=true / use http://) (TLS said: {})",
                cause()
            )));
        }
        if text.contains("received fatal alert") || text.contains("peer is incompatible") {
            return Some(Error::ConnectionLost(format!(
                "the TLS handshake failed (TLS said: {})",
                cause()
            )));
        }
    } else if text.contains("invalid http version")
        || text.contains("frame with invalid size")
        || text.contains("http request to an https server")
    {
        return Some(plaintext_to_tls());
    }
    None
}

/// The credential errors of etcd (`etcdserver: …` messages with their gRPC
/// codes), or `None`. The messages etcd sends never carry the password.
///
/// - `authentication failed, invalid user ID or password` (InvalidArgument)
///   → [`Error::Unauthenticated`]: the user name or password is wrong;
/// - `user name is empty`, `invalid auth token`, `user name not found`
///   and any other Unauthenticated status → [`Error::Unauthenticated`]:
///   the server wants credentials (or new ones);
/// - `authentication is not enabled` (FailedPrecondition) →
///   [`Error::Unauthenticated`]: credentials were given to a server that
///   takes none;
/// - `permission denied` (PermissionDenied) → [`Error::PermissionDenied`]:
///   the user's roles do not grant this key range.
pub(crate) fn auth_error(code: i32, msg: &str) -> Option<Error> {
    let unauthenticated = |hint: &str| {
        Some(Error::Unauthenticated {
            backend: BACKEND,
            hint: format!("{hint} (etcd said: {msg})"),
        })
    };
    if code == PERMISSION_DENIED || msg.contains("etcdserver: permission denied") {
        return Some(Error::PermissionDenied {
            path: String::new(),
            reason: format!(
                "the etcd user's roles do not grant this request (etcd said: {msg}); \
                 grant the user read-write on coord's key prefix"
            ),
        });
    }
    if msg.contains("invalid user ID or password") {
        return unauthenticated(
            "the server refused the user name or password: check user:password in the URL or options",
        );
    }
    if msg.contains("authentication is not enabled") && code == FAILED_PRECONDITION {
        return unauthenticated(
            "credentials were given but the server has authentication off: \
             remove user:password from the URL or options, or enable auth on the server",
        );
    }
    if code == UNAUTHENTICATED
        || (code == INVALID_ARGUMENT && msg.contains("etcdserver: user name is empty"))
    {
        return unauthenticated(
            "the server requires a user and password: put user:password in the URL or options",
        );
    }
    None
}

/// Name `path` in a [`Error::PermissionDenied`] that names no node (etcd's
/// refusal does not say which key): `.map_err(error::at(path))`.
pub(crate) fn at(path: &str) -> impl FnOnce(Error) -> Error + '_ {
    move |e| match e {
        Error::PermissionDenied { path: p, reason } if p.is_empty() => Error::PermissionDenied {
            path: path.to_owned(),
            reason,
        },
        other => other,
    }
}

/// Whether `e` is etcd's refusal of a read at a revision a compaction has
/// taken (`mvcc: required revision has been compacted`).
pub(crate) fn is_compacted(e: &Error) -> bool {
    let Error::Backend { source, .. } = e else {
        return false;
    };
    match source.downcast_ref::<etcd_client::Error>() {
        Some(etcd_client::Error::GRpcStatus(status)) => {
            i32::from(status.code()) == OUT_OF_RANGE && status.message().contains("compacted")
        }
        _ => false,
    }
}

/// Whether a request failed before it left: the client could not connect
/// to the member it picked (refused, unreachable, DNS). Sending it again
/// cannot do anything twice.
pub(crate) fn never_sent(e: &etcd_client::Error) -> bool {
    let text = chain_text(e);
    [
        "tcp connect error",
        "connection refused",
        "error trying to connect",
        "dns error",
    ]
    .iter()
    .any(|s| text.contains(s))
}

/// Whether a request of a live session failed because the new connection
/// it was to go on was cut while it was made (reset, or closed during the
/// TLS handshake: the client's connector failed), so it never left. Not
/// for `connect`, where a closed handshake may be a server that does not
/// speak TLS, and must say so at once.
pub(crate) fn connection_cut_before_sent(e: &etcd_client::Error) -> bool {
    // tonic wraps every failure of its connector (TCP or TLS) in its
    // `ConnectError`; a request is sent only on a connection made.
    format!("{e:?}").contains("ConnectError(")
        && [
            "tls handshake eof",
            "connection reset",
            "unexpected eof",
            "broken pipe",
        ]
        .iter()
        .any(|s| chain_text(e).contains(s))
}

/// An error's message and its sources', lowercase.
fn chain_text(e: &etcd_client::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(" | ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text.to_ascii_lowercase()
}

/// Whether etcd refused the request as checked against an older auth
/// store than the one it was applied to ("revision of auth store is old":
/// a user, role or permission changed between the permission check and
/// the apply). Such a request was not applied; etcd's Go client refreshes
/// its token and sends it again (a JWT carries the auth revision).
pub(crate) fn auth_revision_old(e: &etcd_client::Error) -> bool {
    match e {
        etcd_client::Error::GRpcStatus(status) => {
            status.message().contains("revision of auth store is old")
        }
        _ => false,
    }
}

/// Whether the status was made by tonic from a transport error (the
/// server's own statuses carry no source).
fn is_transport_source(status: &(dyn std::error::Error + 'static)) -> bool {
    status
        .source()
        .is_some_and(|s| s.to_string().contains("transport error"))
}

fn is_transport_message(msg: &str) -> bool {
    let msg = msg.to_ascii_lowercase();
    [
        "transport",
        "connection",
        "broken pipe",
        "h2 protocol",
        "error trying to connect",
    ]
    .iter()
    .any(|s| msg.contains(s))
}

/// A request that did not answer within the request timeout.
pub(crate) fn timed_out(after: Duration) -> Error {
    Error::ConnectionLost(format!("etcd request got no answer within {after:?}"))
}

/// A response that does not have the shape the request asked for (a bug in
/// the server or here, never a user error).
pub(crate) fn unexpected(what: &str) -> Error {
    Error::backend(BACKEND, format!("unexpected response from etcd: {what}"))
}

/// A child asked for under an ephemeral node.
pub(crate) fn ephemeral_parent() -> Error {
    Error::NotSupported {
        operation: "create under an ephemeral node",
        backend: BACKEND,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A TLS-only server resetting a plaintext client's connection is seen
    /// as closed early, so the probe asks whether it speaks TLS. The
    /// texts are tonic's, as seen: in `Debug`, an I/O error is its kind.
    #[test]
    fn a_dropped_connection_is_closed_early() {
        for seen in [
            "Transport(tonic::transport::Error(Transport, hyper::Error(Io, Kind(ConnectionReset))))",
            "Transport(tonic::transport::Error(Transport, hyper::Error(Io, Kind(BrokenPipe))))",
            "Status { code: Unavailable, message: \"error trying to connect: connection closed\" }",
            "Io(Custom { kind: UnexpectedEof, error: \"tls handshake eof\" })",
        ] {
            assert!(closed_early_text(seen), "{seen}");
        }
        for other in [
            "Transport(tonic::transport::Error(Transport, hyper::Error(Connect, ConnectError(\"tcp connect error\", Os { code: 111, kind: ConnectionRefused }))))",
            "Status { code: DeadlineExceeded, message: \"timeout expired\" }",
        ] {
            assert!(!closed_early_text(other), "{other}");
        }
    }

    #[test]
    fn errors_map_to_coord_errors() {
        let lease = etcd_client::Error::LeaseKeepAliveError("lease not found".into());
        assert!(matches!(map(lease), Error::SessionExpired));
        let broken = etcd_client::Error::WatchError("channel closed".into());
        assert!(matches!(map(broken), Error::ConnectionLost(_)));
        let other = etcd_client::Error::InvalidArgs("x".into());
        assert!(matches!(
            map(other),
            Error::Backend {
                backend: "etcd",
                ..
            }
        ));
        assert!(timed_out(Duration::from_secs(1)).is_retryable());
    }

    /// The statuses etcd v3.5 sends for credential problems, with their
    /// codes as the server sends them.
    #[test]
    fn credential_errors_are_typed() {
        let wrong = auth_error(
            INVALID_ARGUMENT,
            "etcdserver: authentication failed, invalid user ID or password",
        );
        assert!(
            matches!(&wrong, Some(Error::Unauthenticated { backend: "etcd", hint }) if hint.contains("user:password")),
            "{wrong:?}"
        );
        for (code, msg) in [
            (INVALID_ARGUMENT, "etcdserver: user name is empty"),
            (UNAUTHENTICATED, "etcdserver: invalid auth token"),
            (UNAUTHENTICATED, "etcdserver: user name not found"),
            (
                FAILED_PRECONDITION,
                "etcdserver: authentication is not enabled",
            ),
        ] {
            let e = auth_error(code, msg);
            assert!(
                matches!(&e, Some(Error::Unauthenticated { hint, .. }) if hint.contains(msg)),
                "{msg}: {e:?}"
            );
            assert!(!e.is_some_and(|e| e.is_retryable()));
        }
        let denied = auth_error(PERMISSION_DENIED, "etcdserver: permission denied");
        assert!(
            matches!(&denied, Some(Error::PermissionDenied { reason, .. }) if reason.contains("permission denied")),
            "{denied:?}"
        );
        // Other statuses are left to the rest of the mapping.
        assert!(auth_error(NOT_FOUND, "etcdserver: requested lease not found").is_none());
        assert!(auth_error(INVALID_ARGUMENT, "etcdserver: key is not provided").is_none());
        assert!(auth_error(UNAVAILABLE, "transport is closing").is_none());
    }

    /// The texts tonic and rustls give (as seen live against etcd 3.4,
    /// tests/tls.rs), mapped to typed errors naming what to fix.
    #[test]
    fn tls_failures_are_typed() {
        let unknown = r#"grpcstatus(status { code: unavailable, message: "invalid peer certificate: unknownissuer", source: some(tonic::transport::error(transport, connecterror(custom { kind: invaliddata, error: invalidcertificate(unknownissuer) }))) })"#;
        let e = tls_error_text(unknown, true, "invalid peer certificate: UnknownIssuer");
        assert!(
            matches!(&e, Some(Error::Unauthenticated { hint, .. }) if hint.contains("ca=") && hint.contains("UnknownIssuer")),
            "{e:?}"
        );
        let name = r#"grpcstatus(status { code: unavailable, message: "invalid peer certificate: certificate not valid for name \"wrong.example\"; certificate is only valid for ipaddress(127.0.0.1)", source: some(... invalidcertificate(notvalidfornamecontext { expected: dnsname("wrong.example") })) })"#;
        let e = tls_error_text(name, true, "certificate not valid for name");
        assert!(
            matches!(&e, Some(Error::Unauthenticated { hint, .. }) if hint.contains("server_name=")),
            "{e:?}"
        );
        for alert in [
            "received fatal alert: badcertificate | alertreceived(badcertificate)",
            "received fatal alert: certificaterequired | alertreceived(certificaterequired)",
            "received fatal alert: unknownca",
        ] {
            let e = tls_error_text(alert, true, alert);
            assert!(
                matches!(&e, Some(Error::Unauthenticated { hint, .. }) if hint.contains("cert=") && hint.contains("key=")),
                "{alert}: {e:?}"
            );
        }
        let eof = r#"grpcstatus(status { code: unavailable, message: "tls handshake eof", source: some(tonic::transport::error(transport, connecterror(custom { kind: unexpectedeof, error: "tls handshake eof" }))) })"#;
        let e = tls_error_text(eof, true, "tls handshake eof");
        assert!(
            matches!(&e, Some(Error::ConnectionLost(m)) if m.contains("may not speak TLS")),
            "{e:?}"
        );
        for plain in [
            "h2 protocol error: frame with invalid size",
            "invalid http version parsed",
        ] {
            let e = tls_error_text(plain, false, plain);
            assert!(
                matches!(&e, Some(Error::ConnectionLost(m)) if m.contains("tls=true")),
                "{plain}: {e:?}"
            );
            // The same text under TLS is something else.
            assert!(tls_error_text(plain, true, plain).is_none());
        }
        // A refused TCP connection is no TLS matter.
        let refused = "transport error | tcp connect error | connection refused (os error 111)";
        assert!(tls_error_text(refused, true, refused).is_none());
        assert!(tls_error_text(refused, false, refused).is_none());
        // Certificate words mean nothing to a plaintext client.
        assert!(tls_error_text(unknown, false, "x").is_none());
    }

    /// A refusal that names no node gets the path; others are kept.
    #[test]
    fn permission_denied_names_the_path() {
        let denied = auth_error(PERMISSION_DENIED, "etcdserver: permission denied")
            .expect("a permission error");
        assert!(
            matches!(at("/a/b")(denied), Error::PermissionDenied { path, .. } if path == "/a/b")
        );
        let named = Error::PermissionDenied {
            path: "/x".into(),
            reason: "r".into(),
        };
        assert!(matches!(at("/a/b")(named), Error::PermissionDenied { path, .. } if path == "/x"));
        assert!(matches!(
            at("/a")(Error::SessionExpired),
            Error::SessionExpired
        ));
    }
}
