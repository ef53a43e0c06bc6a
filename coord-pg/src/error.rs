//! PostgreSQL's errors mapped onto [`coord_core::Error`]: the schema's own
//! SQLSTATEs (class CX, see `sql/schema.sql`) by code, the rest by kind.

use coord_core::Error;
use tokio_postgres::error::SqlState;

/// The backend's name in errors.
pub(crate) const BACKEND: &str = "postgres";

/// Map `e`, an error of a request about `path`.
pub(crate) fn map(e: tokio_postgres::Error, path: &str) -> Error {
    let path = path.to_owned();
    match e.code().map(SqlState::code) {
        Some("CXSES") => Error::SessionExpired,
        Some("CXNON") => Error::NotFound { path },
        Some("CXEXI") => Error::AlreadyExists { path },
        Some("CXVER") => Error::VersionMismatch { path, expected: 0 },
        Some("CXNEM") => Error::NotEmpty { path },
        Some("CXEPH") => Error::NotSupported {
            operation: "children of an ephemeral node",
            backend: BACKEND,
        },
        Some("CXFEN") => Error::LockLost { path },
        Some("28P01") | Some("28000") => Error::Unauthenticated {
            backend: BACKEND,
            hint: refusal_hint(e.as_db_error().map_or("", |db| db.message())),
        },
        // The server is shutting down or starting, refuses more
        // connections, or the connection failed: nothing was applied by a
        // request refused so; another connection may work.
        Some(code) if is_transient(code) => Error::ConnectionLost(format!(
            "postgres: {}",
            e.as_db_error()
                .map_or_else(|| chain(&e), |db| db.message().to_owned())
        )),
        Some("42501") => Error::PermissionDenied {
            path,
            reason: "PostgreSQL refused the role this operation".into(),
        },
        Some(_) => match e.as_db_error() {
            Some(db) => Error::backend(BACKEND, db.clone()),
            None => Error::backend(BACKEND, e),
        },
        None if e.is_closed() || e.as_db_error().is_none() => tls_error(&e)
            .unwrap_or_else(|| Error::ConnectionLost(format!("postgres: {}", chain(&e)))),
        None => Error::backend(BACKEND, e),
    }
}

/// What to fix, for the server's refusal `message` (its words never hold
/// the password: it has none to say): a client certificate it wants, TLS
/// it requires (`pg_hba.conf` has no entry for a plain connection), or the
/// role and its password.
fn refusal_hint(message: &str) -> String {
    if message.contains("certificate") {
        format!(
            "PostgreSQL requires a client certificate ({message}): give cert=PATH and \
             key=PATH (TlsOptions::with_identity) of a certificate signed by an authority \
             the server trusts"
        )
    } else if message.contains("no encryption") {
        format!(
            "PostgreSQL refused a connection without TLS ({message}): the server may \
             require TLS; use sslmode=require or tls=true (PgOptions::with_tls)"
        )
    } else {
        format!("PostgreSQL refused the role or its password ({message}): check user:password")
    }
}

/// The TLS failures, or `None`: the server's certificate not trusted or
/// not valid for the host (→ [`Error::Unauthenticated`], naming `ca=` or
/// `server_name=`), the server refusing the client's certificate (naming
/// `cert=`/`key=`), and a server without TLS (→ `ConnectionLost` saying so).
fn tls_error(e: &tokio_postgres::Error) -> Option<Error> {
    use tokio_rustls::rustls::{self, AlertDescription as Alert, CertificateError as Cert};

    let unauthenticated = |hint: String| {
        Some(Error::Unauthenticated {
            backend: BACKEND,
            hint,
        })
    };
    if chain(e).contains("server does not support TLS") {
        return Some(Error::ConnectionLost(
            "postgres: TLS was asked for, and the server does not support TLS (ssl=off): \
             use sslmode=disable there, or turn ssl on at the server"
                .into(),
        ));
    }
    let tls = rustls_cause(e)?;
    match tls {
        rustls::Error::InvalidCertificate(
            Cert::NotValidForName | Cert::NotValidForNameContext { .. },
        ) => unauthenticated(format!(
            "TLS: the server's certificate is not valid for the host connected to ({tls}): \
             connect by a name the certificate carries, or name it with server_name="
        )),
        rustls::Error::InvalidCertificate(_) => unauthenticated(format!(
            "TLS: the server's certificate is not trusted ({tls}): give the authority \
             that signed it with ca=PATH (TlsOptions::with_ca); without ca= only the \
             public web roots (Mozilla's list) are trusted"
        )),
        rustls::Error::AlertReceived(
            Alert::CertificateRequired
            | Alert::BadCertificate
            | Alert::UnknownCA
            | Alert::CertificateUnknown
            | Alert::UnsupportedCertificate
            | Alert::CertificateRevoked
            | Alert::CertificateExpired
            | Alert::AccessDenied
            | Alert::HandshakeFailure,
        ) => unauthenticated(format!(
            "TLS: the server refused the handshake ({tls}), most likely the client \
             certificate: give cert=PATH and key=PATH of a certificate signed by an \
             authority the server trusts"
        )),
        _ => None,
    }
}

/// The rustls error behind `e`, if any (tokio-rustls wraps it in an I/O
/// error).
fn rustls_cause(e: &tokio_postgres::Error) -> Option<&tokio_rustls::rustls::Error> {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
    while let Some(c) = cause {
        if let Some(t) = c.downcast_ref::<tokio_rustls::rustls::Error>() {
            return Some(t);
        }
        if let Some(t) = c
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            .and_then(|inner| inner.downcast_ref::<tokio_rustls::rustls::Error>())
        {
            return Some(t);
        }
        cause = c.source();
    }
    None
}

/// Whether SQLSTATE `code` says the connection or the server is going
/// (class 08, `admin_shutdown`, `crash_shutdown`, `cannot_connect_now`,
/// `too_many_connections`).
fn is_transient(code: &str) -> bool {
    code.starts_with("08") || matches!(code, "57P01" | "57P02" | "57P03" | "53300")
}

/// Whether `e` is a serialization failure or a deadlock: the server
/// rolled the request back, nothing of it was applied, and sending it again
/// is safe.
pub(crate) fn is_rolled_back(e: &tokio_postgres::Error) -> bool {
    matches!(e.code().map(SqlState::code), Some("40001" | "40P01"))
}

/// `e` and its causes, `: ` between them (tokio-postgres's own message
/// leaves out why: "error performing TLS handshake").
fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let text = c.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        cause = c.source();
    }
    out
}
